"""The expected bus bandwidth against real nccl-tests outputs (tests/data/real-nccl-tests; each file's lot as
its author describes it in lots.json): the issue-32 acceptance, and the table of that folder's README kept
true (issue 32)."""

from __future__ import annotations

from tests.nccl_lots import DATA, accuracy, table_lines


def test_the_readme_table_is_what_the_model_gives() -> None:
    readme = (DATA / "README.md").read_text()
    for line in table_lines():
        assert line in readme, f"tests/data/real-nccl-tests/README.md lacks (regenerate it): {line}"


def test_healthy_runs_are_within_20_percent_on_at_least_85_percent() -> None:
    rows = [r for r in accuracy() if r["status"] == "healthy" and r["expected"] is not None]
    within = [r for r in rows if 0.8 <= float(r["ratio"]) <= 1.2]
    assert len(rows) >= 15
    assert len(within) / len(rows) >= 0.85, [r["file"] for r in rows if r not in within]
    held = [r for r in rows if r["set"] == "held out"]
    assert held and all(0.8 <= float(r["ratio"]) <= 1.2 for r in held)  # what no constant was fitted to


def test_every_underperforming_run_is_far_below_and_no_healthy_one_is() -> None:
    rows = accuracy()
    under = [r for r in rows if r["status"] == "underperforming"]
    healthy = [r for r in rows if r["status"] == "healthy"]
    assert under and all(r["verdict"] == "far-below" for r in under)
    assert sum(r["verdict"] == "far-below" for r in healthy) <= len(healthy) // 25


def test_a_missing_fact_is_null_and_names_what_settles_it() -> None:
    unknown = [r for r in accuracy() if r["expected"] is None]
    assert unknown
    for r in unknown:
        assert r["verdict"] == "unknown" and any("ibstat" in s or "nvidia-smi" in s for s in r["settle"]), r
