"""`topomap nccl LOT --perf` and `--tests` (issue 32): the figures of the model on the samples and on lots as
their authors describe them, the release rules, unknown facts naming what settles them, the CLI's text,
JSON and errors, and the likely causes a log or the snapshot's findings show or rule out."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from tests.nccl_lots import DATA, descriptions, lot_snapshot
from topomap.cli import app
from topomap.collective.expect import expect, expect_all
from topomap.collective.lot import plan
from topomap.importers import load_any
from topomap.importers.nccl_tests import parse_nccl_tests
from topomap.model.snapshot import Finding, Snapshot
from topomap.nccl.logread import read_log
from topomap.nccl.tests import judge
from topomap.transport.rules import NcclEnv, parse_env

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
IBM = str(ROOT / "samples" / "snapshots" / "ibm-gx3d-h100-8gpu.json")
OCI = str(ROOT / "samples" / "lots" / "oci-bm-gpu4-8.xml")
UNTUNED = str(DATA / "a100-oci-bm-gpu4-2node-roce-untuned.txt")
LOGS = ROOT / "tests" / "data" / "real-nccl-logs"


def lot(name: str) -> Snapshot:
    return lot_snapshot(name, descriptions()[name])


def test_h100_ring_is_18_links_at_nccls_per_link_figure() -> None:
    e = expect(plan(load_any(IBM)), "all_gather")
    assert e.busbw_gbps == pytest.approx(18 * 20.6 * 0.97) and e.algorithm == "ring" and e.origin == "model"
    assert "18 links" in e.bottleneck


def test_nvls_not_recorded_makes_all_reduce_unknown_with_what_settles_it() -> None:
    e = expect(plan(load_any(IBM)), "all_reduce")  # IBM's NCCL file: no CUDA driver version
    assert e.busbw_gbps is None and e.low_gbps is not None and e.high_gbps is not None
    assert any("nvidia-smi -q" in s for s in e.settle) and any("NVLS" in m for m in e.missing)


def test_the_release_decides_the_per_link_figure_and_nvls() -> None:
    snap = lot("h100-hgx-2node-ib-nccltests309.txt")  # CUDA 12.8: NVLS possible
    assert expect(plan(snap), "all_reduce").algorithm == "NVLS"
    assert expect(plan(snap, version="2.16.5"), "all_reduce").algorithm == "ring"  # NVLS came in 2.17
    old = expect(plan(snap, version="2.19.3"), "all_gather").busbw_gbps  # SM90 20.0 until 2.20
    assert old == pytest.approx(18 * 20.0 * 0.97)
    a100 = lot("a100-oci-bm-gpu4-1node.txt")
    assert expect(plan(a100, version="2.16.5"), "all_reduce").busbw_gbps == pytest.approx(12 * 22.0 * 0.97)


def test_two_nodes_take_the_tree_and_ncc_algo_ring_the_network() -> None:
    snap = lot("h100-hgx-2node-ib-nccltests309.txt")
    tree = expect(plan(snap, hosts=2), "all_reduce")
    ring = expect(plan(snap, hosts=2, env=parse_env(["NCCL_ALGO=Ring"])), "all_reduce")
    assert tree.algorithm == "NVLSTree" and ring.algorithm == "ring"
    assert ring.busbw_gbps is not None and tree.busbw_gbps is not None and ring.busbw_gbps < tree.busbw_gbps
    assert tree.low_gbps is not None and tree.low_gbps <= ring.busbw_gbps  # the ring's figure the low end
    four = expect(plan(snap, hosts=4), "all_reduce")
    assert four.busbw_gbps == pytest.approx(8 * 50 * 0.96)  # more nodes: the NICs


def test_nics_unknown_rate_and_no_nics_are_unknown_and_name_ibstat() -> None:
    e = expect(plan(load_any(str(ROOT / "samples" / "snapshots" / "hgx-a100-8gpu-8nic.json")), hosts=2), "all_gather")
    assert e.busbw_gbps is None and any("ibstat" in s for s in e.settle)
    one = lot("a100-oci-bm-gpu4-1node.txt")  # no NICs recorded at all
    e = expect(plan(one, hosts=2), "all_reduce")
    assert e.busbw_gbps is None and any("topo -m" in s for s in e.settle)


def test_one_gpu_per_node_is_capped_by_its_own_pcie_link() -> None:
    """nccl-tests#232: one H100 per node with four 400G NICs reaches ~50 GB/s, its Gen5 x16 link."""
    one = {"gpu": "NVIDIA H100 80GB HBM3", "gpus": 1, "board": "none", "pcie": [5, 16]}
    snap = lot_snapshot("x", {"lot": {**one, "nics": {"count": 4, "gbps": 400, "kind": "infiniband"}}})
    e = expect(plan(snap, hosts=2), "all_reduce")
    assert e.busbw_gbps == pytest.approx(48.0) and "PCIe" in e.bottleneck


def test_pcie_p2p_and_shm() -> None:
    p2p = lot("rtx4090-4gpu-patched-p2p-tinygrad36.txt")
    assert expect(plan(p2p), "all_reduce").busbw_gbps == pytest.approx(24.0)
    off = [
        msgspec.structs.replace(x, p2p=msgspec.structs.replace(x.p2p, read="NS", write="NS")) if x.p2p else x
        for x in p2p.pairs
    ]
    ns = msgspec.structs.replace(p2p, pairs=off)
    shm = expect(plan(ns), "all_reduce")
    assert shm.bottleneck_kind == "shm" and shm.busbw_gbps == pytest.approx(24.0 * 0.6)


def test_a_clique_of_hosts_is_one_nvlink_domain() -> None:
    e = expect(plan(lot("gb200-nvl72-rack-coreweave43.txt"), hosts=18), "all_reduce")
    assert e.algorithm == "NVLS" and e.hosts == 18 and e.ranks == 72 and any("MNNVL" in n for n in e.notes)


def test_the_curve_rises_to_the_peak() -> None:
    e = expect(plan(lot("a100-oci-bm-gpu4-1node.txt")), "all_reduce")
    points = [e.busbw_at(2**k) for k in range(3, 35)]
    assert all(a is not None and b is not None and a < b for a, b in itertools.pairwise(points))
    assert e.busbw_gbps is not None and points[-1] is not None and 0.9 * e.busbw_gbps < points[-1] < e.busbw_gbps


def test_tests_expected_is_the_perf_figure_for_the_same_lot() -> None:
    """`expected_busbw_gbps` is what `--perf` gives: the expectation never reads the measured rows."""
    tests = json.loads(runner.invoke(app, ["nccl", "--tests", UNTUNED, OCI, "--json"]).output)
    perf = json.loads(runner.invoke(app, ["nccl", OCI, "--perf", "--hosts", "2", "--json"]).output)
    expected = next(x["busbw_gbps"] for x in perf["perf"] if x["collective"] == "all_reduce")
    r = tests["results"][0]
    assert r["expected_busbw_gbps"] == expected and r["verdict"] == "far-below"
    assert set(r) >= {
        "collective",
        "ranks",
        "hosts",
        "max_bytes",
        "measured_busbw_gbps",
        "expected_busbw_gbps",
        "verdict",
        "causes",
    }
    assert r["measured_busbw_gbps"] == 57.04 and r["hosts"] == 2 and r["ranks"] == 16
    assert all(set(c) >= {"cause", "evidence", "settle"} for c in r["causes"])
    keys = {
        "collective",
        "hosts",
        "gpus_per_host",
        "busbw_gbps",
        "low_gbps",
        "high_gbps",
        "algorithm",
        "bottleneck",
        "origin",
        "settle",
    }
    assert all(keys <= set(x) for x in perf["perf"])


def test_perf_text_and_curve_options() -> None:
    out = runner.invoke(app, ["nccl", IBM, "--perf", "--collective", "all-gather", "--sizes", "1M:4M"])
    assert out.exit_code == 0 and "all_gather: busbw by message size" in out.output and "2 MiB" in out.output
    assert "359.7 GB/s" in out.output


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["nccl", "--perf"], "--perf needs the lot's snapshot"),
        (["nccl", IBM, "--perf", "--sizes", "8G:8"], "the range goes down"),
        (["nccl", IBM, "--perf", "--collective", "gather"], "not one nccl-tests measures"),
        (["nccl", IBM, "--perf", "-o", "curve.txt"], ".png or .svg"),
        (["nccl", IBM, "--perf", "--hosts", "0"], "at least one host"),
        (["nccl", "--tests", IBM], "not an nccl-tests output"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], words: str) -> None:
    out = runner.invoke(app, args)
    assert out.exit_code == 2 and words in out.output and "Traceback" not in out.output


def test_causes_a_log_shows_come_first_and_what_it_rules_out_goes() -> None:
    """A real log whose channels go via NET/Socket (nccl#1781): sockets is the cause, with its evidence."""
    text = (LOGS / "h20-2pods-same-node-socket-nccl1781.log").read_text()
    tests = parse_nccl_tests((DATA / "a100-oci-bm-gpu4-2node-roce-untuned.txt").read_text(), "u")
    report = judge(tests, load_any(OCI), NcclEnv(), None, (read_log(text, "l"), text))
    causes = report.results[0].causes
    assert causes[0].cause == "NCCL fell back to TCP sockets" and "NET/Socket" in causes[0].evidence
    assert not any(c.cause.startswith("GPUDirect") for c in causes)  # sockets never use it
    with_ib = text.replace("NET/Socket/", "NET/IB/")
    report = judge(tests, load_any(OCI), NcclEnv(), None, (read_log(with_ib, "l"), with_ib))
    assert not any("socket" in c.cause.lower() for c in report.results[0].causes)


def test_a_probe_finding_shows_acs_and_a_clean_probe_rules_it_out() -> None:
    tests = parse_nccl_tests((DATA / "a100-oci-bm-gpu4-2node-roce-untuned.txt").read_text(), "u")
    base = load_any(OCI)
    acs = Finding(kind="acs-redirect", subject="host", severity="warning", text="ACS ReqRedir+ on 0000:10:00.0")
    found = msgspec.structs.replace(base, findings=[acs])
    causes = judge(tests, found, NcclEnv(), None).results[0].causes
    assert causes[0].cause.startswith("ACS redirect") and "ReqRedir" in causes[0].evidence
    clean = msgspec.structs.replace(base, source=msgspec.structs.replace(base.source, kind="probe"))
    clean = msgspec.structs.replace(clean, host=msgspec.structs.replace(clean.host, iommu="passthrough"))
    listed = [c.cause for c in judge(tests, clean, NcclEnv(), None).results[0].causes]
    assert not any("ACS" in c for c in listed) and not any("IOMMU" in c for c in listed)


def test_small_sizes_are_named_as_the_cause() -> None:
    """nccl#2441's sweep stops at 1.5 MB: on a lot with its NICs given, the first cause is the sizes."""
    d = descriptions()["h100nvl-2x2-slingshot-small-sizes-nccl2441.txt"]
    given = {**d["lot"], "nics": {"count": 2, "gbps": 200, "kind": "slingshot"}}
    tests = parse_nccl_tests((DATA / "h100nvl-2x2-slingshot-small-sizes-nccl2441.txt").read_text(), "x")
    r = judge(tests, lot_snapshot("x", {"lot": given}), parse_env(d["env"]), None).results[0]
    assert r.verdict == "far-below" and r.causes[0].cause == "message sizes too small to reach the peak"
    assert "1.43051 MiB" in r.causes[0].evidence or "MiB" in r.causes[0].evidence


def test_every_collective_has_a_figure_on_a_known_lot() -> None:
    found = expect_all(plan(lot("h100-hgx-2node-ib-nccltests309.txt"), hosts=2))
    assert [e.collective for e in found] == [
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "alltoall",
        "sendrecv",
        "broadcast",
        "reduce",
    ]
    assert all(e.busbw_gbps is not None for e in found)
    a2a = next(e for e in found if e.collective == "alltoall")
    assert a2a.busbw_gbps == pytest.approx(384 * 15 / 64)  # (n−1)/(k(n−k)) of the NICs on 2 × 8 ranks
