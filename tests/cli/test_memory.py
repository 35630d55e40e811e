"""Every documented maximum stays under 1 GiB of memory (issue 36 item 5: a 200 MB snapshot of 50
million notes took 3.96 GB, `merge` of two 250 MB snapshots ended in a MemoryError, a 100 MB paste
reached 700 MB before its refusal, `plan --json --units` with 100,000 units on 8 cards took 3.9 GB).

Each case of bench/memory.py — an input at one documented maximum, or just past it where the maximum is a
refusal — runs one command in a child process, which reports its own peak resident set (VmHWM of its
memory map: ``getrusage``'s figure would also count the test process it was forked from). The slowest
case (the plan on 1 to 8 cards, 20 s) runs in the benchmark only; here its 8-card run stands for it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import memory  # noqa: E402

QUICK = [c for c in memory.CASES if c.name != "units-at-cap"]


@pytest.mark.parametrize("case", QUICK, ids=[c.name for c in QUICK])
def test_a_documented_maximum_stays_under_one_gib(case: memory.Case, tmp_path: Path) -> None:
    code, peak, _, err = memory.measure(case, tmp_path, timeout_s=300)
    assert code == case.exit, err[-400:]
    assert case.says in err, err[-400:]
    if case.exit == 2:
        assert err.count("\n") == 1 and err.startswith("topomap: error: "), err[-400:]
    assert 0 < peak < memory.GOAL_BYTES, f"{case.name}: {peak / 2**20:.0f} MiB ({case.maximum})"


def test_every_documented_maximum_has_a_case() -> None:
    """The limits the docs state (docs/design/hostile-input.md, once the README's), each with a case here
    (a new limit needs one)."""
    page = (ROOT / "docs" / "design" / "hostile-input.md").read_text()
    for stated in ("64 MiB", "128 MiB", "8 MiB", "3,500,000 values", "1 MiB", "192 MiB", "100,000 units", "256 GPUs",
                   "65,536 arrows"):  # fmt: skip
        assert stated in page, stated
    names = {c.name for c in memory.CASES}
    assert {"snapshot-at-cap", "paste-at-cap", "yaml-at-cap", "merge-two-large", "units-at-cap", "gpus-at-cap",
            "arrows-at-cap", "run-at-cap", "log-at-cap", "csv-at-cap"} <= names  # fmt: skip
