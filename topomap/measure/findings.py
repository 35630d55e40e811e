"""Findings from a measurement: wrong data, hangs, out-of-memory, lost GPUs, remote-node gaps."""

from __future__ import annotations

from typing import Any

from topomap.measure.copies import OOM, Figure
from topomap.measure.jobs import Job
from topomap.model.measured import remote_host_memory
from topomap.model.snapshot import Finding, Measurement, Snapshot

MIB = 2**20
# CUresults after which a GPU is treated as gone for the rest of the run (Xid-class failures).
LOST_CODES = {46, 214, 700, 702, 719, 999}
REMOTE_GAP = 0.8  # host memory on another node delivering under this fraction of local is a finding


def subject(job: Job) -> str:
    return "-".join(job.gpus)


def corrupt(job: Job, bad: list[tuple[Measurement, Figure]]) -> Finding:
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
            kind="p2p-corrupt", subject=subject(job), severity="error", text=text, evidence=evidence, source="measure"
        )
    text = f"copies between {m.src} and {m.dst} return wrong data: this GPU's host path is unsafe (check dmesg for Xid)"
    return Finding(
        kind="copy-corrupt", subject=subject(job), severity="error", text=text, evidence=evidence, source="measure"
    )


def failure(
    job: Job, status: str, payload: Any, ids: dict[int, str], broken: dict[str, str], timeout_s: float, size_bytes: int
) -> Finding:
    """The finding for a job that did not finish; GPUs that cannot go on are added to ``broken``."""
    subj = subject(job)
    if status == "timeout":
        if job.kind == "host":
            for g in job.gpus:
                broken.setdefault(g, f"an earlier test on {g} hung")
            text = f"{job.label} did not finish within {timeout_s:g} s"
        else:
            text = (
                f"{job.label} did not finish within {timeout_s:g} s: the pair is unusable "
                "(a broken peer path hangs); set NCCL_P2P_DISABLE=1 or fix ACS/IOMMU"
            )
        evidence = [f"worker killed after {timeout_s:g} s"]
        return Finding(
            kind="measure-hang", subject=subj, severity="error", text=text, evidence=evidence, source="measure"
        )
    if status == "died" or not payload:
        text = f"{job.label}: the measuring process died"
        return Finding(kind="measure-failed", subject=subj, severity="error", text=text, source="measure")
    call, ordinal, code, name = payload
    gid = ids.get(ordinal, subj) if ordinal is not None else subj
    evidence = [f"{call} → {name} ({code})"]
    if code == OOM:
        broken[gid] = f"{gid} has too little free memory"
        text = (
            f"{gid}: not enough free GPU memory for {_mib(size_bytes)} MiB buffers (other processes?); "
            "its tests skipped — retry with a smaller --size"
        )
        return Finding(
            kind="measure-oom", subject=gid, severity="warning", text=text, evidence=evidence, source="measure"
        )
    if code in LOST_CODES:
        broken[gid] = f"{gid} stopped answering"
        text = (
            f"{gid} stopped answering during measurement; its remaining tests skipped — "
            "check `nvidia-smi -q` and dmesg for Xid errors"
        )
        return Finding(kind="gpu-lost", subject=gid, severity="error", text=text, evidence=evidence, source="measure")
    text = f"{job.label}: {call} failed"
    return Finding(
        kind="measure-failed", subject=subj, severity="error", text=text, evidence=evidence, source="measure"
    )


def _mib(n: int) -> str:
    return f"{n / MIB:g}"


def remote_gaps(snap: Snapshot, ms: list[Measurement]) -> list[Finding]:
    """Host memory on a remote NUMA node delivering much less than the GPU's own node."""
    out: list[Finding] = []
    host = [m for m in ms if m.kind in ("h2d", "d2h") and m.direction == "one-way"]
    remote = [m for m in host if remote_host_memory(snap, m)]
    local = {(m.kind, m.src, m.dst): m for m in host if not remote_host_memory(snap, m)}
    for m in remote:
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
