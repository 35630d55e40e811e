"""The probe through the real nvidia-ml-py wrappers, with a fake libnvidia-ml at the C ABI behind
them (tests/fakes/libnvml.py), against the same machine through the module-level fake.

Both fakes are driven by one machine description, so the two snapshots must agree field for field:
where they differ, either a wrapper of this nvidia-ml-py line reads the C bytes differently from
what the probe expects (a struct layout, a decoded string, an argument type), or the module-level
fake does not behave like the library. CI runs this file against the lowest and the newest
nvidia-ml-py the ranges allow (issue 25's version matrix).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pynvml
import pytest

from tests.conftest import FIXED_NOW
from tests.fakes import machines
from tests.fakes.cuda import FakeCuda
from tests.fakes.libnvml import installed
from tests.fakes.machine import FakeFabric, FakeLink, FakeMachine
from tests.fakes.nvml import FakeNvml
from tests.fakes.sysfs import write_sysfs
from topomap.model.codec import encode_snapshot
from topomap.model.snapshot import Snapshot
from topomap.probe import ProbeOutcome, probe


def _module_fake(m: FakeMachine, root: Path) -> ProbeOutcome:
    write_sysfs(m, root)
    return probe(nvml_lib=FakeNvml(m), cuda_driver=FakeCuda(m), sysfs_root=str(root), env={}, now=FIXED_NOW)


def _c_fake(m: FakeMachine, root: Path) -> ProbeOutcome:
    write_sysfs(m, root)
    with installed(m):
        return probe(nvml_lib=pynvml, cuda_driver=FakeCuda(m), sysfs_root=str(root), env={}, now=FIXED_NOW)


def _json(s: Snapshot) -> str:
    return encode_snapshot(s).decode()


MACHINES: dict[str, Callable[[], FakeMachine]] = {
    "hgx_h100": machines.hgx_h100,
    "a100_pcie": machines.a100_pcie,
    "consumer_pair": machines.consumer_pair,
    "gb200_tray": machines.gb200_tray,
    "old_driver": machines.old_driver,
    "no_driver": machines.no_driver,
    "gpu3_lost": machines.hgx_h100_gpu3_lost,
    "mig": lambda: dataclasses.replace(
        machines.a100_pcie(),
        gpus=[dataclasses.replace(g, mig=(1, 1)) if i == 2 else g for i, g in enumerate(machines.a100_pcie().gpus)],
    ),
    "affinity_denied": lambda: dataclasses.replace(
        machines.hgx_h100(), errors={("nvmlDeviceGetCpuAffinity", -1): 4, ("nvmlDeviceGetMemoryAffinity", -1): 4}
    ),
    "handle_denied": lambda: dataclasses.replace(machines.a100_pcie(), errors={("nvmlDeviceGetHandleByIndex", 2): 4}),
    "r535_fabric": lambda: dataclasses.replace(machines.gb200_tray(), missing={"nvmlDeviceGetGpuFabricInfoV"}),
}


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_real_wrappers_over_c_abi_agree_with_module_fake(tmp_path: Path, name: str) -> None:
    m = MACHINES[name]()
    a = _module_fake(m, tmp_path / "a")
    b = _c_fake(m, tmp_path / "b")
    assert (a.found_driver, a.gpu_count) == (b.found_driver, b.gpu_count)
    sa, sb = a.snapshot, b.snapshot
    assert [g.name for g in sb.gpus] == [g.name for g in sa.gpus]
    assert [(p.call, p.target) for p in sb.problems] == [(p.call, p.target) for p in sa.problems]
    assert _json(sb).replace(str(tmp_path / "b"), "ROOT") == _json(sa).replace(str(tmp_path / "a"), "ROOT")


def test_hgx_h100_facts_through_real_wrappers(tmp_path: Path) -> None:
    s = _c_fake(machines.hgx_h100(), tmp_path).snapshot
    g0 = s.gpus[0]
    assert g0.name == "NVIDIA H100 80GB HBM3" and g0.pci_bus_id == "0000:18:00.0"
    assert len(g0.nvlinks) == 18 and all(x.active and x.generation == 4 for x in g0.nvlinks)
    assert g0.fabric is not None and g0.fabric.state == "completed"
    assert g0.numa_node == 0 and g0.cpu_affinity == "0-55,112-167"
    gpu_pairs = [p for p in s.pairs if p.a.startswith("gpu") and p.b.startswith("gpu")]
    assert {p.path for p in gpu_pairs} == {"NV18"} and len(gpu_pairs) == 28
    assert s.software.driver_version == "550.54.15" and s.software.cuda_driver_version == "12.4"


def test_lost_gpu_through_real_wrappers_is_recorded_once(tmp_path: Path) -> None:
    s = _c_fake(machines.hgx_h100_gpu3_lost(), tmp_path).snapshot
    lost = [p for p in s.problems if p.target == "gpu3" and "GpuIsLost" in p.error]
    assert len(lost) == 1


def test_undecodable_remote_bus_id_keeps_the_gpu_through_real_wrappers(tmp_path: Path) -> None:
    m = machines.gb200_tray()
    odd = FakeLink(version_enum=7, remote_type=2, remote_bus=b"\xff\xfe\x01\x80")
    m = dataclasses.replace(m, gpus=[dataclasses.replace(m.gpus[0], nvlinks=[odd] * 18), *m.gpus[1:]])
    g0 = _c_fake(m, tmp_path).snapshot.gpus[0]
    assert g0.name == "NVIDIA GB200" and len(g0.nvlinks) == 18
    assert all(lk.active and lk.remote_pci_bus_id is None for lk in g0.nvlinks)


def test_fabric_uuid_with_nul_and_high_bytes_through_real_wrappers(tmp_path: Path) -> None:
    uuid = bytes.fromhex("00ff80002b6c4c8e9f525d3c1e0a9bfe")
    m = machines.gb200_tray()
    m = dataclasses.replace(
        m, gpus=[dataclasses.replace(g, fabric=FakeFabric(cluster_uuid=uuid, clique_id=7)) for g in m.gpus]
    )
    s = _c_fake(m, tmp_path).snapshot
    assert all(g.fabric is not None and g.fabric.cluster_uuid == "00ff8000-2b6c-4c8e-9f52-5d3c1e0a9bfe" for g in s.gpus)
    assert all(g.fabric is not None and g.fabric.clique_id == 7 for g in s.gpus)


def test_no_library_is_library_not_found(tmp_path: Path) -> None:
    out = _c_fake(machines.no_driver(), tmp_path)
    assert not out.found_driver
    assert any("LibraryNotFound" in p.error or "not found" in p.error.lower() for p in out.snapshot.problems)
