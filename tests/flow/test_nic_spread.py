"""All GPUs through one NIC (issue 19 item 4): GPUs equally near several NICs spread over them as NCCL
does, and arrows of one step that share a NIC share its rate — said on the arrow and in its figure."""

from __future__ import annotations

from collections import Counter

import msgspec
import pytest

from tests.conftest import REAL
from tests.fakes.flows import map_text, replicas_across
from topomap.flow.mapping import FlowMap
from topomap.graph import build
from topomap.graph.evidence import nearest_nic
from topomap.graph.gpudirect import mirror_bits as _mirror_bits
from topomap.importers import import_file
from topomap.model.snapshot import Snapshot

# 8x A100-SXM4-80GB whose 4 NICs are SYS to every GPU (github.com/LLMServe/DistServe/issues/3)
ALL_SYS = REAL / "nvidia-smi" / "a100-sxm4-80gb-8gpu-4nic-all-sys-distserve3.txt"

FLOW = replicas_across("a", "b", steps=("s1", "s2"), name="two-host-stages")


def _map(snap: Snapshot) -> FlowMap:
    return map_text(FLOW, {"a": build(snap), "b": build(snap)})


def test_nccl_mirror_bits() -> None:
    """NCCL's mirrorBits (src/graph/topo.cc): 4 NICs → 0, 2, 1, 3."""
    assert [_mirror_bits(v, 4) for v in range(4)] == [0, 2, 1, 3]
    assert [_mirror_bits(v, 8) for v in range(8)] == [0, 4, 2, 6, 1, 5, 3, 7]
    assert _mirror_bits(1, 2) == 1


def test_gpus_all_sys_to_four_nics_spread_two_on_each() -> None:
    t = build(import_file(ALL_SYS))
    chosen = [nearest_nic(t, f"gpu{i}") for i in range(8)]
    assert all(c.path == "SYS" for c in chosen)
    names = [c.nic.name for c in chosen if c.nic is not None]
    assert names == ["mlx5_0", "mlx5_2", "mlx5_1", "mlx5_3"] * 2  # NCCL: device number, bit-mirrored
    assert chosen[1].equally_near == ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3")
    assert any("NCCL spreads GPUs" in r for r in chosen[1].reasons)


def test_eight_cross_host_arrows_leave_through_four_nics_and_say_they_share() -> None:
    arrows = _map(import_file(ALL_SYS)).arrows
    assert len(arrows) == 8 and all(a.medium == "network" for a in arrows)
    out = Counter(next(x.nics for x in a.shared_nics if x.direction == "out") for a in arrows)
    assert out == {("mlx5_0",): 2, ("mlx5_1",): 2, ("mlx5_2",): 2, ("mlx5_3",): 2}
    gpu0 = next(a for a in arrows if a.src == "a:gpu0")
    assert gpu0.route[-1] == "b/gpu0" and "a/nic:mlx5_0" in gpu0.route
    share = next(x for x in gpu0.shared_nics if x.direction == "out")
    assert share.with_arrows == ("a:gpu4→b:gpu4",) and share.share_gbps is None  # topo -m has no NIC speed
    assert any(n.startswith("shares NIC mlx5_0 (out of a) with 1 other arrow") for n in gpu0.notes)
    assert gpu0.bandwidth().text() == "unknown (NIC shared by 2 arrows)"
    assert gpu0.to_json()["shared_nics"] == [x.to_json() for x in gpu0.shared_nics]


def test_a_shared_nic_halves_each_arrows_figure_when_its_rate_is_known() -> None:
    snap = import_file(ALL_SYS)
    snap = msgspec.structs.replace(snap, nics=[msgspec.structs.replace(n, speed_gbit_s=200.0) for n in snap.nics])
    gpu0 = next(a for a in _map(snap).arrows if a.src == "a:gpu0")
    assert gpu0.bandwidth_gbps == pytest.approx(12.5)  # 200 Gb/s = 25 GB/s, two arrows on mlx5_0
    assert "split among the 2 arrows" in gpu0.bandwidth_basis
    assert gpu0.bandwidth().text() == "12.5 GB/s spec (NIC shared by 2 arrows)"
    assert gpu0.seconds == pytest.approx(2**30 / 12.5e9, rel=1e-5)


def test_rails_go_one_gpu_per_nic_where_two_nics_sit_beside_two_gpus() -> None:
    """GCP A4 (B200): GPU0 and GPU1 both PIX to NIC0 and NIC1 — NCCL gives each its own."""
    t = build(import_file(REAL / "nvidia-smi" / "gcp-gke-a4-b200-8gpu-8nic.txt"))
    assert [nearest_nic(t, f"gpu{i}").nic.name for i in range(8)] == [f"mlx5_{i}" for i in range(8)]  # type: ignore[union-attr]
    arrows = _map(import_file(REAL / "nvidia-smi" / "gcp-gke-a4-b200-8gpu-8nic.txt")).arrows
    assert all(not a.shared_nics for a in arrows)


def test_fewer_gpus_near_the_first_nic_than_nics_use_every_nic_over_channels() -> None:
    """Real RTX 4090 box: only GPU6 is nearer (PHB) to the two NICs; NCCL counts one local GPU, so every
    GPU's channel 0 takes NIC0 and channel 1 NIC1: the step's eight arrows share both NICs."""
    snap = import_file(REAL / "nvidia-smi" / "rtx4090-8gpu-2nic-go-gpuallocator17.txt")
    t = build(snap)
    assert nearest_nic(t, "gpu0").channels == ("NIC0", "NIC1")
    snap = msgspec.structs.replace(snap, nics=[msgspec.structs.replace(n, speed_gbit_s=100.0) for n in snap.nics])
    gpu0 = next(a for a in _map(snap).arrows if a.src == "a:gpu0")
    out = next(x for x in gpu0.shared_nics if x.direction == "out")
    assert out.nics == ("NIC0", "NIC1") and out.arrows == 8
    assert out.share_gbps == pytest.approx(2 * 12.5 / 8)  # two 12.5 GB/s NICs over eight arrows
