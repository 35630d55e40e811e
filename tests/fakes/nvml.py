"""A module-level fake of pynvml (nvidia-ml-py) driven by a FakeMachine.

It reuses the real module's exception classes and ctypes structures (both import without a
driver) and reproduces the failure modes in shared/reference/nvml-cuda.md §2.3:
LibraryNotFound at init, Uninitialized before init, FunctionNotFound for calls an old driver
lacks, AttributeError for wrappers an old nvidia-ml-py lacks, NotSupported for NVLink on a
PCIe card, InvalidArgument past the last link, GpuIsLost mid-probe, and ctypes.ArgumentError
when the tuple-valued NVML_P2P_CAPS_INDEX_READ is passed instead of 0.
"""

from __future__ import annotations

import ctypes
from typing import Any

import pynvml as real

from tests.fakes.machine import FakeMachine, nvml_bus
from tests.fakes.nvml_layouts import LAYOUTS, c_fabric_functions, wrapper

# Wrappers that nvidia-ml-py 11.x did not have: hide them with old_bindings=True.
NEW_WRAPPERS = {
    "nvmlDeviceGetGpuFabricInfoV",
    "nvmlDeviceGetGpuFabricInfo",
    "nvmlDeviceGetNumaNodeId",
    "nvmlDeviceGetNvLinkRemoteDeviceType",
}


RESERVED = 512 * 2**20  # driver-reserved GPU memory: in v1's `used`, not in v2's (nor in nvidia-smi's)


class _Handle:
    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"<fake nvmlDevice {self.index}>"


class _MigHandle(_Handle):
    def __init__(self, parent: int, slot: int) -> None:
        super().__init__(parent)
        self.slot = slot


class FakeNvml:
    """Drop-in for the pynvml module (pass as ``nvml_lib=``)."""

    NVMLError = real.NVMLError
    NVML_NVLINK_MAX_LINKS = real.NVML_NVLINK_MAX_LINKS
    NVML_P2P_CAPS_INDEX_READ = real.NVML_P2P_CAPS_INDEX_READ  # the (0,) tuple, faithfully
    nvmlGpuFabricInfo_v2 = real.nvmlGpuFabricInfo_v2
    nvmlMemory_v2 = real.nvmlMemory_v2

    def __init__(self, machine: FakeMachine, old_bindings: bool = False, layout: str = "installed") -> None:
        """``layout``: the nvidia-ml-py line whose fabric structs the module exposes (nvml_layouts)."""
        self.m = machine
        self.c_nvmlGpuFabricInfo_t, self.c_nvmlGpuFabricInfoV_t = LAYOUTS[layout]
        self._c_fabric = c_fabric_functions(lambda h: self._gpu(h).fabric)
        self.initialised = False
        self.calls: dict[int, int] = {}
        self.old_bindings = old_bindings
        self.log: list[str] = []
        self.device_log: list[tuple[str, int | None]] = []  # (call, GPU index it concerned)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("NVMLError_"):
            return getattr(real, name)
        raise AttributeError(f"module 'pynvml' has no attribute '{name}'")

    def __getattribute__(self, name: str) -> Any:
        if name in NEW_WRAPPERS and object.__getattribute__(self, "old_bindings"):
            raise AttributeError(f"module 'pynvml' has no attribute '{name}'")
        return object.__getattribute__(self, name)

    # --- plumbing ------------------------------------------------------------------------
    def _check(self, fn: str, handle: _Handle | None = None) -> None:
        self.log.append(fn)
        self.device_log.append((fn, handle.index if handle is not None else None))
        if not self.initialised:
            raise real.NVMLError(real.NVML_ERROR_UNINITIALIZED)
        if fn in self.m.missing:
            raise real.NVMLError(real.NVML_ERROR_FUNCTION_NOT_FOUND)
        idx = handle.index if handle is not None else None
        for key in ((fn, idx), (fn, -1 if idx is not None else None)):
            if key in self.m.errors:
                raise real.NVMLError(self.m.errors[key])
        if idx is not None and idx in self.m.lost_after:
            self.calls[idx] = self.calls.get(idx, 0) + 1
            if self.calls[idx] > self.m.lost_after[idx]:
                raise real.NVMLError(real.NVML_ERROR_GPU_IS_LOST)

    def _gpu(self, h: _Handle) -> Any:
        return self.m.gpus[h.index]

    # --- init / system -------------------------------------------------------------------
    def nvmlInitWithFlags(self, flags: int) -> None:
        if self.m.init_error is not None:
            raise real.NVMLError(self.m.init_error)
        self.initialised = True

    def nvmlInit(self) -> None:
        self.nvmlInitWithFlags(0)

    def nvmlShutdown(self) -> None:
        if not self.initialised:
            raise real.NVMLError(real.NVML_ERROR_UNINITIALIZED)
        self.initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:
        self._check("nvmlSystemGetDriverVersion")
        return self.m.driver

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._check("nvmlSystemGetNVMLVersion")
        return self.m.nvml_version

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        self._check("nvmlSystemGetCudaDriverVersion_v2")
        return self.m.cuda_version

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._check("nvmlSystemGetCudaDriverVersion")
        return self.m.cuda_version

    # --- devices -------------------------------------------------------------------------
    def nvmlDeviceGetCount(self) -> int:
        self._check("nvmlDeviceGetCount")
        return len(self.m.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> _Handle:
        if not 0 <= i < len(self.m.gpus):
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        h = _Handle(i)
        self._check("nvmlDeviceGetHandleByIndex", h)
        return h

    def nvmlDeviceGetName(self, h: _Handle) -> str:
        self._check("nvmlDeviceGetName", h)
        if isinstance(h, _MigHandle):
            return f"{self._gpu(h).name} MIG 1g.10gb"
        return str(self._gpu(h).name)

    def nvmlDeviceGetUUID(self, h: _Handle) -> str:
        self._check("nvmlDeviceGetUUID", h)
        if isinstance(h, _MigHandle):
            return f"MIG-{h.index:08x}-0000-0000-0000-{h.slot:012x}"
        return str(self._gpu(h).uuid)

    def nvmlDeviceGetPciInfo(self, h: _Handle) -> Any:
        self._check("nvmlDeviceGetPciInfo", h)
        g = self._gpu(h)
        info = real.nvmlPciInfo_t()
        d, b, rest = g.bus.split(":")
        info.domain, info.bus, info.device = int(d, 16), int(b, 16), int(rest.split(".")[0], 16)
        info.busId = nvml_bus(g.bus).encode()
        info.pciDeviceId = (int(g.device_id, 16) << 16) | 0x10DE
        return info

    def nvmlDeviceGetMemoryInfo(self, h: _Handle, version: Any = None) -> Any:
        self._check("nvmlDeviceGetMemoryInfo", h)
        if version:  # the _v2 call: `used` leaves out the driver's reserved memory
            mem = real.c_nvmlMemory_v2_t()
            mem.version, mem.reserved = version, RESERVED
        else:
            mem = real.c_nvmlMemory_t()
        mem.total = self._gpu(h).memory_bytes // (7 if isinstance(h, _MigHandle) else 1)
        return mem

    def nvmlDeviceGetCudaComputeCapability(self, h: _Handle) -> tuple[int, int]:
        self._check("nvmlDeviceGetCudaComputeCapability", h)
        return tuple(self._gpu(h).cc)  # type: ignore[return-value]

    def nvmlDeviceGetArchitecture(self, h: _Handle) -> int:
        self._check("nvmlDeviceGetArchitecture", h)
        return int(self._gpu(h).arch)

    def _pcie(self, fn: str, h: _Handle, k: int) -> int:
        self._check(fn, h)
        return int(self._gpu(h).pcie[k])

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: _Handle) -> int:
        return self._pcie("nvmlDeviceGetCurrPcieLinkGeneration", h, 0)

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: _Handle) -> int:
        return self._pcie("nvmlDeviceGetCurrPcieLinkWidth", h, 1)

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: _Handle) -> int:
        return self._pcie("nvmlDeviceGetMaxPcieLinkGeneration", h, 2)

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: _Handle) -> int:
        return self._pcie("nvmlDeviceGetMaxPcieLinkWidth", h, 3)

    def nvmlDeviceGetPersistenceMode(self, h: _Handle) -> int:
        self._check("nvmlDeviceGetPersistenceMode", h)
        return int(self._gpu(h).persistence)

    def nvmlDeviceGetCpuAffinity(self, h: _Handle, size: int) -> Any:
        self._check("nvmlDeviceGetCpuAffinity", h)
        from topomap.base.cpus import parse_cpulist

        arr = (ctypes.c_ulonglong * size)()
        numa = self.m.numa_of(self._gpu(h).bus)
        for cpu in parse_cpulist(self.m.numa_cpus[numa]):
            arr[cpu // 64] |= 1 << (cpu % 64)
        return arr

    def nvmlDeviceGetMemoryAffinity(self, h: _Handle, size: int, scope: int) -> Any:
        self._check("nvmlDeviceGetMemoryAffinity", h)
        arr = (ctypes.c_ulonglong * size)()
        numa = self.m.numa_of(self._gpu(h).bus)
        arr[numa // 64] |= 1 << (numa % 64)
        return arr

    def nvmlDeviceGetNumaNodeId(self, h: _Handle) -> int:
        self._check("nvmlDeviceGetNumaNodeId", h)
        g = self._gpu(h)
        if g.gpu_numa is None:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        return int(g.gpu_numa)

    def nvmlDeviceGetMigMode(self, h: _Handle) -> list[int]:
        self._check("nvmlDeviceGetMigMode", h)
        g = self._gpu(h)
        if g.mig is None:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        return list(g.mig)

    def nvmlDeviceGetMaxMigDeviceCount(self, h: _Handle) -> int:
        self._check("nvmlDeviceGetMaxMigDeviceCount", h)
        g = self._gpu(h)
        return 7 if g.mig and g.mig[0] else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: _Handle, slot: int) -> _MigHandle:
        self._check("nvmlDeviceGetMigDeviceHandleByIndex", h)
        if slot not in (0, 3):  # sparse slots: empty ones answer NotFound
            raise real.NVMLError(real.NVML_ERROR_NOT_FOUND)
        return _MigHandle(h.index, slot)

    # --- NVLink --------------------------------------------------------------------------
    def nvmlDeviceGetFieldValues(self, h: _Handle, field_ids: list[Any]) -> Any:
        self._check("nvmlDeviceGetFieldValues", h)
        g = self._gpu(h)
        values = (real.c_nvmlFieldValue_t * len(field_ids))()
        for k, fid in enumerate(field_ids):
            values[k].fieldId = fid if isinstance(fid, int) else fid[0]
            if fid == real.NVML_FI_DEV_NVLINK_LINK_COUNT and g.nvlinks is not None and g.link_count_field:
                values[k].nvmlReturn = 0
                values[k].value.uiVal = len(g.nvlinks)
            elif fid == 90 and g.nvlinks and g.nvlink_speed_mbps:
                values[k].nvmlReturn = 0
                values[k].value.uiVal = g.nvlink_speed_mbps
            else:
                values[k].nvmlReturn = real.NVML_ERROR_NOT_SUPPORTED
        return values

    def _link(self, fn: str, h: _Handle, link: int) -> Any:
        self._check(fn, h)
        g = self._gpu(h)
        if g.nvlinks is None:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        if not 0 <= link < len(g.nvlinks):
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return g.nvlinks[link]

    def nvmlDeviceGetNvLinkState(self, h: _Handle, link: int) -> int:
        return 1 if self._link("nvmlDeviceGetNvLinkState", h, link).active else 0

    def nvmlDeviceGetNvLinkVersion(self, h: _Handle, link: int) -> int:
        return int(self._link("nvmlDeviceGetNvLinkVersion", h, link).version_enum)

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h: _Handle, link: int) -> int:
        return int(self._link("nvmlDeviceGetNvLinkRemoteDeviceType", h, link).remote_type)

    def nvmlDeviceGetNvLinkCapability(self, h: _Handle, link: int, cap: int) -> int:
        lk = self._link("nvmlDeviceGetNvLinkCapability", h, link)
        return int(lk.p2p_capable) if cap == real.NVML_NVLINK_CAP_P2P_SUPPORTED else 1

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: _Handle, link: int) -> Any:
        lk = self._link("nvmlDeviceGetNvLinkRemotePciInfo", h, link)
        info = real.nvmlPciInfo_t()
        # bytes: what a switch the host cannot see may give, undecodable (NCCL notes it)
        info.busId = lk.remote_bus if isinstance(lk.remote_bus, bytes) else lk.remote_bus.encode()
        return info

    def _fabric_call(self, name: str, h: _Handle, ref: Any) -> int:
        self._check(name, h)  # FunctionNotFound for a driver without it (machine.missing)
        return wrapper(name, self._c_fabric[name])(h, ref)  # the C function writes at nvml.h's offsets

    def nvmlDeviceGetGpuFabricInfoV(self, h: _Handle, ref: Any) -> int:
        return self._fabric_call("nvmlDeviceGetGpuFabricInfoV", h, ref)

    def nvmlDeviceGetGpuFabricInfo(self, h: _Handle, ref: Any) -> int:
        return self._fabric_call("nvmlDeviceGetGpuFabricInfo", h, ref)

    # --- pairs ---------------------------------------------------------------------------
    def nvmlDeviceGetTopologyCommonAncestor(self, h1: _Handle, h2: _Handle) -> int:
        self._check("nvmlDeviceGetTopologyCommonAncestor", h1)
        self._check("nvmlDeviceGetTopologyCommonAncestor", h2)
        return self.m.nvml_level(self._gpu(h1).bus, self._gpu(h2).bus)

    def nvmlDeviceGetP2PStatus(self, h1: _Handle, h2: _Handle, index: Any) -> int:
        if not isinstance(index, int):
            # what ctypes does with pynvml's tuple-valued NVML_P2P_CAPS_INDEX_READ
            raise ctypes.ArgumentError("argument 3: TypeError: Don't know how to convert parameter 3")
        self._check("nvmlDeviceGetP2PStatus", h1)
        self._check("nvmlDeviceGetP2PStatus", h2)
        if self.m.nvlinks_between(h1.index, h2.index):
            return 0
        return int(self.m.pcie_p2p[index])
