"""Arrangements of units over slots (a slot: the cards one task occupies), as pure arithmetic.

Every function takes the units' compute seconds in input order and each slot's per-unit input and
output seconds, and returns one lane per slot: the units it runs, back to back from time 0.

- ``one_slot``: everything on one slot, in order.
- ``even_static``: the units cut into consecutive, equally numerous chunks in the given order
  (the first ``n mod k`` chunks one longer) — the split that looks even on paper.
- ``longest_first``: longest unit first, each to the slot that would finish it soonest, planned
  in advance (LPT).
- ``shared_queue``: in the given order, each unit to the slot that is free first (ties: lowest slot).

A lane keeps its units' indices and its end, not one object per bar: a plan of 100,000 units over
8 cards lays out 22 schedules, and the bars are drawn from a lane only when a view asks
(:attr:`Lane.bars`, or :meth:`Lane.runs` for a few hundred merged bars). The two slot choices
use a heap, so a schedule costs O(n log k), not O(n·k).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Bar:
    """One stretch of a lane, seconds from the plan's start. ``kind`` "units" is a merged run of
    ``count`` consecutive units of the lane (input, compute, exchange and output together)."""

    unit: int  # index into the units (a merged run: its first unit)
    kind: str  # "input", "compute", "exchange", "output", or "units"
    start: float
    end: float
    count: int = 1


@dataclass(frozen=True)
class SlotCost:
    """Per-unit transfer seconds on a slot (unknown counted as 0 by the caller, with a warning)."""

    input_s: float = 0.0
    output_s: float = 0.0
    exchange_s: float = 0.0  # a split task's exchange steps, drawn as one stretch after its compute

    def parts(self, compute_s: float) -> tuple[tuple[str, float], ...]:
        """A unit's stretches in order; transfers of 0 s are left out, the compute never."""
        every = (("input", self.input_s), ("compute", compute_s), ("exchange", self.exchange_s))
        return tuple((k, d) for k, d in (*every, ("output", self.output_s)) if d > 0 or k == "compute")

    @property
    def overhead_s(self) -> float:
        """The seconds a unit spends on this slot besides its compute."""
        return self.input_s + self.exchange_s + self.output_s


@dataclass
class Lane:
    """What one slot does: ``units`` (indices into ``seconds``) back to back from 0; ``end`` is
    when it finishes its last unit."""

    slot: int
    cost: SlotCost = field(default_factory=SlotCost)
    seconds: Sequence[float] = ()  # compute seconds of every unit of the plan (shared, not copied)
    units: list[int] = field(default_factory=list)
    end: float = 0.0
    last_start: float = 0.0  # when the last unit starts (its input, if any)

    def spans(self) -> Iterator[tuple[int, float, float]]:
        """(unit, start, end) of each unit, transfers included, in the order the lane runs them."""
        c, t = self.cost, 0.0
        for u in self.units:
            end = t + c.input_s + self.seconds[u] + c.exchange_s + c.output_s
            yield u, t, end
            t = end

    @property
    def bars(self) -> list[Bar]:
        """Every stretch of the lane, one bar per part of each unit (4 per unit at most)."""
        out: list[Bar] = []
        t = 0.0
        for u in self.units:
            for kind, dur in self.cost.parts(self.seconds[u]):
                out.append(Bar(u, kind, t, t + dur))
                t += dur
        return out

    def runs(self, most: int, into: int) -> list[Bar]:
        """Every bar when there are at most ``most``; else ``into`` bars (or a few fewer), each a
        run of consecutive units merged into one bar of kind "units" (for drawing: a run's length
        is summed per run, and the last run ends at the lane's end)."""
        n = len(self.units)
        if n * len(self.cost.parts(1.0)) <= most:
            return self.bars
        per = -(-n // into)  # units per run, rounded up
        over = self.cost.overhead_s
        out: list[Bar] = []
        t = 0.0
        for i in range(0, n, per):
            chunk = self.units[i : i + per]
            end = self.end if i + per >= n else t + len(chunk) * over + math.fsum(map(self.seconds.__getitem__, chunk))
            out.append(Bar(chunk[0], "units", t, end, len(chunk)))
            t = end
        return out


def _lanes(seconds: Sequence[float], costs: list[SlotCost]) -> list[Lane]:
    return [Lane(i, c, seconds) for i, c in enumerate(costs)]


def _run(lane: Lane, units: Sequence[int]) -> None:
    """Append ``units`` to ``lane`` in order. The end is the bars' own sum, part by part (adding a
    0 s part changes nothing), so a lane's end is the end of its last bar."""
    c, secs, t, before = lane.cost, lane.seconds, lane.end, lane.last_start
    ci, ce, co = c.input_s, c.exchange_s, c.output_s
    for u in units:
        before, t = t, t + ci + secs[u] + ce + co
    lane.units.extend(units)
    lane.end, lane.last_start = t, before


def one_slot(seconds: Sequence[float], cost: SlotCost) -> list[Lane]:
    lane = Lane(0, cost, seconds)
    _run(lane, range(len(seconds)))
    return [lane]


def even_static(seconds: Sequence[float], costs: list[SlotCost]) -> list[Lane]:
    k, n = len(costs), len(seconds)
    lanes = _lanes(seconds, costs)
    q, r = divmod(n, k)
    u = 0
    for i in range(k):
        size = q + (1 if i < r else 0)
        _run(lanes[i], range(u, u + size))
        u += size
    return lanes


def longest_first(seconds: Sequence[float], costs: list[SlotCost]) -> list[Lane]:
    """LPT: each unit, longest first, to the slot where it would finish soonest (ties: lowest slot).
    A unit finishes on slot i at end_i + overhead_i + its compute, so the slot of the smallest
    end_i + overhead_i wins whatever the unit: one heap keyed on that."""
    lanes = _lanes(seconds, costs)
    heap = [(ln.cost.overhead_s, ln.slot) for ln in lanes]
    heapq.heapify(heap)
    ends = [0.0] * len(lanes)
    starts = [0.0] * len(lanes)
    parts = [(ln.cost.input_s, ln.cost.exchange_s, ln.cost.output_s, ln.cost.overhead_s) for ln in lanes]
    order = [ln.units for ln in lanes]
    # longest first, ties in input order: a stable sort keeps equal units in order, reversed too
    for u in sorted(range(len(seconds)), key=seconds.__getitem__, reverse=True):
        slot = heap[0][1]
        ci, ce, co, over = parts[slot]
        starts[slot] = ends[slot]
        end = ends[slot] = ends[slot] + ci + seconds[u] + ce + co
        order[slot].append(u)
        heapq.heapreplace(heap, (end + over, slot))
    for ln in lanes:
        ln.end, ln.last_start = ends[ln.slot], starts[ln.slot]
    return lanes


def shared_queue(seconds: Sequence[float], costs: list[SlotCost]) -> list[Lane]:
    """Each unit in the given order to the slot that is free first (ties: lowest slot)."""
    lanes = _lanes(seconds, costs)
    heap = [(0.0, ln.slot) for ln in lanes]
    parts = [(ln.cost.input_s, ln.cost.exchange_s, ln.cost.output_s) for ln in lanes]
    order = [ln.units for ln in lanes]
    starts = [0.0] * len(lanes)
    for u, sec in enumerate(seconds):
        start, slot = heap[0]
        ci, ce, co = parts[slot]
        order[slot].append(u)
        starts[slot] = start
        heapq.heapreplace(heap, (start + ci + sec + ce + co, slot))
    for end, slot in heap:
        lanes[slot].end, lanes[slot].last_start = end, starts[slot]
    return lanes


SCHEDULERS = {
    "even-static": even_static,
    "longest-first": longest_first,
    "shared-queue": shared_queue,
}
