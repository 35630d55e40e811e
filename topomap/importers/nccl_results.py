"""nccl-tests results kept in a snapshot (``topomap attach SNAP results.txt -o OUT``, issue 32): each run one
``collective`` :class:`~topomap.model.snapshot.Measurement` — its peak busbw as printed (the larger of the
out-of-place and in-place columns) at the size it was printed for, with the program, ranks, hosts, the CUDA
devices the first host's ranks used and NCCL's version. ``matrix --bandwidth`` and ``report`` show them
beside what the lot should reach (:mod:`topomap.nccl.attached`)."""

from __future__ import annotations

import msgspec

from topomap.base.errors import ImportFailure
from topomap.importers.nccl_tests import Run, TestsFile
from topomap.importers.nccl_tests_id import identify, table_ranks
from topomap.model.snapshot import CollectiveResult, Measurement, Snapshot, hosts_of

ORIGIN = "nccl-tests"


def run_measurement(run: Run, origin: str) -> Measurement | None:
    """One run as a ``collective`` measurement; None for a run with no result row."""
    peak = run.peak()
    if peak is None:
        return None
    value, text, row, half = peak
    ident = identify(run)
    whole = table_ranks(run) is not None
    first = run.ranks[0].host if run.ranks else None
    devices = sorted({r.device for r in run.ranks if whole and r.host == first})
    hosts = len(run.hosts) if whole else None
    result = CollectiveResult(
        collective=ident.program or "unknown",
        ranks=ident.ranks,
        hosts=hosts,
        gpus_per_host=len(devices) if devices else None,
        devices=devices,
        busbw_text=text,
        max_bytes=run.max_bytes or row.size_bytes,
        avg_busbw_gbps=run.avg_busbw,
        nccl_version=run.nccl_version,
        wrong=run.wrong_total,
        command=run.command,
    )
    return Measurement(
        kind="collective",
        src="ranks",
        dst="ranks",
        method=f"nccl-tests {ident.program or 'program not named'}_perf: the peak busbw ({half})",
        origin=ORIGIN,
        size_bytes=row.size_bytes,
        max_gbps=value,
        verified=None if run.wrong_total == 0 else False,
        notes=[f"{origin}, line {run.first_line}"],
        collective=result,
    )


def _norm(name: str) -> str:
    return " ".join(name.replace("NVIDIA", "").replace("-", " ").split()).lower()


def attach_results(snap: Snapshot, tests: TestsFile) -> tuple[Snapshot, list[str]]:
    """The snapshot with every run of ``tests`` kept (a run already kept is not added twice), and notes on
    how the runs fit it. Refused when the rank table's GPUs are another model than the snapshot's."""
    members = hosts_of(snap)
    models = {_norm(g.name) for h in members for g in h.gpus if g.name}
    notes: list[str] = []
    added: list[Measurement] = []
    have = [m.collective for m in snap.measurements if m.kind == "collective"]
    for run in tests.runs:
        names = {_norm(n) for n in run.gpu_names}
        if models and names and not names & models:
            raise ImportFailure(
                f"{tests.origin}: the results ran on {', '.join(run.gpu_names)}; the snapshot's GPUs are "
                f"{', '.join(sorted({g.name for h in members for g in h.gpus if g.name}))}",
                hint="attach nccl-tests results to a snapshot of the machines they ran on",
            )
        m = run_measurement(run, tests.origin)
        if m is None or m.collective in have:
            continue
        have.append(m.collective)
        added.append(m)
        c = m.collective
        if c is not None and c.hosts and c.hosts > 1 and len(members) == 1:
            notes.append(
                f"run at line {run.first_line} is on {c.hosts} hosts: its expectation takes {c.hosts} identical "
                "hosts of this snapshot"
            )
    if tests.skipped:
        notes.append(f"not read: {'; '.join(tests.skipped)}")
    return msgspec.structs.replace(snap, measurements=[*snap.measurements, *added]), notes
