"""The facts a declared lot gives that decide the expected collective bandwidth (issues 31, 32): peer-to-peer
(`p2p:`), an NVLink domain across hosts (`nvlink_domain:`), the CUDA version (`cuda:`), and NICs whose place
a declaration never gives (spread as NCCL spreads equally near NICs; `NCCL_IB_HCA` names matched by count).
Each through the CLI, as a renter runs it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

LOTS = Path(__file__).resolve().parents[1] / "data" / "real-nccl-tests" / "lots"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "topomap", *args], capture_output=True, text=True, timeout=120)


def _json(*args: str) -> Any:
    done = _run(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _lot(tmp_path: Path, text: str) -> str:
    path = tmp_path / "lot.yaml"
    path.write_text(text)
    return str(path)


BOX = "lot: 4x RTX 4090\ngpus: {model: RTX 4090, count: 4}\ngpu_links: none\npcie: {gen: 4, width: 16}\n"


def test_declared_p2p_makes_every_pcie_pair_p2p_and_its_absence_shm(tmp_path: Path) -> None:
    yes = _json("nccl", _lot(tmp_path, BOX + "p2p: true\n"))
    assert len(yes["pairs"]) == 12 and {p["predicted"] for p in yes["pairs"]} == {"P2P"}
    assert all("as the lot declares it" in p["reasons"][0] for p in yes["pairs"])
    no = _json("nccl", _lot(tmp_path, BOX + "p2p: false\n"))
    assert {p["predicted"] for p in no["pairs"]} == {"SHM"}
    unknown = _json("nccl", _lot(tmp_path, BOX))  # not declared: the path would decide it, and it is not given
    assert {p["predicted"] for p in unknown["pairs"]} == {"unknown"}


def test_declared_p2p_gives_the_pcie_ring_figure(tmp_path: Path) -> None:
    perf = _json("nccl", _lot(tmp_path, BOX + "p2p: true\n"), "--perf", "--collective", "all_reduce")["perf"][0]
    assert perf["busbw_gbps"] == pytest.approx(24.0) and perf["bottleneck_kind"] == "pcie-p2p"
    shm = _json("nccl", _lot(tmp_path, BOX + "p2p: false\n"), "--perf", "--collective", "all_reduce")["perf"][0]
    assert shm["bottleneck_kind"] == "shm" and shm["busbw_gbps"] < perf["busbw_gbps"]


def test_an_nvlink_domain_puts_every_host_of_the_rack_in_one_clique() -> None:
    lot = str(LOTS / "gb200-nvl72-rack-coreweave43.yaml")
    snap = _json("show", lot)
    cliques = {(g["fabric"]["cluster_uuid"], g["fabric"]["clique_id"]) for m in snap["members"] for g in m["gpus"]}
    assert len(snap["members"]) == 18 and len(cliques) == 1
    assert any(
        f["field"] == "gpus.fabric" and f["origin"] == "declared" for f in snap["members"][0]["source"]["filled"]
    )
    perf = _json("nccl", lot, "--perf", "--collective", "all_reduce")["perf"][0]
    assert perf["hosts"] == 18 and perf["algorithm"] == "NVLS" and perf["busbw_gbps"] is not None


def test_two_racks_are_two_cliques(tmp_path: Path) -> None:
    text = "lot: 2x NVL72\nhosts: 36\ngpus: {model: GB200, count: 4}\ngpu_links: nvswitch\nnvlink_domain: 72\n"
    snap = _json("show", _lot(tmp_path, text))
    cliques = [m["gpus"][0]["fabric"]["clique_id"] for m in snap["members"]]
    assert cliques == [1] * 18 + [2] * 18


def test_the_cuda_version_is_declared_and_decides_nvls(tmp_path: Path) -> None:
    h100 = "lot: HGX H100\ngpus: {model: H100 SXM 80GB, count: 8}\ngpu_links: nvswitch\n"
    shown = _run("show", _lot(tmp_path, h100 + 'cuda: "12.8"\n'))
    assert "CUDA 12.8 (declared)" in shown.stdout
    with_cuda = _json("nccl", _lot(tmp_path, h100 + 'cuda: "12.8"\n'), "--perf", "--collective", "all_reduce")
    assert with_cuda["perf"][0]["algorithm"] == "NVLS" and with_cuda["perf"][0]["busbw_gbps"] is not None
    old = _json("nccl", _lot(tmp_path, h100 + 'cuda: "12.0"\n'), "--perf", "--collective", "all_reduce")
    assert old["perf"][0]["algorithm"] == "ring"  # NVLS needs CUDA 12.1
    without = _json("nccl", _lot(tmp_path, h100), "--perf", "--collective", "all_reduce")["perf"][0]
    assert without["busbw_gbps"] is None and any("CUDA" in m for m in without["missing"])


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ('cuda: "twelve"\n', "cuda"),
        ("cuda: true\n", "cuda"),
        ("cuda: 12.10\n", "cuda"),  # YAML's 12.1: refused, to be quoted
        ("nvlink_domain: 6\n", "nvlink_domain"),  # not whole hosts of 4
        ("nvlink_domain: 0\n", "nvlink_domain"),
        ("p2p: maybe\n", "p2p"),
    ],
)
def test_bad_declared_facts_are_one_line_naming_the_field(tmp_path: Path, extra: str, field: str) -> None:
    text = "lot: rack\nhosts: 18\ngpus: {model: GB200, count: 4}\ngpu_links: nvswitch\n" + extra
    done = _run("show", _lot(tmp_path, text))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and field in done.stderr


def test_an_nvlink_domain_needs_nvswitch(tmp_path: Path) -> None:
    text = "lot: x\ngpus: {model: H100 SXM 80GB, count: 8}\ngpu_links: none\nnvlink_domain: 16\nhosts: 2\n"
    done = _run("show", _lot(tmp_path, text))
    assert done.returncode == 2 and "nvlink_domain" in done.stderr and "gpu_links: nvswitch" in done.stderr


TWO = (
    "lot: 2x HGX H100\nhosts: 2\ngpus: {model: H100 SXM 80GB, count: 8}\ngpu_links: nvswitch\n"
    "nics: {count: 8, rate: 400 Gb/s, fabric: infiniband}\ngpudirect: true\n"
)


def test_declared_nics_are_spread_over_the_gpus_and_carry_gpudirect(tmp_path: Path) -> None:
    found = _json("nccl", _lot(tmp_path, TWO))
    lot1 = [n for n in found["nics"] if n["gpu"].startswith("lot-1:")]
    assert len(lot1) == 8 and len({n["nic"] for n in lot1}) == 8  # one NIC each, as NCCL spreads them
    assert {n["gdr"] for n in lot1} == {"yes"} and all(n["path"] is None for n in lot1)
    across = [p for p in found["pairs"] if p["rule"] == "other-host"]
    assert across and {p["predicted"] for p in across} == {"NET+GDR"}
    below = _json("nccl", _lot(tmp_path, TWO), "--env", "NCCL_NET_GDR_LEVEL=PIX")  # asks where each NIC sits
    assert {p["predicted"] for p in below["pairs"] if p["rule"] == "other-host"} == {"unknown"}


def test_ib_hca_names_a_lot_without_names_by_count(tmp_path: Path) -> None:
    lot = _lot(tmp_path, TWO)
    every = _json("nccl", lot, "--perf", "--collective", "all_gather")["perf"][0]
    two = _json("nccl", lot, "--perf", "--collective", "all_gather", "--env", "NCCL_IB_HCA==mlx5_0,mlx5_1")["perf"][0]
    assert every["busbw_gbps"] is not None and two["busbw_gbps"] is not None
    assert two["busbw_gbps"] < every["busbw_gbps"] / 2
    assert "2 NIC(s)" in two["bottleneck"]


REAL = Path(__file__).resolve().parents[1] / "data" / "real-nccl-tests"


def test_an_unknown_figures_range_is_bounded_by_the_network_too(tmp_path: Path) -> None:
    """18 NVL72 trays joined by InfiniBand (no NVLink domain declared), GPUDirect not given: the all-reduce is
    unknown, and its range cannot pass what four 400G NICs carry (200 GB/s), whatever NVLink could do."""
    text = (
        "lot: 18 trays\nhosts: 18\ngpus: {model: GB200, count: 4}\ngpu_links: nvswitch\n"
        "nics: {count: 4, rate: 400 Gb/s, fabric: infiniband}\n"
    )
    perf = _json("nccl", _lot(tmp_path, text), "--perf", "--collective", "all_reduce")["perf"][0]
    assert perf["busbw_gbps"] is None and perf["high_gbps"] is not None and perf["high_gbps"] <= 200.0
    assert perf["low_gbps"] is not None and perf["low_gbps"] < perf["high_gbps"]


def test_a_declared_slingshot_fabric_needs_no_nccl_net(tmp_path: Path) -> None:
    text = (
        "lot: 2x GH200\nhosts: 2\ngpus: {model: GH200 480GB, count: 1}\ngpu_links: none\n"
        "nics: {count: 1, rate: 200 Gb/s, fabric: slingshot}\n"
    )
    perf = _json("nccl", _lot(tmp_path, text), "--perf", "--collective", "all_reduce")["perf"][0]
    assert perf["busbw_gbps"] is not None and "Slingshot" in perf["bottleneck"]


def test_a_far_below_multi_host_run_names_a_slow_link_first_and_not_nvls() -> None:
    name = "h100-3node-cross-rack-degraded-nccl1453"
    r = _json("nccl", "--tests", str(REAL / f"{name}.txt"), str(LOTS / f"{name}.yaml"), "--nccl-version", "2.22.3")
    causes = [c["cause"] for c in r["results"][0]["causes"]]
    assert causes[0].startswith("a slow node or link") and not any(c.startswith("NVLS") for c in causes)


def test_the_log_inside_a_results_file_rules_out_fewer_nics_and_no_gdr() -> None:
    log = str(REAL / "a100-p4d-2node-efa-eks-mpi.log")
    lot = str(LOTS / "a100-p4d-2node-efa-eks-mpi.yaml")
    r = _json("nccl", "--tests", log, lot, "--nccl-version", "2.9.9", "--log", log)["results"][0]
    causes = [c["cause"] for c in r["causes"]]
    assert r["verdict"] == "below" and not any(c.startswith(("fewer NICs", "GPUDirect")) for c in causes)


def test_a_cut_rank_table_without_a_lot_knows_no_hosts() -> None:
    r = _json("nccl", "--tests", str(REAL / "gb200-nvl72-rack-coreweave43.txt"))["results"][0]
    assert r["ranks"] == 72 and r["hosts"] is None and r["verdict"] == "unknown"


def test_a_declared_memory_as_sold_is_a_lower_bound_in_plan(tmp_path: Path) -> None:
    """An H100 sold as 80 GB holds 79.6 GiB (81559 MiB): a task needing 79.5 GiB a card may fit, not 'does not'."""
    flow = (Path(__file__).resolve().parents[2] / "samples" / "flows" / "llm-batch-h100.yaml").read_text()
    lot = _lot(tmp_path, "lot: 8x H100\ngpus: {model: H100 SXM 80GB, count: 8, memory: 80 GB}\ngpu_links: nvswitch\n")
    flow = re.sub(r"memory_per_task: .*", "memory_per_task: 155 GiB", flow)
    path = tmp_path / "flow.yaml"
    path.write_text(flow)
    done = _run("plan", str(path), "--cards", "2", f"lot={lot}", "--json")
    assert done.returncode == 0, done.stderr
    fits = {a["memory_fit"]["verdict"] for a in json.loads(done.stdout)["arrangements"]}
    assert fits == {"unknown"}


MI = "lot: 8x MI300X\ngpus: {model: MI300X, count: 8}\n"


def test_an_amd_lot_declares_xgmi_and_its_views_speak_amd(tmp_path: Path) -> None:
    snap = _json("show", _lot(tmp_path, MI + "gpu_links: xgmi\n"))
    pairs = [p for p in snap["pairs"] if p["a"].startswith("gpu") and p["b"].startswith("gpu")]
    assert len(pairs) == 28 and {p["path"] for p in pairs} == {"XGMI"}
    assert {g["vendor"] for g in snap["gpus"]} == {"amd"}
    text = _run("nccl", _lot(tmp_path, MI + "gpu_links: xgmi\n"), "--perf").stdout
    assert "RCCL" in text.splitlines()[0] and "rccl-tests" in text


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (MI + "gpu_links: nvswitch\n", "joined by XGMI"),
        ("lot: x\ngpus: {model: H100 SXM 80GB, count: 8}\ngpu_links: xgmi\n", "has no XGMI"),
    ],
)
def test_xgmi_is_for_amd_parts_only(tmp_path: Path, text: str, said: str) -> None:
    done = _run("show", _lot(tmp_path, text))
    assert done.returncode == 2 and said in done.stderr and "gpu_links: xgmi" in done.stderr
