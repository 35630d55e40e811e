"""CUDA side of issue 25: cuda-bindings 13's MIG UUID (item 11), cuInit's time limit (item 13),
the process's own CPU affinity (item 13)."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from tests.conftest import FIXED_NOW
from tests.fakes import machines
from tests.fakes.cuda import FakeCuda
from tests.fakes.nvml import FakeNvml
from tests.fakes.sysfs import write_sysfs
from topomap.base.cpus import format_cpulist
from topomap.probe import probe
from topomap.probe.cuda import probe_cuda
from topomap.probe.guarded import CallRunner, using
from topomap.probe.sysfs import SysfsReader


def test_mig_uuid_from_cuda13_still_joins_by_bus_id(tmp_path: Path) -> None:
    m = machines.hgx_h100()
    m.gpus[3] = dataclasses.replace(m.gpus[3], mig=(1, 1))
    write_sysfs(m, tmp_path)
    out = probe(nvml_lib=FakeNvml(m), cuda_driver=FakeCuda(m, mig_uuids=True), sysfs_root=str(tmp_path), env={},
                now=FIXED_NOW)  # fmt: skip
    s = out.snapshot
    assert [g.cuda_ordinal for g in s.gpus] == list(range(8))
    assert not [p for p in s.problems if p.call == "join"]


class _SlowInit(FakeCuda):
    def cuInit(self, flags: int) -> tuple[Any, ...]:
        time.sleep(0.6)  # an 8-GPU box without persistence mode: longer than one ordinary call
        return super().cuInit(flags)


def test_cuinit_gets_nvmlinits_time_limit_not_the_per_call_one() -> None:
    m = machines.hgx_h100()
    with using(CallRunner(call_s=0.2, total_s=None)):
        r = probe_cuda(_SlowInit(m))
    assert r.available and len(r.devices) == 8
    assert not [p for p in r.problems if p.call == "cuInit"]


def test_cpus_allowed_are_this_processs_affinity_not_the_root_cgroups() -> None:
    assert SysfsReader("/").cgroup_cpus() == format_cpulist(sorted(os.sched_getaffinity(0)))
