"""`collective_busbw: {collective, min_gbps, hosts}` (issue 32): the lot's expected bus bandwidth for one
NCCL collective — the figure `topomap nccl LOT --perf` gives — is at least ``min_gbps``; on ``hosts``
identical hosts of a one-host lot. UNKNOWN when the figure is (it names what settles it), but FAIL when
even the highest figure the unknown facts allow is below, and PASS when even the lowest is above."""

from __future__ import annotations

from topomap.check.requirements import CollectiveBusbwRule, Requirement
from topomap.check.results import Finding, Lot, RuleResult, Status
from topomap.collective.expect import COLLECTIVES, expect
from topomap.collective.lot import plan


def collective_busbw(req: Requirement, lot: Lot) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, CollectiveBusbwRule)
    desc = f"{rule.collective} busbw ≥ {rule.min_gbps:g} GB/s" + (f" on {rule.hosts} hosts" if rule.hosts else "")
    snap = lot.topo.snapshot
    hosts = rule.hosts if rule.hosts and rule.hosts > 1 and snap.source.kind != "merge" else None
    e = expect(plan(snap, hosts=hosts), rule.collective)
    figure = f"{e.busbw_gbps:.1f} GB/s" if e.busbw_gbps is not None else "unknown"
    span = f"{e.low_gbps or 0:.0f}–{e.high_gbps:.0f} GB/s" if e.high_gbps is not None else "no range"
    line = f"expected {figure} ({span}, {e.algorithm or '—'}): {e.bottleneck}"
    least = e.busbw_gbps if e.busbw_gbps is not None else e.low_gbps
    status: Status
    if e.busbw_gbps is not None:
        status = "pass" if e.busbw_gbps >= rule.min_gbps else "fail"
    elif e.high_gbps is not None and e.high_gbps < rule.min_gbps:
        status, line = "fail", line + f"; even the highest figure the unknown facts allow is under {rule.min_gbps:g}"
    elif least is not None and least >= rule.min_gbps:
        status = "pass"
    else:
        status = "unknown"
    evidence = [line, *(f"not recorded: {m}" for m in e.missing), *(f"assumed: {a}" for a in e.assumed)]
    return RuleResult(
        "collective_busbw",
        lot.name,
        status,
        desc,
        evidence,
        f"{figure} {'≥' if status == 'pass' else '<' if status == 'fail' else 'vs'} {rule.min_gbps:g} GB/s",
        list(e.settle) if status == "unknown" else [],
        [Finding(None, status, line)],
    )


__all__ = ["COLLECTIVES", "collective_busbw"]
