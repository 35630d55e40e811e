"""Path codes (topomap/base/links.py): one typed definition that the snapshot decodes with, the
validator refuses with, and every view reads with (issue 33 item 1)."""

from __future__ import annotations

import re

import msgspec
import pytest

from topomap.base.links import (
    MAX_NVLINKS,
    PATH_CODE_PATTERN,
    PCIE_CLASSES,
    XGMI_PATH,
    PathCode,
    class_rank,
    is_gpu_link,
    is_nvlink,
    is_path_code,
    is_xgmi,
    nvlink_path,
    nvlinks_of,
    path_code_problem,
    path_kind,
    pcie_class_of,
)

NV = [f"NV{n}" for n in range(1, MAX_NVLINKS + 1)]
WORDS = "NV<n>, XGMI, PIX, PXB, PHB, NODE or SYS"


def test_the_pattern_takes_every_code_and_nothing_else() -> None:
    codes = [*NV, XGMI_PATH, *PCIE_CLASSES]
    assert all(re.search(PATH_CODE_PATTERN, c) for c in codes)
    for bad in ("NV0", "NV65", "NV007", "NV", "NVX", "nv4", "PXQ", "X", "NET", "NVL", " PIX", "NV6 "):
        assert not re.search(PATH_CODE_PATTERN, bad), bad
        assert not is_path_code(bad) and path_code_problem(bad) is not None
    # the schema's `$` (as JSON Schema and msgspec read it) takes a final newline; the validator does not
    assert (
        not is_path_code("PIX\n")
        and path_code_problem("PIX\n") == "'PIX\\n' is not NV<n>, XGMI, PIX, PXB, PHB, NODE or SYS"
    )


def test_msgspec_checks_the_code_when_it_decodes() -> None:
    dec = msgspec.json.Decoder(list[PathCode])
    assert dec.decode(b'["NV18", "XGMI", "SYS"]') == ["NV18", "XGMI", "SYS"]
    with pytest.raises(msgspec.ValidationError, match=r"\$\[0\]"):
        dec.decode(b'["NVX"]')


def test_the_parsed_view() -> None:
    assert [nvlinks_of(c) for c in ("NV7", "NV18", "XGMI", "PIX", None)] == [7, 18, 0, 0, 0]
    assert is_nvlink("NV7") and not is_nvlink("XGMI") and not is_nvlink("NVX") and not is_nvlink(None)
    assert is_xgmi("XGMI") and not is_xgmi("NV2") and is_gpu_link("XGMI") and is_gpu_link("NV2")
    assert not is_gpu_link("PIX")
    assert [pcie_class_of(c) for c in ("PXB", "NV4", "XGMI", None)] == ["PXB", None, None, None]
    assert [path_kind(c) for c in ("NV7", "XGMI", "NODE")] == ["NV", "XGMI", "NODE"]
    with pytest.raises(ValueError, match="'NVX' is not a path code"):
        path_kind("NVX")
    assert nvlink_path(18) == "NV18" and all(nvlinks_of(nvlink_path(n)) == n for n in range(1, MAX_NVLINKS + 1))
    assert [class_rank(c) for c in ("NV7", "XGMI", "PIX", "SYS")] == [0, 0, 1, 5]


def test_a_bad_code_in_words() -> None:
    assert path_code_problem("NVX") == "'NVX' is not " + WORDS
    assert path_code_problem("NV65") == "NV65 links (at most 64 per pair)"
    assert (
        path_code_problem("NV" + "1" * 5000)
        == repr("NV" + "1" * 5000) + " is not NV<n>, XGMI, PIX, PXB, PHB, NODE or SYS"
    )
    assert path_code_problem("NV64") is None


def test_nv0_says_an_nvlink_path_has_a_link() -> None:
    """'NV0' is not NV<n> read as if NV0 were no NV code at all (the trial): it says what is wrong."""
    assert path_code_problem("NV0") == "'NV0': an NVLink path has at least one link (NV1 to NV64)"
    assert path_code_problem("NV00") == "'NV00': an NVLink path has at least one link (NV1 to NV64)"
    assert path_code_problem("NV007") == "'NV007' is not " + WORDS  # a leading zero: no code nvidia-smi prints
