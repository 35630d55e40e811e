"""A flow's collectives on two lots in GB/s (issue 32): each exchange step and ``nccl: true`` arrow at the
busbw `topomap nccl LOT --perf` expects on each lot (:mod:`topomap.flow.collective_time`), matched by what
it is. A figure is a range where the model is uncertain, so one lot is better only where the ranges do
not overlap; overlapping ranges are not ranked. The changes are ``collective`` changes: under a flow they
decide with the arrows and the plan."""

from __future__ import annotations

import math

from topomap.base.units import fmt_gbps
from topomap.diff.changes import Change, Direction
from topomap.diff.results import DiffResult
from topomap.flow.collective_time import CollectiveTime
from topomap.model.facts import Bandwidth
from topomap.model.ranking import compare_bandwidth

Range = tuple[float, float]


def _figure(r: Range) -> Bandwidth:
    """A range of expected busbw as a bandwidth figure (an unbounded top: a lower bound)."""
    low, high = r
    if math.isinf(high):
        return Bandwidth(low, "model", "expected busbw", lower_bound=True)
    return Bandwidth(low, "model", "expected busbw", lower_bound=low != high, high_gbps=high)


def rank_ranges(a: Range, b: Range) -> Direction:
    """B against A for two ranges of one figure (higher is better), by the one comparison every view makes
    (:func:`topomap.model.ranking.compare_bandwidth`): worse or better only where they do not overlap."""
    verdict = compare_bandwidth(_figure(a), _figure(b)).verdict
    return "better" if verdict == "better-b" else "worse" if verdict == "better-a" else "neutral"


def _range(c: CollectiveTime) -> Range | None:
    """The peak's range: low–high, the point figure where there is no range; None when nothing is known."""
    lo = c.low_gbps if c.low_gbps is not None else c.peak_gbps
    hi = c.high_gbps if c.high_gbps is not None else c.peak_gbps
    if lo is None and hi is None:
        return None
    return (lo if lo is not None else 0.0, hi if hi is not None else math.inf)


def _words(c: CollectiveTime) -> str:
    if c.peak_gbps is not None:
        extra = ""
        if c.low_gbps is not None and c.high_gbps is not None and c.low_gbps != c.high_gbps:
            extra = f" ({fmt_gbps(c.low_gbps)}–{fmt_gbps(c.high_gbps)})"
        return f"{fmt_gbps(c.peak_gbps)} GB/s{extra}"
    if c.high_gbps is not None:
        low = f"{fmt_gbps(c.low_gbps)}–" if c.low_gbps is not None else "≤ "
        return f"{low}{fmt_gbps(c.high_gbps)} GB/s (not pinned down)"
    return "unknown"


def compare_collectives(result: DiffResult, a: list[CollectiveTime], b: list[CollectiveTime]) -> None:
    """One ``collective`` change per collective of the flow whose expected busbw differs from A to B."""
    by_what = {c.what: c for c in b}
    for x in a:
        y = by_what.get(x.what)
        if y is None:
            continue
        ra, rb = _range(x), _range(y)
        if ra == rb:
            continue
        direction: Direction = "neutral" if ra is None or rb is None else rank_ranges(ra, rb)
        how = f" ({direction} on {result.b_name})" if direction != "neutral" else " (the ranges overlap: not ranked)"
        if ra is None or rb is None:
            how = " (unknown on one lot: not ranked)"
        text = f"{x.what}: expected {x.collective} busbw {_words(x)} → {_words(y)}{how} (model, topomap nccl --perf)"
        result.changes.append(
            Change(
                kind="collective",
                subject=x.what,
                field="expected busbw",
                a=None if x.peak_gbps is None else round(x.peak_gbps, 1),
                b=None if y.peak_gbps is None else round(y.peak_gbps, 1),
                direction=direction,
                text=text,
            )
        )
