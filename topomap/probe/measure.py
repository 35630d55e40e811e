"""Measure what the links deliver: verified copy bandwidth and latency per GPU and GPU pair.

Through ``cuda.bindings.driver`` only (the module comes from :func:`topomap.probe.cuda.load_driver`,
or a fake in tests). Every job runs in a worker process (measure_worker.py) under a time
limit; a job that overruns is a hang: the worker is killed and the pair marked unusable. The
parent never initialises CUDA here, so workers start with ``spawn`` by default.

Jobs: per GPU, host↔GPU from pinned memory on the GPU's own NUMA node and (unless quick) on
the nearest other node; per unordered GPU pair, a→b, b→a, both at once, and latency. Nothing
here prints: progress goes to a callback.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import re
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import msgspec

from topomap.cpus import parse_cpulist
from topomap.errors import TopomapError
from topomap.model import Finding, Gpu, Measurement, Snapshot
from topomap.probe.cuda import load_driver
from topomap.probe.measure_copy import OOM, Figure
from topomap.probe.measure_jobs import HostSpec, PairSpec, Settings, median
from topomap.probe.measure_worker import worker_main

ORIGIN = "topomap measure"
METHOD = "copy engine, cuMemcpyAsync/cuMemcpyPeerAsync timed with CUDA events, verified"
MIB = 2**20
# CUresults after which a GPU is treated as gone for the rest of the run (Xid-class failures).
LOST_CODES = {46, 214, 700, 702, 719, 999}
REMOTE_GAP = 0.8  # host memory on another node delivering under this fraction of local is a finding


class NoGpuError(TopomapError):
    """Nothing to measure: no GPU CUDA can use. The CLI exits 3."""


@dataclass
class MeasureOptions:
    size_bytes: int = 64 * MIB
    repetitions: int = 8  # copies per sample
    samples: int = 5
    warmup: int = 2
    latency_copies: int = 50
    pairs: list[tuple[int, int]] | None = None  # GPU index pairs; None = every pair
    timeout_s: float = 60.0  # per job: a peer test past this is a hang
    remote_numa: bool = True
    both_way: bool = True

    @classmethod
    def quick(cls) -> MeasureOptions:
        """About a minute on an 8-GPU box: 32 MiB, 4 copies × 3 samples, no remote-node pass."""
        return cls(
            size_bytes=32 * MIB,
            repetitions=4,
            samples=3,
            warmup=1,
            latency_copies=20,
            timeout_s=30.0,
            remote_numa=False,
        )

    def settings(self) -> Settings:
        return Settings(
            self.size_bytes, self.repetitions, self.samples, self.warmup, self.latency_copies, self.both_way
        )


@dataclass
class Job:
    kind: str  # host, pair
    spec: HostSpec | PairSpec
    label: str
    gpus: list[str]  # ids the job touches


@dataclass
class MeasureOutcome:
    snapshot: Snapshot
    jobs: int
    failed: int
    memory_per_gpu_bytes: int  # the most one job allocates on one GPU
    notes: list[str] = field(default_factory=list)


Progress = Callable[[int, int, str], None]


class _Worker:
    def __init__(self, factory: Callable[[], Any], method: str) -> None:
        self.factory, self.method = factory, method
        self.proc: Any = None
        self.conn: Any = None

    def start(self, timeout: float) -> tuple[str, Any]:
        ctx: Any = mp.get_context(self.method)
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(child, self.factory), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        return self._reply(timeout)

    def _reply(self, timeout: float) -> tuple[str, Any]:
        try:
            if not self.conn.poll(timeout):
                self.kill()
                return "timeout", None
            reply: tuple[str, Any] = self.conn.recv()
            return reply
        except (EOFError, OSError):
            self.kill()
            return "died", None

    def run(self, msg: tuple[str, Any, Any], timeout: float) -> tuple[str, Any]:
        try:
            self.conn.send(msg)
        except (BrokenPipeError, OSError):
            self.kill()
            return "died", None
        reply = self._reply(timeout)
        if reply[0] == "fail":
            self.kill()
        return reply

    def alive(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    def kill(self) -> None:
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(5)
        self.proc = None

    def stop(self) -> None:
        if self.alive():
            with contextlib.suppress(OSError):
                self.conn.send(None)
            self.proc.join(5)
        self.kill()


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB|KB|MB|GB|K|M|G)?\s*$", re.I)
_UNITS = {
    "b": 1,
    "k": 2**10,
    "kib": 2**10,
    "m": MIB,
    "mib": MIB,
    "g": 2**30,
    "gib": 2**30,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
}


def parse_size(text: str) -> int:
    """``"64MiB"`` → 67108864; a bare number is MiB (as nvbandwidth's -b)."""
    m = _SIZE.match(text)
    if not m:
        raise TopomapError(f"--size {text!r}: expected a size like 64MiB, 256MB or 1GiB")
    unit = (m.group(2) or "mib").lower()
    n = int(float(m.group(1)) * _UNITS[unit])
    if n < 4096:
        raise TopomapError(f"--size {text!r}: at least 4 KiB, so a copy is a bandwidth and not a latency")
    return n


def parse_pairs(text: str) -> list[tuple[int, int]]:
    """``"0-1,2-3"`` → [(0, 1), (2, 3)] (GPU indices as `topomap show` lists them)."""
    out: list[tuple[int, int]] = []
    for part in text.split(","):
        m = re.match(r"^\s*(?:gpu)?(\d+)\s*-\s*(?:gpu)?(\d+)\s*$", part)
        if not m or m.group(1) == m.group(2):
            raise TopomapError(f"--pairs {text!r}: {part.strip()!r} is not a pair of two GPUs like 0-1")
        a, b = sorted((int(m.group(1)), int(m.group(2))))
        if (a, b) not in out:
            out.append((a, b))
    return out


def _gid(g: Gpu) -> str:
    return f"gpu{g.index}"


def _node_cpus(snap: Snapshot) -> dict[int, list[int]]:
    return {n.id: parse_cpulist(n.cpus) for n in snap.host.numa_nodes if n.cpus}


def _remote_node(snap: Snapshot, node: int) -> int | None:
    """The nearest other NUMA node that has CPUs (SLIT distance, then id)."""
    others = [n for n in snap.host.numa_nodes if n.id != node and n.cpus]
    if not others:
        return None
    here = next((n for n in snap.host.numa_nodes if n.id == node), None)

    def dist(n: Any) -> int:
        return here.distances[n.id] if here and here.distances and n.id < len(here.distances) else 999

    return min(others, key=lambda n: (dist(n), n.id)).id


def plan(snap: Snapshot, opts: MeasureOptions) -> list[Job]:
    """The jobs for the GPUs CUDA can use, in the order they run."""
    gpus = [g for g in snap.gpus if g.cuda_ordinal is not None and not g.lost]
    if not gpus:
        raise NoGpuError(
            "no GPU to measure: the snapshot has no GPU with a CUDA ordinal",
            hint="run on the GPU machine itself (check nvidia-smi and CUDA_VISIBLE_DEVICES)",
        )
    cpus = _node_cpus(snap)
    jobs: list[Job] = []
    by_index = {g.index: g for g in gpus}
    if opts.pairs is not None:
        for a, b in opts.pairs:
            for i in (a, b):
                if i not in by_index:
                    raise TopomapError(f"--pairs: gpu{i} is not a GPU CUDA can use here", hint="see `topomap show`")
    for g in gpus:
        ordinal = g.cuda_ordinal
        assert ordinal is not None
        node = g.numa_node
        jobs.append(
            Job(
                "host",
                HostSpec(ordinal, node, cpus.get(node, []) if node is not None else []),
                f"{_gid(g)} ↔ host",
                [_gid(g)],
            )
        )
        if opts.remote_numa and node is not None:
            far = _remote_node(snap, node)
            if far is not None:
                jobs.append(
                    Job(
                        "host",
                        HostSpec(ordinal, far, cpus.get(far, []), remote=True),
                        f"{_gid(g)} ↔ host (NUMA {far})",
                        [_gid(g)],
                    )
                )
    pairs = opts.pairs if opts.pairs is not None else [(x.index, y.index) for x, y in combinations(gpus, 2)]
    for a, b in pairs:
        ga, gb = by_index[a], by_index[b]
        assert ga.cuda_ordinal is not None and gb.cuda_ordinal is not None
        jobs.append(
            Job("pair", PairSpec(ga.cuda_ordinal, gb.cuda_ordinal), f"{_gid(ga)} ↔ {_gid(gb)}", [_gid(ga), _gid(gb)])
        )
    return jobs


def _to_measurement(f: Figure, ids: dict[int, str], opts: MeasureOptions) -> Measurement:
    def name(o: int | None) -> str:
        return "host" if o is None else ids[o]

    notes = list(f.notes)
    if f.mismatch:
        notes.append(f"data check failed: {f.mismatch}")
    latency = f.kind == "latency"
    return Measurement(
        kind=f.kind,  # type: ignore[arg-type]
        direction=f.direction,  # type: ignore[arg-type]
        src=name(f.src),
        dst=name(f.dst),
        route=f.route,  # type: ignore[arg-type]
        method=METHOD,
        origin=ORIGIN,
        size_bytes=8 if latency else opts.size_bytes,
        repetitions=opts.latency_copies if latency else opts.repetitions,
        samples=len(f.us if latency else f.gbps),
        median_gbps=None if latency else _r(median(f.gbps)),
        min_gbps=None if latency else _r(min(f.gbps, default=None)),
        max_gbps=None if latency else _r(max(f.gbps, default=None)),
        median_us=_r(median(f.us)) if latency else None,
        verified=None if latency else f.verified,
        host_numa_node=f.host_numa_node,
        notes=notes,
    )


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def measure(
    snap: Snapshot,
    opts: MeasureOptions | None = None,
    *,
    driver_factory: Callable[[], Any] = load_driver,
    start_method: str = "spawn",
    progress: Progress | None = None,
) -> MeasureOutcome:
    """Run every job; return the snapshot with measurements and findings added."""
    opts = opts or MeasureOptions()
    jobs = plan(snap, opts)
    ids = {g.cuda_ordinal: _gid(g) for g in snap.gpus if g.cuda_ordinal is not None}
    settings = opts.settings()
    worker = _Worker(driver_factory, start_method)
    measurements: list[Measurement] = []
    findings: list[Finding] = []
    broken: dict[str, str] = {}  # gpu id → why its remaining jobs are skipped
    failed = 0
    try:
        _start(worker, opts, snap, ids)
        for done, job in enumerate(jobs):
            if progress:
                progress(done, len(jobs), job.label)
            skip = [broken[g] for g in job.gpus if g in broken]
            if skip:
                failed += 1
                findings.append(
                    Finding(
                        kind="measure-skipped",
                        subject=_subject(job),
                        severity="warning",
                        text=f"{job.label} not measured: {skip[0]}",
                        source="measure",
                    )
                )
                continue
            if not worker.alive():
                _start(worker, opts, snap, ids)
            status, payload = worker.run((job.kind, job.spec, settings), opts.timeout_s)
            if status == "ok":
                figs: list[Figure] = payload
                bad: list[tuple[Measurement, Figure]] = []
                for f in figs:
                    measurements.append(_to_measurement(f, ids, opts))
                    if f.verified is False:
                        bad.append((measurements[-1], f))
                if bad:
                    findings.append(_corrupt(job, bad))
                continue
            failed += 1
            findings.append(_failure(job, status, payload, ids, broken, opts))
    finally:
        worker.stop()
    if progress:
        progress(len(jobs), len(jobs), "done")
    findings += _remote_gaps(measurements)
    per_gpu = (2 * opts.size_bytes) if opts.both_way else opts.size_bytes
    new = msgspec.structs.replace(
        snap,
        measurements=[m for m in snap.measurements if m.origin != ORIGIN] + measurements,
        findings=[f for f in snap.findings if f.source != "measure"] + findings,
    )
    return MeasureOutcome(new, len(jobs), failed, per_gpu + opts.size_bytes)


def _start(worker: _Worker, opts: MeasureOptions, snap: Snapshot, ids: dict[int, str]) -> None:
    status, payload = worker.start(opts.timeout_s)
    if status != "ready":
        detail = f"{payload[0]}: {payload[3]}" if status == "fatal" and payload else f"worker {status}"
        raise NoGpuError(
            f"CUDA cannot be used here ({detail})", hint="check nvidia-smi, the driver, and CUDA_VISIBLE_DEVICES"
        )
    status, uuids = worker.run(("uuid", sorted(ids), None), opts.timeout_s)
    if status != "ok":
        raise NoGpuError(f"CUDA devices did not answer ({status})", hint="check nvidia-smi")
    for g in snap.gpus:
        raw = uuids.get(g.cuda_ordinal) if g.cuda_ordinal is not None else None
        if raw and g.uuid and len(raw) == 16 and "GPU-" + str(uuidlib.UUID(bytes=raw)) != g.uuid:
            worker.stop()
            raise TopomapError(
                f"CUDA device {g.cuda_ordinal} is not {_gid(g)} ({g.uuid}) of the snapshot",
                hint="measure in the same environment (CUDA_VISIBLE_DEVICES) as the probe, or omit SNAP",
            )


def _subject(job: Job) -> str:
    return "-".join(job.gpus)


def _corrupt(job: Job, bad: list[tuple[Measurement, Figure]]) -> Finding:
    """One loud finding per job whose copies came back wrong, every failed check as evidence."""
    m = bad[0][0]
    evidence = [f"{x.kind} {x.direction} {x.src} → {x.dst} ({x.route}): {f.mismatch}" for x, f in bad]
    if m.kind == "d2d":
        dirs = sorted({f"{x.src} → {x.dst}" for x, _ in bad})
        text = (
            f"{m.route} copies {' and '.join(dirs)} return wrong data: P2P is unsafe here; "
            "set NCCL_P2P_DISABLE=1 or fix ACS/IOMMU (see the ACS/IOMMU findings of `topomap show`)"
        )
        return Finding(
            kind="p2p-corrupt", subject=_subject(job), severity="error", text=text, evidence=evidence, source="measure"
        )
    text = f"copies between {m.src} and {m.dst} return wrong data: this GPU's host path is unsafe (check dmesg for Xid)"
    return Finding(
        kind="copy-corrupt", subject=_subject(job), severity="error", text=text, evidence=evidence, source="measure"
    )


def _failure(
    job: Job, status: str, payload: Any, ids: dict[int, str], broken: dict[str, str], opts: MeasureOptions
) -> Finding:
    subject = _subject(job)
    if status == "timeout":
        for g in job.gpus:
            broken.setdefault(g, f"an earlier test on {g} hung") if job.kind == "host" else None
        text = (
            (
                f"{job.label} did not finish within {opts.timeout_s:g} s: the pair is unusable "
                "(a broken peer path hangs); set NCCL_P2P_DISABLE=1 or fix ACS/IOMMU"
            )
            if job.kind == "pair"
            else f"{job.label} did not finish within {opts.timeout_s:g} s"
        )
        return Finding(
            kind="measure-hang",
            subject=subject,
            severity="error",
            text=text,
            evidence=[f"worker killed after {opts.timeout_s:g} s"],
            source="measure",
        )
    if status == "died" or not payload:
        return Finding(
            kind="measure-failed",
            subject=subject,
            severity="error",
            text=f"{job.label}: the measuring process died",
            source="measure",
        )
    call, ordinal, code, name = payload
    gid = ids.get(ordinal, subject) if ordinal is not None else subject
    evidence = [f"{call} → {name} ({code})"]
    if code == OOM:
        broken[gid] = f"{gid} has too little free memory"
        return Finding(
            kind="measure-oom",
            subject=gid,
            severity="warning",
            text=f"{gid}: not enough free GPU memory for {_mib(opts.size_bytes)} MiB buffers "
            "(other processes?); its tests skipped — retry with a smaller --size",
            evidence=evidence,
            source="measure",
        )
    if code in LOST_CODES:
        broken[gid] = f"{gid} stopped answering"
        return Finding(
            kind="gpu-lost",
            subject=gid,
            severity="error",
            text=f"{gid} stopped answering during measurement; its remaining tests skipped — "
            "check `nvidia-smi -q` and dmesg for Xid errors",
            evidence=evidence,
            source="measure",
        )
    return Finding(
        kind="measure-failed",
        subject=subject,
        severity="error",
        text=f"{job.label}: {call} failed",
        evidence=evidence,
        source="measure",
    )


def _mib(n: int) -> str:
    return f"{n / MIB:g}"


def _remote_gaps(ms: list[Measurement]) -> list[Finding]:
    """Host memory on a remote NUMA node delivering much less than the GPU's own node."""
    out: list[Finding] = []
    local = {
        (m.kind, m.src, m.dst): m
        for m in ms
        if m.kind in ("h2d", "d2h") and m.direction == "one-way" and not any("remote" in n for n in m.notes)
    }
    for m in ms:
        if m.kind not in ("h2d", "d2h") or m.direction != "one-way" or not any("remote" in n for n in m.notes):
            continue
        near = local.get((m.kind, m.src, m.dst))
        if near is None or not near.median_gbps or m.median_gbps is None:
            continue
        ratio = m.median_gbps / near.median_gbps
        if ratio < REMOTE_GAP:
            gpu = m.dst if m.kind == "h2d" else m.src
            out.append(
                Finding(
                    kind="numa-remote-gap",
                    subject=gpu,
                    severity="warning",
                    text=f"{m.kind} for {gpu} from NUMA node {m.host_numa_node} delivers {m.median_gbps:.1f} GB/s, "
                    f"{ratio:.0%} of the {near.median_gbps:.1f} GB/s from its own node {near.host_numa_node}: "
                    "keep this GPU's host buffers on its own node (numactl / CPU affinity)",
                    evidence=[f"measured median, {m.size_bytes} B copies"],
                    source="measure",
                )
            )
    return out
