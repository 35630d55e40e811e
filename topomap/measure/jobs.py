"""Measurement jobs a worker runs: host↔GPU for one GPU, GPU↔GPU for one pair (measure.py).

Memory per GPU is bounded: a host job allocates 2 × size on its GPU (plus 3 pinned host
buffers of ``size``), a pair job 2 × size on each GPU of the pair (plus 2 pinned buffers).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from topomap.measure.copies import (
    ALREADY_ENABLED,
    LATENCY_BYTES,
    Buffers,
    Figure,
    Session,
    bind_cpus,
    clear_host,
    fill_host,
    first_mismatch,
    pattern,
    read_host,
)
from topomap.measure.spin import Latch, Latches


@dataclass
class Settings:
    size_bytes: int
    repetitions: int  # copies per sample
    samples: int
    warmup: int
    latency_copies: int
    both_way: bool = True


@dataclass
class HostSpec:
    ordinal: int
    node: int | None  # NUMA node of the host buffer
    cpus: list[int] = field(default_factory=list)  # that node's CPUs, to bind to
    remote: bool = False  # the node is not the GPU's own


@dataclass
class PairSpec:
    a: int
    b: int


@dataclass
class Job:
    kind: str  # host, pair
    spec: HostSpec | PairSpec
    label: str
    gpus: list[str]  # ids the job touches


Copy = Callable[[], None]


def latch(s: Session, ordinal: int) -> Latch | None:
    """The blocking kernel of GPU ``ordinal`` (spin.py), None where the driver cannot run it."""
    if s.latches is None:
        s.latches = Latches(s)
    found: Latch | None = s.latches.get(ordinal)
    return found


def unheld_notes(s: Session, ordinals: list[int]) -> list[str]:
    """Why the copies of these GPUs ran without a blocking kernel (none when they had one)."""
    if s.latches is None:
        return []
    return sorted({s.latches.unheld[o] for o in ordinals if o in s.latches.unheld})


def _timed(s: Session, bufs: Buffers, ordinal: int, stream: Any, copy: Copy, reps: int) -> float:
    """Milliseconds for ``reps`` calls of ``copy`` on ``stream``, between two CUDA events; the
    stream is held by the spin kernel while they are enqueued, and released before the wait."""
    start, end = bufs.event(ordinal), bufs.event(ordinal)
    held = latch(s, ordinal)
    s.context(ordinal)
    if held is not None:
        held.hold(s, stream)
    try:
        s.call("cuEventRecord", ordinal, start, stream)
        for _ in range(reps):
            copy()
        s.call("cuEventRecord", ordinal, end, stream)
    finally:
        if held is not None:
            held.release()
    s.call("cuEventSynchronize", ordinal, end)
    return float(s.call("cuEventElapsedTime", ordinal, start, end))


def _gbps(nbytes: int, ms: float) -> float:
    return nbytes / (ms / 1e3) / 1e9 if ms > 0 else float("inf")


@dataclass
class _HostRig:
    """What one host job copies between: two device buffers on GPU ``k``, three pinned host
    buffers (source, second, check) and two streams, each ``n`` bytes."""

    s: Session
    bufs: Buffers
    k: int
    n: int
    d1: Any
    d2: Any
    h1: Any
    h2: Any
    hc: Any
    st1: Any
    st2: Any

    @classmethod
    def allocate(cls, s: Session, bufs: Buffers, k: int, n: int) -> _HostRig:
        s.context(k)
        d1, d2 = bufs.dev(k, n), bufs.dev(k, n)
        h1, h2, hc = bufs.pinned(n, k), bufs.pinned(n, k), bufs.pinned(n, k)
        return cls(s, bufs, k, n, d1, d2, h1, h2, hc, bufs.stream(k), bufs.stream(k))

    def h2d(self, nbytes: int | None = None) -> None:
        self.s.call("cuMemcpyHtoDAsync", self.k, self.d1, self.h1, self.n if nbytes is None else nbytes, self.st1)

    def timed(self, copy: Copy, reps: int) -> float:
        return _timed(self.s, self.bufs, self.k, self.st1, copy, reps)

    def clear_d1(self) -> None:
        """Zero the h2d destination on the copy stream: a memset on the NULL stream would not be
        ordered before copies on a non-blocking stream, and a late fill would read as corrupt."""
        self.s.call("cuMemsetD8Async", self.k, self.d1, 0, self.n, self.st1)


def run_host(cu: Any, s: Session, spec: HostSpec, st: Settings) -> list[Figure]:
    """h2d, d2h (and both at once) between pinned host memory on ``spec.node`` and one GPU; latency."""
    note = bind_cpus(spec.cpus if spec.node is not None else [], s.start_cpus)
    if spec.node is None:
        note = "host NUMA node unknown: placement left to the kernel"
    bufs = Buffers(s)
    try:
        rig = _HostRig.allocate(s, bufs, spec.ordinal, st.size_bytes)
        notes = [note] if note else []
        if spec.remote:
            notes.append(f"host buffer on remote NUMA node {spec.node}")
        out = _host_one_way(rig, spec, st, notes)
        if st.both_way:
            out.append(_host_both_way(rig, spec, st, notes))
        if not spec.remote:
            out.append(_host_latency(rig, spec, st))
        for fig in out:
            fig.notes.extend(unheld_notes(s, [spec.ordinal]))
        return out
    finally:
        bufs.free()


def _host_one_way(rig: _HostRig, spec: HostSpec, st: Settings, notes: list[str]) -> list[Figure]:
    """h2d then d2h, each sample with its own pattern, each copy checked."""
    s, k, n = rig.s, rig.k, rig.n
    h2d = Figure("h2d", "one-way", None, k, "host", host_numa_node=spec.node, notes=list(notes))
    d2h = Figure("d2h", "one-way", k, None, "host", host_numa_node=spec.node, notes=list(notes))
    for sample in range(st.samples):
        want = pattern(n, sample)
        fill_host(rig.h1, want)
        for _ in range(st.warmup):  # before every sample, as nvbandwidth warms up every measurement
            rig.h2d()
        rig.clear_d1()  # after the warm-up, on its stream: only the timed copies can refill it
        ms = rig.timed(rig.h2d, st.repetitions)
        h2d.gbps.append(_gbps(n * st.repetitions, ms))
        s.call("cuMemcpyDtoH", k, rig.hc, rig.d1, n)
        _check(h2d, read_host(rig.hc, n), want)

        def d2h_copy() -> None:
            s.call("cuMemcpyDtoHAsync", k, rig.hc, rig.d1, n, rig.st1)

        for _ in range(st.warmup):
            d2h_copy()
        s.call("cuStreamSynchronize", k, rig.st1)
        clear_host(rig.hc, n)  # after the warm-up has landed: only the timed copies can refill it
        ms = rig.timed(d2h_copy, st.repetitions)
        d2h.gbps.append(_gbps(n * st.repetitions, ms))
        _check(d2h, read_host(rig.hc, n), want)
    return [h2d, d2h]


def _host_both_way(rig: _HostRig, spec: HostSpec, st: Settings, notes: list[str]) -> Figure:
    """h2d and d2h at once on two streams: the sum of both, each direction checked."""
    s, k, n = rig.s, rig.k, rig.n
    both = Figure(
        "h2d", "both-way", None, k, "host", host_numa_node=spec.node, notes=[*notes, "h2d and d2h at once, sum of both"]
    )
    for sample in range(st.samples):
        want, back = pattern(n, 100 + sample), pattern(n, 200 + sample)
        fill_host(rig.h1, back)
        s.call("cuMemcpyHtoD", k, rig.d2, rig.h1, n)  # d2 holds what goes back to the host
        fill_host(rig.h1, want)
        rig.clear_d1()
        clear_host(rig.h2, n)
        d2h = (k, rig.st2, lambda: s.call("cuMemcpyDtoHAsync", k, rig.h2, rig.d2, n, rig.st2))
        ms = _both(s, rig.bufs, (k, rig.st1, rig.h2d), d2h, st.repetitions)
        both.gbps.append(_gbps(2 * n * st.repetitions, ms))
        _check(both, read_host(rig.h2, n), back)
        s.call("cuMemcpyDtoH", k, rig.hc, rig.d1, n)
        _check(both, read_host(rig.hc, n), want)
    return both


def _host_latency(rig: _HostRig, spec: HostSpec, st: Settings) -> Figure:
    """Microseconds per small h2d copy (only from the GPU's own NUMA node)."""
    lat = Figure(
        "latency", "one-way", None, rig.k, "host", host_numa_node=spec.node, notes=[f"{LATENCY_BYTES}-byte copies"]
    )
    for _ in range(st.samples):
        ms = rig.timed(lambda: rig.h2d(LATENCY_BYTES), st.latency_copies)
        lat.us.append(ms * 1e3 / st.latency_copies)
    return lat


def _both(s: Session, bufs: Buffers, one: tuple[int, Any, Copy], two: tuple[int, Any, Copy], reps: int) -> float:
    """Milliseconds for ``reps`` of two copies running at once, each ``(ordinal, stream, copy)`` on a
    stream of that ordinal's context; start and end joined across the contexts with events (an event
    is recorded in its stream's context; a stream may wait on another context's event)."""
    (k1, st1, c1), (k2, st2, c2) = one, two
    start, end2, end = bufs.event(k1), bufs.event(k2), bufs.event(k1)
    held = latch(s, k1)  # holds st1 before the start event; st2 waits on that event
    s.context(k1)
    if held is not None:
        held.hold(s, st1)
    try:
        s.call("cuEventRecord", k1, start, st1)
        s.context(k2)
        s.call("cuStreamWaitEvent", k2, st2, start, 0)
        for _ in range(reps):
            c1()
            c2()
        s.context(k2)
        s.call("cuEventRecord", k2, end2, st2)
        s.context(k1)
        s.call("cuStreamWaitEvent", k1, st1, end2, 0)
        s.call("cuEventRecord", k1, end, st1)
    finally:
        if held is not None:
            held.release()
    s.call("cuEventSynchronize", k1, end)
    return float(s.call("cuEventElapsedTime", k1, start, end))


def _check(fig: Figure, got: bytes, want: bytes) -> None:
    bad = first_mismatch(got, want)
    if bad is not None and fig.mismatch is None:
        fig.verified = False
        fig.mismatch = bad


def enable_peer(s: Session, a: int, b: int) -> tuple[bool, str | None]:
    """Peer access a↔b where CUDA says it can; (enabled, why not)."""
    s.context(a)
    s.context(b)
    can_ab = s.call("cuDeviceCanAccessPeer", a, s.devs[a], s.devs[b])
    can_ba = s.call("cuDeviceCanAccessPeer", b, s.devs[b], s.devs[a])
    if not (can_ab and can_ba):
        return False, "cuDeviceCanAccessPeer = 0: copies staged through host memory"
    for x, y in ((a, b), (b, a)):
        s.context(x)
        res = s.cu.cuCtxEnablePeerAccess(s.ctx[y], 0)
        code = int(res[0])
        if code not in (0, ALREADY_ENABLED):
            if x == b:  # a→b was enabled: undo it, the pair runs staged
                s.context(a)
                s.cu.cuCtxDisablePeerAccess(s.ctx[b])
            return False, f"cuCtxEnablePeerAccess {getattr(res[0], 'name', code)}: copies staged through host memory"
    return True, None


def disable_peer(s: Session, a: int, b: int) -> None:
    """Peer access off again after a pair, as p2pBandwidthLatencyTest does: a GPU may hold only a few
    peer mappings at once (CUDA_ERROR_TOO_MANY_PEERS), and the next pair must not find it full."""
    for x, y in ((a, b), (b, a)):
        s.context(x)
        s.cu.cuCtxDisablePeerAccess(s.ctx[y])


WRITE_NOTE = "write: the source GPU's copy engine pushes (stream of the source's context), as nvbandwidth's write tests"


@dataclass
class _PairRig:
    """What one pair job copies between: a source and a destination buffer on each GPU, two pinned
    host buffers (load, check), and one stream per GPU created in that GPU's context. A copy x→y runs
    on x's stream, so x's copy engine pushes: every d2d figure is a write."""

    s: Session
    bufs: Buffers
    n: int
    src: dict[int, Any]
    dst: dict[int, Any]
    hp: Any
    hc: Any
    stream: dict[int, Any]

    @classmethod
    def allocate(cls, s: Session, bufs: Buffers, a: int, b: int, n: int) -> _PairRig:
        src = {a: bufs.dev(a, n), b: bufs.dev(b, n)}
        dst = {a: bufs.dev(a, n), b: bufs.dev(b, n)}
        hp, hc = bufs.pinned(n, a), bufs.pinned(n, a)
        return cls(s, bufs, n, src, dst, hp, hc, {a: bufs.stream(a), b: bufs.stream(b)})

    def copy(self, x: int, y: int, nbytes: int | None = None) -> Copy:
        s, ctx, size = self.s, self.s.ctx, self.n if nbytes is None else nbytes
        return lambda: s.call("cuMemcpyPeerAsync", x, self.dst[y], ctx[y], self.src[x], ctx[x], size, self.stream[x])

    def load(self, x: int, data: bytes) -> None:
        """``data`` into x's source buffer (a synchronous copy from pinned memory)."""
        fill_host(self.hp, data)
        self.s.context(x)
        self.s.call("cuMemcpyHtoD", x, self.src[x], self.hp, self.n)

    def clear(self, y: int, x: int) -> None:
        """Zero y's destination on y's stream, and hold x's stream (which copies into it) until it
        is done: a cross-context wait, since the memset is not on the NULL stream's order."""
        s = self.s
        s.context(y)
        s.call("cuMemsetD8Async", y, self.dst[y], 0, self.n, self.stream[y])
        if x != y:
            ev = self.bufs.event(y)
            s.call("cuEventRecord", y, ev, self.stream[y])
            s.context(x)
            s.call("cuStreamWaitEvent", x, self.stream[x], ev, 0)

    def timed(self, x: int, copy: Copy, reps: int) -> float:
        self.s.context(x)
        return _timed(self.s, self.bufs, x, self.stream[x], copy, reps)

    def verify(self, fig: Figure, y: int, want: bytes) -> None:
        self.s.context(y)
        self.s.call("cuMemcpyDtoH", y, self.hc, self.dst[y], self.n)
        _check(fig, read_host(self.hc, self.n), want)


def run_pair(cu: Any, s: Session, spec: PairSpec, st: Settings) -> list[Figure]:
    """GPU a → b, b → a (writes), both at once, and small-copy latency, verified; peer where enabled."""
    a, b = spec.a, spec.b
    peer, why = enable_peer(s, a, b)
    route = "peer" if peer else "staged"
    notes = [why] if why else []
    bufs = Buffers(s)
    try:
        rig = _PairRig.allocate(s, bufs, a, b, st.size_bytes)
        out = [_pair_one_way(rig, x, y, route, notes, st) for x, y in ((a, b), (b, a))]
        if st.both_way:
            out.append(_pair_both_way(rig, a, b, route, notes, st))
        for x, y in ((a, b), (b, a)):
            lat = Figure("latency", "one-way", x, y, route, notes=[*notes, f"{LATENCY_BYTES}-byte copies", WRITE_NOTE])
            for _ in range(st.samples):
                ms = rig.timed(x, rig.copy(x, y, LATENCY_BYTES), st.latency_copies)
                lat.us.append(ms * 1e3 / st.latency_copies)
            out.append(lat)
        for fig in out:
            fig.notes.extend(unheld_notes(s, [a, b]))
        return out
    finally:
        bufs.free()
        if peer:
            disable_peer(s, a, b)


def _pair_one_way(rig: _PairRig, x: int, y: int, route: str, notes: list[str], st: Settings) -> Figure:
    fig = Figure("d2d", "one-way", x, y, route, notes=[*notes, WRITE_NOTE])
    n = rig.n
    for sample in range(st.samples):
        want = pattern(n, sample + 10 * x)
        rig.load(x, want)
        rig.clear(y, x)
        for _ in range(st.warmup):  # before every sample
            rig.copy(x, y)()
        rig.s.context(x)
        rig.s.call("cuStreamSynchronize", x, rig.stream[x])
        rig.clear(y, x)
        ms = rig.timed(x, rig.copy(x, y), st.repetitions)
        fig.gbps.append(_gbps(n * st.repetitions, ms))
        rig.verify(fig, y, want)
    return fig


def _pair_both_way(rig: _PairRig, a: int, b: int, route: str, notes: list[str], st: Settings) -> Figure:
    fig = Figure("d2d", "both-way", a, b, route, notes=[*notes, "a→b and b→a at once, sum of both", WRITE_NOTE])
    for sample in range(st.samples):
        wa, wb = pattern(rig.n, 300 + sample), pattern(rig.n, 400 + sample)
        rig.load(a, wa)
        rig.load(b, wb)
        rig.clear(b, a)
        rig.clear(a, b)
        ms = _both(
            rig.s, rig.bufs, (a, rig.stream[a], rig.copy(a, b)), (b, rig.stream[b], rig.copy(b, a)), st.repetitions
        )
        fig.gbps.append(_gbps(2 * rig.n * st.repetitions, ms))
        rig.verify(fig, b, wa)
        rig.verify(fig, a, wb)
    return fig


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None
