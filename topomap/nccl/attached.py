"""nccl-tests results kept in a snapshot (``topomap attach``) beside what the lot should reach: per run the
measured peak as printed, the figure ``topomap nccl LOT --perf`` gives for the job the run was (its hosts,
the GPUs its first host's ranks used, its NCCL release) and the verdict in the README's bands. The causes
of a shortfall need the run itself: ``topomap nccl --tests RESULTS LOT``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from topomap.base.units import fmt_bytes, fmt_gbps
from topomap.collective.expect import COLLECTIVES, Expectation, expect
from topomap.collective.lot import plan
from topomap.model.snapshot import CollectiveResult, Measurement, Snapshot, hosts_of
from topomap.nccl.tests import verdict


@dataclass(frozen=True)
class Attached:
    """One kept run: what it measured and what the snapshot says it should reach."""

    measurement: Measurement
    result: CollectiveResult
    expected: Expectation | None
    verdict: str
    why: str

    @property
    def measured(self) -> float:
        return self.measurement.max_gbps or 0.0

    def text(self) -> str:
        """``all_reduce, 16 ranks on 2 hosts: 55.3 GB/s busbw measured at 8 GiB; expected 227 GB/s (tree,
        model) → far-below: 24% of expected (under 70%)``."""
        r = self.result
        on = f"{r.ranks} ranks" if r.ranks else "ranks not told"
        on += f" on {r.hosts} host" + ("s" if r.hosts != 1 else "") if r.hosts else ""
        size = fmt_bytes(self.measurement.size_bytes) if self.measurement.size_bytes else "?"
        e = self.expected
        if e is None or e.busbw_gbps is None:
            expected = "expected unknown" if e is None else f"expected unknown ({'; '.join(e.missing)})"
        else:
            algo = f"{e.algorithm}, " if e.algorithm else ""
            expected = f"expected {fmt_gbps(e.busbw_gbps)} GB/s ({algo}{e.origin})"
        measured = f"{r.busbw_text} GB/s busbw measured at {size}"
        return f"{r.collective}, {on}: {measured}; {expected} → {self.verdict}: {self.why}"

    def to_json(self) -> dict[str, Any]:
        r, e = self.result, self.expected
        return {
            "collective": r.collective,
            "ranks": r.ranks,
            "hosts": r.hosts,
            "max_bytes": r.max_bytes,
            "measured_busbw_gbps": self.measurement.max_gbps,
            "measured_busbw_text": r.busbw_text,
            "measured_at_bytes": self.measurement.size_bytes,
            "expected_busbw_gbps": None if e is None else e.to_json()["busbw_gbps"],
            "expected": None if e is None else e.to_json(),
            "verdict": self.verdict,
            "why": self.why,
            "nccl_version": r.nccl_version,
            "command": r.command,
            "notes": list(self.measurement.notes),
        }


def _expected(snap: Snapshot, r: CollectiveResult) -> Expectation | None:
    if r.collective not in COLLECTIVES:
        return None
    members = hosts_of(snap)
    hosts = r.hosts if r.hosts and r.hosts > 1 and len(members) == 1 else None
    indexes: list[int] | None = None
    if r.devices:
        by_cuda = {g.cuda_ordinal: g.index for g in members[0].gpus if g.cuda_ordinal is not None}
        indexes = [by_cuda.get(d, d) for d in r.devices]
        if not all(any(g.index == i for g in members[0].gpus) for i in indexes):
            indexes = None
    return expect(plan(snap, hosts=hosts, gpu_indexes=indexes, version=r.nccl_version), r.collective)


def attached(snap: Snapshot) -> list[Attached]:
    """Every nccl-tests run kept in ``snap``, judged against it."""
    out: list[Attached] = []
    for m in snap.measurements:
        r = m.collective
        if m.kind != "collective" or r is None or m.max_gbps is None:
            continue
        e = _expected(snap, r)
        v, why = verdict(m.max_gbps, e)
        out.append(Attached(m, r, e, v, why))
    return out
