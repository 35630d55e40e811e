"""Arrangements of units over slots (a slot: the cards one task occupies), as pure arithmetic.

Every function takes the units' compute seconds in input order and each slot's per-unit input and
output seconds, and returns one lane per slot: the bars it runs, back to back from time 0.

- ``one_slot``: everything on one slot, in order.
- ``even_static``: the units cut into consecutive, equally numerous chunks in the given order
  (the first ``n mod k`` chunks one longer) — the split that looks even on paper.
- ``longest_first``: longest unit first, each to the slot that would finish it soonest, planned
  in advance (LPT).
- ``shared_queue``: in the given order, each unit to the slot that is free first (ties: lowest slot).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bar:
    """One stretch of a lane, seconds from the plan's start."""

    unit: int  # index into the units
    kind: str  # "input", "compute", "exchange", "output"
    start: float
    end: float


@dataclass
class Lane:
    """What one slot does; ``end`` is when it finishes its last unit."""

    slot: int
    bars: list[Bar]

    @property
    def end(self) -> float:
        return self.bars[-1].end if self.bars else 0.0

    @property
    def units(self) -> list[int]:
        return [b.unit for b in self.bars if b.kind == "compute"]


@dataclass(frozen=True)
class SlotCost:
    """Per-unit transfer seconds on a slot (unknown counted as 0 by the caller, with a warning)."""

    input_s: float = 0.0
    output_s: float = 0.0
    exchange_s: float = 0.0  # a split task's exchange steps, drawn as one stretch after its compute


def _append(lane: Lane, unit: int, compute_s: float, cost: SlotCost) -> None:
    t = lane.end
    parts = (("input", cost.input_s), ("compute", compute_s), ("exchange", cost.exchange_s), ("output", cost.output_s))
    for kind, dur in parts:
        if dur > 0 or kind == "compute":
            lane.bars.append(Bar(unit, kind, t, t + dur))
            t += dur


def _unit_time(compute_s: float, cost: SlotCost) -> float:
    return cost.input_s + compute_s + cost.exchange_s + cost.output_s


def one_slot(seconds: list[float], cost: SlotCost) -> list[Lane]:
    lane = Lane(0, [])
    for u, s in enumerate(seconds):
        _append(lane, u, s, cost)
    return [lane]


def even_static(seconds: list[float], costs: list[SlotCost]) -> list[Lane]:
    k, n = len(costs), len(seconds)
    lanes = [Lane(i, []) for i in range(k)]
    q, r = divmod(n, k)
    u = 0
    for i in range(k):
        for _ in range(q + (1 if i < r else 0)):
            _append(lanes[i], u, seconds[u], costs[i])
            u += 1
    return lanes


def longest_first(seconds: list[float], costs: list[SlotCost]) -> list[Lane]:
    lanes = [Lane(i, []) for i in range(len(costs))]
    order = sorted(range(len(seconds)), key=lambda u: (-seconds[u], u))
    for u in order:
        best = min(lanes, key=lambda ln: (ln.end + _unit_time(seconds[u], costs[ln.slot]), ln.slot))
        _append(best, u, seconds[u], costs[best.slot])
    return lanes


def shared_queue(seconds: list[float], costs: list[SlotCost]) -> list[Lane]:
    lanes = [Lane(i, []) for i in range(len(costs))]
    for u, s in enumerate(seconds):
        free = min(lanes, key=lambda ln: (ln.end, ln.slot))
        _append(free, u, s, costs[free.slot])
    return lanes


SCHEDULERS = {
    "even-static": even_static,
    "longest-first": longest_first,
    "shared-queue": shared_queue,
}
