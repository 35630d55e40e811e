"""Concurrent transfers share only the links their routes have in common (issue 19 item 6), and
the per-unit volume the plan used is the one the work block states (work.volume_per), on real
topologies: AWS p5.48xlarge (every H100 under its own PCIe switch with its own Gen4 x16 uplink)
and p4d.24xlarge (two A100s under each switch, sharing its Gen3 x16 uplink), both from AWS's own
NCCL topology files (aws/aws-ofi-nccl), and Azure ND A100 v4 / NC A100 v4 (Azure/azhpc-images)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES
from tests.fakes.flows import WorkSpec, arrow, step, write_flow
from topomap.api import bind_snapshots
from topomap.cli import app
from topomap.flow import read_flow
from topomap.plan import Arrangement, PlanResult, plan_flow

GIB = 2**30
GEN4_X16 = 31.508  # GB/s per direction (spec)
GEN3_X16 = 15.754
P5 = REAL / "nccl-xml" / "aws-p5-48xlarge.xml"
P4D = REAL / "nccl-xml" / "aws-p4d-24xlarge.xml"


LOAD = WorkSpec(count=8, duration="12 min")


def _flow(
    tmp_path: Path, lot: Path, work: WorkSpec | dict[str, object] = LOAD, on: str = "lot:gpu0", volume: str = "640 GiB"
) -> Path:
    """Host memory to ``on``, ``volume`` in all, 8 units of 12 min unless ``work`` says otherwise."""
    p = tmp_path / f"flow-{abs(hash((str(lot), repr(work), on, volume)))}.yaml"
    steps = {"data": step("input", "lot:memory"), "run": step("compute", on)}
    return write_flow(p, steps, [arrow("data", "run", volume)], name="load", hosts={"lot": lot}, work=work)


def _plan(path: Path, cards: list[int]) -> PlanResult:
    f = read_flow(path)
    return plan_flow(f, bind_snapshots(f, []), cards)


def _arr(r: PlanResult, k: int, kind: str = "even-static") -> Arrangement:
    return next(a for a in r.arrangements if a.k == k and a.kind == (kind if k > 1 else "one card"))


def _per_unit_input(a: Arrangement) -> float:
    """Per-unit input seconds on the lane that finishes last (every lane here has the same cost)."""
    return max(ln.cost.input_s for ln in a.lanes)


def test_cards_with_their_own_switch_load_as_fast_as_one(tmp_path: Path) -> None:
    r = _plan(_flow(tmp_path, P5), [1, 2, 4, 8])
    alone = 80 * GIB / (GEN4_X16 * 1e9)  # 640 GiB over 8 units: 80 GiB per unit, Gen4 x16 uplink
    for k in (1, 2, 4, 8):
        assert _per_unit_input(_arr(r, k)) == pytest.approx(alone), k
    # nothing below the root ports is shared; host memory above them is, at an unknown rate
    assert r.sharing == []
    assert r.host_memory is not None and r.host_memory.cards == 8
    assert r.host_memory.together_gbps == pytest.approx(8 * GEN4_X16)  # an upper bound, not a figure
    assert not _arr(r, 1).transfers_lower_bound and _arr(r, 4).transfers_lower_bound
    assert any("host memory, whose bandwidth a snapshot does not record" in x for x in r.assumptions)


def test_two_cards_under_one_switch_split_its_uplink(tmp_path: Path) -> None:
    r = _plan(_flow(tmp_path, P4D), [1, 2, 4])
    alone = 80 * GIB / (GEN3_X16 * 1e9)
    assert _per_unit_input(_arr(r, 1)) == pytest.approx(alone)
    # gpu0 and gpu1 sit under switch 0 and share its Gen3 x16 uplink: half the rate each
    assert _per_unit_input(_arr(r, 2)) == pytest.approx(2 * alone)
    # gpu0…gpu3: two switches, two cards each: still half, not a quarter
    assert _per_unit_input(_arr(r, 4)) == pytest.approx(2 * alone)
    two = [lk for lk in r.sharing if lk.cards_at_once == 2]
    assert [(lk.hop.kind, lk.hop.gbps, lk.cards, lk.each_gbps) for lk in two] == [
        ("pcie", GEN3_X16, ("gpu0", "gpu1"), pytest.approx(GEN3_X16 / 2))
    ]
    assert {lk.cards for lk in r.sharing if lk.cards_at_once == 4} == {("gpu0", "gpu1"), ("gpu2", "gpu3")}


def test_plan_output_names_shared_links_and_unknown_host_memory(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["plan", str(_flow(tmp_path, P4D)), "--cards", "1,2"], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "gpu0, gpu1 share PCIe Gen3 x16" in text and "7.88 GB/s each" in text
    assert "host memory bandwidth unknown" in text and "host_to_all_memcpy_ce" in text
    doc = json.loads(CliRunner().invoke(app, ["plan", str(_flow(tmp_path, P5)), "--json"]).output)
    assert doc["host_memory"]["bandwidth_gbps"] is None and doc["host_memory"]["bandwidth_source"] == "unknown"
    assert doc["shared_links"] == []


@pytest.mark.parametrize(
    ("volume_per", "per_unit_8", "per_unit_4"),
    [("", 8 * 32 / 16, 4 * 32 / 16), ("replica", 16.0, 8.0), ("unit", 32.0, 32.0)],
)
def test_per_unit_volume_is_per_replica_unless_stated(
    tmp_path: Path, volume_per: str, per_unit_8: float, per_unit_4: float
) -> None:
    # 32 GiB into a step on every GPU of the lot, 16 units: per replica (the default) an 8-GPU lot
    # (Azure ND A100 v4) moves twice the data per unit of a 4-GPU lot (NC A100 v4); per unit, the same
    work = {"volume_per": volume_per} if volume_per else {}  # as written: `volume_per: replica` spelt out
    seen = {}
    for lot, n in ((SAMPLES / "snapshots" / "azure-ndv4.json", 8), (REAL / "nccl-xml" / "azure-ncv4.xml", 4)):
        path = _flow(tmp_path, lot, {**work, "count": 16, "duration": "12 min"}, on="lot:gpus", volume="32 GiB")
        r = _plan(path, [1])
        seen[n] = {lg.volume_bytes for lg in r.legs}
        rule = next(x for x in r.assumptions if x.startswith("per-unit volume"))
        assert ("work.volume_per: unit" in rule) == ("unit" in volume_per)
        assert (f"runs on all {n} GPUs of lot" in rule) == ("unit" not in volume_per)
        assert r.volume_per == ("unit" if "unit" in volume_per else "replica")
    assert seen == {8: {int(per_unit_8 * GIB)}, 4: {int(per_unit_4 * GIB)}}


def test_volume_per_refuses_other_words(tmp_path: Path) -> None:
    # the spelling refused and its line are under test: the file as a person writes it
    path = tmp_path / "f.yaml"
    path.write_text(
        f"flow: load\nhosts:\n  lot: {P5}\nwork:\n  count: 8\n  duration: 12 min\n  volume_per: block\nsteps:\n"
        "  data: {kind: input, on: lot:memory}\n  run: {kind: compute, on: lot:gpu0}\n"
        "arrows:\n  - {from: data, to: run, volume: 640 GiB}\n"
    )
    res = CliRunner().invoke(app, ["plan", str(path)])
    assert res.exit_code == 2
    assert f"{path}:7:" in res.output and "replica, unit" in res.output


def test_outputs_through_one_nic_share_it(tmp_path: Path) -> None:
    # results written to another p5's memory: every card's output enters that host through the NIC
    # nearest its memory (rdmap79s0, 100 Gb/s = 12.5 GB/s): two cards at once get half each
    path = write_flow(
        tmp_path / "net.yaml",
        {"run": step("compute", "lot:gpu0"), "keep": step("output", "store:memory")},
        [arrow("run", "keep", "80 GB")],
        name="net",
        hosts={"lot": P5, "store": P5},
        work=LOAD,
    )
    r = _plan(path, [1, 2, 4])
    alone = 10e9 / 12.5e9  # 10 GB per unit at the NIC's 12.5 GB/s
    outs = {k: max(ln.cost.output_s for ln in _arr(r, k).lanes) for k in (1, 2, 4)}
    assert outs == {1: pytest.approx(alone), 2: pytest.approx(2 * alone), 4: pytest.approx(4 * alone)}
    nic = [lk for lk in r.sharing if lk.cards_at_once == 2 and lk.hop.kind == "nic"]
    assert [(lk.hop.what, lk.cards, lk.each_gbps) for lk in nic] == [
        ("NIC rdmap79s0 (in) on store", ("gpu0", "gpu1"), pytest.approx(6.25))
    ]
