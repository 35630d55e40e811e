"""The CUDA work of one measurement job, run inside a worker process (see measure.py).

Copy-engine copies timed with CUDA events, the way nvbandwidth does it (NVIDIA/nvbandwidth
memcpy.cpp): warm-up copies, then per sample a start event, ``repetitions`` copies, an end
event; bandwidth = bytes × repetitions / elapsed. Before every sample a fresh pattern (a
4093-byte period, so a misplaced page shows) is written to the source and the destination is
cleared; after it the destination is read back and compared, so a path that drops or
misroutes data is caught, not timed. The driver module is handed in (``cuda.bindings.driver``
or a fake); this module never imports the bindings itself.

Peer copies x→y run on a stream created in x's context, so x's copy engine pushes (nvbandwidth's
write tests); streams of two contexts are joined with an event recorded in one and waited on in
the other. Buffers are zeroed with cuMemsetD8Async on the stream that then copies (or joined to it
by such a wait): a NULL-stream memset is not ordered before work on a non-blocking stream.

As in nvbandwidth, a spin kernel (spin.py) holds the copy stream while the start event, the copies
and the end event are enqueued, so the timed window holds GPU work only, not the CPU's launch cost.
Latency is the time per copy of a run of small copies in one stream, as p2pBandwidthLatencyTest's
copy-engine latency is, not the link's own latency (README, "Measured bandwidth").
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from dataclasses import dataclass, field
from typing import Any

PERIOD = 4093  # prime: the pattern never lines up with 4 KiB pages
LATENCY_BYTES = 8
_NON_BLOCKING = 1  # CU_STREAM_NON_BLOCKING
_PORTABLE = 1  # CU_MEMHOSTALLOC_PORTABLE: pinned for every context, as nvbandwidth allocates it
ALREADY_ENABLED = 704  # CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED (benign; nvbandwidth ignores it)
OOM = 2  # CUDA_ERROR_OUT_OF_MEMORY


class CudaFail(Exception):
    """A driver call failed: which call, on which CUDA ordinal, with which CUresult."""

    def __init__(self, call: str, ordinal: int | None, code: int, name: str) -> None:
        super().__init__(f"{call}: {name} ({code})")
        self.call, self.ordinal, self.code, self.name = call, ordinal, code, name


@dataclass
class Figure:
    """One measured quantity as the worker hands it back (plain data, pickled to the parent)."""

    kind: str  # h2d, d2h, d2d, latency
    direction: str  # one-way, both-way
    src: int | None  # CUDA ordinal, None for host memory
    dst: int | None
    route: str  # peer, staged, host
    gbps: list[float] = field(default_factory=list)  # one per sample
    us: list[float] = field(default_factory=list)  # latency per sample, microseconds
    verified: bool = True
    mismatch: str | None = None  # first wrong byte, when verification failed
    host_numa_node: int | None = None
    notes: list[str] = field(default_factory=list)


def pattern(size: int, seed: int) -> bytes:
    """``size`` bytes that differ per seed and repeat every PERIOD bytes."""
    period = bytes((i * 31 + seed * 131 + 7) & 0xFF for i in range(PERIOD))
    reps = size // PERIOD + 1
    return (period * reps)[:size]


def first_mismatch(got: bytes, want: bytes) -> str | None:
    if got == want:
        return None
    for k in range(0, len(want), 1 << 16):
        if got[k : k + (1 << 16)] != want[k : k + (1 << 16)]:
            off = k + next(i for i, (x, y) in enumerate(zip(got[k:], want[k:])) if x != y)
            wrong = sum(1 for x, y in zip(got[k : k + 4096], want[k : k + 4096]) if x != y)
            return (
                f"byte {off}: got 0x{got[off]:02x}, expected 0x{want[off]:02x} ({wrong} of the next 4096 bytes wrong)"
            )
    return "length differs"


class Session:
    """One worker's CUDA state: primary contexts per ordinal, and every allocation to free."""

    def __init__(self, cu: Any) -> None:
        self.cu = cu
        self.ctx: dict[int, Any] = {}
        self.devs: dict[int, Any] = {}
        # The CPUs this worker may run on when it starts: every host job binds from this mask, not
        # from the previous job's node (a long-lived worker would otherwise narrow it job by job).
        self.start_cpus: frozenset[int] | None = (
            frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        )
        self.latches: Any = None  # spin.Latches: the blocking kernels, made by the jobs on first use
        self.call("cuInit", None, 0)

    def call(self, name: str, ordinal: int | None, *args: Any) -> Any:
        fn = getattr(self.cu, name, None)
        if fn is None:
            raise CudaFail(name, ordinal, -1, "not in these CUDA bindings")
        try:
            res = fn(*args)
        except RuntimeError as err:
            raise CudaFail(name, ordinal, -1, str(err)) from err
        status = res[0]
        if int(status) != 0:
            raise CudaFail(name, ordinal, int(status), getattr(status, "name", "CUresult"))
        return res[1] if len(res) > 1 else None

    def context(self, ordinal: int) -> Any:
        if ordinal not in self.ctx:
            dev = self.call("cuDeviceGet", ordinal, ordinal)
            self.devs[ordinal] = dev
            self.ctx[ordinal] = self.call("cuDevicePrimaryCtxRetain", ordinal, dev)
        self.call("cuCtxSetCurrent", ordinal, self.ctx[ordinal])
        return self.ctx[ordinal]

    def uuid(self, ordinal: int) -> bytes | None:
        self.context(ordinal)
        raw = self.call("cuDeviceGetUuid", ordinal, self.devs[ordinal])
        b = getattr(raw, "bytes", raw)
        return bytes(b) if isinstance(b, (bytes, bytearray)) else None

    def bus_id(self, ordinal: int) -> str | None:
        """The device's PCI bus id: the physical GPU's even for a MIG instance (whose UUID, from
        cuda-bindings 13, is the instance's own)."""
        self.context(ordinal)
        raw = self.call("cuDeviceGetPCIBusId", ordinal, 32, self.devs[ordinal])
        text = raw.split(b"\0", 1)[0].decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        return text or None

    def close(self) -> None:
        if self.latches is not None:
            self.latches.close()
        for dev in self.devs.values():
            _quiet(self.cu, "cuDevicePrimaryCtxRelease", dev)


class Buffers:
    """Allocations of one job, freed together (device memory through its own context)."""

    def __init__(self, s: Session) -> None:
        self.s = s
        self.device: list[tuple[int, Any]] = []
        self.host: list[int] = []
        self.streams: list[tuple[int, Any]] = []
        self.events: list[tuple[int, Any]] = []

    def dev(self, ordinal: int, size: int) -> Any:
        self.s.context(ordinal)
        p = self.s.call("cuMemAlloc", ordinal, size)
        self.device.append((ordinal, p))
        return p

    def pinned(self, size: int, ordinal: int) -> int:
        self.s.context(ordinal)
        p = int(self.s.call("cuMemHostAlloc", ordinal, size, _PORTABLE))
        self.host.append(p)
        return p

    def stream(self, ordinal: int) -> Any:
        self.s.context(ordinal)
        st = self.s.call("cuStreamCreate", ordinal, _NON_BLOCKING)
        self.streams.append((ordinal, st))
        return st

    def event(self, ordinal: int) -> Any:
        self.s.context(ordinal)
        ev = self.s.call("cuEventCreate", ordinal, 0)
        self.events.append((ordinal, ev))
        return ev

    def free(self) -> None:
        cu = self.s.cu
        for _o, ev in self.events:
            _quiet(cu, "cuEventDestroy", ev)
        for _o, st in self.streams:
            _quiet(cu, "cuStreamDestroy", st)
        for ordinal, p in self.device:
            if ordinal in self.s.ctx:
                _quiet(cu, "cuCtxSetCurrent", self.s.ctx[ordinal])
            _quiet(cu, "cuMemFree", p)
        for hp in self.host:
            _quiet(cu, "cuMemFreeHost", hp)


def _quiet(cu: Any, name: str, *args: Any) -> None:
    try:
        getattr(cu, name)(*args)
    except (RuntimeError, AttributeError):
        return


def bind_cpus(cpus: list[int], start: frozenset[int] | None) -> str | None:
    """Run this process on ``cpus`` within the worker's starting mask ``start`` (so pinned pages land
    on their NUMA node); a note when it cannot, and then back on the whole starting mask, so an
    earlier job's binding never carries over."""
    if not hasattr(os, "sched_setaffinity"):
        return "CPU binding not available here: host buffer placement left to the kernel"
    usable = set(cpus) & start if start else set(cpus)
    if not cpus:
        note = "CPU binding not available here: host buffer placement left to the kernel"
    elif not usable:
        note = "none of the node's CPUs are in this process's cpuset: host buffer placement left to the kernel"
    else:
        try:
            os.sched_setaffinity(0, usable)
            return None
        except OSError as err:
            note = f"could not bind to the node's CPUs ({err.strerror}): host buffer placement left to the kernel"
    if start:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, start)
    return note


def fill_host(ptr: int, data: bytes) -> None:
    ctypes.memmove(ptr, data, len(data))


def read_host(ptr: int, size: int) -> bytes:
    return ctypes.string_at(ptr, size)


def clear_host(ptr: int, size: int) -> None:
    ctypes.memset(ptr, 0, size)
