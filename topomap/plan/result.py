"""What a plan says, as values: the arrangements of the flow's work on 1…N cards, their lanes,
per-unit transfers, card memory and memory fit, and :class:`PlanResult`, whose ``to_json()`` is the
`plan --json` document. Pure data; nothing here reads a file or the graph.

For each card count k: everything on one card (k = cards per task), an even static split in the
given order, longest-first, a shared queue, and a coordinated split (one task over all k cards,
paying an exchange per step). Each says its parallel part, transfers, assembly, total, idle
card-minutes, speed-up over one card and whether a task fits in each card's memory.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from topomap.base.jsonrows import Rows
from topomap.base.units import fmt_bandwidth, fmt_bytes
from topomap.flow.spec import Unit
from topomap.plan.sched import Lane

if TYPE_CHECKING:
    from topomap.plan.money_types import PlanMoney

PLAN_SCHEMA = (
    "topomap.plan/2"  # /2: units and lanes summarised (counts, totals, first/last, longest); --units lists them
)
LONGEST = 3  # the longest units named in the units summary
Verdict = Literal["fits", "does not fit", "unknown"]


@dataclass(frozen=True)
class Hop:
    """One link of a transfer's route, a resource transfers moving data at once share (model):
    ``key`` names it (PCIe links and NIC ports per direction), ``gbps`` is its rate or None when
    unknown; ``kind``: "pcie", "nic", "nvlink", "smp", "host-memory" (above the root ports: host
    memory, whose bandwidth no snapshot records), "storage" (the rate the work block states)."""

    key: str
    what: str
    gbps: float | None
    kind: str


@dataclass(frozen=True)
class Leg:
    """One per-unit transfer to or from one card: bytes, mapped bandwidth (GB/s) and its source."""

    direction: str  # "input" or "output"
    other: str  # the placement at the other end, e.g. "lot:memory", "workstation"
    card: str  # "gpu3"
    volume_bytes: int | None
    bandwidth_gbps: float | None
    bandwidth_source: str
    medium: str
    via: str
    route: tuple[str, ...] = ()
    lower_bound: bool = False  # the mapped bandwidth is at least this much (as `map` says: "≥")
    hops: tuple[Hop, ...] = ()  # the route's links, the resources it shares with other transfers

    def seconds(self, rate_gbps: float | None = None) -> float | None:
        """Seconds at the mapped bandwidth, or at ``rate_gbps`` when shared."""
        bw = rate_gbps if rate_gbps is not None else self.bandwidth_gbps
        if self.volume_bytes is None or not bw:
            return None
        return self.volume_bytes / (bw * 1e9)

    def describe(self) -> str:
        """ "lot:memory → gpu0: 8 GiB over host-memory/pcie, 63.0 GB/s spec" — the bandwidth as `map` writes it."""
        bw = "unknown bandwidth"
        if self.bandwidth_gbps is not None:
            bw = fmt_bandwidth(self.bandwidth_gbps, self.bandwidth_source, self.lower_bound)
        vol = "volume not declared" if self.volume_bytes is None else fmt_bytes(self.volume_bytes)
        ends = f"{self.other} → {self.card}" if self.direction == "input" else f"{self.card} → {self.other}"
        return f"{ends}: {vol} over {self.medium}/{self.via}, {bw}"


@dataclass(frozen=True)
class CardMemory:
    """One card's memory as a plan counts it, with where the figure comes from."""

    card: str
    total_bytes: int | None
    source: str  # "snapshot", "derived from the name 'Tesla V100-SXM3-32GB-H'", "unknown"
    given: bool = False  # a declared lot's (or the catalogue's) size as sold: the card holds at least that


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
    transfers_lower_bound: bool = False  # a shared link of unknown rate (host memory): at least transfers_s

    @property
    def card_s(self) -> float:
        """What the rental costs: every card of the arrangement, for the whole total (card-seconds)."""
        return self.k * self.total_s

    def figures(self) -> tuple[object, ...]:
        """What the plan's table says of this arrangement: equal figures are a tie."""
        assembly = None if self.assembly_s is None else round(self.assembly_s, 3)
        return (
            self.k, round(self.parallel_s, 3), round(self.transfers_s, 3), self.transfers_complete, assembly,
            round(self.total_s, 3), round(self.idle_card_s, 3), self.fit.verdict, self.transfers_lower_bound,
        )  # fmt: skip

    def to_json(self, units: list[Unit], every_unit: bool = False) -> dict[str, object]:
        """The arrangement; each lane summarised, with every bar too when ``every_unit``."""
        return {
            "cards": self.k,
            "arrangement": self.kind,
            "slots": self.slots,
            "parallel_s": self.parallel_s,
            "transfers_s": self.transfers_s,
            "transfers_complete": self.transfers_complete,
            "transfers_lower_bound": self.transfers_lower_bound,
            "exchange_s": self.exchange_s,
            "assembly_s": self.assembly_s,
            "total_s": self.total_s,
            "card_minutes": self.card_s / 60,
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
    if every_unit:  # row by row (Rows): 100,000 units on 8 cards are 3 million bars
        bars = ln.bars
        out["bars"] = Rows(
            ("unit", "kind", "start_s", "end_s"), lambda: ((units[b.unit].name, b.kind, b.start, b.end) for b in bars)
        )
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
        out["each"] = Rows(("name", "seconds"), lambda: ((u.name, u.seconds) for u in units))
    return out


@dataclass(frozen=True)
class SharedLink:
    """A link two or more cards' transfers cross at once, and the rate each of them gets (model)."""

    cards_at_once: int  # the cards of the arrangement moving data at once
    direction: str  # "input" or "output"
    hop: Hop
    cards: tuple[str, ...]  # the cards whose transfers cross it
    each_gbps: float | None  # the lowest rate among them once shared (None: unknown)
    total_gbps: float | None = None  # their rates once shared, summed (None: unknown)

    def to_json(self) -> dict[str, object]:
        return {
            "cards_at_once": self.cards_at_once,
            "direction": self.direction,
            "link": self.hop.what,
            "kind": self.hop.kind,
            "link_gbps": self.hop.gbps,
            "cards": list(self.cards),
            "each_gbps": self.each_gbps,
            "total_gbps": self.total_gbps,
        }


@dataclass(frozen=True)
class HostMemory:
    """Host memory as the ceiling above the root ports when ``cards`` cards move data at once: its
    bandwidth is unknown (no snapshot records it; ``settle`` measures it); ``together_gbps`` is the
    sum of the cards' own mapped rates, an upper bound of what they move at once."""

    cards: int
    direction: str
    together_gbps: float | None
    settle: str

    def to_json(self) -> dict[str, object]:
        return {
            "bandwidth_gbps": None,
            "bandwidth_source": "unknown",
            "cards_at_once": self.cards,
            "direction": self.direction,
            "together_upper_bound_gbps": self.together_gbps,
            "settle": self.settle,
        }


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
    sharing: list[SharedLink] = field(default_factory=list)  # links shared below host memory
    host_memory: HostMemory | None = None  # the ceiling above the root ports, when cards load at once
    volume_per: str = "replica"  # work.volume_per: what an arrow's volume counts (per replica, per unit)
    money: PlanMoney | None = None  # what each arrangement costs on a priced lot (plan/money.py)

    margin: float = 0.10  # "fewest cards within this fraction of the fastest total" (plan --margin)

    def _ok(self) -> list[Arrangement]:
        return [a for a in self.arrangements if a.fit.verdict != "does not fit"]

    def best(self) -> Arrangement | None:
        """The fastest arrangement whose tasks do not fail to fit (ties: fewer cards, then plan order)."""
        ok = self._ok()
        return min(ok, key=lambda a: (round(a.total_s, 6), a.k)) if ok else None

    def cheapest(self) -> Arrangement | None:
        """The fewest card-minutes (cards × total: what the rental costs); ties: the faster."""
        ok = self._ok()
        return min(ok, key=lambda a: (round(a.card_s, 6), round(a.total_s, 6))) if ok else None

    def fewest_within(self) -> Arrangement | None:
        """The fewest cards whose total is within ``margin`` of the fastest (ties: the faster)."""
        best = self.best()
        if best is None:
            return None
        near = [a for a in self._ok() if a.total_s <= best.total_s * (1 + self.margin) + 1e-9]
        return min(near, key=lambda a: (a.k, round(a.total_s, 6)))

    def ties(self) -> list[list[Arrangement]]:
        """The arrangements grouped where the table's figures are equal (same cards, times, idle, fit),
        in plan order: a group of several is one tie."""
        groups: dict[tuple[object, ...], list[Arrangement]] = {}
        for a in self.arrangements:
            groups.setdefault(a.figures(), []).append(a)
        return list(groups.values())

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
            "volume_per": self.volume_per,
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
            "shared_links": [lk.to_json() for lk in self.sharing],
            "host_memory": None if self.host_memory is None else self.host_memory.to_json(),
            "exchange_model": self.exchange_how,
            "assembly": {"on": self.assembly_on, "waits_for_all": not self.assembly_streamed},
            "arrangements": [a.to_json(self.units, every_unit) for a in self.arrangements],
            "best": None if best is None else {"cards": best.k, "arrangement": best.kind, "total_s": best.total_s},
            "cheapest": _pick(self.cheapest()),
            "fewest_cards_within_margin": {"margin": self.margin, **(_pick(self.fewest_within()) or {})},
            "ties": [{"cards": g[0].k, "arrangements": [a.kind for a in g]} for g in self.ties() if len(g) > 1],
            "assumptions": self.assumptions,
            "warnings": self.warnings,
            "skipped": self.skipped,
            "cost": None if self.money is None else self.money.to_json(),
        }


def _pick(a: Arrangement | None) -> dict[str, object] | None:
    if a is None:
        return None
    return {"cards": a.k, "arrangement": a.kind, "total_s": a.total_s, "card_minutes": a.card_s / 60}


def best_total_seconds(result: PlanResult) -> float | None:
    """The shortest total of an arrangement whose tasks do not fail to fit (fit unknown counts), or None."""
    best = result.best()
    return None if best is None else best.total_s


def arrangement_name(a: Arrangement, r: PlanResult) -> str:
    """An arrangement as the plan's views name it: "one task at a time" where a task takes several cards."""
    return "one task at a time" if a.kind == "one card" and r.cards_per_task > 1 else a.kind
