"""Fault injection around any fake library (FakeNvml, FakeCuda): one call on one device fails.

``Faulty(lib, devices_of, fault)`` forwards everything to ``lib`` and logs each driver call with
the device indices it concerns; the call named in ``fault`` raises (or hangs, or answers a
CUresult) when it concerns ``fault.device`` (or always, for calls that concern no device).
The error kinds are the library's own (every NVML error code, every CUresult a probe meets,
the bindings' RuntimeErrors) and the ones that are not: a generic Exception, TimeoutError,
UnicodeDecodeError, ctypes.ArgumentError, AttributeError raised inside the call, a wrapper
missing from the module, and a hang.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pynvml
from cuda.bindings import driver as cuda_driver

from tests.fakes.nvml import _Handle

# Every NVML error code nvidia-ml-py defines (nvml-cuda.md §2.2), by class name.
NVML_CODES: dict[str, int] = {
    name.removeprefix("NVML_ERROR_"): int(getattr(pynvml, name))
    for name in dir(pynvml)
    if name.startswith("NVML_ERROR_") and isinstance(getattr(pynvml, name), int)
}

# The CUresult codes a probe meets (nvml-cuda.md §5.5).
CUDA_CODES = [1, 2, 3, 4, 34, 46, 100, 101, 102, 201, 217, 304, 500, 704, 705, 711, 800, 801, 802, 803, 804, 999]

# Not the library's own error class: what issue 14 saw end the whole probe.
FOREIGN: dict[str, Callable[[], BaseException]] = {
    "Exception": lambda: Exception("something went wrong in the binding"),
    "TimeoutError": lambda: TimeoutError("driver did not answer"),
    "UnicodeDecodeError": lambda: UnicodeDecodeError("utf-8", b"\xff\xfeH100", 0, 1, "invalid start byte"),
    "ctypes.ArgumentError": lambda: ctypes.ArgumentError("argument 2: TypeError: wrong type"),
    "AttributeError": lambda: AttributeError("'NoneType' object has no attribute 'contents'"),
}
HANG = "hang"
MISSING = "missing wrapper"


@dataclass(frozen=True)
class Fault:
    """``call`` fails with ``kind`` when it concerns ``device`` (NVML index / CUDA ordinal).

    kind: "nvml:<CODE NAME>", "cuda:<code>", "runtime:<text>", a key of FOREIGN, HANG or MISSING.
    """

    call: str
    kind: str
    device: int = 1

    def __str__(self) -> str:
        return f"{self.call} × {self.kind}"


def nvml_devices(fn: str, args: tuple[Any, ...]) -> tuple[int, ...]:
    """Device indices an NVML call concerns: its handles, or the index of GetHandleByIndex."""
    if fn == "nvmlDeviceGetHandleByIndex":
        return (int(args[0]),)
    return tuple(a.index for a in args if isinstance(a, _Handle))


# Positions of the CUdevice arguments of each CUDA call the probe makes.
_CUDA_DEVICE_ARGS = {
    "cuDeviceGet": (0,),
    "cuDeviceGetName": (1,),
    "cuDeviceGetPCIBusId": (1,),
    "cuDeviceGetUuid": (0,),
    "cuDeviceGetUuid_v2": (0,),
    "cuDeviceGetAttribute": (2,),
    "cuDeviceTotalMem": (0,),
    "cuDeviceCanAccessPeer": (0, 1),
    "cuDeviceGetP2PAttribute": (1, 2),
}


def cuda_devices(fn: str, args: tuple[Any, ...]) -> tuple[int, ...]:
    return tuple(int(args[k]) for k in _CUDA_DEVICE_ARGS.get(fn, ()) if k < len(args))


class Faulty:
    """A proxy for a fake library that injects one fault and logs (call, devices)."""

    def __init__(self, lib: Any, devices_of: Callable[[str, tuple[Any, ...]], tuple[int, ...]], fault: Fault | None):
        self._lib = lib
        self._devices_of = devices_of
        self._fault = fault
        self.log: list[tuple[str, tuple[int, ...]]] = []
        self.release = threading.Event()  # set it to let hung calls return

    def __getattr__(self, name: str) -> Any:
        f = self._fault
        if f is not None and f.kind == MISSING and name == f.call:
            raise AttributeError(f"module 'pynvml' has no attribute '{name}'")
        attr = getattr(self._lib, name)
        if isinstance(attr, type) or not callable(attr) or not name.startswith(("nvml", "cu", "amdsmi_")):
            return attr

        def call(*args: Any) -> Any:
            devices = self._devices_of(name, args)
            self.log.append((name, devices))
            if f is not None and name == f.call and (not devices or f.device in devices):
                return self._fail(f, attr, args)
            return attr(*args)

        return call

    def _fail(self, f: Fault, attr: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        kind = f.kind
        if kind == HANG:
            self.release.wait(60)
            return attr(*args)
        if kind in FOREIGN:
            raise FOREIGN[kind]()
        source, _, value = kind.partition(":")
        if source == "nvml":
            raise pynvml.NVMLError(NVML_CODES[value])
        if source == "amdsmi":  # the fake binding's own exception, with its status code (issue 35)
            raise self._lib.AmdSmiLibraryException(int(value))
        if source == "runtime":
            raise RuntimeError(value)
        if source == "cuda":
            code = cuda_driver.CUresult(int(value))
            return (code,) if f.call == "cuInit" else (code, None)
        raise ValueError(f"unknown fault kind {kind!r}")

    def calls_after(self, index: int, device: int) -> list[str]:
        """Calls logged after position ``index`` that concern ``device``."""
        return [fn for fn, devs in self.log[index + 1 :] if device in devs]


def nvml_kinds() -> list[str]:
    """Every error an NVML call can raise: each NVML code, the foreign exceptions, a hang."""
    return [f"nvml:{name}" for name in sorted(NVML_CODES)] + sorted(FOREIGN) + [HANG, MISSING]


def cuda_kinds() -> list[str]:
    """Every failure of a CUDA driver call: each CUresult, the bindings' RuntimeErrors, foreign, a hang."""
    return (
        [f"cuda:{c}" for c in CUDA_CODES]
        + ["runtime:Failed to dlopen libcuda.so.1", 'runtime:Function "cuX" not found']
        + sorted(FOREIGN)
        + [HANG]
    )
