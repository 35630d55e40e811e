"""A recorded run's figures in place of the plan's assumed duration and memory."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.api import bind_snapshots
from topomap.base.errors import TopomapError
from topomap.cli import app
from topomap.flow import read_flow
from topomap.flow.spec import Flow, Unit, Work
from topomap.plan import plan_flow
from topomap.plan.observed import apply_observed
from topomap.record import observed_for_plan
from topomap.record.model import load_run

REFERENCE = str(SAMPLES / "flows" / "eight-documents.yaml")
TWO_CARDS = str(SAMPLES / "records" / "two-cards.json")


def _work(cards_per_task: int = 1) -> Work:
    return Work(
        units=[Unit("a", 600.0), Unit("b", 900.0)],
        source="work.durations",
        cards_per_task=cards_per_task,
        memory_per_task_bytes=10 * 2**30,
        duplicated_bytes=2 * 2**30,
    )


def test_observed_duration_and_memory_replace_the_assumed_ones() -> None:
    seen = {"succeeded": True, "unit_duration_s": 42.5, "units": 2, "cards_used": 1, "duration_s": 85.0}
    w = apply_observed(_work(), seen | {"memory_per_task_bytes": 2**30}, "run.json")
    assert [u.seconds for u in w.units] == [42.5, 42.5] and w.provenance == "observed"
    assert w.includes_transfers and w.memory_per_task_bytes == 2**30 and w.duplicated_bytes == 2**30
    assert w.source == "the record run.json" and "85.0 s of wall time on 1 card(s) for 2 unit(s)" in w.notes[0]
    # a task over two cards: one card's peak is not the task's memory
    w2 = apply_observed(_work(2), seen | {"memory_per_task_bytes": 2**30}, "run.json")
    assert w2.memory_per_task_bytes == 10 * 2**30 and "not used: a task here spans 2 cards" in w2.notes[1]


def test_a_failed_or_unfinished_run_is_refused() -> None:
    with pytest.raises(TopomapError, match="the recorded command failed"):
        apply_observed(_work(), {"succeeded": False, "unit_duration_s": 1.0}, "run.json")
    with pytest.raises(TopomapError, match="has no wall time"):
        apply_observed(_work(), {"succeeded": True, "unit_duration_s": None}, "run.json")


def test_plan_with_a_shipped_record() -> None:
    seen = observed_for_plan(load_run(TWO_CARDS), 8)
    flow = read_flow(REFERENCE)
    r = plan_flow(flow, bind_snapshots(flow, []), [1, 2])
    flow = read_flow(REFERENCE)  # afresh: binding resolves placements in place
    o = plan_flow(flow, bind_snapshots(flow, []), [1, 2], (seen, TWO_CARDS))
    assert r.unit_provenance == "assumed" and o.unit_provenance == "observed"
    assert {u.seconds for u in o.units} == {seen["unit_duration_s"]}
    one = next(a for a in o.arrangements if a.kind == "one card")
    assert one.total_s == pytest.approx(8 * seen["unit_duration_s"] + 600)


def test_cli_observed() -> None:
    res = CliRunner().invoke(app, ["plan", REFERENCE, "--cards", "1", "--observed", TWO_CARDS, "--json"])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["units"]["source"] == "observed" and doc["units"]["count"] == 8
    res = CliRunner().invoke(app, ["plan", REFERENCE, "--observed", TWO_CARDS, "--observed-units", "0"])
    assert res.exit_code == 2 and "'--observed-units': 0 is outside the range" in res.stderr


def test_one_plan_command_reads_the_work_block_once_after_the_flow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18: `plan --observed` parsed the work block three times and read its durations CSV
    each time (reading the flow, the observed run's unit count, the plan). Now reading the flow
    parses it once, keeps it on the Flow, and the run and the plan both use that."""
    import topomap.flow as flow_package
    import topomap.flow.work as work

    reads: list[str] = []
    real_csv, real_read_flow = work.read_durations_csv, flow_package.read_flow

    def counted_csv(*args: Any) -> list[Unit]:
        reads.append("csv")
        return real_csv(*args)

    def counted_read_flow(*args: Any) -> Flow:
        flow = real_read_flow(*args)
        reads.append("flow read")
        return flow

    monkeypatch.setattr(work, "read_durations_csv", counted_csv)
    monkeypatch.setattr(flow_package, "read_flow", counted_read_flow)
    import topomap.cli.bind as bind  # the CLI reads the flow through cli.bind.read_flow_file (issue 23)

    monkeypatch.setattr(bind, "read_flow", counted_read_flow)
    flow = str(SAMPLES / "flows" / "uneven-documents.yaml")
    res = CliRunner().invoke(app, ["plan", flow, "--cards", "1", "--observed", TWO_CARDS, "--json"])
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["units"]["source"] == "observed"
    assert reads == ["csv", "flow read"]
