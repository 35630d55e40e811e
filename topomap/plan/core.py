"""`topomap plan`: the flow's work under each arrangement of 1…N cards of the lot — a calculation
from the user's stated assumptions and the arrows mapped on the real machine, never a measurement.

For each card count k: everything on one card (k = cards per task), an even static split in the
given order, longest-first, a shared queue, and a coordinated split (one task over all k cards,
paying an exchange per step). Each says its parallel part, transfers, assembly, total, idle
card-minutes, speed-up over one card and whether a task fits in each card's memory.

Public API for `check` and `diff`: :func:`plan_flow`, :func:`best_total_seconds`,
:func:`plan_changes`.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from topomap.base.errors import TopomapError
from topomap.base.units import fmt_bytes, fmt_seconds
from topomap.flow.spec import Unit, Work
from topomap.flow.work import work_of
from topomap.plan.costs import SETTLE_MEMORY, CardMemory, Leg, cards_of, lot_of
from topomap.plan.sched import Lane

if TYPE_CHECKING:
    from topomap.flow.spec import Flow
    from topomap.graph import Topology

PLAN_SCHEMA = (
    "topomap.plan/2"  # /2: units and lanes summarised (counts, totals, first/last, longest); --units lists them
)
LONGEST = 3  # the longest units named in the units summary
Verdict = Literal["fits", "does not fit", "unknown"]
NOMINAL_MARGIN = 0.03  # a need within 3 % of a size read from a GPU's name is too close to call


def fmt_span(sec: float | None) -> str:
    """720 → "12 min", 3490 → "58.2 min", 0.021 → "21.0 ms", 0 → "0 s"; None → "unknown"."""
    if sec is None:
        return "unknown"
    if sec == 0:
        return "0 s"
    if sec >= 60:
        return f"{sec / 60:.1f}".removesuffix(".0") + " min"
    return fmt_seconds(sec)


@dataclass
class MemoryFit:
    """Does one card hold its part of a task? Per card, the smallest card used decides."""

    verdict: Verdict
    needed_bytes: int | None  # per card
    card_bytes: int | None  # the smallest card used
    card: str | None
    source: str  # of card_bytes: "snapshot", "derived …", "unknown"
    reason: str

    def to_json(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "needed_bytes_per_card": self.needed_bytes,
            "card_bytes": self.card_bytes,
            "card": self.card,
            "card_bytes_source": self.source,
            "reason": self.reason,
        }


@dataclass
class Arrangement:
    """One way of running the work on ``k`` cards; seconds are calculated (see the plan's assumptions)."""

    k: int
    kind: str  # "one card", "even-static", "longest-first", "shared-queue", "coordinated"
    slots: list[list[str]]  # the cards of each slot, e.g. [["gpu0"], ["gpu1"]]
    lanes: list[Lane]
    parallel_s: float
    transfers_s: float  # known transfer seconds on the lane that finishes last
    transfers_complete: bool  # False: some transfer time is unknown and excluded (see the warnings)
    exchange_s: float | None  # coordinated only: exchange seconds on that lane
    assembly_s: float | None
    total_s: float
    idle_card_s: float  # card-seconds idle during the parallel part
    idle_assembly_card_s: float  # card-seconds idle while the assembly runs
    fit: MemoryFit
    speedup: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def idle_cards(self) -> list[str]:
        """Cards of the lot the arrangement leaves without work."""
        return [] if self.kind == "one card" else [c for s in self.slots[len(self.lanes) :] for c in s]

    def to_json(self, units: list[Unit], every_unit: bool = False) -> dict[str, object]:
        """The arrangement; each lane summarised, with every bar too when ``every_unit``."""
        return {
            "cards": self.k,
            "arrangement": self.kind,
            "slots": self.slots,
            "parallel_s": self.parallel_s,
            "transfers_s": self.transfers_s,
            "transfers_complete": self.transfers_complete,
            "exchange_s": self.exchange_s,
            "assembly_s": self.assembly_s,
            "total_s": self.total_s,
            "idle_card_s": self.idle_card_s,
            "idle_during_assembly_card_s": self.idle_assembly_card_s,
            "speedup": self.speedup,
            "memory_fit": self.fit.to_json(),
            "notes": self.notes,
            "lanes": [_lane_json(ln, self.slots[ln.slot], units, every_unit) for ln in self.lanes],
        }


def _lane_json(ln: Lane, cards: list[str], units: list[Unit], every_unit: bool) -> dict[str, object]:
    """One lane: how many units, their compute, transfer and exchange seconds, the first and the last
    unit with their times, its longest unit; every bar only when asked (100,000 units made 72 MB)."""
    c, n = ln.cost, len(ln.units)
    secs = ln.seconds
    top = max(ln.units, key=secs.__getitem__) if n else None  # the first of the longest, in lane order

    def at(u: int, start: float) -> dict[str, object]:
        return {
            "unit": units[u].name,
            "start_s": start,
            "end_s": start + c.input_s + secs[u] + c.exchange_s + c.output_s,
        }

    out: dict[str, object] = {
        "cards": cards,
        "end_s": ln.end,
        "unit_count": n,
        "compute_s": math.fsum(map(secs.__getitem__, ln.units)),
        "transfers_s": n * (c.input_s + c.output_s),
        "exchange_s": n * c.exchange_s,
        "first": at(ln.units[0], 0.0) if n else None,
        "last": {**at(ln.units[-1], ln.last_start), "end_s": ln.end} if n else None,
        "longest": {"unit": units[top].name, "seconds": secs[top]} if top is not None else None,
    }
    if every_unit:
        out["bars"] = [
            {"unit": units[b.unit].name, "kind": b.kind, "start_s": b.start, "end_s": b.end} for b in ln.bars
        ]
    return out


def _units_json(units: list[Unit], source: str, every_unit: bool) -> dict[str, object]:
    """The units in numbers: count, total, shortest and longest; each one only when asked."""
    idx = range(len(units))
    longest = heapq.nlargest(LONGEST, idx, key=lambda i: units[i].seconds)
    shortest = min(idx, key=lambda i: units[i].seconds) if units else None
    out: dict[str, object] = {
        "count": len(units),
        "source": source,
        "total_s": math.fsum(u.seconds for u in units),
        "shortest": None if shortest is None else {"unit": units[shortest].name, "seconds": units[shortest].seconds},
        "longest": [{"unit": units[i].name, "seconds": units[i].seconds} for i in longest],
    }
    if every_unit:
        out["each"] = [{"name": u.name, "seconds": u.seconds} for u in units]
    return out


@dataclass
class PlanResult:
    """The plan of one flow on one lot. Pure data; ``to_json()`` is the `plan --json` document."""

    flow: str
    lot: str
    cards_available: list[str]
    units: list[Unit]
    unit_source: str
    cards_per_task: int
    arrangements: list[Arrangement]
    legs: list[Leg]
    memory: list[CardMemory]
    includes_transfers: bool
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    exchange_how: str | None = None
    assembly_on: str | None = None  # where the assembly runs (a flow host or step)
    assembly_streamed: bool = False  # results assembled as they arrive, not after every unit
    unit_provenance: str = "assumed"  # "assumed" (the flow's work block) or "observed" (a recorded run)

    def best(self) -> Arrangement | None:
        ok = [a for a in self.arrangements if a.fit.verdict != "does not fit"]
        return min(ok, key=lambda a: (round(a.total_s, 6), a.k)) if ok else None

    def to_json(self, every_unit: bool = False) -> dict[str, object]:
        """The `plan --json` document: units and lanes summarised; ``every_unit`` lists each unit and bar."""
        best = self.best()
        return {
            "schema": PLAN_SCHEMA,
            "kind": "calculation",
            "flow": self.flow,
            "lot": self.lot,
            "cards_available": self.cards_available,
            "cards_per_task": self.cards_per_task,
            "units": _units_json(self.units, self.unit_provenance, every_unit),
            "unit_source": self.unit_source,
            "durations_include_transfers": self.includes_transfers,
            "per_unit_transfers": [
                {
                    "direction": lg.direction,
                    "other": lg.other,
                    "card": lg.card,
                    "volume_bytes": lg.volume_bytes,
                    "medium": lg.medium,
                    "via": lg.via,
                    "bandwidth_gbps": lg.bandwidth_gbps,
                    "bandwidth_source": lg.bandwidth_source,
                    "seconds": lg.seconds(),
                }
                for lg in self.legs
            ],
            "card_memory": [{"card": m.card, "bytes": m.total_bytes, "source": m.source} for m in self.memory],
            "exchange_model": self.exchange_how,
            "assembly": {"on": self.assembly_on, "waits_for_all": not self.assembly_streamed},
            "arrangements": [a.to_json(self.units, every_unit) for a in self.arrangements],
            "best": None if best is None else {"cards": best.k, "arrangement": best.kind, "total_s": best.total_s},
            "assumptions": self.assumptions,
            "warnings": self.warnings,
            "skipped": self.skipped,
        }


def best_total_seconds(result: PlanResult) -> float | None:
    """The shortest total of an arrangement whose tasks do not fail to fit (fit unknown counts), or None."""
    best = result.best()
    return None if best is None else best.total_s


def plan_changes(a: PlanResult, b: PlanResult) -> list[str]:
    """How the plan changes from lot A to lot B, and why: one human line per change."""
    from topomap.plan.compare import changes

    return changes(a, b)


def plan_flow(
    flow: Flow,
    topos: dict[str, Topology | None],
    cards: list[int] | None = None,
    observed: tuple[dict[str, Any], str] | None = None,
) -> PlanResult:
    """Plan a bound flow (``topos`` from :func:`topomap.flow.mapping.bind_hosts`) for ``cards`` card
    counts (default 1…N, N the GPUs of the lot). ``observed``: (figures, origin) from
    :func:`topomap.record.observed_for_plan`, used in place of the assumed duration and memory."""
    from topomap.plan.build import build_plan

    work = work_of(flow)
    if work is not None and work.units and observed is not None:
        from topomap.plan.observed import apply_observed

        work = apply_observed(work, *observed)
    if work is None or not work.units:
        raise TopomapError(
            f"{flow.path}: the flow's work has no units to plan",
            hint="add under work: count: 8 and duration: 12 min (or durations: […] or durations_csv: FILE)",
        )
    lot = lot_of(flow)
    topo = topos.get(lot)
    if topo is None:
        raise TopomapError(f"{flow.path}: host {lot} has no snapshot", hint=f"--probe {lot}=SNAPSHOT")
    have = cards_of(flow, topo, lot)
    if not have:
        raise TopomapError(f"{flow.path}: {lot}'s snapshot has no usable GPU to plan on")
    counts = sorted(set(cards)) if cards else list(range(1, len(have) + 1))
    too_many = [k for k in counts if k > len(have) or k < 1]
    if too_many:
        raise TopomapError(
            f"--cards {too_many[0]}: {lot} has {len(have)} usable card(s)",
            hint=f"choose from 1 to {len(have)}, e.g. --cards 1,{len(have)}",
        )
    return _finite(build_plan(flow, topos, lot, have, counts, work), flow.path)


def _finite(result: PlanResult, origin: str) -> PlanResult:
    """The plan, once every figure it reports is a finite number. The work's numbers are bounded
    where they are read (work.py), so this is the last guard: an infinite total once reached every
    view (NaN in the terminal Gantt, matplotlib's limits, `Infinity` in the JSON)."""
    for a in result.arrangements:
        figures = {
            "parallel part": a.parallel_s, "transfers": a.transfers_s, "exchange": a.exchange_s,
            "assembly": a.assembly_s, "total": a.total_s, "idle card time": a.idle_card_s,
            "idle card time during the assembly": a.idle_assembly_card_s, "speed-up": a.speedup,
        }  # fmt: skip
        figures.update({f"lane {ln.slot + 1}'s end": ln.end for ln in a.lanes})
        bad = next((k for k, v in figures.items() if v is not None and not math.isfinite(v)), None)
        if bad is not None:
            raise TopomapError(
                f"{origin}: the {bad} of {a.k} card(s) {a.kind} is not a finite number",
                hint="check the work block's durations, sizes and rates, and the flow's volumes",
            )
    return result


def memory_fit(work: Work, memory: dict[str, CardMemory], used: list[str], holders: int, lot_cards: int) -> MemoryFit:
    """Fit of one task's share on each used card: duplicated state + the rest ÷ ``holders`` cards."""
    if work.memory_per_task_bytes is None:
        return MemoryFit("unknown", None, None, None, "unknown", "memory_per_task not given in the work block")
    dup = work.duplicated_bytes
    need = dup + (work.memory_per_task_bytes - dup) // holders
    mems = [memory[c] for c in used]
    unknown = [m for m in mems if m.total_bytes is None]
    if unknown:
        return MemoryFit(
            "unknown", need, None, unknown[0].card, "unknown",
            f"{unknown[0].card}'s memory is not in the snapshot; `{SETTLE_MEMORY}` settles it",
        )  # fmt: skip
    small = min(mems, key=lambda m: m.total_bytes or 0)
    have = small.total_bytes or 0
    told = f"{small.card} has {fmt_bytes(have)}" + ("" if small.source == "snapshot" else f" ({small.source})")
    shared = f"; each card keeps its own copy of the duplicated {fmt_bytes(dup)}" if dup and holders > 1 else ""
    if small.source != "snapshot" and abs(need - have) <= NOMINAL_MARGIN * have:
        return MemoryFit(
            "unknown", need, have, small.card, small.source,
            f"needs {fmt_bytes(need)} per card, within 3 % of {small.card}'s nominal {fmt_bytes(have)}; "
            f"`{SETTLE_MEMORY}` settles it",
        )  # fmt: skip
    if need > have:
        total = sum(m.total_bytes or 0 for m in memory.values())
        alone = (
            f"; the lot's {lot_cards} cards hold {fmt_bytes(total)} together, but cards do not pool memory"
            if holders == 1 and total >= need
            else ""
        )
        return MemoryFit(
            "does not fit", need, have, small.card, small.source,
            f"does not fit: needs {fmt_bytes(need)} per card, {told}{alone}{shared}",
        )  # fmt: skip
    return MemoryFit(
        "fits", need, have, small.card, small.source,
        f"fits: {fmt_bytes(need)} per card; {told}{shared}",
    )  # fmt: skip
