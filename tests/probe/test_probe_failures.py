"""Named failure scenarios: each still yields a valid snapshot with the right problem records."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.conftest import run_probe
from tests.fakes import machines
from topomap.model.codec import decode_snapshot, encode_snapshot


def roundtrips(out) -> None:  # type: ignore[no-untyped-def]
    data = encode_snapshot(out.snapshot)
    assert decode_snapshot(data) == out.snapshot


def test_one_gpu_lost_mid_probe(tmp_path: Path) -> None:
    m = dataclasses.replace(machines.hgx_h100(), lost_after={3: 6})
    out = run_probe(m, tmp_path)
    s = out.snapshot
    assert len(s.gpus) == 8
    lost = [p for p in s.problems if p.target == "gpu3" and "GpuIsLost" in p.error]
    assert len(lost) == 1, "one record for the lost GPU, later calls skipped"
    g3 = s.gpus[3]
    assert g3.uuid is not None and g3.memory_total_bytes is not None  # read before it fell off
    assert g3.nvlinks == [] and g3.fabric is None
    assert s.gpus[4].nvlinks and s.gpus[4].fabric is not None  # the others are whole
    roundtrips(out)


def test_no_permission_on_affinity_calls(tmp_path: Path) -> None:
    m = dataclasses.replace(
        machines.hgx_h100(),
        errors={("nvmlDeviceGetCpuAffinity", -1): 4, ("nvmlDeviceGetMemoryAffinity", -1): 4},
    )
    s = run_probe(m, tmp_path).snapshot
    perm = [p for p in s.problems if "NoPermission (4)" in p.error]
    assert {p.call for p in perm} == {"nvmlDeviceGetCpuAffinity", "nvmlDeviceGetMemoryAffinity"}
    assert len(perm) == 16
    # NVML could not say; the sysfs local_cpulist and numa_node fill in, as nvidia-smi would show
    assert s.gpus[0].cpu_affinity == "0-55,112-167" and s.gpus[0].numa_node == 0


def test_not_supported_everywhere_on_a_consumer_card(tmp_path: Path) -> None:
    calls = [
        "nvmlDeviceGetPersistenceMode",
        "nvmlDeviceGetMemoryAffinity",
        "nvmlDeviceGetCurrPcieLinkGeneration",
        "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetMaxPcieLinkGeneration",
        "nvmlDeviceGetMaxPcieLinkWidth",
        "nvmlDeviceGetTopologyCommonAncestor",
        "nvmlDeviceGetP2PStatus",
    ]
    m = dataclasses.replace(machines.consumer_pair(), errors={(c, -1): 3 for c in calls})
    out = run_probe(m, tmp_path)
    s = out.snapshot
    assert s.gpus[0].persistence_mode is None
    assert s.gpus[0].pcie is not None and s.gpus[0].pcie.gen_max == 4  # from sysfs
    p = s.pairs[0]
    assert p.path == "PHB"  # NVML could not say; sysfs could
    assert p.p2p is not None and p.p2p.read is None
    assert {pr.call for pr in s.problems if "NotSupported (3)" in pr.error} >= set(calls)
    roundtrips(out)


def test_function_not_found_for_newer_calls(tmp_path: Path) -> None:
    m = dataclasses.replace(machines.gb200_tray(), missing={"nvmlDeviceGetGpuFabricInfoV", "nvmlDeviceGetNumaNodeId"})
    s = run_probe(m, tmp_path).snapshot
    assert all(g.gpu_numa_node is None for g in s.gpus)
    # a driver before R550 lacks the versioned call: the v1 call still tells the fabric (issue 25 item 6)
    assert all(g.fabric is not None and g.fabric.state == "completed" and g.fabric.clique_id == 7 for g in s.gpus)
    assert all(g.fabric is not None and g.fabric.health_mask is None for g in s.gpus)  # v1 has none
    assert {p.call for p in s.problems} <= {"nvmlDeviceGetNumaNodeId"}


def test_driver_without_either_fabric_call_says_unknown_not_unsupported(tmp_path: Path) -> None:
    m = dataclasses.replace(
        machines.gb200_tray(), missing={"nvmlDeviceGetGpuFabricInfoV", "nvmlDeviceGetGpuFabricInfo"}
    )
    s = run_probe(m, tmp_path).snapshot
    assert all(g.fabric is None and g.name for g in s.gpus)
    assert [p.call for p in s.problems if "Fabric" in p.call] == ["nvmlDeviceGetGpuFabricInfo"]


def test_handle_refused_gpu_is_still_an_entry(tmp_path: Path) -> None:
    m = dataclasses.replace(machines.a100_pcie(), errors={("nvmlDeviceGetHandleByIndex", 2): 4})
    s = run_probe(m, tmp_path).snapshot
    assert len(s.gpus) == 8 and s.gpus[2].uuid is None and s.gpus[2].pci_bus_id is None
    assert any(p.target == "gpu2" and p.call == "nvmlDeviceGetHandleByIndex" for p in s.problems)
    assert all(p.path is None for p in s.pairs if "gpu2" in (p.a, p.b))


def test_cuda_visible_devices_reorders_ordinals_joined_by_uuid(tmp_path: Path) -> None:
    m = dataclasses.replace(machines.a100_pcie(), cuda_order=[5, 2])
    s = run_probe(m, tmp_path, env={"CUDA_VISIBLE_DEVICES": "5,2"}).snapshot
    assert {g.index: g.cuda_ordinal for g in s.gpus if g.cuda_ordinal is not None} == {5: 0, 2: 1}
    assert s.host.environment == {"CUDA_VISIBLE_DEVICES": "5,2"}
    hidden = [p.error for p in s.problems if "not visible to CUDA" in p.error]
    assert hidden == [
        "gpu0, gpu1, gpu3, gpu4, gpu6, gpu7 not visible to CUDA in this process (CUDA_VISIBLE_DEVICES=5,2)"
    ]
    p = next(p for p in s.pairs if {p.a, p.b} == {"gpu2", "gpu5"})
    assert p.cuda is not None and p.cuda.can_access_peer is True


def test_cuda_no_device_is_recorded_not_fatal(tmp_path: Path) -> None:
    m = dataclasses.replace(machines.a100_pcie(), cuda_order=[])
    out = run_probe(m, tmp_path, env={"CUDA_VISIBLE_DEVICES": ""})
    assert out.found_driver and out.gpu_count == 8
    assert any(p.call == "cuInit" and "CUDA_ERROR_NO_DEVICE" in p.error for p in out.snapshot.problems)
    assert all(g.cuda_ordinal is None for g in out.snapshot.gpus)


def test_p2p_tuple_constant_would_be_refused(tmp_path: Path) -> None:
    """The fake refuses pynvml's tuple-valued NVML_P2P_CAPS_INDEX_READ like ctypes does, so
    the probe passing literal ints is what keeps P2P status readable."""
    import ctypes

    import pytest

    from tests.fakes.nvml import FakeNvml

    m = machines.consumer_pair()
    nv = FakeNvml(m)
    nv.nvmlInit()
    h0, h1 = nv.nvmlDeviceGetHandleByIndex(0), nv.nvmlDeviceGetHandleByIndex(1)
    with pytest.raises(ctypes.ArgumentError):
        nv.nvmlDeviceGetP2PStatus(h0, h1, nv.NVML_P2P_CAPS_INDEX_READ)
    s = run_probe(m, tmp_path).snapshot
    assert s.pairs[0].p2p is not None and s.pairs[0].p2p.read == "GNS"


def test_virtual_machine_hints_and_unknown_numa(tmp_path: Path) -> None:
    m = dataclasses.replace(machines.a100_pcie(), hypervisor=True, dmi_vendor="QEMU", iommu=True)
    s = run_probe(m, tmp_path).snapshot
    assert s.host.virtualization == "kvm" and s.host.iommu == "on"
    # numa_node -1 in a VM: the local CPU list still separates the sockets
    p = next(p for p in s.pairs if {p.a, p.b} == {"gpu0", "nic0"})
    assert p.path == "PXB"


def test_container_given_two_of_eight_gpus_inside_a_slurm_cpuset(tmp_path: Path) -> None:
    """A job given GPUs 4 and 5 of an HGX box and CPUs 0-7: the other six GPUs are on the bus
    but not visible, and the CPU affinity cells come out empty as nvidia-smi prints them."""
    full = machines.hgx_h100()
    given = [full.gpus[4], full.gpus[5]]
    m = dataclasses.replace(full, gpus=given, hidden_gpus=[g for g in full.gpus if g not in given], cgroup_cpus="0-7")
    s = run_probe(m, tmp_path).snapshot
    assert [g.pci_bus_id for g in s.gpus] == ["0000:9a:00.0", "0000:ab:00.0"]
    assert [g.cpu_affinity for g in s.gpus] == ["", ""]  # NUMA 1's CPUs, none in this cpuset
    assert s.host.cgroup_cpus == "0-7"
    hidden = [p.error for p in s.problems if "PCI bus shows" in p.error]
    assert hidden and hidden[0].startswith("the PCI bus shows 8 NVIDIA GPUs but this process sees 2")
