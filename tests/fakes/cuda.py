"""A fake of ``cuda.bindings.driver`` driven by a FakeMachine.

Calls return tuples whose first element is the real ``CUresult`` enum. Binding-level
failures are exceptions as in the real bindings (nvml-cuda.md §5.6): no libcuda →
``RuntimeError`` on every call; a function the driver lacks → ``RuntimeError('Function "cuX"
not found')``. Ordinals follow ``cuda_order`` (CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER).
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

from cuda.bindings import driver as real

from tests.fakes.machine import FakeMachine

R = real.CUresult


class _Uuid:
    def __init__(self, raw: bytes) -> None:
        self.bytes = raw


class FakeCuda:
    CUresult = real.CUresult
    CUdevice_P2PAttribute = real.CUdevice_P2PAttribute

    def __init__(self, machine: FakeMachine) -> None:
        self.m = machine
        self.initialised = False
        order = machine.cuda_order if machine.cuda_order is not None else list(range(len(machine.gpus)))
        self.order = order

    def _enter(self, name: str, needs_init: bool = True) -> R | None:
        if self.m.cuda_missing_library:
            raise RuntimeError("Failed to dlopen libcuda.so.1")
        if name in self.m.cuda_missing_functions:
            raise RuntimeError(f'Function "{name}" not found')
        if needs_init and not self.initialised:
            return R.CUDA_ERROR_NOT_INITIALIZED
        return None

    def cuDriverGetVersion(self) -> tuple[Any, ...]:
        err = self._enter("cuDriverGetVersion", needs_init=False)
        return (err, None) if err else (R.CUDA_SUCCESS, self.m.cuda_version)

    def cuInit(self, flags: int) -> tuple[Any, ...]:
        self._enter("cuInit", needs_init=False)
        if self.m.cuda_init_error is not None:
            return (R(self.m.cuda_init_error),)
        if not self.order:
            return (R.CUDA_ERROR_NO_DEVICE,)
        self.initialised = True
        return (R.CUDA_SUCCESS,)

    def cuDeviceGetCount(self) -> tuple[Any, ...]:
        err = self._enter("cuDeviceGetCount")
        return (err, None) if err else (R.CUDA_SUCCESS, len(self.order))

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, ...]:
        err = self._enter("cuDeviceGet")
        if err:
            return (err, None)
        if not 0 <= ordinal < len(self.order):
            return (R.CUDA_ERROR_INVALID_DEVICE, None)
        return (R.CUDA_SUCCESS, ordinal)

    def _gpu(self, dev: int) -> Any:
        return self.m.gpus[self.order[int(dev)]]

    def cuDeviceGetName(self, length: int, dev: int) -> tuple[Any, ...]:
        err = self._enter("cuDeviceGetName")
        return (err, None) if err else (R.CUDA_SUCCESS, self._gpu(dev).name.encode().ljust(length, b"\0"))

    def cuDeviceGetPCIBusId(self, length: int, dev: int) -> tuple[Any, ...]:
        err = self._enter("cuDeviceGetPCIBusId")
        if err:
            return (err, None)
        return (R.CUDA_SUCCESS, self._gpu(dev).bus.upper().encode().ljust(length, b"\0"))

    def cuDeviceGetUuid(self, dev: int) -> tuple[Any, ...]:
        err = self._enter("cuDeviceGetUuid")
        if err:
            return (err, None)
        raw = uuidlib.UUID(self._gpu(dev).uuid.removeprefix("GPU-")).bytes
        return (R.CUDA_SUCCESS, _Uuid(raw))

    def _p2p_ok(self, a: int, b: int) -> bool:
        ia, ib = self.order[int(a)], self.order[int(b)]
        if self.m.cuda_can_access is not None:
            return self.m.cuda_can_access
        if self.m.nvlinks_between(ia, ib):
            return True
        return self.m.pcie_p2p[0] == 0 and self.m.pcie_p2p[1] == 0

    def cuDeviceCanAccessPeer(self, a: int, b: int) -> tuple[Any, ...]:
        err = self._enter("cuDeviceCanAccessPeer")
        if err:
            return (err, None)
        if int(a) == int(b):
            return (R.CUDA_ERROR_INVALID_DEVICE, None)
        return (R.CUDA_SUCCESS, 1 if self._p2p_ok(a, b) else 0)

    def cuDeviceGetP2PAttribute(self, attr: Any, a: int, b: int) -> tuple[Any, ...]:
        err = self._enter("cuDeviceGetP2PAttribute")
        if err:
            return (err, None)
        if int(a) == int(b):
            return (R.CUDA_ERROR_INVALID_DEVICE, None)
        ok = self._p2p_ok(a, b)
        nv = self.m.nvlinks_between(self.order[int(a)], self.order[int(b)])
        A = real.CUdevice_P2PAttribute
        if attr == A.CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
            return (R.CUDA_SUCCESS, 0 if nv else 1 if ok else 2)
        if attr == A.CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
            return (R.CUDA_SUCCESS, int(ok))
        if attr == A.CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
            return (R.CUDA_SUCCESS, int(bool(nv)))
        return (R.CUDA_ERROR_INVALID_VALUE, None)
