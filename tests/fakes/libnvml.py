"""A fake ``libnvidia-ml.so.1`` at the C ABI, driven by the same FakeMachine as fakes/nvml.py.

Installed as ``pynvml.nvmlLib``, it lets the *real* nvidia-ml-py wrappers run: they fetch each
C symbol with ``getattr(nvmlLib, name)``, build their own ctypes out-structs, call the symbol and
decode what comes back. Each symbol here is a ctypes C function pointer with nvml.h's parameter
types; it writes its out-parameters as bytes at nvml.h's C offsets into whatever buffer it is
handed — exactly what the driver does, whatever Python class describes that buffer. So a struct
that a given nvidia-ml-py line declares differently from nvml.h, a string it decodes on access, or
an argument it passes with the wrong type shows here as it would on a GPU.

Failure modes follow the machine description, as the module-level fake does: ``missing`` symbols
are absent (pynvml raises FunctionNotFound), ``errors`` and ``lost_after`` are return codes,
``init_error`` 12 is a library that cannot be loaded (``CDLL`` raises OSError), any other
``init_error`` is nvmlInit's return code. Every symbol answers Uninitialized before init.

Layouts (nvml.h, x86-64): nvmlPciInfo_t ``char busIdLegacy[16]; uint domain, bus, device,
pciDeviceId, pciSubSystemId; char busId[32]`` (68 bytes); nvmlMemory_t ``ull total, free, used``;
nvmlMemory_v2_t ``uint version; ull total, reserved, free, used`` (40 bytes, 4 padding);
nvmlFieldValue_t ``uint fieldId, scopeId; long long timestamp, latencyUsec; int valueType;
nvmlReturn_t nvmlReturn; nvmlValue_t value`` (40 bytes); handles are opaque pointers.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pynvml as real

from tests.fakes.machine import FakeGpu, FakeMachine, nvml_bus
from tests.fakes.nvml import RESERVED
from tests.fakes.nvml_layouts import c_fabric_functions
from topomap.base.cpus import parse_cpulist

_U, _I, _P = ctypes.c_uint, ctypes.c_int, ctypes.c_void_p
_PCI = struct.Struct("<16s5I32s")
_MEM = struct.Struct("<3Q")
_MEM2 = struct.Struct("<I4x4Q")
_FIELD = struct.Struct("<IIqqii8s")
_GPU_BASE, _STRIDE = 0x7F0000001000, 0x10  # handles: opaque non-NULL pointers, MIG slots inside

# C symbol -> the key the machine description uses (the wrapper's name)
_KEY = {
    "nvmlDeviceGetCount_v2": "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex_v2": "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetPciInfo_v3": "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetMemoryInfo_v2": "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetNvLinkRemotePciInfo_v2": "nvmlDeviceGetNvLinkRemotePciInfo",
}

_ERROR_TEXT = {
    1: "Uninitialized",
    2: "Invalid Argument",
    3: "Not Supported",
    4: "Insufficient Permissions",
    6: "Not Found",
    12: "NVML Shared Library Not Found",
    13: "Function Not found",
    15: "GPU is lost",
    25: "Argument version mismatch",
}


class _Lost(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _put(addr: int, fmt: str, *values: Any) -> None:
    s = struct.Struct(fmt)
    s.pack_into((ctypes.c_char * s.size).from_address(addr), 0, *values)


def _put_text(addr: int, size: int, text: bytes) -> int:
    """Copy a NUL-terminated string into a caller's buffer of ``size`` bytes, as NVML does."""
    if len(text) + 1 > size:
        return int(real.NVML_ERROR_INSUFFICIENT_SIZE)
    ctypes.memmove(addr, text + b"\0", len(text) + 1)
    return 0


class FakeLibNvml:
    """The C library: each attribute is a C function pointer with nvml.h's signature."""

    def __init__(self, machine: FakeMachine) -> None:
        self.m = machine
        self.initialised = False
        self.calls: dict[int, int] = {}
        self.log: list[str] = []
        self._texts = {c: ctypes.create_string_buffer(t.encode()) for c, t in _ERROR_TEXT.items()}
        self._unknown = ctypes.create_string_buffer(b"Unknown Error")
        self._fns: dict[str, Any] = {}
        for name, (restype, argtypes, body) in self._symbols().items():
            self._fns[name] = ctypes.CFUNCTYPE(restype, *argtypes)(self._guarded(name, body))
        fabric = c_fabric_functions(lambda h: self.m.gpus[h].fabric)
        for name, c_fn in fabric.items():
            self._fns[name] = self._fabric(name, c_fn)

    def __getattr__(self, name: str) -> Any:
        fns = self.__dict__.get("_fns", {})
        if name not in fns or name in self.m.missing or _KEY.get(name) in self.m.missing:
            raise AttributeError(f"undefined symbol: {name}")
        return fns[name]

    # --- plumbing ------------------------------------------------------------------------
    def _guarded(self, name: str, body: Callable[..., int]) -> Callable[..., int]:
        def call(*args: Any) -> int:
            self.log.append(name)
            if name in ("nvmlInitWithFlags", "nvmlInit_v2", "nvmlErrorString"):
                return body(*args)
            if not self.initialised:
                return int(real.NVML_ERROR_UNINITIALIZED)
            try:
                return body(*args)
            except _Lost as err:
                return err.code

        return call

    def _check(self, name: str, handle: int | None) -> int | None:
        """The GPU index of ``handle``, after the machine's errors and losses for this call."""
        key = _KEY.get(name, name)
        idx = None if handle is None else (handle - _GPU_BASE) // _STRIDE
        if idx is not None and not 0 <= idx < len(self.m.gpus):
            raise _Lost(int(real.NVML_ERROR_INVALID_ARGUMENT))
        for k in ((key, idx), (key, -1 if idx is not None else None)):
            if k in self.m.errors:
                raise _Lost(self.m.errors[k])
        if idx is not None and idx in self.m.lost_after:
            self.calls[idx] = self.calls.get(idx, 0) + 1
            if self.calls[idx] > self.m.lost_after[idx]:
                raise _Lost(int(real.NVML_ERROR_GPU_IS_LOST))
        return idx

    def _gpu(self, name: str, handle: int) -> tuple[FakeGpu, int]:
        idx = self._check(name, handle)
        assert idx is not None
        return self.m.gpus[idx], (handle - _GPU_BASE) % _STRIDE

    def _fabric(self, name: str, c_fn: Any) -> Any:
        def body(handle: int, addr: int) -> int:
            idx = self._check(name, handle)
            return int(c_fn(idx, addr))

        proto = ctypes.CFUNCTYPE(_I, _P, _P)
        return proto(self._guarded(name, body))

    def error_text(self, code: int) -> int:
        buf = self._texts.get(code, self._unknown)
        return ctypes.addressof(buf)

    # --- the symbols ---------------------------------------------------------------------
    def _symbols(self) -> dict[str, tuple[Any, list[Any], Callable[..., int]]]:
        m = self.m
        out: dict[str, tuple[Any, list[Any], Callable[..., int]]] = {
            "nvmlInitWithFlags": (_I, [_U], self._init),
            "nvmlInit_v2": (_I, [], lambda: self._init(0)),
            "nvmlShutdown": (_I, [], self._shutdown),
            "nvmlErrorString": (_P, [_I], self.error_text),
            "nvmlSystemGetDriverVersion": (_I, [_P, _U], lambda a, n: self._text(a, n, m.driver)),
            "nvmlSystemGetNVMLVersion": (_I, [_P, _U], lambda a, n: self._text(a, n, m.nvml_version)),
            "nvmlSystemGetCudaDriverVersion": (_I, [_P], lambda a: self._int(a, "<i", m.cuda_version)),
            "nvmlSystemGetCudaDriverVersion_v2": (_I, [_P], lambda a: self._int(a, "<i", m.cuda_version)),
            "nvmlDeviceGetCount_v2": (_I, [_P], lambda a: self._int(a, "<I", len(m.gpus))),
            "nvmlDeviceGetHandleByIndex_v2": (_I, [_U, _P], self._handle),
            "nvmlDeviceGetName": (_I, [_P, _P, _U], self._name),
            "nvmlDeviceGetUUID": (_I, [_P, _P, _U], self._uuid),
            "nvmlDeviceGetPciInfo_v3": (_I, [_P, _P], self._pci),
            "nvmlDeviceGetMemoryInfo": (_I, [_P, _P], self._memory),
            "nvmlDeviceGetMemoryInfo_v2": (_I, [_P, _P], self._memory_v2),
            "nvmlDeviceGetCudaComputeCapability": (_I, [_P, _P, _P], self._cc),
            "nvmlDeviceGetArchitecture": (_I, [_P, _P], self._per_gpu("nvmlDeviceGetArchitecture", lambda g: g.arch)),
            "nvmlDeviceGetPersistenceMode": (
                _I,
                [_P, _P],
                self._per_gpu("nvmlDeviceGetPersistenceMode", lambda g: g.persistence),
            ),
            "nvmlDeviceGetCpuAffinity": (_I, [_P, _U, _P], self._cpu_affinity),
            "nvmlDeviceGetMemoryAffinity": (_I, [_P, _U, _P, _U], self._memory_affinity),
            "nvmlDeviceGetNumaNodeId": (_I, [_P, _P], self._numa_id),
            "nvmlDeviceGetMigMode": (_I, [_P, _P, _P], self._mig_mode),
            "nvmlDeviceGetMaxMigDeviceCount": (_I, [_P, _P], self._mig_count),
            "nvmlDeviceGetMigDeviceHandleByIndex": (_I, [_P, _U, _P], self._mig_handle),
            "nvmlDeviceGetFieldValues": (_I, [_P, _I, _P], self._fields),
            "nvmlDeviceGetNvLinkState": (_I, [_P, _U, _P], self._link_value("nvmlDeviceGetNvLinkState", "active")),
            "nvmlDeviceGetNvLinkVersion": (
                _I,
                [_P, _U, _P],
                self._link_value("nvmlDeviceGetNvLinkVersion", "version_enum"),
            ),
            "nvmlDeviceGetNvLinkRemoteDeviceType": (
                _I,
                [_P, _U, _P],
                self._link_value("nvmlDeviceGetNvLinkRemoteDeviceType", "remote_type"),
            ),
            "nvmlDeviceGetNvLinkCapability": (_I, [_P, _U, _U, _P], self._link_cap),
            "nvmlDeviceGetNvLinkRemotePciInfo_v2": (_I, [_P, _U, _P], self._remote_pci),
            "nvmlDeviceGetTopologyCommonAncestor": (_I, [_P, _P, _P], self._ancestor),
            "nvmlDeviceGetP2PStatus": (_I, [_P, _P, _U, _P], self._p2p),
        }
        for k, name in enumerate(
            (
                "nvmlDeviceGetCurrPcieLinkGeneration",
                "nvmlDeviceGetCurrPcieLinkWidth",
                "nvmlDeviceGetMaxPcieLinkGeneration",
                "nvmlDeviceGetMaxPcieLinkWidth",
            )
        ):
            out[name] = (_I, [_P, _P], self._per_gpu(name, lambda g, k=k: g.pcie[k]))  # type: ignore[misc]
        return out

    def _init(self, flags: int) -> int:
        if self.m.init_error is not None:
            return int(self.m.init_error)
        self.initialised = True
        return 0

    def _shutdown(self) -> int:
        if not self.initialised:
            return int(real.NVML_ERROR_UNINITIALIZED)
        self.initialised = False
        return 0

    def _text(self, addr: int, size: int, text: str) -> int:
        return _put_text(addr, size, text.encode())

    def _int(self, addr: int, fmt: str, value: int) -> int:
        _put(addr, fmt, value)
        return 0

    def _per_gpu(self, name: str, value: Callable[[FakeGpu], int]) -> Callable[[int, int], int]:
        def body(handle: int, addr: int) -> int:
            g, _slot = self._gpu(name, handle)
            _put(addr, "<I", int(value(g)))
            return 0

        return body

    def _handle(self, index: int, addr: int) -> int:
        if not 0 <= index < len(self.m.gpus):
            return int(real.NVML_ERROR_INVALID_ARGUMENT)
        h = _GPU_BASE + index * _STRIDE
        self._check("nvmlDeviceGetHandleByIndex_v2", h)
        _put(addr, "<Q", h)
        return 0

    def _name(self, handle: int, addr: int, size: int) -> int:
        g, slot = self._gpu("nvmlDeviceGetName", handle)
        name = g.name.encode() if isinstance(g.name, str) else bytes(g.name)
        return _put_text(addr, size, name + b" MIG 1g.10gb" if slot else name)

    def _uuid(self, handle: int, addr: int, size: int) -> int:
        g, slot = self._gpu("nvmlDeviceGetUUID", handle)
        idx = (handle - _GPU_BASE) // _STRIDE
        text = f"MIG-{idx:08x}-0000-0000-0000-{slot - 1:012x}" if slot else str(g.uuid)
        return _put_text(addr, size, text.encode())

    def _pci(self, handle: int, addr: int) -> int:
        g, _slot = self._gpu("nvmlDeviceGetPciInfo_v3", handle)
        d, b, rest = g.bus.split(":")
        dom, bus, dev = int(d, 16), int(b, 16), int(rest.split(".")[0], 16)
        legacy = f"{dom:04X}:{bus:02X}:{dev:02X}.0".encode()
        _PCI.pack_into(
            (ctypes.c_char * _PCI.size).from_address(addr),
            0,
            legacy,
            dom,
            bus,
            dev,
            (int(g.device_id, 16) << 16) | 0x10DE,
            0,
            nvml_bus(g.bus).encode(),
        )
        return 0

    def _total(self, handle: int, name: str) -> int:
        g, slot = self._gpu(name, handle)
        return int(g.memory_bytes // (7 if slot else 1))

    def _memory(self, handle: int, addr: int) -> int:
        _MEM.pack_into(
            (ctypes.c_char * _MEM.size).from_address(addr), 0, self._total(handle, "nvmlDeviceGetMemoryInfo"), 0, 0
        )
        return 0

    def _memory_v2(self, handle: int, addr: int) -> int:
        buf = (ctypes.c_char * _MEM2.size).from_address(addr)
        (version,) = struct.unpack_from("<I", buf)
        if version >> 24 != 2:
            return int(real.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        _MEM2.pack_into(buf, 0, version, self._total(handle, "nvmlDeviceGetMemoryInfo_v2"), RESERVED, 0, 0)
        return 0

    def _cc(self, handle: int, major: int, minor: int) -> int:
        g, _slot = self._gpu("nvmlDeviceGetCudaComputeCapability", handle)
        _put(major, "<i", g.cc[0])
        _put(minor, "<i", g.cc[1])
        return 0

    def _mask(self, addr: int, size: int, bits: list[int]) -> None:
        words = [0] * size
        for bit in bits:
            if bit // 64 < size:
                words[bit // 64] |= 1 << (bit % 64)
        _put(addr, f"<{size}Q", *words)

    def _cpu_affinity(self, handle: int, size: int, addr: int) -> int:
        g, _slot = self._gpu("nvmlDeviceGetCpuAffinity", handle)
        self._mask(addr, size, list(parse_cpulist(self.m.numa_cpus[self.m.numa_of(g.bus)])))
        return 0

    def _memory_affinity(self, handle: int, size: int, addr: int, scope: int) -> int:
        g, _slot = self._gpu("nvmlDeviceGetMemoryAffinity", handle)
        self._mask(addr, size, [self.m.numa_of(g.bus)])
        return 0

    def _numa_id(self, handle: int, addr: int) -> int:
        g, _slot = self._gpu("nvmlDeviceGetNumaNodeId", handle)
        if g.gpu_numa is None:
            return int(real.NVML_ERROR_NOT_SUPPORTED)
        _put(addr, "<I", g.gpu_numa)
        return 0

    def _mig_mode(self, handle: int, current: int, pending: int) -> int:
        g, _slot = self._gpu("nvmlDeviceGetMigMode", handle)
        if g.mig is None:
            return int(real.NVML_ERROR_NOT_SUPPORTED)
        _put(current, "<I", g.mig[0])
        _put(pending, "<I", g.mig[1])
        return 0

    def _mig_count(self, handle: int, addr: int) -> int:
        g, _slot = self._gpu("nvmlDeviceGetMaxMigDeviceCount", handle)
        _put(addr, "<I", 7 if g.mig and g.mig[0] else 0)
        return 0

    def _mig_handle(self, handle: int, slot: int, addr: int) -> int:
        self._gpu("nvmlDeviceGetMigDeviceHandleByIndex", handle)
        if slot not in (0, 3):  # sparse slots: empty ones answer NotFound
            return int(real.NVML_ERROR_NOT_FOUND)
        _put(addr, "<Q", handle + 1 + slot)
        return 0

    def _fields(self, handle: int, count: int, addr: int) -> int:
        g, _slot = self._gpu("nvmlDeviceGetFieldValues", handle)
        for k in range(count):
            buf = (ctypes.c_char * _FIELD.size).from_address(addr + k * _FIELD.size)
            fid, scope, *_ = _FIELD.unpack_from(buf)
            value: int | None = None
            if fid == real.NVML_FI_DEV_NVLINK_LINK_COUNT and g.nvlinks is not None and g.link_count_field:
                value = len(g.nvlinks)
            elif fid == 90 and g.nvlinks and g.nvlink_speed_mbps:
                value = g.nvlink_speed_mbps
            ret = 0 if value is not None else int(real.NVML_ERROR_NOT_SUPPORTED)
            _FIELD.pack_into(buf, 0, fid, scope, 0, 0, 1, ret, struct.pack("<Q", value or 0))
        return 0

    def _link(self, name: str, handle: int, link: int) -> Any:
        g, _slot = self._gpu(name, handle)
        if g.nvlinks is None:
            raise _Lost(int(real.NVML_ERROR_NOT_SUPPORTED))
        if not 0 <= link < len(g.nvlinks):
            raise _Lost(int(real.NVML_ERROR_INVALID_ARGUMENT))
        return g.nvlinks[link]

    def _link_value(self, name: str, attr: str) -> Callable[[int, int, int], int]:
        def body(handle: int, link: int, addr: int) -> int:
            _put(addr, "<I", int(getattr(self._link(name, handle, link), attr)))
            return 0

        return body

    def _link_cap(self, handle: int, link: int, cap: int, addr: int) -> int:
        lk = self._link("nvmlDeviceGetNvLinkCapability", handle, link)
        _put(addr, "<I", int(lk.p2p_capable) if cap == real.NVML_NVLINK_CAP_P2P_SUPPORTED else 1)
        return 0

    def _remote_pci(self, handle: int, link: int, addr: int) -> int:
        lk = self._link("nvmlDeviceGetNvLinkRemotePciInfo_v2", handle, link)
        bus = lk.remote_bus if isinstance(lk.remote_bus, bytes) else lk.remote_bus.encode()
        _PCI.pack_into((ctypes.c_char * _PCI.size).from_address(addr), 0, b"", 0, 0, 0, 0, 0, bus[:31])
        return 0

    def _ancestor(self, h1: int, h2: int, addr: int) -> int:
        a, _ = self._gpu("nvmlDeviceGetTopologyCommonAncestor", h1)
        b, _ = self._gpu("nvmlDeviceGetTopologyCommonAncestor", h2)
        _put(addr, "<I", self.m.nvml_level(a.bus, b.bus))
        return 0

    def _p2p(self, h1: int, h2: int, index: int, addr: int) -> int:
        self._gpu("nvmlDeviceGetP2PStatus", h1)
        self._gpu("nvmlDeviceGetP2PStatus", h2)
        i, j = (h1 - _GPU_BASE) // _STRIDE, (h2 - _GPU_BASE) // _STRIDE
        if not 0 <= index < len(self.m.pcie_p2p):
            return int(real.NVML_ERROR_INVALID_ARGUMENT)
        _put(addr, "<I", 0 if self.m.nvlinks_between(i, j) else int(self.m.pcie_p2p[index]))
        return 0


@contextmanager
def installed(machine: FakeMachine) -> Iterator[FakeLibNvml | None]:
    """The real pynvml module with this machine's fake library behind it (None: no library)."""
    saved = (real.nvmlLib, dict(real._nvmlGetFunctionPointer_cache), real.CDLL, real._nvmlLib_refcount)
    lib = FakeLibNvml(machine) if machine.init_error != real.NVML_ERROR_LIBRARY_NOT_FOUND else None

    def no_library(*_a: Any, **_k: Any) -> Any:
        raise OSError("libnvidia-ml.so.1: cannot open shared object file: No such file or directory")

    real.nvmlLib = lib
    real._nvmlGetFunctionPointer_cache.clear()
    real._nvmlLib_refcount = 0
    if lib is None:
        real.CDLL = no_library  # what dlopen says on a machine without the driver
    try:
        yield lib
    finally:
        real.nvmlLib = saved[0]
        real._nvmlGetFunctionPointer_cache.clear()
        real._nvmlGetFunctionPointer_cache.update(saved[1])
        real.CDLL = saved[2]
        real._nvmlLib_refcount = saved[3]
