"""The probe against the fabric structs of every nvidia-ml-py line and NVML's raw strings (issue 25
items 1, 7, 13): the fake driver writes out-structs at nvml.h's C offsets (tests/fakes/nvml_layouts.py),
so a reader that trusts pynvml's class layout reads the wrong bytes, as it would on a real GPU."""

from __future__ import annotations

import dataclasses
import uuid as uuidlib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXED_NOW
from tests.fakes import machines
from tests.fakes.cuda import FakeCuda
from tests.fakes.machine import FakeFabric, FakeLink, FakeMachine
from tests.fakes.nvml import FakeNvml
from tests.fakes.nvml_layouts import LAYOUTS
from tests.fakes.sysfs import write_sysfs
from topomap.model.snapshot import Snapshot
from topomap.probe import probe

# a cluster UUID with a NUL and bytes >= 0x80: c_char cuts at the NUL, UTF-8 decoding raises
CLUSTER = uuidlib.UUID("00ff8000-2b6c-4c8e-9f52-5d3c1e0a9bfe")


def _probe(m: FakeMachine, root: Path, nvml: FakeNvml | None = None) -> Snapshot:
    write_sysfs(m, root)
    lib = nvml or FakeNvml(m)
    return probe(nvml_lib=lib, cuda_driver=FakeCuda(m), sysfs_root=str(root), env={}, now=FIXED_NOW).snapshot


def _tray(**fabric: Any) -> FakeMachine:
    m = machines.gb200_tray()
    f = FakeFabric(**{"cluster_uuid": CLUSTER.bytes, "clique_id": 7, "state": 3, "health_mask": 0x5, **fabric})
    return dataclasses.replace(m, gpus=[dataclasses.replace(g, fabric=f) for g in m.gpus])


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_fabric_read_at_c_offsets_with_every_pynvml_layout(tmp_path: Path, layout: str) -> None:
    m = _tray()
    s = _probe(m, tmp_path, FakeNvml(m, layout=layout))
    for g in s.gpus:
        assert g.name == "NVIDIA GB200" and g.uuid and g.pci_bus_id and len(g.nvlinks) == 18
        f = g.fabric
        assert f is not None and f.cluster_uuid == str(CLUSTER)
        assert (f.clique_id, f.state, f.status, f.health_mask) == (7, "completed", "success", 5)
    assert not [p for p in s.problems if "Fabric" in p.call]
    assert all(p.cuda is not None for p in s.pairs if p.a == "gpu0" and p.b.startswith("gpu"))  # CUDA joined


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_fabric_v1_fallback_reads_c_offsets_too(tmp_path: Path, layout: str) -> None:
    m = dataclasses.replace(_tray(state=2), missing={"nvmlDeviceGetGpuFabricInfoV"})  # an R535 driver
    s = _probe(m, tmp_path, FakeNvml(m, layout=layout))
    f = s.gpus[1].fabric
    assert f is not None and (f.cluster_uuid, f.clique_id, f.state, f.status) == (str(CLUSTER), 7, "in-progress", None)


def test_non_utf8_remote_bus_id_keeps_the_gpu(tmp_path: Path) -> None:
    m = machines.gb200_tray()
    odd = FakeLink(version_enum=7, remote_type=2, remote_bus=b"\xff\xfe\x01\x80")
    m = dataclasses.replace(m, gpus=[dataclasses.replace(m.gpus[0], nvlinks=[odd] * 18), *m.gpus[1:]])
    s = _probe(m, tmp_path)
    g0 = s.gpus[0]
    assert g0.name == "NVIDIA GB200" and g0.uuid and g0.fabric is not None
    assert len(g0.nvlinks) == 18 and all(lk.active and lk.remote_pci_bus_id is None for lk in g0.nvlinks)
    assert all(lk.generation == 5 for lk in g0.nvlinks)


class _BadMig(FakeNvml):
    def nvmlDeviceGetMigMode(self, h: Any) -> Any:
        self._check("nvmlDeviceGetMigMode", h)
        return 5  # an answer NVML never gives (not a (current, pending) pair)


def test_one_bad_section_does_not_blank_the_gpu(tmp_path: Path) -> None:
    m = _tray()
    s = _probe(m, tmp_path, _BadMig(m))
    g = s.gpus[2]
    assert g.mig is None and g.name == "NVIDIA GB200" and g.pci_bus_id == "0018:01:00.0"
    assert len(g.nvlinks) == 18 and g.fabric is not None and g.fabric.clique_id == 7
    assert any(p.target == "gpu2" and p.call == "nvmlDevice*Mig*" and "unusable" in p.error for p in s.problems)
