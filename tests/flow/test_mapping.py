"""Every rule of "How an arrow gets its medium", on fake machines and real-topology samples."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, run_probe
from tests.fakes import machines
from tests.fakes.flows import flow_yaml, map_text, one_arrow, step
from topomap.api import bind_snapshots
from topomap.base.notes import Note
from topomap.flow import parse_flow
from topomap.flow.mapping import MappedArrow, map_flow
from topomap.graph import build
from topomap.importers import import_file, load_any
from topomap.model.codec import save_snapshot
from topomap.model.snapshot import Snapshot


def one(snaps: dict[str, Snapshot | None], src: str, dst: str, volume: str | None = None) -> MappedArrow:
    topos = {h: (build(s) if s is not None else None) for h, s in snaps.items()}
    m = map_text(one_arrow(src, dst, volume or None, hosts=dict.fromkeys(snaps)), topos)
    assert len(m.arrows) == 1
    return m.arrows[0]


@pytest.fixture(scope="module")
def h100(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return run_probe(machines.hgx_h100(), tmp_path_factory.mktemp("h100")).snapshot


def test_same_device_is_local(h100: Snapshot) -> None:
    a = one({"lot": h100}, "lot:gpu2", "lot:gpu2")
    assert a.medium == "local" and a.via == "local"


def test_nvswitch_pair_is_gpu_link(h100: Snapshot) -> None:
    a = one({"lot": h100}, "lot:gpu0", "lot:gpu7", "9 GiB")
    assert (a.medium, a.via, a.path) == ("gpu-link", "nvswitch", "NV18")
    assert a.bandwidth_gbps == pytest.approx(450.0) and a.bandwidth_source == "spec"  # 18 × 25, the data rate
    assert a.route == ["lot/gpu0", "lot/nvswitch:fabric", "lot/gpu7"]
    assert a.seconds == pytest.approx(9 * 2**30 / 450e9, abs=1e-6)


def test_gpu_to_host_memory_over_pcie(h100: Snapshot) -> None:
    a = one({"lot": h100}, "lot:memory", "lot:gpu0")
    assert (a.medium, a.via) == ("host-memory", "pcie") and a.bandwidth_gbps == pytest.approx(63.015)
    assert a.route[0] == "lot/numa0" and a.route[-1] == "lot/gpu0"
    a = one({"lot": h100}, "lot:memory@numa1", "lot:gpu0")
    assert a.path == "SYS" and any("inter-socket" in n for n in a.notes)


def test_pcie_p2p_when_read_and_write_ok(tmp_path: Path) -> None:
    s = run_probe(machines.a100_pcie(), tmp_path).snapshot
    a = one({"lot": s}, "lot:gpu0", "lot:gpu1")
    assert (a.medium, a.via, a.path) == ("gpu-link", "pcie-p2p", "PIX")
    assert a.bandwidth_gbps == pytest.approx(31.508) and "P2P read OK, write OK" in a.notes


def test_p2p_refused_stages_through_host_memory_with_the_reason(tmp_path: Path) -> None:
    s = run_probe(machines.consumer_pair(), tmp_path).snapshot
    a = one({"lot": s}, "lot:gpu0", "lot:gpu1")
    assert (a.medium, a.path) == ("host-memory", "PHB")
    assert any("P2P read GNS, write GNS; cuDeviceCanAccessPeer = 0" in n for n in a.notes)
    assert "lot/numa0" in a.route


def test_imported_matrix_without_p2p_status_says_which_rule_was_assumed(real: Path) -> None:
    s = import_file(real / "nvidia-smi" / "rtx4090-8gpu-2nic-go-gpuallocator17.txt")
    a = one({"lot": s}, "lot:gpu0", "lot:gpu1")
    assert a.medium == "host-memory" and a.bandwidth_gbps is None and a.bandwidth_source == "unknown"
    assert any("assumed NCCL's rule" in n and "SYS" in n for n in a.notes)
    s = import_file(real / "nvidia-smi" / "pcie-8gpu-pix-pxb-switch-tree-vllm11122.txt")
    a = one({"lot": s}, "lot:gpu0", "lot:gpu1")
    assert (a.medium, a.via, a.path) == ("gpu-link", "pcie-p2p", "PIX")
    assert any("peer-to-peer assumed" in n for n in a.notes)


def test_grace_gpu_reaches_host_memory_over_c2c(tmp_path: Path) -> None:
    s = run_probe(machines.gb200_tray(), tmp_path).snapshot
    a = one({"lot": s}, "lot:gpu1", "lot:memory")
    assert (a.medium, a.via) == ("host-memory", "c2c") and a.bandwidth_source == "unknown"


def test_two_trays_in_one_clique_are_mnnvl(tmp_path: Path) -> None:
    a_snap = run_probe(machines.gb200_tray(), tmp_path / "a").snapshot
    tray2 = machines.gb200_tray()
    tray2.gpus = [dataclasses.replace(g, uuid=g.uuid[:-4] + "beef") for g in tray2.gpus]
    b_snap = run_probe(tray2, tmp_path / "b").snapshot
    a = one({"t1": a_snap, "t2": b_snap}, "t1:gpu0", "t2:gpu3")
    # the fake prints 53.125 GB/s a link, NVLink 5 signalling: 18 × 50 GB/s data rate per direction
    assert (a.medium, a.via) == ("gpu-link", "mnnvl") and a.bandwidth_gbps == pytest.approx(18 * 50)
    other = machines.gb200_tray()
    other.gpus = [dataclasses.replace(g, uuid=g.uuid[:-4] + "cafe") for g in other.gpus]
    for g in other.gpus:
        assert g.fabric is not None
        g.fabric = dataclasses.replace(g.fabric, clique_id=8)
    c_snap = run_probe(other, tmp_path / "c").snapshot
    a = one({"t1": a_snap, "t3": c_snap}, "t1:gpu0", "t3:gpu3")
    assert a.medium == "network"


def test_network_through_the_nearest_nic_with_gpudirect(h100: Snapshot) -> None:
    a = one({"a": h100, "b": h100}, "a:gpu7", "b:gpu2", "1 GiB")
    assert (a.medium, a.via, a.path) == ("network", "infiniband", "NET")
    # gpu6 and gpu7 share mlx5_6 and mlx5_7: NCCL gives gpu7 the second (issue 19 item 4)
    assert "a/nic:mlx5_7" in a.route and "b/nic:mlx5_2" in a.route
    assert a.bandwidth_gbps == pytest.approx(50.0)  # 400 Gb/s NDR, narrower than the Gen5 x16 legs
    gdr = [n for n in a.notes if isinstance(n, Note) and n.template.startswith("GPUDirect RDMA possible on {host}")]
    assert [(n.host, dict(n.subjects)) for n in gdr] == [
        ("a", {"nic": "mlx5_7", "gpu": "gpu7"}),
        ("b", {"nic": "mlx5_2", "gpu": "gpu2"}),
    ]


def test_host_without_snapshot_is_network_with_unknown_bandwidth(h100: Snapshot) -> None:
    a = one({"lot": h100, "ws": None}, "lot:gpu0", "ws")
    assert a.medium == "network" and a.bandwidth_gbps is None and a.bandwidth_source == "unknown"
    assert [n.host for n in a.notes if isinstance(n, Note) and n.template.startswith("{host} has no snapshot")] == [
        "ws"
    ]


def test_no_gpudirect_when_nic_is_far(real: Path) -> None:
    s = import_file(real / "nvidia-smi" / "rtx4090-8gpu-2nic-go-gpuallocator17.txt")
    a = one({"lot": s, "ws": None}, "lot:gpu0", "ws")
    assert any("no GPUDirect RDMA on lot" in n and "SYS" in n for n in a.notes)


def test_exchange_step_is_all_pairs_both_ways(tmp_path: Path) -> None:
    snap = tmp_path / "s.json"
    save_snapshot(load_any(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"), snap)
    f = parse_flow(flow_yaml({"ar": step("exchange", "lot:gpus")}, hosts={"lot": snap}, name="x"), "x.yaml")
    m = map_flow(f, bind_snapshots(f, []))
    assert len(m.arrows) == 28 and all(a.both_ways and a.medium == "gpu-link" for a in m.arrows)
    assert {a.bandwidth_gbps for a in m.arrows} == {450.0}
    assert m.summary() == [
        {
            "medium": "gpu-link",
            "arrows": 28,
            "unknown_bandwidth": 0,
            "slowest": {"from": "lot:gpu0", "to": "lot:gpu1", "bandwidth_gbps": 450.0},
            "unknown": [],
            "unknown_ceiling_gbps": None,
        }
    ]


def test_sample_doc_conversion_media() -> None:
    from topomap.flow import read_flow

    f = read_flow(SAMPLES / "flows" / "doc-conversion.yaml")
    m = map_flow(f, bind_snapshots(f, []))
    media = [(a.src_step, a.dst_step, a.medium) for a in m.arrows]
    assert media == [
        ("batch-a", "convert-a", "host-memory"),
        ("batch-b", "convert-b", "host-memory"),
        ("convert-a", "assemble", "network"),
        ("convert-b", "assemble", "network"),
        ("assemble", "report", "host-memory"),
    ]


def test_sample_tensor_parallel_on_nvswitch_and_on_the_4090_box() -> None:
    from topomap.flow import read_flow

    f = read_flow(SAMPLES / "flows" / "tensor-parallel.yaml")
    m = map_flow(f, bind_snapshots(f, []))
    ex = [a for a in m.arrows if a.src_step == a.dst_step == "allreduce"]
    assert len(ex) == 28 and {(a.medium, a.via) for a in ex} == {("gpu-link", "nvswitch")}
    f = read_flow(SAMPLES / "flows" / "tensor-parallel.yaml")
    m = map_flow(f, bind_snapshots(f, [f"lot={SAMPLES / 'snapshots' / 'rtx4090-8gpu-all-sys.json'}"]))
    ex = [a for a in m.arrows if a.src_step == a.dst_step == "allreduce"]
    assert {a.medium for a in ex} == {"host-memory"}
    assert all(any("assumed NCCL's rule" in n for n in a.notes) for a in ex)


def test_map_asks_the_graph_for_the_memory_node_and_the_pcie_route() -> None:
    """One home per fact: host memory near a GPU is graph.evidence.memory_node's answer, and a GPU
    pair without NVLink travels graph.routes.route's PCIe route with its class and narrowest link."""
    from topomap.graph.evidence import memory_node
    from topomap.graph.routes import route

    snap = load_any(SAMPLES / "snapshots" / "rtx5090-pair-p2p-gns.json")
    topo = build(snap)
    a = one({"lot": snap}, "lot:gpu1", "lot:memory")
    assert a.route[-1] == f"lot/{memory_node(topo, 'gpu1')}"
    p2p = one({"lot": snap}, "lot:gpu0", "lot:gpu1")
    r = route(topo, "gpu0", "gpu1")
    assert p2p.path == r.path and p2p.medium == "host-memory"  # P2P GNS: staged, on the pair's class
    p4d = load_any(SAMPLES / "snapshots" / "aws-p4d-24xlarge.json")  # NVLink unknown: the PCIe route shown
    pair = one({"lot": p4d}, "lot:gpu0", "lot:gpu1")
    r = route(build(p4d), "gpu0", "gpu1")
    assert (pair.medium, pair.path) == ("unknown", r.path) and pair.route == [f"lot/{n}" for n in r.nodes]
