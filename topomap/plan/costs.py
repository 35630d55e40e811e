"""The hidden costs of a plan, taken from the map of the flow on the real machine.

- Each unit's input and output: the flow's arrows into and out of its compute steps, their
  volume split evenly over the units, re-mapped onto every card a plan may use (volume ÷ the
  mapped bandwidth, with its source label).
- Sharing (model): when k cards move data at once, arrows whose routes pass through the same
  intermediate node (a PCIe switch, a host bridge, a NIC) share it; the shared node carries at most
  the fastest of those arrows' bandwidths, split evenly. Storage shares the user's declared read /
  write rate. Host memory's own bandwidth is not in a snapshot and is not a limit here.
- Exchange for a task split over k cards: a ring all-reduce per step (model), at the slowest
  mapped link between the k cards.
- Memory per card: the snapshot's ``memory_total_bytes``, else the size in the GPU's name (derived).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from topomap.base.units import fmt_bytes
from topomap.flow.spec import Flow, FlowArrow, Placement, Work

if TYPE_CHECKING:
    from topomap.flow.mapping import MappedArrow
    from topomap.graph import Topology

SETTLE_MEMORY = "nvidia-smi --query-gpu=memory.total --format=csv"


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

    def seconds(self, rate_gbps: float | None = None) -> float | None:
        """Seconds at the mapped bandwidth, or at ``rate_gbps`` when shared."""
        bw = rate_gbps if rate_gbps is not None else self.bandwidth_gbps
        if self.volume_bytes is None or not bw:
            return None
        return self.volume_bytes / (bw * 1e9)

    def describe(self) -> str:
        bw = "unknown bandwidth"
        if self.bandwidth_gbps is not None:
            bw = f"{self.bandwidth_gbps:g} GB/s {self.bandwidth_source}"
        vol = "volume not declared" if self.volume_bytes is None else fmt_bytes(self.volume_bytes)
        ends = f"{self.other} → {self.card}" if self.direction == "input" else f"{self.card} → {self.other}"
        return f"{ends}: {vol} over {self.medium}/{self.via}, {bw}"


@dataclass
class CardCosts:
    """Per-unit transfer seconds of one card when k cards move data at once (None: unknown)."""

    card: str
    input_s: float | None
    output_s: float | None
    alone_input_s: float | None
    alone_output_s: float | None
    shared: list[str] = field(default_factory=list)  # what it shares, for the notes


@dataclass
class CardMemory:
    card: str
    total_bytes: int | None
    source: str  # "snapshot", "derived from the name 'Tesla V100-SXM3-32GB-H'", "unknown"


def lot_of(flow: Flow) -> str:
    """The host whose GPUs run the work: the first compute step placed on a GPU."""
    from topomap.flow.spec import FlowError

    for st in flow.steps.values():
        if st.kind == "compute":
            for p in st.placements:
                if p.kind == "gpu":
                    return p.host
    raise FlowError(
        f"{flow.path}: plan needs a compute step on a GPU",
        hint="add e.g. `convert: {kind: compute, on: lot:gpu0}` under steps",
    )


def cards_of(flow: Flow, topo: Topology, lot: str) -> list[str]:
    """The lot's usable cards in plan order: the flow's own compute GPUs first, then the rest by index."""
    have = [f"gpu{g.index}" for g in topo.snapshot.gpus if not g.lost]
    first: list[str] = []
    for st in flow.steps.values():
        if st.kind == "compute":
            first += [p.gpu for p in st.placements if p.host == lot and p.gpu in have and p.gpu not in first]
    return first + [g for g in have if g not in first]


def _io_arrows(flow: Flow) -> tuple[list[FlowArrow], list[FlowArrow]]:
    compute = {n for n, s in flow.steps.items() if s.kind == "compute"}
    ins = [a for a in flow.arrows if a.dst_step in compute and a.src_step not in compute]
    outs = [a for a in flow.arrows if a.src_step in compute and a.dst_step not in compute]
    return ins, outs


def _per_unit(arrows: list[FlowArrow], side: str, n_units: int) -> dict[Placement, int | None]:
    """Bytes per unit for each far-end placement: the arrows' volume summed, ÷ units; None if any is undeclared."""
    out: dict[Placement, int | None] = {}
    for a in arrows:
        p = a.src if side == "input" else a.dst
        prev = out.get(p, 0)
        out[p] = None if prev is None or a.volume_bytes is None else prev + a.volume_bytes
    return {p: None if v is None else v // max(n_units, 1) for p, v in out.items()}


def unit_legs(flow: Flow, topos: dict[str, Topology | None], lot: str, cards: list[str], work: Work) -> list[Leg]:
    """Every card's per-unit input and output legs, mapped on the machine."""
    from topomap.flow.mapping import map_flow

    ins, outs = _io_arrows(flow)
    synthetic: list[FlowArrow] = []
    meta: list[tuple[str, Placement, str]] = []
    for side, arrows in (("input", ins), ("output", outs)):
        for far, vol in _per_unit(arrows, side, len(work.units)).items():
            for card in cards:
                gpu = Placement(host=lot, kind="gpu", gpu=card)
                src, dst = (far, gpu) if side == "input" else (gpu, far)
                synthetic.append(FlowArrow(f"{side}", "unit", src, dst, vol, f"per-unit {side}"))
                meta.append((side, far, card))
    if not synthetic:
        return []
    mapped = map_flow(dataclasses.replace(flow, arrows=synthetic), topos).arrows
    return [_leg(side, far, card, m) for (side, far, card), m in zip(meta, mapped)]


def _leg(side: str, far: Placement, card: str, m: MappedArrow) -> Leg:
    return Leg(
        side, far.label(), card, m.volume_bytes, m.bandwidth_gbps, m.bandwidth_source, m.medium, m.via, tuple(m.route)
    )


def shared_costs(legs: list[Leg], cards: list[str], work: Work) -> list[CardCosts]:
    """Per-unit transfer seconds for each of ``cards`` when all of them move data at once (model)."""
    active = [lg for lg in legs if lg.card in cards]
    rates: dict[int, float | None] = {}
    notes: dict[int, list[str]] = {}
    for direction in ("input", "output"):
        group = [lg for lg in active if lg.direction == direction]
        users: dict[str, list[Leg]] = {}
        for lg in group:
            for node in lg.route[1:-1]:
                users.setdefault(node, []).append(lg)
        for lg in group:
            rate = lg.bandwidth_gbps
            why: list[str] = []
            for node in lg.route[1:-1]:
                sharing = users[node]
                known = [s.bandwidth_gbps for s in sharing if s.bandwidth_gbps is not None]
                if len(sharing) > 1 and known and rate is not None:
                    share = max(known) / len(sharing)
                    if share < rate:
                        rate = share
                        why = [f"{node} shared by {len(sharing)} cards"]
            declared = work.limits.storage_read_gbps if direction == "input" else work.limits.storage_write_gbps
            if lg.other.endswith(":storage") and declared is not None and rate is not None:
                n = sum(1 for s in group if s.other == lg.other)
                if declared / n < rate:
                    rate = declared / n
                    why = [f"{lg.other} {declared:g} GB/s (assumed) shared by {n} cards"]
            rates[id(lg)] = rate
            notes[id(lg)] = why
    out: list[CardCosts] = []
    for card in cards:
        mine = [lg for lg in active if lg.card == card]
        shared: list[str] = []
        for lg in mine:
            shared += notes[id(lg)]
        out.append(
            CardCosts(
                card,
                _sum([lg.seconds(rates[id(lg)]) for lg in mine if lg.direction == "input"]),
                _sum([lg.seconds(rates[id(lg)]) for lg in mine if lg.direction == "output"]),
                _sum([lg.seconds() for lg in mine if lg.direction == "input"]),
                _sum([lg.seconds() for lg in mine if lg.direction == "output"]),
                shared,
            )
        )
    return out


def _sum(xs: list[float | None]) -> float | None:
    """Sum of known parts; None when any part is unknown (the caller warns and excludes it)."""
    if any(x is None for x in xs):
        return None
    return sum(x for x in xs if x is not None)


def exchange_volume(flow: Flow, work: Work) -> int | None:
    """Bytes each card exchanges per step of a split task: work.split.exchange, else the volume of
    the flow's arrows into its `exchange` step."""
    if work.split is not None and work.split.exchange_bytes is not None:
        return work.split.exchange_bytes
    exch = {n for n, s in flow.steps.items() if s.kind == "exchange"}
    vols = [a.volume_bytes for a in flow.arrows if a.dst_step in exch and a.src_step not in exch]
    known = [v for v in vols if v is not None]
    return max(known) if known else None


def map_pairs(
    flow: Flow, topos: dict[str, Topology | None], lot: str, cards: list[str]
) -> dict[frozenset[str], MappedArrow]:
    """Every pair of ``cards`` mapped once (the medium and bandwidth between two cards)."""
    from topomap.flow.mapping import map_flow

    arrows = [
        FlowArrow("exchange", "exchange", Placement(lot, "gpu", a), Placement(lot, "gpu", b), None, "exchange")
        for i, a in enumerate(cards)
        for b in cards[i + 1 :]
    ]
    if not arrows:
        return {}
    mapped = map_flow(dataclasses.replace(flow, arrows=arrows), topos).arrows
    return {frozenset((a.src.gpu or "", a.dst.gpu or "")): m for a, m in zip(arrows, mapped)}


def exchange_seconds(
    pairs: dict[frozenset[str], MappedArrow], cards: list[str], volume: int | None
) -> tuple[float | None, float | None, str]:
    """Seconds of one exchange step over ``cards`` (ring all-reduce, model): 2(k−1)/k × volume ÷
    the slowest mapped link among them (``pairs`` from :func:`map_pairs`). Returns (seconds,
    slowest GB/s, how)."""
    k = len(cards)
    if k < 2:
        return 0.0, None, "one card: no exchange"
    mapped = [pairs[frozenset((a, b))] for i, a in enumerate(cards) for b in cards[i + 1 :]]
    unknown = next((m for m in mapped if m.bandwidth_gbps is None), None)
    if unknown is not None:
        return None, None, f"{unknown.src} ↔ {unknown.dst} over {unknown.medium}/{unknown.via}: bandwidth unknown"
    worst = min(mapped, key=lambda m: m.bandwidth_gbps or 0.0)
    low = worst.bandwidth_gbps or 0.0
    how = f"ring all-reduce (model), slowest link {worst.src} ↔ {worst.dst}: {low:g} GB/s {worst.bandwidth_source}"
    if volume is None:
        return None, low, how + "; exchange volume not declared"
    return 2 * (k - 1) / k * volume / (low * 1e9), low, how


def card_memory(topo: Topology, card: str) -> CardMemory:
    from topomap.model.facts import gpu_memory

    gpu = next(g for g in topo.snapshot.gpus if f"gpu{g.index}" == card)
    mem = gpu_memory(gpu)
    return CardMemory(card, mem.total_bytes, mem.source)
