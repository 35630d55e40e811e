"""`topomap place`: the search equals a brute force over every K-subset on every sample and real
topology; facts on real data (DGX-1 hybrid cube mesh quad, all-SYS RTX 4090 box, H200 NVSwitch with
10 NICs, a PCIe switch tree with PIX pairs, H100 NV6 with 4 NICs); unknown links stay unknown;
skips and their reasons; a synthetic 72-GPU NVSwitch domain."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import msgspec
import pytest

from topomap.graph import build
from topomap.graph.evidence import nearest_nic, nics_at_best_class
from topomap.importers import load_any
from topomap.model.facts import SETTLE
from topomap.model.snapshot import Gpu, Host, Mig, NumaNode, Pair, Snapshot, Source
from topomap.place import PlaceError, place_gpus
from topomap.place.candidates import NVLINK, P2P, STAGED, candidates
from topomap.place.search import build_space, group_score, search

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "samples" / "snapshots").glob("*.json"))
REAL = sorted(p for p in (ROOT / "tests" / "data" / "real-topologies").rglob("*") if p.suffix in (".txt", ".xml"))
REAL = [p for p in REAL if "bandwidth" not in p.parts]
SNAP = ROOT / "samples" / "snapshots"
SMI = ROOT / "tests" / "data" / "real-topologies" / "nvidia-smi"


def _topo(path: Path):  # type: ignore[no-untyped-def]
    return build(load_any(path))


def _brute(space, k):  # type: ignore[no-untyped-def]
    """Every K-subset scored by the definition; the best, its score, the ties and the runner-up score."""
    scored = [(group_score(space, m), m) for m in itertools.combinations(range(len(space.cands)), k)]
    top = max(s for s, _ in scored)
    best = min(m for s, m in scored if s == top)
    lower = [s for s, _ in scored if s < top]
    return best, top, sum(s == top for s, _ in scored), max(lower) if lower else None


@pytest.mark.parametrize("path", SAMPLES + REAL, ids=lambda p: p.name)
def test_search_equals_brute_force(path: Path) -> None:
    topo = _topo(path)
    cands, _ = candidates(topo, set())
    variants = [("tp", True)] if len(cands) > 8 else [("tp", False), ("tp", True), ("independent", True)]
    for pattern, nics in variants:
        space = build_space(topo, cands, pattern, nics)
        for k in range(1, len(cands) + 1):
            found = search(space, k)
            best, score, ties, second = _brute(space, k)
            assert (found.best, found.score, found.ties) == (best, score, ties), (pattern, nics, k)
            assert found.runner_score == second, (pattern, nics, k)


def test_dgx1_best_four_is_a_fully_nvlinked_quad() -> None:
    r = place_gpus(_topo(SNAP / "dgx1-v100.json"), 4)
    assert [g.gid for g in r.gpus] == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert len(r.links) == 6 and all(p.tier == NVLINK for p in r.links)
    assert {p.nvlinks for p in r.links} == {1, 2}  # the hybrid cube mesh: NV1 and NV2 bundles
    assert r.ties == 2  # the other quad, gpu4-7
    assert r.runner_up is not None and "staged through host memory (SYS)" in r.runner_lost[0]


def test_rtx4090_all_sys_keeps_the_group_on_one_numa_node() -> None:
    r = place_gpus(_topo(SNAP / "rtx4090-8gpu-all-sys.json"), 4)
    assert all(p.tier == STAGED and p.text == "staged through host memory (SYS)" for p in r.links)
    assert {g.numa_node for g in r.gpus} == {0}
    assert ("NUMA", "numactl --cpunodebind=0 --membind=0 CMD") in r.commands
    assert r.runner_lost == ["it spans 2 NUMA node(s) instead of 1"]
    assert r.unranked == []


def test_h200_nvswitch_gives_each_gpu_its_own_gpudirect_nic() -> None:
    r = place_gpus(_topo(SNAP / "hgx-h200-8gpu-10nic.json"), 8, nics=True)
    assert all(p.text.startswith("NV18 through NVSwitch") for p in r.links)
    nics = [g.nic for g in r.gpus]
    assert len(set(nics)) == 8 and all(g.nic_path == "PIX" and g.gdr == "yes" for g in r.gpus)
    hca = dict(r.commands)["NCCL"]
    assert hca == "NCCL_IB_HCA==" + ",".join(n for n in nics if n)  # '=': mlx5_1 must not match mlx5_10
    assert r.to_json()["nics"] == nics and r.to_json()["gpus"] == [f"gpu{i}" for i in range(8)]
    # each GPU's one PIX NIC (mlx5_1 and mlx5_2 are NODE to every GPU and stay unused)
    assert nics == ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]


def test_a100_gpus_sharing_a_pxb_switch_get_one_nic_each() -> None:
    topo = _topo(SNAP / "hgx-a100-8gpu-8nic.json")
    near = nics_at_best_class(topo, "gpu1")  # two NICs behind gpu0/gpu1's PCIe switches, equally near
    assert [(c.nic.name if c.nic else None, c.path, c.gdr.value) for c in near] == [
        ("mlx5_0", "PXB", "yes"),
        ("mlx5_1", "PXB", "yes"),
    ]
    # the NIC gpu1's traffic uses: NCCL spreads gpu0 and gpu1 over the two (issue 19 item 4)
    assert nearest_nic(topo, "gpu1").nic == near[1].nic and nearest_nic(topo, "gpu0").nic == near[0].nic
    r = place_gpus(topo, 2, nics=True)
    assert [(g.gid, g.nic, g.nic_path, g.gdr) for g in r.gpus] == [
        ("gpu0", "mlx5_0", "PXB", "yes"),
        ("gpu1", "mlx5_1", "PXB", "yes"),
    ]
    assert not any("share a NIC" in n for n in r.notes)
    r4 = place_gpus(topo, 4, nics=True)
    assert [g.nic for g in r4.gpus] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]


def test_gpudirect_outranks_a_distinct_nic() -> None:
    """With GPUDirect off for mlx5_1, gpu0 and gpu1 would share mlx5_0: gpu2 (mlx5_2) joins gpu0 instead."""
    snap = load_any(SNAP / "hgx-a100-8gpu-8nic.json")
    nics = [msgspec.structs.replace(n, gdr=False) if n.name == "mlx5_1" else n for n in snap.nics]
    topo = build(msgspec.structs.replace(snap, nics=nics))
    assert [c.gdr.value for c in nics_at_best_class(topo, "gpu0")] == ["yes", "no"]
    r = place_gpus(topo, 2, nics=True)
    assert [(g.gid, g.nic, g.gdr) for g in r.gpus] == [("gpu0", "mlx5_0", "yes"), ("gpu2", "mlx5_2", "yes")]
    r4 = place_gpus(topo, 4, nics=True)  # gpu4-7 have four NICs, gpu0-3 only three with GPUDirect
    assert [g.gid for g in r4.gpus] == ["gpu4", "gpu5", "gpu6", "gpu7"]
    assert [g.nic for g in r4.gpus] == ["mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"]
    # kept to gpu0-3, gpu1 keeps GPUDirect on a shared mlx5_0 rather than take mlx5_1 without
    r0 = place_gpus(topo, 4, nics=True, exclude={"gpu4", "gpu5", "gpu6", "gpu7"})
    assert [g.nic for g in r0.gpus] == ["mlx5_0", "mlx5_0", "mlx5_2", "mlx5_3"]
    assert all(g.gdr == "yes" for g in r0.gpus) and any("share a NIC" in n for n in r0.notes)


def test_two_nics_for_four_gpus_spread_then_share() -> None:
    r = place_gpus(_topo(SNAP / "rtx4090-8gpu-all-sys.json"), 4, nics=True)
    assert [g.nic for g in r.gpus] == ["NIC0", "NIC1", "NIC0", "NIC1"]  # both SYS, no GPUDirect: shared evenly
    assert all(g.gdr == "no" for g in r.gpus)


def test_pcie_switch_tree_pairs_are_pix() -> None:
    topo = _topo(SMI / "pcie-8gpu-pix-pxb-switch-tree-vllm11122.txt")
    r = place_gpus(topo, 2)
    assert [g.gid for g in r.gpus] == ["gpu0", "gpu1"]
    assert r.slowest is not None and r.slowest.tier == P2P and "PIX" in r.slowest.text
    r4 = place_gpus(topo, 4)
    assert r4.slowest is not None and "PXB" in r4.slowest.text


def test_h100_nv6_four_nics() -> None:
    r = place_gpus(_topo(SMI / "h100-4gpu-nv6-4nic-nccl1617.txt"), 2, nics=True)
    assert r.slowest is not None and r.slowest.nvlinks == 6
    assert len({g.nic for g in r.gpus}) == 2


def test_unknown_nvlink_is_never_no_nvlink() -> None:
    r = place_gpus(_topo(SNAP / "aws-p4d-24xlarge.json"), 4)  # NCCL file: no NVLink elements
    assert all(not p.certain and p.unknown == "NVLink" for p in r.links)
    assert not any("no NVLink" in p.text for p in r.links)
    assert r.unranked and "could not be ranked on NVLink" in r.unranked[0] and SETTLE["nvlink"] in r.unranked[0]


def _edit(path: Path, **changes: dict[str, object]) -> Snapshot:
    snap = load_any(path)
    gpus = [msgspec.structs.replace(g, **changes.get(f"gpu{g.index}", {})) for g in snap.gpus]
    return msgspec.structs.replace(snap, gpus=gpus)


def test_lost_mig_and_excluded_gpus_are_skipped_with_reasons() -> None:
    snap = _edit(SNAP / "dgx1-v100.json", gpu1={"lost": True}, gpu2={"mig": Mig(enabled=True)})
    r = place_gpus(build(snap), 4, exclude={"gpu0"})
    reasons = {s.gid: s.reason for s in r.skipped}
    assert "lost" in reasons["gpu1"] and "MIG" in reasons["gpu2"] and "excluded" in reasons["gpu0"]
    assert not {"gpu0", "gpu1", "gpu2"} & {g.gid for g in r.gpus}
    with pytest.raises(PlaceError, match=r"6 GPUs asked, 5 usable of 8"):
        place_gpus(build(snap), 6, exclude={"gpu0"})


def test_72_gpu_nvswitch_domain_is_fast() -> None:
    gpus = [Gpu(index=i, name="NVIDIA H100 80GB HBM3", numa_node=i // 36) for i in range(72)]
    pairs = [Pair(a=f"gpu{i}", b=f"gpu{j}", path="NV18", nvlinks=18) for i, j in itertools.combinations(range(72), 2)]
    host = Host(numa_nodes=[NumaNode(id=0, cpus="0-35"), NumaNode(id=1, cpus="36-71")])
    snap = Snapshot(
        source=Source(kind="nvidia-smi", origin="synthetic", tool="test"), host=host, gpus=gpus, pairs=pairs
    )
    start = time.perf_counter()
    topo = build(snap)
    for k in (1, 8, 36, 37, 72):
        r = place_gpus(topo, k)
        assert [g.index for g in r.gpus] == list(range(k))
        assert k == 1 or (r.slowest is not None and r.slowest.text.startswith("NV18 through NVSwitch"))
    assert place_gpus(topo, 8).ties == 2 * 30260340  # C(36, 8) on each NUMA node
    assert time.perf_counter() - start < 5


def test_a_gpu_without_a_usable_nic_says_why_once() -> None:
    """The newcomer trial: `place --nics` on the real DGX-2H (hwloc XML, no NIC) read "no usable NIC
    recorded (no usable NIC recorded)"; with every port of IBM's eight NICs down, the reason nested
    the same words. The note is evidence's reason, said once."""
    r = place_gpus(_topo(SNAP / "dgx2h-16gpu.json"), 2, nics=True)
    assert [n for n in r.notes if "NIC" in n] == ["gpu0: no usable NIC recorded", "gpu1: no usable NIC recorded"]
    snap = load_any(SNAP / "ibm-gx3d-h100-8gpu.json")
    down = msgspec.structs.replace(snap, nics=[msgspec.structs.replace(n, state="Down") for n in snap.nics])
    r = place_gpus(build(down), 1, nics=True)
    assert [n for n in r.notes if "NIC" in n] == ["gpu0: no usable NIC recorded (every port is down)"]


def test_a_note_about_one_gpu_has_that_gpu_as_its_subject() -> None:
    """The view groups the per-GPU notes by their kind and their ``gpu`` subject (issue 33 item 1: it
    split the words at "gpuN: " before): the H200 paste records no CPU affinity, the RTX 4090 box's
    NICs are SYS to every GPU."""
    r = place_gpus(_topo(SNAP / "hgx-h200-8gpu-10nic.json"), 4)
    cores = [n for n in r.notes if n.template.startswith("{gpu}: cores unknown: ")]
    assert [dict(n.subjects)["gpu"] for n in cores] == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert len({n.template for n in cores}) == 1  # one kind: the view says it once
    assert not any(n.subjects for n in r.notes if n not in cores)  # the others are about no one GPU
    r = place_gpus(_topo(SNAP / "rtx4090-8gpu-all-sys.json"), 2, nics=True)
    [gpu1] = [n for n in r.notes if dict(n.subjects).get("gpu") == "gpu1"]
    assert gpu1.template.startswith("{gpu}: NIC NIC1 without GPUDirect RDMA — ")
