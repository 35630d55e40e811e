"""`topomap nccl` on real NCCL logs (tests/data/real-nccl-logs, origins in its README) and samples."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from topomap.base.errors import TopomapError
from topomap.importers import load_any
from topomap.model.snapshot import Snapshot
from topomap.nccl.logread import read_log, transport_of
from topomap.nccl.nodes import predict
from topomap.nccl.predict import compare_log, predict_snapshot
from topomap.transport.decide import NicFact, PairFacts, decide
from topomap.transport.rules import NcclEnv, parse_env

LOGS = Path(__file__).parents[1] / "data" / "real-nccl-logs"
SAMPLES = Path(__file__).parents[2] / "samples" / "snapshots"


def _log(name: str):  # type: ignore[no-untyped-def]
    p = LOGS / name
    return read_log(p.read_text(), str(p))


def test_channel_line_families() -> None:
    assert transport_of("P2P/CUMEM/read") == "P2P"
    assert transport_of("P2P/direct pointer") == "P2P"
    assert transport_of("SHM/direct/direct") == "SHM"
    assert transport_of("NET/IB/3/GDRDMA") == "NET+GDR"
    assert transport_of("NET/IBext/0") == "NET"
    assert transport_of("NET/IB/1/Shared") == "NET"


def test_rtx4090_dump_predicts_shm_where_nccl_used_it() -> None:
    """nccl-tests#307: 8x RTX 4090, PHB inside a socket, SYS across: NCCL's default level PXB → SHM."""
    report = compare_log(_log("rtx4090-8gpu-shm-nccltests307.log"), None, NcclEnv())
    by_pair = {(e.src_rank, e.dst_rank): e for e in report.entries}
    assert by_pair[(0, 1)].decision.transport == "SHM" and by_pair[(0, 1)].observed == "SHM"
    assert "PHB" in by_pair[(0, 1)].decision.reasons[0]
    assert "SYS" in by_pair[(3, 4)].decision.reasons[0]
    assert by_pair[(2, 3)].decision.transport == "SHM"  # GPU/50000's row: the fourth excerpt of the post
    assert report.agreement == (8, 8)


def test_env_p2p_level_sys_turns_the_rtx_pairs_into_p2p() -> None:
    report = compare_log(_log("rtx4090-8gpu-shm-nccltests307.log"), None, parse_env(["NCCL_P2P_LEVEL=SYS"]))
    e = next(e for e in report.entries if (e.src_rank, e.dst_rank) == (0, 1))
    assert e.decision.transport == "P2P" and e.decision.detail.startswith("P2P/direct pointer")
    assert e.why_different is not None and "refused P2P" in e.why_different


def test_log_reads_version_env_hosts_and_gdr() -> None:
    log = _log("l20-1proc-direct-nccl1817.log")
    assert log.version == "2.20.5+cuda12.4"
    assert all(r.pid == 3884994 for r in log.ranks.values())
    ault = _log("ault43-p2p-off-shm-nccl1516.log")
    assert ault.env.get("NCCL_ALGO") == "Tree" and ("81000", "41000") in ault.p2p_refused
    h20 = _log("h20-2node-cumem-gdrdma-nccl1189.log")
    assert h20.ranks[2].host == "H20-GPU-06" and h20.ranks[0].bus == "18000"
    report = compare_log(h20, None, NcclEnv())
    cross = next(e for e in report.entries if (e.src_rank, e.dst_rank) == (1, 3))
    assert cross.observed == "NET+GDR" and cross.decision.rule == "other-host"
    # the excerpt has no NIC path and no GDR line: the network for sure, GPUDirect not guessed
    assert cross.decision.transport == "unknown" and "GPUDirect RDMA unknown" in cross.decision.detail


def test_multinode_without_gdrdma_is_net() -> None:
    report = compare_log(_log("deepspeed4715-ipc-read-ibext-nogdr.log"), None, NcclEnv())
    e = next(e for e in report.entries if (e.src_rank, e.dst_rank) == (1, 4))
    assert e.observed == "NET" and e.decision.transport == "unknown" and e.decision.rule == "other-host"


def test_p4d_log_against_snapshot_explains_read_as_nvlink() -> None:
    """nccl#527 (EC2 p4d, NCCL 2.9-era lines with bus ids) against the p4d sample (no NVLink recorded)."""
    snap = load_any(str(SAMPLES / "aws-p4d-24xlarge.json"))
    report = compare_log(_log("a100-p4d-ipc-read-nccl527.log"), snap, NcclEnv())
    e = next(e for e in report.entries if (e.src_rank, e.dst_rank) == (26, 25))
    assert (e.src_gpu, e.dst_gpu) == ("gpu2", "gpu1")
    assert e.decision.transport == "unknown" and e.why_different and "NVLink" in e.why_different


def test_snapshot_prediction_nvswitch_and_pcie() -> None:
    h200 = predict_snapshot(load_any(str(SAMPLES / "hgx-h200-8gpu-10nic.json")), NcclEnv())
    assert all(e.decision.transport == "P2P" and e.decision.rule == "p2p-nvlink" for e in h200.entries)
    assert h200.nics[0].nic == "mlx5_0" and h200.nics[0].gdr == "yes"
    off = predict_snapshot(load_any(str(SAMPLES / "hgx-h200-8gpu-10nic.json")), parse_env(["NCCL_P2P_DISABLE=1"]))
    assert {e.decision.transport for e in off.entries} == {"SHM"}
    rtx = predict_snapshot(load_any(str(SAMPLES / "rtx4090-8gpu-all-sys.json")), NcclEnv(), "one-process")
    assert {e.decision.transport for e in rtx.entries} <= {"SHM", "unknown"}


def test_decide_rules() -> None:
    pcie = PairFacts(same_host=True, same_process=False, path="PXB", nvlink=False, nvml_p2p=True)
    assert decide(pcie, NcclEnv(), "2.18.1").detail == "P2P/IPC over PCIe"
    assert decide(pcie, NcclEnv(), "2.21.5").detail == "P2P/CUMEM over PCIe"
    amd = PairFacts(
        same_host=True, same_process=False, path="SYS", nvlink=False, nvml_p2p=True, cpu="amd", local_gpus=2
    )
    assert decide(amd, NcclEnv()).rule == "p2p-amd-pair"
    gns = PairFacts(same_host=True, same_process=False, path="PIX", nvlink=False, nvml_p2p=False)
    assert decide(gns, NcclEnv()).transport == "SHM" and decide(gns, NcclEnv()).rule == "p2p-nvml"
    no_shm = decide(gns, parse_env(["NCCL_SHM_DISABLE=1"]))  # the network, GPUDirect unknown without a NIC
    assert no_shm.rule == "shm-disabled-env" and no_shm.transport == "unknown"
    assert no_shm.detail.startswith("NET via")
    a100 = PairFacts(same_host=True, same_process=True, path="NVL", nvlink=True, nvml_p2p=True, cc=("8.0", "8.0"))
    assert decide(a100, NcclEnv()).detail == "P2P/direct pointer/read over NVLink"
    # NVLink through another GPU (NVB) is within PXB but beyond NCCL_P2P_LEVEL=NVL, and never reads
    nvb = dataclasses.replace(a100, path="NVB")
    assert (decide(nvb, NcclEnv()).transport, decide(nvb, NcclEnv()).detail) == (
        "P2P",
        "P2P/direct pointer over NVLink",
    )
    assert decide(nvb, parse_env(["NCCL_P2P_LEVEL=NVL"])).transport == "SHM"


def test_p2p_level_by_release_family() -> None:
    """NCCL's default P2P level moved (paths.cc): before 2.23 SYS except on Intel/ARM/Zhaoxin (PXB); since
    2.23 PXB except x86 AMD with at most two GPUs (SYS); 2.7-2.8 kept PHB on non-Broadwell Intel."""

    def pair(path: str, cpu: str | None, n: int | None) -> PairFacts:
        return PairFacts(True, False, path, False, True, cpu=cpu, local_gpus=n)

    eight_amd_sys = pair("SYS", "amd", 8)
    assert decide(eight_amd_sys, NcclEnv(), "2.21.5").transport == "P2P"
    assert decide(eight_amd_sys, NcclEnv(), "2.21.5").rule == "p2p-cpu-level"
    assert decide(eight_amd_sys, NcclEnv(), "2.23.4").transport == "SHM"
    assert decide(pair("SYS", "amd", 2), NcclEnv(), "2.26.2").transport == "P2P"
    assert decide(pair("PHB", "intel", 8), NcclEnv(), "2.18.3").transport == "SHM"
    assert decide(pair("PHB", "intel", 8), NcclEnv(), "2.8.4").transport == "P2P"  # PHB level on Skylake
    assert decide(pair("PHB", "intel-bdw", 8), NcclEnv(), "2.8.4").transport == "SHM"
    assert decide(pair("PHB", "arm", 8), NcclEnv(), "2.12.12").transport == "SHM"
    # the vendor decides only beyond PXB: within it every family allows P2P
    assert decide(pair("PXB", None, 8), NcclEnv(), "2.12.12").transport == "P2P"
    unknown_cpu = decide(pair("SYS", None, 8), NcclEnv(), "2.12.12")
    assert unknown_cpu.transport == "unknown" and "CPU vendor" in unknown_cpu.reasons[0]
    # no version known: the newest family decides, and says where 2.9-2.22 would differ
    guess = decide(eight_amd_sys, NcclEnv())
    assert guess.transport == "SHM" and "NCCL 2.9-2.22 would allow P2P" in guess.reasons[0]


def test_gdr_read_rule() -> None:
    """Sends read GPU memory over the NIC only from a GPU with an NVLink peer: before Ampere since 2.12,
    every GPU before 2.12 (ncclTopoCheckGdr); receives are not asked."""
    nic = NicFact("mlx5_0", "PIX", True)

    def hop(cc: str, peer: bool, side: str) -> PairFacts:
        return PairFacts(
            False, False, None, None, None, (cc, cc), nic_src=nic, nic_dst=nic, nvlink_peer=(peer, peer), side=side
        )  # type: ignore[arg-type]

    assert decide(hop("7.5", False, "send"), NcclEnv(), "2.18.3").transport == "NET"
    assert decide(hop("7.5", False, "send"), NcclEnv(), "2.18.3").rule == "other-host"
    assert "NVLink peer" in decide(hop("7.5", False, "send"), NcclEnv(), "2.18.3").reasons[1]
    assert decide(hop("7.5", False, "receive"), NcclEnv(), "2.18.3").transport == "NET+GDR"
    assert decide(hop("7.0", True, "send"), NcclEnv(), "2.18.3").transport == "NET+GDR"
    assert decide(hop("8.0", False, "send"), NcclEnv(), "2.18.3").transport == "NET+GDR"
    assert decide(hop("8.0", False, "send"), NcclEnv(), "2.11.4").transport == "NET"
    assert decide(hop("7.5", False, "send"), parse_env(["NCCL_NET_GDR_READ=1"]), "2.18.3").transport == "NET+GDR"


def test_bad_logs() -> None:
    with pytest.raises(TopomapError, match="no channel lines"):
        _log("torchtitan1570-launcher-prefix-nvls.log")
    with pytest.raises(TopomapError, match="no NCCL INFO lines"):
        read_log("hello\nworld\n", "x.log")
    cut = read_log(
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\nh:1:2 [0] NCCL INFO Channel 01/0 : 1[1", "c"
    )
    assert len(cut.hops) == 1 and cut.skipped and "line 2" in cut.skipped[0]
    prefixed = read_log("[1,0]<stdout>:h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct", "p")
    assert prefixed.hops[0].transport == "SHM" and prefixed.hops[0].host == "h"
    with pytest.raises(TopomapError):
        parse_env(["NCCL_P2P_LEVEL=FAST"])


def test_cli_json_and_errors() -> None:
    import json

    from typer.testing import CliRunner

    from topomap.cli import app

    r = CliRunner().invoke(app, ["nccl", "--log", str(LOGS / "rtx4090-8gpu-shm-nccltests307.log"), "--json"])
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    assert {"src_rank", "dst_rank", "src_gpu", "dst_gpu", "predicted", "rule", "env", "observed"} <= set(
        data["pairs"][0]
    )
    assert data["agreement"] == {"same": 8, "total": 8}
    bad = CliRunner().invoke(app, ["nccl", "--log", str(LOGS / "torchtitan1570-launcher-prefix-nvls.log")])
    assert bad.exit_code == 2


def test_network_lines_of_real_logs() -> None:
    """Single lines as real logs print them: nccl#1537 (NET/IB Using, GDR disabled per HCA),
    nccl#1151 (per-GPU distance), nccl#1189 (a NET row of the path dump)."""
    text = "\n".join(
        (
            "hostname1:25668:27396 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; "
            "OOB primaryip:10.10.10.10<0>",
            "hostname1:25668:27396 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'",
            "h:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU ca000 / HCA 0 (distance 7 > 4)",
            "H20-GPU-06:4015540:4015653 [1] NCCL INFO NET/4 :GPU/18000 (6/10.000000/SYS) GPU/38000 (6/10.000000/SYS) "
            "CPU/0 (4/10.000000/SYS) NET/4 (0/5000.000000/LOC)",
            "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0(3)/GDRDMA",
        )
    )
    log = read_log(text, "lines.log")
    assert log.hca_names == {("hostname1", 0): "mlx5_0", ("hostname1", 1): "mlx5_1"}
    assert log.hca_gdr == {("hostname1", 0): False}
    assert log.gpu_hca[("h", "ca000", 0)] == (False, 7, 4)
    h20 = "H20-GPU-06"
    assert log.gpu_net_paths[(h20, "18000", 4)] == "SYS" and log.gpu_net_paths[(h20, "38000", 4)] == "SYS"
    assert log.hops[0].nic == (0, 3) and log.hops[0].local == 0


def test_gdr_from_the_logs_own_lines_decides_the_network_hop() -> None:
    """A two-host log written in NCCL's formats (not a real one): the sending GPU's NIC is PIX in the
    dump and GDR is enabled for it; the other host's NIC has GDR disabled (no peermem)."""
    text = "\n".join(
        (
            "a:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
            "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x9 - Init START",
            "b:2:2 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x9 - Init START",
            "a:1:1 [0] NCCL INFO GPU/18000 :GPU/18000 (0/5000.0/LOC) NET/0 (3/24.0/PIX)",
            "a:1:1 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 18000 / HCA 0 (distance 4 <= 5), read 0",
            "b:2:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'",
            "a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA",
            "b:2:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/IB/0",
        )
    )
    report = compare_log(read_log(text, "two.log"), None, NcclEnv())
    by = {(e.src_rank, e.dst_rank): e for e in report.entries}
    assert by[(0, 1)].decision.transport == "NET+GDR" and by[(0, 1)].observed == "NET+GDR"
    assert by[(1, 0)].decision.transport == "NET" and by[(1, 0)].observed == "NET"
    assert "does not support GPUDirect" in " ".join(by[(1, 0)].decision.reasons)
    assert report.agreement == (2, 2)


def test_log_with_only_a_topology_tree_is_predicted_from_it() -> None:
    """nccl#1519 (H100 behind PLX switches): the excerpt has NCCL's tree but no channel lines; the
    prediction comes from the tree imported as a snapshot: NVLink P2P, and each GPU's NIC PIX, GDR unknown."""
    from typer.testing import CliRunner

    from topomap.cli import app

    r = CliRunner().invoke(app, ["nccl", "--log", str(LOGS / "h100-plx-dump-nccl1519.log"), "--json"])
    assert r.exit_code == 0, r.stdout
    import json

    data = json.loads(r.stdout)
    assert {(p["predicted"], p["rule"]) for p in data["pairs"]} == {("P2P", "p2p-nvlink")}
    # the dump names its NICs NET/n, no family: GPUDirect RDMA is unknown, never assumed (issue 30)
    assert data["nics"][0]["path"] == "PIX" and data["nics"][0]["gdr"] == "unknown"
    assert "family (InfiniBand, RoCE or EFA, vendor not recorded) is not known" in data["nics"][0]["why"]
    assert "no channel lines; predicted from the log's own topology dump" in data["notes"][0]


def test_containers_and_release_family_from_the_cli() -> None:
    """``--ranks 0,1:containers``: another hostname is another host to NCCL, so even NVLink-joined GPUs
    of the real H200 paste use the network (GDR: each GPU's NIC is PIX); ``--nccl-version`` picks the
    release family, and an unknown CPU vendor then leaves the SYS pairs unknown, saying why."""
    import json

    from typer.testing import CliRunner

    from topomap.cli import app

    h200 = str(SAMPLES / "hgx-h200-8gpu-10nic.json")
    r = CliRunner().invoke(app, ["nccl", h200, "--ranks", "0,1:containers", "--json"])
    assert r.exit_code == 0, r.output
    pairs = json.loads(r.output)["pairs"]
    assert [(p["src_gpu"], p["dst_gpu"], p["predicted"], p["rule"]) for p in pairs] == [
        ("gpu0", "gpu1", "NET+GDR", "other-container"),
        ("gpu1", "gpu0", "NET+GDR", "other-container"),
    ]
    rtx = str(SAMPLES / "rtx4090-8gpu-all-sys.json")
    old = CliRunner().invoke(app, ["nccl", rtx, "--nccl-version", "2.18.3"])
    assert old.exit_code == 0 and "rules of NCCL 2.18.3's release family" in old.output
    assert "NCCL 2.18.3 sets the P2P level by CPU vendor, which is not recorded" in old.output
    new = CliRunner().invoke(app, ["nccl", rtx, "--json"])
    assert {p["predicted"] for p in json.loads(new.output)["pairs"]} == {"SHM"}  # PXB level: vendor moot
    bad = CliRunner().invoke(app, ["nccl", rtx, "--nccl-version", "latest"])
    assert bad.exit_code == 2 and "--nccl-version 'latest': not an NCCL release" in bad.output
    bad = CliRunner().invoke(app, ["nccl", rtx, "--ranks", "0,1:pods"])
    assert bad.exit_code == 2 and "'pods' is not a rank mode" in bad.output


def test_several_nodes_from_a_merged_snapshot() -> None:
    """A merged snapshot is several nodes: ranks host by host, NVLink P2P inside each host, and the same
    local rank on the two hosts joined over the network with GPUDirect RDMA (each H200/A100 NIC is PIX)."""
    import msgspec

    from topomap.model.merge import merge

    def named(file: str, name: str) -> Snapshot:
        snap = load_any(str(SAMPLES / file))
        return msgspec.structs.replace(snap, host=msgspec.structs.replace(snap.host, hostname=name))

    cluster = merge([("a", named("hgx-h200-8gpu-10nic.json", "a")), ("b", named("hgx-a100-8gpu-8nic.json", "b"))])
    report = predict(cluster, NcclEnv())
    by = {(e.src_rank, e.dst_rank): e for e in report.entries}
    assert len(report.entries) == 2 * 56 + 2 * 8
    assert (by[(9, 10)].src_host, by[(9, 10)].src_gpu, by[(9, 10)].decision.transport) == ("b", "gpu1", "P2P")
    assert (by[(0, 8)].dst_name, by[(0, 8)].decision.transport, by[(0, 8)].decision.rule) == (
        "b:gpu0",
        "NET+GDR",
        "other-host",
    )
    assert by[(15, 7)].decision.detail == "via mlx5_7 with GPUDirect RDMA"
    assert (0, 9) not in by  # across hosts only the ring neighbours
    # --ranks applies on every host: ranks 0-1 on a:gpu2,gpu3 and 2-3 on b:gpu2,gpu3, joined across hosts
    picked = predict(cluster, NcclEnv(), "2,3").entries
    across = [(e.src_name, e.dst_name) for e in picked if e.decision.rule == "other-host"]
    assert across == [("a:gpu2", "b:gpu2"), ("a:gpu3", "b:gpu3"), ("b:gpu2", "a:gpu2"), ("b:gpu3", "a:gpu3")]
    assert sorted({(e.src_rank, e.dst_rank) for e in picked if e.decision.rule == "other-host"}) == [
        (0, 2),
        (1, 3),
        (2, 0),
        (3, 1),
    ]
    assert [f.gpu for f in report.features][7:9] == ["a:gpu7", "b:gpu0"]  # PXN, NVLS, MNNVL per host's GPU
    assert report.features[0].pxn.can == "no" and "PIX" in report.features[0].pxn.why


def test_multi_node_nvlink_clique_is_p2p_across_hosts() -> None:
    """Two hosts whose GPUs share a fabric cluster UUID and clique (a GB200 NVL rack) use P2P over the
    fabric (ncclTopoCheckMNNVL); NCCL_MNNVL_ENABLE=0, another clique, or NCCL before 2.20 use the network.
    A log says it with "MNNVL 1" in its init lines (lines below written in NCCL 2.26's formats)."""
    import msgspec

    from topomap.model.merge import merge
    from topomap.model.snapshot import Fabric

    def node(name: str, clique: int) -> Snapshot:
        snap = load_any(str(SAMPLES / "hgx-h200-8gpu-10nic.json"))
        fab = Fabric(cluster_uuid="6f1c1b2e-0000-4000-8000-00000000beef", clique_id=clique, state="completed")
        gpus = [msgspec.structs.replace(g, fabric=fab) for g in snap.gpus]
        return msgspec.structs.replace(snap, gpus=gpus, host=msgspec.structs.replace(snap.host, hostname=name))

    rack = predict(merge([("a", node("a", 7)), ("b", node("b", 7))]), NcclEnv())
    by = {(e.src_rank, e.dst_rank): e.decision for e in rack.entries}
    assert (by[(0, 8)].transport, by[(0, 8)].rule) == ("P2P", "p2p-mnnvl")
    off = predict(merge([("a", node("a", 7)), ("b", node("b", 7))]), parse_env(["NCCL_MNNVL_ENABLE=0"]))
    assert {e.decision.rule for e in off.entries if e.src_rank // 8 != e.dst_rank // 8} == {"other-host"}
    apart = predict(merge([("a", node("a", 7)), ("b", node("b", 8))]), NcclEnv())
    assert {e.decision.transport for e in apart.entries if e.src_rank // 8 != e.dst_rank // 8} == {"NET+GDR"}
    old = predict(merge([("a", node("a", 7)), ("b", node("b", 7))]), NcclEnv(), None, "2.19.4")
    assert {e.decision.rule for e in old.entries if e.src_rank // 8 != e.dst_rank // 8} == {"other-host"}

    text = "\n".join(
        (
            "a:1:1 [0] NCCL INFO NCCL version 2.26.2+cuda12.8",
            "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 1",
            "b:2:2 [0] NCCL INFO comm 0x2 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 1",
            "a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via P2P/MNNVL/read",
            "b:2:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] via P2P/MNNVL/read",
        )
    )
    report = compare_log(read_log(text, "mnnvl.log"), None, NcclEnv())
    assert [(e.decision.transport, e.decision.rule, e.observed) for e in report.entries] == [
        ("P2P", "p2p-mnnvl", "P2P"),
        ("P2P", "p2p-mnnvl", "P2P"),
    ]


def test_gdr_said_by_the_log_decides_either_side() -> None:
    """NCCL 2.4 names the GPU of its GDR lines by CUDA device: the printing process's "GPU Direct RDMA
    Disabled for GPU 2[2] / HCA 0 (distance 3 >= 2)" decides its network hops (nv_peer_memory#56); a
    pair printed by both ends is decided by the end whose facts tell it (nccl#899, "(no module)" on one
    host): never by what was observed."""
    old = {
        (e.src_rank, e.dst_rank): e
        for e in compare_log(_log("nccl24-2node-ring-gdr-distance-nvpeermem56.log"), None, NcclEnv()).entries
    }
    for pair in ((2, 6), (3, 6), (6, 2)):
        assert (old[pair].decision.transport, old[pair].observed) == ("NET", "NET")
        assert "GPU Direct RDMA Disabled for this GPU / HCA 0" in old[pair].decision.reasons[-1]
    assert old[(0, 2)].decision.transport == "unknown"  # a P2P hop with no topology stays unknown
    both = compare_log(_log("peermem-no-module-2node-nccl899.log"), None, NcclEnv()).entries
    assert [(e.src_rank, e.dst_rank, e.decision.transport, e.observed) for e in both] == [
        (0, 1, "NET", "NET"),
        (1, 0, "NET", "NET"),
    ]


def test_switch_variables_read_as_nccl_reads_them() -> None:
    """NCCL reads its switches as integers (strtoll): NCCL_P2P_DISABLE=yes reads 0 and keeps P2P; a
    *_DISABLE acts at 1 only; 0x1 is 1."""
    nvl = PairFacts(same_host=True, same_process=False, path="NVL", nvlink=True, nvml_p2p=True)
    assert decide(nvl, parse_env(["NCCL_P2P_DISABLE=yes"])).transport == "P2P"
    assert decide(nvl, parse_env(["NCCL_P2P_DISABLE=2"])).transport == "P2P"
    assert decide(nvl, parse_env(["NCCL_P2P_DISABLE=0x1"])).transport == "SHM"


def test_nccl_tests_rank_table_gives_each_ranks_gpu_model() -> None:
    """nccl-tests' "#  Rank  1 Group  0 Pid … device  0 [0000:81:00] NVIDIA A100-PCIE-40GB" names each
    rank's GPU: compute capability 8.0, so its sends may read GPU memory over the NIC without an NVLink
    peer (ncclTopoCheckGdr, 2.12 and later)."""
    from topomap.nccl.facts import log_cc

    log = _log("a100pcie-2node-gdr-level-sys-nccltests350.log")
    assert log.gpu_models[1] == "NVIDIA A100-PCIE-40GB" and log_cc(log, 1) == "8.0"
    two = _log("h20-2pods-same-node-socket-nccl1781.log")  # "nRanks 2 nNodes 2 localRanks 1"
    assert set(two.local_ranks.values()) == {1} and two.nranks == 2


def test_a_p2p_detail_is_nccls_own_name_on_every_sample() -> None:
    """A flow's NCCL note prints a P2P decision as "NCCL P2P/CUMEM over NVLink", deciding by the transport
    (not by the detail's first word, issue 33 item 1): every P2P detail is NCCL's name, "P2P/…"."""
    seen = 0
    for path in sorted(SAMPLES.glob("*.json")):
        snap = load_any(path)
        if snap.source.kind == "merge":
            continue
        for e in predict_snapshot(snap, NcclEnv()).entries:
            if e.decision.transport == "P2P":
                seen += 1
                assert e.decision.detail.startswith("P2P/"), (path.name, e.decision.detail)
            else:
                assert not e.decision.detail.startswith(f"{e.decision.transport}/"), (path.name, e.decision.detail)
    assert seen > 100
