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

import re
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import msgspec

from topomap.base import units
from topomap.base.cpus import parse_cpulist
from topomap.base.errors import TopomapError
from topomap.base.pciaddr import same_device
from topomap.base.units import BINARY_LETTERS, SIZE_SPELLINGS
from topomap.measure.copies import Figure
from topomap.measure.findings import corrupt, failure, remote_gaps, subject
from topomap.measure.jobs import HostSpec, Job, PairSpec, Settings, median
from topomap.measure.worker import Worker
from topomap.model.snapshot import Finding, Gpu, Measurement, Snapshot
from topomap.probe.cuda import load_driver

ORIGIN = "topomap measure"
METHOD = "copy engine, cuMemcpyAsync/cuMemcpyPeerAsync timed with CUDA events, verified"
MIB = 2**20


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
class MeasureOutcome:
    snapshot: Snapshot
    jobs: int
    failed: int
    memory_per_gpu_bytes: int  # the most one job allocates on one GPU: a source and a destination buffer
    pinned_host_bytes: int  # the most one job pins in host memory
    notes: list[str] = field(default_factory=list)


Progress = Callable[[int, int, str], None]


def parse_size(text: str) -> int:
    """``"64MiB"`` → 67108864, ``"256MB"`` → 256000000; as nvbandwidth's ``-b`` a bare number is MiB (``"64"``),
    and as nccl-tests' ``-b`` a bare letter is binary (``"1g"`` → 1 GiB): the two tools it is set beside."""
    size = units.parse_size(text, binary_letters=True, bare=MIB)
    if size is None:
        hint = f"{SIZE_SPELLINGS}; a bare number is MiB, {BINARY_LETTERS}"
        raise TopomapError(f"--size {text[:40]!r}: expected a size like 64MiB, 256MB or 1GiB", hint=hint)
    if size > _MAX_COPY:  # past any GPU's memory (a 400-digit size overflowed to infinity: exit 4, issue 36)
        raise TopomapError(f"--size {text[:40]!r}: at most 256 GiB, more than any GPU holds")
    n = int(size)
    if n < 4096:
        raise TopomapError(f"--size {text!r}: at least 4 KiB, so a copy is a bandwidth and not a latency")
    return n


_MAX_COPY = 256 * 2**30


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
        why = (
            "the snapshot has no GPU"
            if not snap.gpus
            else f"none of the snapshot's {len(snap.gpus)} GPU(s) has a CUDA ordinal (imported, or unseen by CUDA)"
        )
        raise NoGpuError(
            f"no GPU to measure: {why}",
            hint="run `topomap measure` on the GPU machine itself; check nvidia-smi and CUDA_VISIBLE_DEVICES",
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
    worker = Worker(driver_factory, start_method)
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
                        subject=subject(job),
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
                    findings.append(corrupt(job, bad))
                continue
            failed += 1
            findings.append(failure(job, status, payload, ids, broken, opts.timeout_s, opts.size_bytes))
    finally:
        worker.stop()
    if progress:
        progress(len(jobs), len(jobs), "done")
    findings += remote_gaps(snap, measurements)
    # A rerun (say --pairs 0-1) replaces what it measured again and keeps the rest of an earlier run.
    redone = {frozenset({"host", *job.gpus}) if job.kind == "host" else frozenset(job.gpus) for job in jobs}
    subjects = {subject(job) for job in jobs}
    kept = [m for m in snap.measurements if m.origin != ORIGIN or frozenset({m.src, m.dst}) not in redone]
    new = msgspec.structs.replace(
        snap,
        measurements=kept + measurements,
        findings=[f for f in snap.findings if f.source != "measure" or f.subject not in subjects] + findings,
    )
    return MeasureOutcome(new, len(jobs), failed, 2 * opts.size_bytes, 3 * opts.size_bytes)


def _start(worker: Worker, opts: MeasureOptions, snap: Snapshot, ids: dict[int, str]) -> None:
    status, payload = worker.start(opts.timeout_s)
    if status != "ready":
        detail = f"{payload[0]}: {payload[3]}" if status == "fatal" and payload else f"worker {status}"
        raise NoGpuError(
            f"CUDA cannot be used here ({detail})", hint="check nvidia-smi, the driver, and CUDA_VISIBLE_DEVICES"
        )
    status, uuids = worker.run(("uuid", sorted(ids), None), opts.timeout_s)  # ordinal → (UUID bytes, bus id)
    if status != "ok":
        raise NoGpuError(f"CUDA devices did not answer ({status})", hint="check nvidia-smi")
    for g in snap.gpus:
        raw, bus = uuids.get(g.cuda_ordinal, (None, None)) if g.cuda_ordinal is not None else (None, None)
        if bus and g.pci_bus_id:  # by bus id first: a MIG instance's UUID (cuda-bindings 13) is not its GPU's
            same = same_device(bus, g.pci_bus_id)
        else:
            same = not (raw and g.uuid and len(raw) == 16 and "GPU-" + str(uuidlib.UUID(bytes=raw)) != g.uuid)
        if not same:
            worker.stop()
            raise TopomapError(
                f"CUDA device {g.cuda_ordinal} is not {_gid(g)} ({g.uuid}) of the snapshot",
                hint="measure in the same environment (CUDA_VISIBLE_DEVICES) as the probe, or omit SNAP",
            )
