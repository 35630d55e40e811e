"""The fake NVML with scripted curves, for `topomap record` (a subclass: tests/fakes/nvml.py is not ours).

Memory, utilisation, PCIe and NVLink values are lists indexed by a step the test advances
(``advance()``, or the runner's ``on_sample`` callback); the last value repeats. The base fake's
failure machinery still applies: ``machine.lost_after`` makes a GPU answer GPU_IS_LOST after that
many per-device calls, ``machine.errors`` makes one call fail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pynvml as real

from tests.fakes.machine import FakeMachine
from tests.fakes.nvml import RESERVED, FakeNvml, _Handle, _MigHandle

Curve = list[int]


def _at(curve: Curve, step: int) -> int:
    return curve[min(step, len(curve) - 1)]


class ScriptedNvml(FakeNvml):
    """FakeNvml plus the calls a sampler makes, answering from scripted curves.

    ``memory[i]``: bytes used on GPU i per step; ``mig_memory[(i, slot)]``: per MIG device;
    ``util[i]``: (gpu %, memory %) per step; ``pcie[i]``: (tx, rx) KiB/s per step;
    ``nvlink[i]``: (tx, rx) cumulative KiB per step; ``procs[i]``: a function returning
    (pid, used bytes or None) for the processes NVML would list on GPU i.
    """

    def __init__(
        self,
        machine: FakeMachine,
        memory: dict[int, Curve] | None = None,
        mig_memory: dict[tuple[int, int], Curve] | None = None,
        util: dict[int, list[tuple[int, int]]] | None = None,
        pcie: dict[int, list[tuple[int, int]]] | None = None,
        nvlink: dict[int, list[tuple[int, int]]] | None = None,
        procs: dict[int, Callable[[], list[tuple[int, int | None]]]] | None = None,
    ) -> None:
        super().__init__(machine)
        self.step = 0
        self.memory = memory or {}
        self.mig_memory = mig_memory or {}
        self.util = util or {}
        self.pcie = pcie or {}
        self.nvlink = nvlink or {}
        self.procs = procs or {}
        self.nvlink_scopes: set[int] = set()  # scopeIds asked for NVLink throughput (UINT_MAX: all links)

    def advance(self, *_: Any) -> None:
        self.step += 1

    def nvmlDeviceGetMemoryInfo(self, h: _Handle, version: Any = None) -> Any:
        mem = super().nvmlDeviceGetMemoryInfo(h, version)
        curve = self.mig_memory.get((h.index, h.slot)) if isinstance(h, _MigHandle) else self.memory.get(h.index)
        mem.used = (_at(curve, self.step) if curve else 0) + (0 if version else RESERVED)  # v1 counts reserved
        return mem

    def nvmlDeviceGetUtilizationRates(self, h: _Handle) -> Any:
        self._check("nvmlDeviceGetUtilizationRates", h)
        g = self._gpu(h)
        if isinstance(h, _MigHandle) or (g.mig and g.mig[0]):
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)  # as on a real MIG-enabled GPU
        u = real.c_nvmlUtilization_t()
        curve = self.util.get(h.index)
        if curve:
            u.gpu, u.memory = curve[min(self.step, len(curve) - 1)]
        return u

    def nvmlDeviceGetPcieThroughput(self, h: _Handle, counter: int) -> int:
        self._check("nvmlDeviceGetPcieThroughput", h)
        curve = self.pcie.get(h.index)
        if not curve:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        return curve[min(self.step, len(curve) - 1)][0 if counter == real.NVML_PCIE_UTIL_TX_BYTES else 1]

    def nvmlDeviceGetFieldValues(self, h: _Handle, field_ids: list[Any]) -> Any:
        if not any(isinstance(f, tuple) and f[0] in (138, 139) for f in field_ids):
            return super().nvmlDeviceGetFieldValues(h, field_ids)
        self._check("nvmlDeviceGetFieldValues", h)
        values = (real.c_nvmlFieldValue_t * len(field_ids))()
        curve = self.nvlink.get(h.index)
        for k, (fid, scope) in enumerate(field_ids):
            values[k].fieldId, values[k].scopeId = fid, scope
            self.nvlink_scopes.add(scope)
            if curve is None:
                values[k].nvmlReturn = real.NVML_ERROR_NOT_SUPPORTED
                continue
            values[k].nvmlReturn = 0
            values[k].value.ullVal = curve[min(self.step, len(curve) - 1)][0 if fid == 138 else 1]
        return values

    def nvmlDeviceGetComputeRunningProcesses(self, h: _Handle) -> list[Any]:
        self._check("nvmlDeviceGetComputeRunningProcesses", h)
        fn = self.procs.get(h.index)
        out = []
        for pid, used in fn() if fn else []:
            p = real.nvmlFriendlyObject({"pid": pid, "usedGpuMemory": used, "gpuInstanceId": 0, "computeInstanceId": 0})
            out.append(p)
        return out
