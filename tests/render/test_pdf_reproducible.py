"""`render -o x.pdf` gives the same bytes for the same input (issue 36 item 10: Graphviz's cairo
embedded the clock's /CreationDate). With SOURCE_DATE_EPOCH the date is that time; without it there is
no date; either way every cross-reference offset of the file still points at its object."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.cli import app

runner = CliRunner()
SNAP = SAMPLES / "snapshots" / "dgx1-v100.json"
FLOW = SAMPLES / "flows" / "tensor-parallel.yaml"
pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")


def _render(out: Path, *args: str) -> bytes:
    r = runner.invoke(app, ["render", *args, "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out.read_bytes()


def _offsets_hold(pdf: bytes) -> None:
    """Every in-use entry of the cross-reference table points at ``N 0 obj``; startxref at ``xref``."""
    start = int(pdf[pdf.rindex(b"startxref") + 9 :].split()[0])
    assert pdf[start:].startswith(b"xref")
    lines = pdf[start:].split(b"\n")
    first, count = (int(x) for x in lines[1].split())
    for k, entry in enumerate(lines[2 : 2 + count]):
        offset, _, kind = entry.split()[:3]
        if kind == b"n":
            assert pdf[int(offset) :].startswith(b"%d 0 obj" % (first + k)), (first + k, int(offset))


def test_two_renders_a_second_apart_are_byte_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    for args in ([str(SNAP)], [str(FLOW)]):
        first = _render(tmp_path / "a.pdf", *args)
        time.sleep(1.1)  # cairo's date has whole seconds
        second = _render(tmp_path / "b.pdf", *args)
        assert first.startswith(b"%PDF-") and first == second
        assert b"/CreationDate" not in first and b"/Producer (cairo" in first
        _offsets_hold(first)


def test_source_date_epoch_is_the_creation_date(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # 2023-11-14 22:13:20 UTC
    first = _render(tmp_path / "a.pdf", str(SNAP))
    time.sleep(1.1)
    assert _render(tmp_path / "b.pdf", str(SNAP)) == first
    assert re.findall(rb"/CreationDate \(([^)]*)\)", first) == [b"D:20231114221320Z"]
    _offsets_hold(first)


def test_a_malformed_source_date_epoch_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday\x1b[2J")
    r = runner.invoke(app, ["render", str(SNAP), "-o", str(tmp_path / "a.pdf")])
    assert r.exit_code == 2 and not (tmp_path / "a.pdf").exists()
    assert r.stderr.startswith("topomap: error: SOURCE_DATE_EPOCH='yesterday\\\\x1b[2J' is not a number of seconds")
    assert r.stderr.count("\n") == 1 and "\x1b" not in r.stderr


def test_a_run_timeline_pdf_is_reproducible_and_dated_by_source_date_epoch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    run = SAMPLES / "records" / "one-card.json"
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    first = _render(tmp_path / "a.pdf", str(run))
    assert _render(tmp_path / "b.pdf", str(run)) == first and b"/CreationDate" not in first
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert b"/CreationDate (D:20231114221320Z)" in _render(tmp_path / "c.pdf", str(run))
