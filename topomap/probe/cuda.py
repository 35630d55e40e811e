"""CUDA driver API source: the only module that imports ``cuda.bindings``.

Every call returns a tuple whose first element is a ``CUresult``; binding-level failures are
exceptions: a missing ``libcuda.so.1`` raises ``RuntimeError`` at the first call (with
cuda-pathfinder installed, its ``DynamicLibNotFoundError``, a RuntimeError subclass), and a
driver older than the bindings raises ``RuntimeError('Function "cuX" not found')``. Both are
recorded here, never fatal. CUDA ordinals are joined to NVML by bus id (else UUID), never index.
"""

from __future__ import annotations

import re
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any

from topomap.base.pciaddr import normalize_bus_id
from topomap.model.snapshot import Problem
from topomap.probe.guarded import INIT_TIMEOUT_S, BudgetSpent, CallTimedOut, active_runner


@dataclass
class CudaDevice:
    ordinal: int
    uuid: str | None = None  # "GPU-…" as NVML spells it
    pci_bus_id: str | None = None
    name: str | None = None


@dataclass
class CudaPeerInfo:
    """One ordered pair src → dst."""

    can_access_peer: bool | None = None
    performance_rank: int | None = None
    access_supported: bool | None = None
    native_atomics: bool | None = None


@dataclass
class CudaResult:
    available: bool = False
    driver_version: str | None = None
    devices: list[CudaDevice] = field(default_factory=list)
    peers: dict[tuple[int, int], CudaPeerInfo] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def _import_driver() -> Any:
    # lazy: the bindings are optional and heavy (start-up); only a real probe or measurement needs them
    try:
        from cuda.bindings import driver  # cuda-bindings >= 12.6.1

        return driver
    except ImportError:
        from cuda import cuda  # cuda-python 11.x .. 12.6.0

        return cuda


def load_driver() -> Any:
    """The ``cuda.bindings.driver`` module (ImportError when not installed).

    Module-level so a child process can be handed it by reference (measurement workers);
    tests hand those workers a fake driver factory instead.
    """
    return _import_driver()


class _Cuda:
    def __init__(self, cu: Any, problems: list[Problem]) -> None:
        self.cu = cu
        self.problems = problems
        self.library_missing = False

    def call(self, fn_name: str, target: str | None, *args: Any, limit_s: float | None = None) -> tuple[bool, Any]:
        """(ok, first output) of ``cu.<fn_name>(*args)``; never raises.

        The one choke point for CUDA driver calls: a non-zero ``CUresult``, a ``RuntimeError``
        from the bindings (no libcuda, or a driver older than the bindings), any other exception,
        an answer that is not a ``(CUresult, ...)`` tuple, and a call that hangs (cut after
        ``limit_s`` seconds, default the probe's per-call limit; the probe's overall budget
        also applies) all become problems against ``target``.
        """
        runner = active_runner()
        hung: set[str] = self.__dict__.setdefault("_hung", set())  # targets whose call timed out
        if target is not None and (target in hung or any(d in hung for d in re.findall(r"cuda\d+", target))):
            return False, None  # recorded when it timed out

        def budget_spent() -> tuple[bool, Any]:
            if not any(p.source == "cuda" and "time budget" in p.error for p in self.problems):
                total = runner.total_s if runner.total_s is not None else 0.0
                self._record(fn_name, None, f"{BudgetSpent(total)}; this and later CUDA calls skipped")
            return False, None

        if runner.spent():
            return budget_spent()
        try:
            fn = getattr(self.cu, fn_name, None)
        except Exception:
            fn = None
        if not callable(fn):
            self._record(fn_name, target, "not in these CUDA bindings")
            return False, None
        try:
            res = runner.run(fn, *args, limit_s=limit_s)
            status = res[0]
            code = int(status)
            value = res[1] if len(res) > 1 else None
        except CallTimedOut as err:
            if target is not None:
                hung.add(target)
            later = f"; later calls for {target} skipped" if target is not None else ""
            self._record(fn_name, target, f"{err}{later}")
            return False, None
        except BudgetSpent:
            return budget_spent()
        except RuntimeError as err:  # missing libcuda, or driver older than the bindings
            if "not found" not in str(err) or "Function" not in str(err):
                self.library_missing = True  # no libcuda at all: nothing else will answer
            self._record(fn_name, target, f"{type(err).__name__}: {err}")
            return False, None
        except Exception as err:  # anything else the bindings or a broken answer raise
            self._record(fn_name, target, f"{type(err).__name__}: {err}")
            return False, None
        if code != 0:
            self._record(fn_name, target, f"{getattr(status, 'name', 'CUresult')} ({code})")
            return False, None
        return True, value

    def _record(self, call: str, target: str | None, error: str) -> None:
        self.problems.append(Problem(source="cuda", call=call, target=target, error=error))


def _text(raw: Any) -> str:
    """NUL-padded bytes from the bindings → str."""
    if isinstance(raw, bytes):
        return raw.split(b"\0", 1)[0].decode(errors="replace")
    return str(raw).split("\0", 1)[0]


def _uuid_text(raw: Any) -> str | None:
    b = getattr(raw, "bytes", raw)
    if isinstance(b, str):
        b = b.encode("latin-1")
    if not isinstance(b, (bytes, bytearray)) or len(b) != 16:
        return None
    return "GPU-" + str(uuidlib.UUID(bytes=bytes(b)))


def probe_cuda(cu: Any | None = None) -> CudaResult:
    """CUDA's view: ordinals, their UUIDs and bus ids, and peer access per ordered pair.

    The ordinal order honours CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER of this process.
    """
    result = CudaResult()
    if cu is None:
        try:
            cu = _import_driver()
        except ImportError as err:
            result.problems.append(
                Problem(
                    source="cuda",
                    call="import cuda.bindings",
                    error=f"cuda-bindings not installed ({err}): pip install 'topomap[probe]'",
                )
            )
            return result
    c = _Cuda(cu, result.problems)
    ok, ver = c.call("cuDriverGetVersion", None)
    if ok and ver:
        result.driver_version = f"{int(ver) // 1000}.{(int(ver) % 1000) // 10}"
    if c.library_missing:
        return result
    # as long as nvmlInit's: an 8-GPU box without persistence mode initialises every GPU here
    ok, _ = c.call("cuInit", None, 0, limit_s=INIT_TIMEOUT_S)
    if not ok:
        return result
    result.available = True
    ok, count = c.call("cuDeviceGetCount", None)
    if not ok:
        return result
    handles: dict[int, Any] = {}
    for i in range(int(count)):
        target = f"cuda{i}"
        ok, dev = c.call("cuDeviceGet", target, i)
        if not ok:
            result.devices.append(CudaDevice(ordinal=i))
            continue
        handles[i] = dev
        d = CudaDevice(ordinal=i)
        ok, name = c.call("cuDeviceGetName", target, 256, dev)
        d.name = _text(name) if ok else None
        ok, bus = c.call("cuDeviceGetPCIBusId", target, 32, dev)
        d.pci_bus_id = normalize_bus_id(_text(bus)) if ok else None
        # cuDeviceGetUuid: the physical GPU's UUID in 12.x, a MIG instance's own in 13.x (and _v2
        # is gone); the join to NVML goes by bus id first for that reason.
        ok, u = c.call("cuDeviceGetUuid", target, dev)
        d.uuid = _uuid_text(u) if ok else None
        result.devices.append(d)
    p2p = getattr(cu, "CUdevice_P2PAttribute", None)
    attrs: dict[str, Any] = {}
    if p2p is not None:
        attrs = {
            "performance_rank": p2p.CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK,
            "access_supported": p2p.CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED,
            "native_atomics": p2p.CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
        }
    for i in handles:
        for j in handles:
            if i == j:
                continue
            target = f"cuda{i}->cuda{j}"
            info = CudaPeerInfo()
            ok, can = c.call("cuDeviceCanAccessPeer", target, handles[i], handles[j])
            info.can_access_peer = bool(can) if ok else None
            for key, attr in attrs.items():
                ok, val = c.call("cuDeviceGetP2PAttribute", target, attr, handles[i], handles[j])
                if ok:
                    setattr(info, key, int(val) if key == "performance_rank" else bool(val))
            result.peers[(i, j)] = info
    return result
