"""The probe against fake machines built from data (tests/fakes/machines.py)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_probe
from tests.fakes import machines
from topomap.model.snapshot import Snapshot


def pair(s: Snapshot, a: str, b: str):  # type: ignore[no-untyped-def]
    for p in s.pairs:
        if {p.a, p.b} == {a, b}:
            return p
    raise KeyError((a, b))


def test_hgx_h100_every_gpu_pair_is_nv18_through_four_switches(tmp_path: Path) -> None:
    out = run_probe(machines.hgx_h100(), tmp_path)
    s = out.snapshot
    assert out.found_driver and out.gpu_count == 8
    gpu_pairs = [p for p in s.pairs if p.a.startswith("gpu") and p.b.startswith("gpu")]
    assert len(gpu_pairs) == 28
    assert {p.path for p in gpu_pairs} == {"NV18"}
    assert all(p.p2p is not None and p.p2p.read == "OK" and p.p2p.nvlink == "OK" for p in gpu_pairs)
    assert sorted(sw.id for sw in s.nvswitches) == ["0000:f3:00.0", "0000:f4:00.0", "0000:f5:00.0", "0000:f6:00.0"]
    assert s.nvswitches[0].links["gpu0"] == 5 and s.nvswitches[1].links["gpu0"] == 4
    g0 = s.gpus[0]
    assert g0.pci_bus_id == "0000:18:00.0"
    assert len(g0.nvlinks) == 18 and all(x.generation == 4 and x.speed_gbps == 26.562 for x in g0.nvlinks)
    assert g0.fabric is not None and g0.fabric.state == "completed" and g0.fabric.clique_id == 32766
    assert g0.numa_node == 0 and g0.cpu_affinity == "0-55,112-167"
    assert s.gpus[5].numa_node == 1
    assert g0.compute_capability == "9.0" and g0.architecture == "hopper"
    assert s.software.driver_version == "550.54.15" and s.software.cuda_driver_version == "12.4"


def test_hgx_h100_nic_proximity_from_sysfs(tmp_path: Path) -> None:
    s = run_probe(machines.hgx_h100(), tmp_path).snapshot
    assert [n.name for n in s.nics] == [f"mlx5_{i}" for i in range(8)]
    assert pair(s, "gpu0", "nic0").path == "PIX"
    assert pair(s, "gpu0", "nic1").path == "PIX"
    assert pair(s, "gpu0", "nic2").path == "NODE"
    assert pair(s, "gpu0", "nic4").path == "SYS"
    assert pair(s, "gpu7", "nic7").path == "PIX"
    assert pair(s, "nic0", "nic1").path == "PIX"
    assert s.nics[0].kind == "infiniband" and s.nics[0].speed_gbit_s == 400.0
    assert s.nics[0].netdevs == ["ibp0s0"] and s.nics[0].numa_node == 0
    # NVML's PCIe level under the NVLink: same switch for gpu0/gpu1, other host bridge for gpu2
    assert pair(s, "gpu0", "gpu1").pcie_path == "PIX"
    assert pair(s, "gpu0", "gpu2").pcie_path == "NODE"
    assert pair(s, "gpu0", "gpu4").pcie_path == "SYS"


def test_a100_pcie_two_sockets_behind_switches(tmp_path: Path) -> None:
    s = run_probe(machines.a100_pcie(), tmp_path).snapshot
    assert pair(s, "gpu0", "gpu1").path == "PIX"
    assert pair(s, "gpu0", "gpu2").path == "PXB"
    assert pair(s, "gpu4", "gpu6").path == "NODE"
    assert pair(s, "gpu0", "gpu4").path == "SYS"
    assert pair(s, "gpu0", "nic0").path == "PXB"
    assert pair(s, "gpu4", "nic0").path == "SYS"
    assert all(p.nvlinks == 0 for p in s.pairs)
    assert pair(s, "gpu0", "gpu1").p2p is not None and pair(s, "gpu0", "gpu1").p2p.read == "OK"  # type: ignore[union-attr]
    assert pair(s, "gpu0", "gpu1").p2p.nvlink == "NS"  # type: ignore[union-attr]
    assert s.nics[0].kind == "roce"
    assert s.gpus[0].pcie is not None and s.gpus[0].pcie.gen_current == 1 and s.gpus[0].pcie.gen_max == 4
    assert s.gpus[0].nvlinks == []


def test_consumer_pair_p2p_gpu_not_supported(tmp_path: Path) -> None:
    s = run_probe(machines.consumer_pair(), tmp_path).snapshot
    p = pair(s, "gpu0", "gpu1")
    assert p.path == "PHB"
    assert p.p2p is not None and p.p2p.read == "GNS" and p.p2p.write == "GNS"
    assert p.cuda is not None and p.cuda.can_access_peer is False
    assert s.gpus[0].mig is not None and s.gpus[0].mig.enabled is False
    assert s.gpus[0].fabric is not None and s.gpus[0].fabric.state == "not-supported"


def test_gb200_tray_invisible_switches_and_fabric_clique(tmp_path: Path) -> None:
    s = run_probe(machines.gb200_tray(), tmp_path).snapshot
    gpu_pairs = [p for p in s.pairs if p.a.startswith("gpu") and p.b.startswith("gpu")]
    assert {p.path for p in gpu_pairs} == {"NV18"}
    assert [sw.id for sw in s.nvswitches] == ["nvswitch-fabric"]
    assert s.nvswitches[0].links == {f"gpu{i}": 18 for i in range(4)}
    f = s.gpus[0].fabric
    assert f is not None and f.cluster_uuid == "7f0e4c55-2b6c-4c8e-9f52-5d3c1e0a9b11" and f.clique_id == 7
    assert [g.gpu_numa_node for g in s.gpus] == [2, 3, 4, 5]
    assert s.gpus[0].nvlinks[0].generation == 5
    assert [n.cpus for n in s.host.numa_nodes][2:] == ["", "", "", ""]
    assert pair(s, "gpu0", "nic0").path == "PIX" and pair(s, "gpu0", "nic2").path == "SYS"


def test_old_driver_records_what_it_lacks_and_still_finds_the_bridge(tmp_path: Path) -> None:
    s = run_probe(machines.old_driver(), tmp_path, old_bindings=True).snapshot
    p = pair(s, "gpu0", "gpu1")
    assert p.path == "NV12" and p.nvlinks == 12
    # no link-count field: links iterated until InvalidArgument, inactive ones kept
    assert len(s.gpus[0].nvlinks) == 18 and sum(x.active for x in s.gpus[0].nvlinks) == 12
    assert s.software.cuda_driver_version == "11.4"  # from the v1 call
    calls = {(pr.source, pr.call) for pr in s.problems}
    assert ("nvml", "nvmlSystemGetCudaDriverVersion") not in calls
    assert ("nvml", "nvmlDeviceGetMemoryAffinity") in calls
    assert ("cuda", "cuDeviceGetP2PAttribute") in calls
    assert any('Function "cuDeviceGetP2PAttribute" not found' in pr.error for pr in s.problems)
    assert s.gpus[0].numa_node == 1  # NVML could not say; sysfs did
    assert p.cuda is not None and p.cuda.can_access_peer is True and p.cuda.performance_rank is None


def test_no_driver_host_only_snapshot(tmp_path: Path) -> None:
    out = run_probe(machines.no_driver(with_gpus=False), tmp_path)
    assert not out.found_driver and out.gpu_count == 0
    calls = [(p.source, p.call, p.error) for p in out.snapshot.problems]
    assert ("nvml", "nvmlInit", "LibraryNotFound (12)") in calls
    assert any(c[0] == "cuda" and "dlopen" in c[2] for c in calls)
    assert out.snapshot.host.numa_nodes and out.snapshot.host.hostname == "no-driver"


def test_no_driver_but_gpus_on_the_bus(tmp_path: Path) -> None:
    out = run_probe(machines.no_driver(with_gpus=True), tmp_path)
    s = out.snapshot
    assert not out.found_driver
    assert [g.pci_bus_id for g in s.gpus] == ["0000:01:00.0", "0000:41:00.0"]
    assert all(g.name is None and g.uuid is None for g in s.gpus)
    assert pair(s, "gpu0", "gpu1").path == "PHB"
    assert any("NVML is unavailable" in p.error for p in s.problems)


def test_fake_hgx_matrix_reproduces_a_real_hgx_matrix(tmp_path: Path, real: Path) -> None:
    """`matrix` of the fake 8x H100 (NV18, two GPUs and two NICs per switch) prints, cell for
    cell, the matrix a real HGX B200 node printed on GCP (same layout, same codes)."""
    from tests.importers.test_import_nvidia_smi import _cells
    from topomap.render.matrix import render_matrix

    ours = render_matrix(run_probe(machines.hgx_h100(), tmp_path).snapshot)
    theirs = (real / "nvidia-smi" / "gcp-gke-a4-b200-8gpu-8nic.txt").read_text()
    assert _cells(ours) == _cells(theirs)
    assert ours.splitlines()[1].split("\t")[-4:] == ["0-55,112-167", "0", "", "N/A"]
    assert ours.endswith("NIC Legend:\n\n" + "".join(f"  NIC{i}: mlx5_{i}\n" for i in range(8)))
