"""The expected busbw feeding the decisions (issue 32): `map` times a flow's exchange steps and `nccl: true`
arrows, `plan` pays a coordinated exchange at it, `diff` ranks a flow's collectives only where the ranges do
not overlap, `check`'s collective_busbw rule, and nccl-tests results kept by `attach` and shown by
`matrix --bandwidth` and `report` beside the expectation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fakes.flows import arrow, flow_yaml, step
from tests.nccl_lots import DATA
from topomap.base.errors import ImportFailure
from topomap.cli import app
from topomap.collective.expect import expect
from topomap.collective.lot import plan, plan_parts
from topomap.diff.collectives import rank_ranges
from topomap.flow import bind, gpus_of, parse_flow
from topomap.flow.collective_time import collective_times
from topomap.graph import Topology, build
from topomap.importers import load_any
from topomap.importers.nccl_results import attach_results
from topomap.importers.nccl_tests import parse_nccl_tests
from topomap.nccl.attached import attached
from topomap.plan.costs import map_pairs
from topomap.plan.exchange import exchange_step

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
OCI = ROOT / "samples" / "lots" / "oci-bm-gpu4-8.xml"
IBM = ROOT / "samples" / "snapshots" / "ibm-gx3d-h100-8gpu.json"
UNTUNED = DATA / "a100-oci-bm-gpu4-2node-roce-untuned.txt"


def _tp(snap: Path | None = None) -> str:
    """Shards and an all-reduce on every GPU of lot, then an NCCL send to peer's gpu0 (both on ``snap``)."""
    return flow_yaml(
        {
            "shards": step("compute", "lot:gpus"),
            "allreduce": step("exchange", "lot:gpus"),
            "far": step("compute", "peer:gpu0"),
        },
        [arrow("shards", "allreduce", "1 GiB"), arrow("allreduce", "far", "512 MiB", nccl=True)],
        name="tp",
        hosts={"lot": snap, "peer": snap},
    )


FLOW = _tp()


def _topo(path: Path) -> Topology:
    return build(load_any(path))


def _times(text: str, topos: dict[str, Topology | None]) -> list:  # type: ignore[type-arg]
    f = parse_flow(text, "t.yaml")
    bind(f, gpus_of(topos))
    return collective_times(f, topos)


def test_an_exchange_step_is_an_all_reduce_at_the_perf_figure() -> None:
    oci = _topo(OCI)
    times = _times(FLOW, {"lot": oci, "peer": oci})
    step = times[0]
    peak = expect(plan(oci.snapshot), "all_reduce")
    assert step.what == "exchange step allreduce" and step.collective == "all_reduce" and step.ranks == 8
    assert step.peak_gbps == peak.busbw_gbps  # the `--perf` figure on that lot
    assert step.busbw_gbps is not None and step.busbw_gbps < peak.busbw_gbps  # at 1 GiB, latency included
    assert step.seconds == round(2 * 7 / 8 * 2**30 / (step.busbw_gbps * 1e9), 6)
    assert step.volume_bytes == 2**30 and step.hosts == 1  # 1 GiB per card, inside one host
    assert "→" in step.text()


def test_an_nccl_arrow_between_hosts_is_a_sendrecv() -> None:
    ibm = _topo(IBM)
    times = _times(FLOW, {"lot": ibm, "peer": ibm})
    arrows = [t for t in times if t.collective == "sendrecv"]
    assert arrows and all(t.hosts == 2 and t.ranks == 2 for t in arrows)
    one = expect(plan_parts([(ibm.snapshot, [0]), (ibm.snapshot, [0])]), "sendrecv")
    assert arrows[0].peak_gbps == one.busbw_gbps and arrows[0].seconds is not None


def test_unknown_facts_leave_the_time_unknown_with_what_settles_it() -> None:
    sys_box = _topo(ROOT / "samples" / "snapshots" / "rtx4090-8gpu-all-sys.json")
    step = _times(FLOW, {"lot": sys_box, "peer": sys_box})[0]
    assert step.seconds is None and step.busbw_gbps is None and step.missing and step.settle
    assert step.peak_gbps is None and step.settle == ("`nvidia-smi -q` (section GPU Link Info) or `topomap probe`",)


def test_map_json_and_text_carry_the_collectives() -> None:
    flow = ROOT / "samples" / "flows" / "big-task-dgx2.yaml"
    out = runner.invoke(app, ["map", str(flow), "--json"])
    assert out.exit_code == 0
    (c,) = json.loads(out.output)["collectives"]
    assert c["collective"] == "all_reduce" and c["ranks"] == 16 and c["seconds"] > 0
    text = runner.invoke(app, ["map", str(flow)]).output
    assert "Collectives (time at the expected NCCL busbw" in text and "exchange step reduce" in text


def test_plan_pays_the_exchange_at_the_expected_all_reduce() -> None:
    oci = _topo(OCI)
    cards = [f"gpu{i}" for i in range(8)]
    seconds, how = exchange_step(oci, {}, cards, 2**30)
    e = expect(plan(oci.snapshot, gpu_indexes=list(range(8))), "all_reduce")
    assert e.busbw_gbps is not None and seconds == 2 * 7 / 8 * 2**30 / (e.busbw_gbps * 1e9)
    assert how.startswith("NCCL all-reduce at its expected")
    assert exchange_step(oci, {}, ["gpu0"], 2**30) == (0.0, "one card: no exchange")
    seconds, how = exchange_step(oci, {}, cards, None)
    assert seconds is None and "exchange volume not declared" in how


def test_plan_falls_back_to_the_slowest_link_where_the_figure_is_unknown() -> None:
    sys_box = _topo(ROOT / "samples" / "snapshots" / "rtx4090-8gpu-all-sys.json")
    topos: dict[str, Topology | None] = {"lot": sys_box, "peer": sys_box}
    f = parse_flow(FLOW, "t.yaml")
    bind(f, gpus_of(topos))
    pairs = map_pairs(f, topos, "lot", ["gpu0", "gpu1"])
    _, how = exchange_step(sys_box, pairs, ["gpu0", "gpu1"], 2**20)
    assert "the expected all-reduce busbw is unknown" in how


@pytest.mark.parametrize(
    ("a", "b", "direction"),
    [
        ((100.0, 120.0), (130.0, 150.0), "better"),
        ((100.0, 120.0), (60.0, 90.0), "worse"),
        ((100.0, 120.0), (110.0, 300.0), "neutral"),  # overlapping ranges are not ranked
        ((100.0, 100.0), (100.0, 100.0), "neutral"),
    ],
)
def test_ranges_are_ranked_only_where_they_do_not_overlap(
    a: tuple[float, float], b: tuple[float, float], direction: str
) -> None:
    assert rank_ranges(a, b) == direction


def test_diff_of_two_lots_compares_the_flows_collectives_in_gbps() -> None:
    snaps = ROOT / "samples" / "snapshots"
    flow = ROOT / "samples" / "flows" / "tensor-parallel.yaml"
    out = runner.invoke(
        app,
        [
            "diff",
            str(snaps / "dgx2h-16gpu.json"),
            str(snaps / "hgx-h200-8gpu-10nic.json"),
            "--flow",
            str(flow),
            "--json",
        ],
    )
    d = json.loads(out.output)
    (c,) = [x for x in d["changes"] if x["kind"] == "collective"]
    assert c["subject"] == "exchange step allreduce" and c["direction"] == "better"
    assert "expected all_reduce busbw" in c["text"] and any("exchange step allreduce" in r for r in d["reasons"])


def _check(tmp_path: Path, rule: str, lot: Path) -> tuple[int, dict]:  # type: ignore[type-arg]
    req = tmp_path / "req.yaml"
    req.write_text(f"requirements:\n  - collective_busbw: {rule}\n")
    out = runner.invoke(app, ["check", str(req), str(lot), "--json"])
    return out.exit_code, json.loads(out.output)


def test_check_collective_busbw_pass_fail_unknown(tmp_path: Path) -> None:
    code, d = _check(tmp_path, "{collective: all_reduce, min_gbps: 200}", OCI)
    assert code == 0 and d["verdict"] == "pass"
    code, d = _check(tmp_path, "{collective: all_reduce, min_gbps: 300, hosts: 2}", OCI)
    assert code == 1 and d["verdict"] == "fail"
    code, d = _check(
        tmp_path, "{collective: all_reduce, min_gbps: 100}", ROOT / "samples/snapshots/rtx4090-8gpu-all-sys.json"
    )
    assert code == 3 and d["verdict"] == "unknown"
    (rule,) = d["rules"]
    assert rule["rule"] == "collective_busbw" and rule["status"] == "unknown" and rule["settle"]  # what settles it


def test_check_rejects_an_unknown_collective(tmp_path: Path) -> None:
    req = tmp_path / "req.yaml"
    req.write_text("requirements:\n  - collective_busbw: {collective: gather, min_gbps: 1}\n")
    out = runner.invoke(app, ["check", str(req), str(OCI), "--json"])
    d = json.loads(out.stdout)
    assert (out.exit_code, d["exit"], d["hint"]) == (
        2,
        2,
        "did you mean `all_gather`?",
    ) and "Traceback" not in out.output
    assert d["error"].startswith(f"{req}:2: Invalid enum value 'gather'")  # one line, naming the file's line


def test_attach_keeps_each_run_and_judges_it_against_the_snapshot(tmp_path: Path) -> None:
    snap = load_any(OCI)
    tests = parse_nccl_tests(UNTUNED.read_text(), str(UNTUNED))
    new, notes = attach_results(snap, tests)
    assert len(new.measurements) == len(snap.measurements) + 1
    assert any("2 identical hosts" in n for n in notes)
    again, _ = attach_results(new, tests)
    assert len(again.measurements) == len(new.measurements)  # the same run is not kept twice
    (a,) = attached(new)
    assert a.result.busbw_text == "57.04" and a.verdict == "far-below"
    perf = expect(plan(snap, hosts=2), "all_reduce")
    assert a.expected is not None and a.expected.busbw_gbps == perf.busbw_gbps


def test_attach_refuses_results_of_another_gpu_model() -> None:
    tests = parse_nccl_tests(UNTUNED.read_text(), str(UNTUNED))
    with pytest.raises(ImportFailure, match="the results ran on"):
        attach_results(load_any(ROOT / "samples" / "snapshots" / "dgx2h-16gpu.json"), tests)


def test_attach_cli_then_matrix_bandwidth_and_report(tmp_path: Path) -> None:
    out_snap = tmp_path / "oci.json"
    r = runner.invoke(app, ["attach", str(OCI), str(UNTUNED), "-o", str(out_snap)])
    assert r.exit_code == 0, r.output
    text = runner.invoke(app, ["matrix", "--bandwidth", str(out_snap)]).output
    assert "nccl-tests results" in text and "57.04 GB/s busbw measured" in text and "far-below" in text
    d = json.loads(runner.invoke(app, ["matrix", "--bandwidth", str(out_snap), "--json"]).output)
    assert d["collectives"][0]["verdict"] == "far-below" and d["collectives"][0]["measured_busbw_text"] == "57.04"
    flow = tmp_path / "f.yaml"
    flow.write_text(_tp(out_snap))
    page = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(flow), "-o", str(page)]).exit_code == 0
    html = page.read_text()
    assert "<h2>Collectives</h2>" in html and "57.04 GB/s busbw measured" in html and "exchange step allreduce" in html


def test_every_collective_figure_is_the_models_never_a_line_rate(tmp_path: Path) -> None:
    """alltoall and sendrecv between two declared hosts are the NICs' line rate × InfiniBand's efficiency
    (× alltoall's share of the data): a range this model estimates, labelled as all_reduce's is, not spec."""
    lot = tmp_path / "lot.yaml"
    lot.write_text('lot: 2x DGX H100\ntype: nvidia/dgx-h100\nhosts: 2\ngpudirect: true\ncuda: "12.8"\n')
    out = runner.invoke(app, ["nccl", str(lot), "--perf", "--json"])
    assert out.exit_code == 0, out.output
    perf = {e["collective"]: e for e in json.loads(out.output)["perf"]}
    assert perf["alltoall"]["bottleneck_kind"] == perf["sendrecv"]["bottleneck_kind"] == "network"
    assert perf["alltoall"]["low_gbps"] < perf["alltoall"]["busbw_gbps"]  # a range: an efficiency applied
    assert {e["origin"] for e in perf.values()} == {"model"}
    text = runner.invoke(app, ["nccl", str(lot), "--perf"]).output
    assert not [line for line in text.splitlines() if line.rstrip().endswith(" spec")]
