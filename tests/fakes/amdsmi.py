"""A fake ``amdsmi`` module driven by a fake machine's AMD GPUs (fakes/amd_machine.py), issue 35.

It reproduces the binding's own behaviour, read from its source (ROCm/amdsmi ``py-interface`` @0ceca28
and the PyPI ``amdsmi`` 7.0.2 wheel): ``amdsmi_init`` wants an ``AmdSmiInitFlags`` member, else
``AmdSmiParameterException``; any call before it answers NOT_INIT (32); every status but SUCCESS raises
``AmdSmiLibraryException`` (``err_code``), RETRY and TIMEOUT their subclasses; a handle that is not
the binding's ``amdsmi_processor_handle`` raises ``AmdSmiParameterException``; the min/max bandwidth
of a PCIe pair is NOT_SUPPORTED; a function the machine's binding lacks is an AttributeError.
"""

from __future__ import annotations

import enum
from typing import Any

from tests.fakes.amd_machine import FakeAmd

NOT_SUPPORTED, NOT_INIT, RETRY, TIMEOUT = 2, 32, 9, 8


class AmdSmiException(Exception):
    """Base smi exception class"""


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code: int) -> None:
        err_code = abs(err_code)
        super().__init__(err_code)
        self.err_code = err_code

    def get_error_code(self) -> int:
        return self.err_code


class AmdSmiRetryException(AmdSmiLibraryException):
    def __init__(self) -> None:
        super().__init__(RETRY)


class AmdSmiTimeoutException(AmdSmiLibraryException):
    def __init__(self) -> None:
        super().__init__(TIMEOUT)


class AmdSmiParameterException(AmdSmiException):
    def __init__(self, received: object, expected: object) -> None:
        super().__init__(f"Invalid parameter: {type(received)} expected {expected}")


class AmdSmiInitFlags(enum.IntEnum):
    INIT_ALL_PROCESSORS = 0xFFFFFFFF
    INIT_AMD_CPUS = 1
    INIT_AMD_GPUS = 2


class AmdSmiMemoryType(enum.IntEnum):
    VRAM = 0
    VIS_VRAM = 1
    GTT = 2


class amdsmi_processor_handle:
    def __init__(self, index: int) -> None:
        self.index = index


def _raise(code: int) -> None:
    if code == RETRY:
        raise AmdSmiRetryException()
    if code == TIMEOUT:
        raise AmdSmiTimeoutException()
    raise AmdSmiLibraryException(code)


class FakeAmdSmi:
    """The module: ``amdsmi.<function>``, its exceptions and enums."""

    AmdSmiException = AmdSmiException
    AmdSmiLibraryException = AmdSmiLibraryException
    AmdSmiRetryException = AmdSmiRetryException
    AmdSmiTimeoutException = AmdSmiTimeoutException
    AmdSmiParameterException = AmdSmiParameterException
    AmdSmiInitFlags = AmdSmiInitFlags
    AmdSmiMemoryType = AmdSmiMemoryType

    def __init__(self, amd: FakeAmd) -> None:
        self.m = amd
        self.ready = False

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("amdsmi_") and name in object.__getattribute__(self, "m").missing:
            raise AttributeError(f"module 'amdsmi' has no attribute '{name}'")  # an older binding
        return object.__getattribute__(self, name)

    def _check(self, fn: str, *handles: Any) -> list[int]:
        if fn in self.m.missing:
            raise AttributeError(f"module 'amdsmi' has no attribute '{fn}'")
        if not self.ready:
            _raise(NOT_INIT)
        for h in handles:
            if not isinstance(h, amdsmi_processor_handle):
                raise AmdSmiParameterException(h, amdsmi_processor_handle)
        idx = [h.index for h in handles]
        for key in [(fn, None), *((fn, i) for i in idx), (fn, -1)]:
            if key in self.m.errors and (key[1] is not None or not idx or key[1] == -1):
                _raise(self.m.errors[key])
        return idx

    # --- the functions the probe calls -------------------------------------------------------
    def amdsmi_init(self, flag: Any = AmdSmiInitFlags.INIT_AMD_GPUS) -> None:
        if "amdsmi_init" in self.m.missing:
            raise AttributeError("module 'amdsmi' has no attribute 'amdsmi_init'")
        if not isinstance(flag, AmdSmiInitFlags):
            raise AmdSmiParameterException(flag, AmdSmiInitFlags)
        if self.m.init_error is not None:
            _raise(self.m.init_error)
        if ("amdsmi_init", None) in self.m.errors:
            _raise(self.m.errors[("amdsmi_init", None)])
        self.ready = True

    def amdsmi_shut_down(self) -> None:
        self._check("amdsmi_shut_down")
        self.ready = False

    def amdsmi_get_lib_version(self) -> dict[str, Any]:
        self._check("amdsmi_get_lib_version")
        major, minor, release = self.m.lib_version
        return {"major": major, "minor": minor, "release": release, "build": ""}

    def amdsmi_get_processor_handles(self) -> list[amdsmi_processor_handle]:
        self._check("amdsmi_get_processor_handles")
        return [amdsmi_processor_handle(i) for i in range(len(self.m.gpus))]

    def amdsmi_get_gpu_device_bdf(self, h: Any) -> str:
        (i,) = self._check("amdsmi_get_gpu_device_bdf", h)
        return self.m.gpus[i].bus

    def amdsmi_get_gpu_device_uuid(self, h: Any) -> str:
        (i,) = self._check("amdsmi_get_gpu_device_uuid", h)
        return self.m.gpus[i].uuid

    def amdsmi_get_gpu_asic_info(self, h: Any) -> dict[str, Any]:
        (i,) = self._check("amdsmi_get_gpu_asic_info", h)
        g = self.m.gpus[i]
        return {
            "market_name": g.name,
            "vendor_id": "0x1002",
            "device_id": hex(g.device_id),
            "target_graphics_version": g.gfx,
            "num_compute_units": 304,
        }

    def amdsmi_get_gpu_memory_total(self, h: Any, mem_type: Any) -> int:
        (i,) = self._check("amdsmi_get_gpu_memory_total", h)
        if not isinstance(mem_type, AmdSmiMemoryType):
            raise AmdSmiParameterException(mem_type, AmdSmiMemoryType)
        return self.m.gpus[i].memory_bytes

    def amdsmi_topo_get_numa_node_number(self, h: Any) -> int:
        (i,) = self._check("amdsmi_topo_get_numa_node_number", h)
        return self.m.gpus[i].numa

    def amdsmi_get_pcie_info(self, h: Any) -> dict[str, Any]:
        (i,) = self._check("amdsmi_get_pcie_info", h)
        cs, cw, ms, mw = self.m.gpus[i].pcie
        return {
            "pcie_static": {"max_pcie_width": mw, "max_pcie_speed": ms, "pcie_interface_version": 5},
            "pcie_metric": {"pcie_width": cw, "pcie_speed": cs, "pcie_bandwidth": "N/A"},
        }

    def amdsmi_get_gpu_driver_info(self, h: Any) -> dict[str, Any]:
        self._check("amdsmi_get_gpu_driver_info", h)
        return {"driver_name": "amdgpu", "driver_version": self.m.driver, "driver_date": "2015/01/01 00:00"}

    def _pair(self, fn: str, ha: Any, hb: Any) -> tuple[int, int]:
        i, j = self._check(fn, ha, hb)
        return i, j

    def amdsmi_topo_get_link_type(self, ha: Any, hb: Any) -> dict[str, int]:
        i, j = self._pair("amdsmi_topo_get_link_type", ha, hb)
        if self.m.xgmi_hops(i, j) is not None:
            return {"hops": 1, "type": 2}  # hops 1 for every XGMI pair (rocm_smi.cc)
        same = self.m.gpus[i].numa == self.m.gpus[j].numa
        return {"hops": 2 if same else 3, "type": 1}

    def amdsmi_topo_get_link_weight(self, ha: Any, hb: Any) -> int:
        i, j = self._pair("amdsmi_topo_get_link_weight", ha, hb)
        hops = self.m.xgmi_hops(i, j)
        if hops is not None:
            return 15 * hops
        same = self.m.gpus[i].numa == self.m.gpus[j].numa
        return 40 + (0 if same else self.m.numa_distance)

    def amdsmi_get_minmax_bandwidth_between_processors(self, ha: Any, hb: Any) -> dict[str, int]:
        i, j = self._pair("amdsmi_get_minmax_bandwidth_between_processors", ha, hb)
        if self.m.xgmi_hops(i, j) is None:
            _raise(NOT_SUPPORTED)
        links = self.m.links.get(frozenset((i, j)), 1)
        return {"min_bandwidth": 50000, "max_bandwidth": 50000 * links}

    def amdsmi_is_P2P_accessible(self, ha: Any, hb: Any) -> bool:
        i, j = self._pair("amdsmi_is_P2P_accessible", ha, hb)
        return self.m.xgmi_hops(i, j) is not None or self.m.pcie_p2p
