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


def _timed(s: Session, bufs: Buffers, ordinal: int, stream: Any, copy: Copy, reps: int) -> float:
    """Milliseconds for ``reps`` calls of ``copy`` on ``stream``, between two CUDA events."""
    start, end = bufs.event(ordinal), bufs.event(ordinal)
    s.call("cuEventRecord", ordinal, start, stream)
    for _ in range(reps):
        copy()
    s.call("cuEventRecord", ordinal, end, stream)
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


def run_host(cu: Any, s: Session, spec: HostSpec, st: Settings) -> list[Figure]:
    """h2d, d2h (and both at once) between pinned host memory on ``spec.node`` and one GPU; latency."""
    note = bind_cpus(spec.cpus) if spec.node is not None else "host NUMA node unknown: placement left to the kernel"
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
        s.call("cuMemsetD8", k, rig.d1, 0, n)
        if sample == 0:
            for _ in range(st.warmup):
                rig.h2d()
        ms = rig.timed(rig.h2d, st.repetitions)
        h2d.gbps.append(_gbps(n * st.repetitions, ms))
        s.call("cuMemcpyDtoH", k, rig.hc, rig.d1, n)
        _check(h2d, read_host(rig.hc, n), want)
        clear_host(rig.hc, n)
        ms = rig.timed(lambda: s.call("cuMemcpyDtoHAsync", k, rig.hc, rig.d1, n, rig.st1), st.repetitions)
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
        s.call("cuMemsetD8", k, rig.d1, 0, n)
        clear_host(rig.h2, n)
        ms = _both(
            s,
            rig.bufs,
            k,
            rig.st1,
            rig.st2,
            rig.h2d,
            lambda: s.call("cuMemcpyDtoHAsync", k, rig.h2, rig.d2, n, rig.st2),
            st.repetitions,
        )
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


def _both(s: Session, bufs: Buffers, k: int, st1: Any, st2: Any, c1: Copy, c2: Copy, reps: int) -> float:
    """Milliseconds for ``reps`` of c1 on st1 and c2 on st2 running at once (start and end joined)."""
    start, end2, end = bufs.event(k), bufs.event(k), bufs.event(k)
    s.call("cuEventRecord", k, start, st1)
    s.call("cuStreamWaitEvent", k, st2, start, 0)
    for _ in range(reps):
        c1()
        c2()
    s.call("cuEventRecord", k, end2, st2)
    s.call("cuStreamWaitEvent", k, st1, end2, 0)
    s.call("cuEventRecord", k, end, st1)
    s.call("cuEventSynchronize", k, end)
    return float(s.call("cuEventElapsedTime", k, start, end))


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


def run_pair(cu: Any, s: Session, spec: PairSpec, st: Settings) -> list[Figure]:
    """GPU a → b, b → a, both at once, and small-copy latency, verified; peer where enabled."""
    a, b, n = spec.a, spec.b, st.size_bytes
    peer, why = enable_peer(s, a, b)
    route = "peer" if peer else "staged"
    notes = [why] if why else []
    bufs = Buffers(s)
    try:
        src = {a: bufs.dev(a, n), b: bufs.dev(b, n)}
        dst = {a: bufs.dev(a, n), b: bufs.dev(b, n)}
        hp, hc = bufs.pinned(n, a), bufs.pinned(n, a)
        s1, s2 = bufs.stream(a), bufs.stream(a)
        ctx = s.ctx

        def copy(x: int, y: int, stream: Any, nbytes: int = n) -> Copy:
            return lambda: s.call("cuMemcpyPeerAsync", x, dst[y], ctx[y], src[x], ctx[x], nbytes, stream)

        def load(x: int, data: bytes) -> None:
            fill_host(hp, data)
            s.context(x)
            s.call("cuMemcpyHtoD", x, src[x], hp, n)
            s.call("cuMemsetD8", x, dst[x], 0, n)

        def verify(fig: Figure, y: int, want: bytes) -> None:
            s.context(y)
            s.call("cuMemcpyDtoH", y, hc, dst[y], n)
            _check(fig, read_host(hc, n), want)
            s.context(a)

        out: list[Figure] = []
        for x, y in ((a, b), (b, a)):
            fig = Figure("d2d", "one-way", x, y, route, notes=list(notes))
            for sample in range(st.samples):
                want = pattern(n, sample + 10 * x)
                load(x, want)
                s.context(y)
                s.call("cuMemsetD8", y, dst[y], 0, n)
                s.context(a)
                if sample == 0:
                    for _ in range(st.warmup):
                        copy(x, y, s1)()
                    s.call("cuStreamSynchronize", a, s1)
                    s.context(y)
                    s.call("cuMemsetD8", y, dst[y], 0, n)
                    s.context(a)
                ms = _timed(s, bufs, a, s1, copy(x, y, s1), st.repetitions)
                fig.gbps.append(_gbps(n * st.repetitions, ms))
                verify(fig, y, want)
            out.append(fig)
        if st.both_way:
            fig = Figure("d2d", "both-way", a, b, route, notes=[*notes, "a→b and b→a at once, sum of both"])
            for sample in range(st.samples):
                wa, wb = pattern(n, 300 + sample), pattern(n, 400 + sample)
                load(a, wa)
                load(b, wb)
                s.context(a)
                ms = _both(s, bufs, a, s1, s2, copy(a, b, s1), copy(b, a, s2), st.repetitions)
                fig.gbps.append(_gbps(2 * n * st.repetitions, ms))
                verify(fig, b, wa)
                verify(fig, a, wb)
            out.append(fig)
        for x, y in ((a, b), (b, a)):
            lat = Figure("latency", "one-way", x, y, route, notes=[*notes, f"{LATENCY_BYTES}-byte copies"])
            s.context(a)
            for _ in range(st.samples):
                ms = _timed(s, bufs, a, s1, copy(x, y, s1, LATENCY_BYTES), st.latency_copies)
                lat.us.append(ms * 1e3 / st.latency_copies)
            out.append(lat)
        return out
    finally:
        bufs.free()
        if peer:
            disable_peer(s, a, b)


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None
