"""Path codes in the snapshot are typed (issue 33 item 1): ``Pair.path`` is base/links's ``PathCode``
and ``Pair.pcie_path`` a ``PathClass``, checked when a snapshot is decoded and, for one built in
memory, by the validator, in one line naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.base.links import nvlinks_of
from topomap.cli import app
from topomap.model.codec import decode_snapshot, load_snapshot
from topomap.model.validate import SnapshotInvalid, validate_snapshot
from topomap.transport.rules import path_rank

runner = CliRunner()


def _raw(name: str = "dgx1-v100.json") -> dict[str, Any]:
    raw: dict[str, Any] = json.loads((SAMPLES / "snapshots" / name).read_text())
    return raw


def _gpu_pair(raw: dict[str, Any]) -> int:
    return next(k for k, p in enumerate(raw["pairs"]) if p["a"].startswith("gpu") and p["b"].startswith("gpu"))


def test_nv7_decodes_and_ranks_as_nvl() -> None:
    raw = _raw()
    k = _gpu_pair(raw)
    raw["pairs"][k].update(path="NV7", nvlinks=7)
    pair = decode_snapshot(msgspec.json.encode(raw), "s.json").pairs[k]
    assert pair.path == "NV7" and nvlinks_of(pair.path) == 7
    assert path_rank(pair.path) == path_rank("NVL")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("path", "NVX", "pairs[{k}].path: 'NVX' is not NV<n>, XGMI, PIX, PXB, PHB, NODE or SYS"),
        ("path", "PIX\n", "pairs[{k}].path: 'PIX\\n' is not NV<n>"),
        ("pcie_path", "PXQ", "pairs[{k}].pcie_path: 'PXQ' is not PIX, PXB, PHB, NODE or SYS"),
    ],
)
def test_a_bad_code_is_one_line_naming_the_field(tmp_path: Path, field: str, value: str, message: str) -> None:
    raw = _raw()
    k = _gpu_pair(raw)
    raw["pairs"][k][field] = value
    bad = tmp_path / "bad.json"
    bad.write_bytes(msgspec.json.encode(raw))
    r = runner.invoke(app, ["show", str(bad)])
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and f"{bad}: {message.format(k=k)}" in r.stderr, r.stderr


def test_a_snapshot_built_in_memory_is_checked_too() -> None:
    snap = load_snapshot(SAMPLES / "snapshots" / "dgx1-v100.json")
    for field, value in (("path", "NVX"), ("path", "NV65"), ("pcie_path", "PXQ")):
        pairs = [msgspec.structs.replace(snap.pairs[0], **{field: value}), *snap.pairs[1:]]
        with pytest.raises(SnapshotInvalid, match=rf"^s: pairs\[0\]\.{field}: "):
            validate_snapshot(msgspec.structs.replace(snap, pairs=pairs), "s")
