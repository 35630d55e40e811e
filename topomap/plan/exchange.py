"""The coordinated arrangement's exchange step, paid at the expected all-reduce bus bandwidth of the cards it
runs on (:mod:`topomap.collective`, the figure `topomap nccl LOT --perf` gives): an all-reduce moves
2(k−1)/k × the volume per card at its busbw. Where that figure is unknown, the step is paid at the slowest
mapped link between the cards (:func:`topomap.plan.costs.exchange_seconds`), and the plan says so."""

from __future__ import annotations

from topomap.base.units import fmt_gbps
from topomap.collective.expect import expect
from topomap.collective.lot import plan
from topomap.flow.mapping import MappedArrow
from topomap.graph import Topology
from topomap.plan.costs import exchange_seconds


def exchange_step(
    topo: Topology | None, pairs: dict[frozenset[str], MappedArrow], cards: list[str], volume: int | None
) -> tuple[float | None, str]:
    """Seconds of one exchange step over ``cards`` (gpu ids of one host) and how it was priced."""
    k = len(cards)
    if k < 2:
        return 0.0, "one card: no exchange"
    fallback = ""
    if topo is not None:
        indexes = [int(c.removeprefix("gpu")) for c in cards if c.removeprefix("gpu").isdigit()]
        e = expect(plan(topo.snapshot, gpu_indexes=indexes), "all_reduce")
        if e.busbw_gbps is not None:
            how = (
                f"NCCL all-reduce at its expected {fmt_gbps(e.busbw_gbps)} GB/s busbw ({e.algorithm}, model: "
                f"{e.bottleneck})"
            )
            if volume is None:
                return None, how + "; exchange volume not declared"
            return 2 * (k - 1) / k * volume / (e.busbw_gbps * 1e9), how
        fallback = "; ".join(e.missing) or "not known"
    seconds, _, how = exchange_seconds(pairs, cards, volume)
    return seconds, f"{how} (the expected all-reduce busbw is unknown: {fallback})" if topo is not None else how
