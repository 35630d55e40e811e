"""The hidden costs of a plan, taken from the map of the flow on the real machine.

- Each unit's input and output: the flow's arrows into and out of its compute steps, their
  volume split evenly over the units, re-mapped onto every card a plan may use (volume ÷ the
  mapped bandwidth, with its source label).
- Sharing (model): when k cards move data at once, transfers share only the links their routes
  have in common (:mod:`topomap.plan.links`: each PCIe link per direction, each NIC port), split
  max-min fairly; a card under its own switch with its own uplink shares nothing below the root
  ports. Storage shares the user's declared read / write rate. Above the root ports is host
  memory, whose bandwidth no snapshot records: never a limit here, and the plan says so.
- Exchange for a task split over k cards: a ring all-reduce per step (model), at the slowest
  mapped link between the k cards.
- Memory per card: the snapshot's ``memory_total_bytes``, else the size in the GPU's name (derived).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from topomap.base.lotunits import MEMORY_CLASS_SPREAD
from topomap.base.units import fmt_bandwidth, fmt_bytes
from topomap.flow.mapping import map_flow
from topomap.flow.spec import Flow, FlowArrow, FlowError, Placement, Work
from topomap.model.facts import gpu_memory
from topomap.model.source_facts import Fact, settle_command
from topomap.plan.links import fair_rates, route_hops
from topomap.plan.result import CardMemory, Hop, Leg, MemoryFit, SharedLink

if TYPE_CHECKING:
    from topomap.flow.mapping import MappedArrow
    from topomap.graph import Topology

SETTLE_MEMORY = settle_command(Fact.GPU_MEMORY)
NOMINAL_MARGIN = 0.03  # a need within 3 % of a size read from a GPU's name is too close to call


@dataclass(frozen=True)
class CardCosts:
    """Per-unit transfer seconds of one card when k cards move data at once (None: unknown)."""

    card: str
    input_s: float | None
    output_s: float | None


def lot_of(flow: Flow) -> str:
    """The host whose GPUs run the work: the first compute step placed on a GPU."""
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


def _per_unit(arrows: list[FlowArrow], side: str, work: Work) -> dict[Placement, int | None]:
    """Bytes per unit for each far-end placement; None if any arrow's volume is undeclared.
    ``volume_per: replica`` (the default): every concrete arrow (one per step replica) carries its
    volume, all of them summed ÷ units. ``volume_per: unit``: an arrow's volume is what one unit
    moves, counted once per pair of steps whatever the replicas."""
    out: dict[Placement, int | None] = {}
    seen: set[tuple[Placement, str, str]] = set()
    for a in arrows:
        p = a.src if side == "input" else a.dst
        if work.volume_per == "unit":
            if (p, a.src_step, a.dst_step) in seen:
                continue
            seen.add((p, a.src_step, a.dst_step))
        prev = out.get(p, 0)
        out[p] = None if prev is None or a.volume_bytes is None else prev + a.volume_bytes
    per = 1 if work.volume_per == "unit" else max(len(work.units), 1)
    return {p: None if v is None else v // per for p, v in out.items()}


def replicas_of(flow: Flow, lot: str) -> dict[str, int]:
    """Compute steps placed on every GPU of the lot (`HOST:gpus`) and their replica count there."""
    out: dict[str, int] = {}
    for name, st in flow.steps.items():
        on = flow.spec.steps[name].on if name in flow.spec.steps else []
        spec = [on] if isinstance(on, str) else on
        if st.kind == "compute" and any(x.split(":", 1)[-1] in ("gpus", "gpu*", "all-gpus") for x in spec):
            out[name] = sum(1 for p in st.placements if p.host == lot and p.kind == "gpu")
    return out


def unit_legs(flow: Flow, topos: dict[str, Topology | None], lot: str, cards: list[str], work: Work) -> list[Leg]:
    """Every card's per-unit input and output legs, mapped on the machine."""
    ins, outs = _io_arrows(flow)
    synthetic: list[FlowArrow] = []
    meta: list[tuple[str, Placement, str]] = []
    for side, arrows in (("input", ins), ("output", outs)):
        for far, vol in _per_unit(arrows, side, work).items():
            for card in cards:
                gpu = Placement(host=lot, kind="gpu", gpu=card)
                src, dst = (far, gpu) if side == "input" else (gpu, far)
                synthetic.append(FlowArrow(f"{side}", "unit", src, dst, vol, f"per-unit {side}"))
                meta.append((side, far, card))
    if not synthetic:
        return []
    # one leg per card as if alone: which legs run at once, and what they share, is plan.links' to say
    mapped = map_flow(dataclasses.replace(flow, arrows=synthetic), topos, nic_sharing=False).arrows
    return [_leg(side, far, card, m, topos) for (side, far, card), m in zip(meta, mapped)]


def _leg(side: str, far: Placement, card: str, m: MappedArrow, topos: dict[str, Topology | None]) -> Leg:
    return Leg(
        side, far.label(), card, m.volume_bytes, m.bandwidth_gbps, m.bandwidth_source, m.medium, m.via,
        tuple(m.route), m.lower_bound, route_hops(topos, m.route),
    )  # fmt: skip


def share(legs: list[Leg], cards: list[str], work: Work) -> tuple[list[CardCosts], list[SharedLink]]:
    """Per-unit transfer seconds for each of ``cards`` when all of them move data at once (model),
    and the links they share. Loads share with loads and write-backs with write-backs (a unit's
    input comes before its compute, its output after); each shares only the hops of its route."""
    active = [lg for lg in legs if lg.card in cards]
    rates: dict[int, float | None] = {}
    links: list[SharedLink] = []
    for direction in ("input", "output"):
        group = [lg for lg in active if lg.direction == direction]
        declared = work.limits.storage_read_gbps if direction == "input" else work.limits.storage_write_gbps
        hops = [lg.hops + _storage_hop(lg, declared) for lg in group]
        got, shared = fair_rates([lg.bandwidth_gbps for lg in group], hops)
        rates.update({id(lg): r for lg, r in zip(group, got)})
        by_key = {h.key: h for hs in hops for h in hs}
        for key, idx in shared.items():
            each = [got[i] for i in idx]
            known = [x for x in each if x is not None]
            low, total = (None, None) if len(known) < len(each) else (min(known), sum(known))
            links.append(SharedLink(len(cards), direction, by_key[key], tuple(group[i].card for i in idx), low, total))
    out: list[CardCosts] = []
    for card in cards:
        mine = [lg for lg in active if lg.card == card]
        ins = [lg.seconds(rates[id(lg)]) for lg in mine if lg.direction == "input"]
        outs = [lg.seconds(rates[id(lg)]) for lg in mine if lg.direction == "output"]
        out.append(CardCosts(card, _sum(ins), _sum(outs)))
    return out, links


def _storage_hop(lg: Leg, declared: float | None) -> tuple[Hop, ...]:
    """The declared storage rate as one more hop that every transfer to or from that storage crosses."""
    if not lg.other.endswith(":storage") or declared is None:
        return ()
    way = "storage_read" if lg.direction == "input" else "storage_write"
    return (Hop(f"{lg.other}>{lg.direction}", f"{lg.other} (work.limits.{way})", declared, "storage"),)


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
    arrows = [
        FlowArrow("exchange", "exchange", Placement(lot, "gpu", a), Placement(lot, "gpu", b), None, "exchange")
        for i, a in enumerate(cards)
        for b in cards[i + 1 :]
    ]
    if not arrows:
        return {}
    mapped = map_flow(dataclasses.replace(flow, arrows=arrows), topos, nic_sharing=False).arrows
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
    rate = fmt_bandwidth(low, worst.bandwidth_source, worst.lower_bound)
    how = f"ring all-reduce (model), slowest link {worst.src} ↔ {worst.dst}: {rate}"
    if volume is None:
        return None, low, how + "; exchange volume not declared"
    return 2 * (k - 1) / k * volume / (low * 1e9), low, how


def card_memory(topo: Topology, card: str) -> CardMemory:
    """A card's memory: the snapshot's figure, else the size in the GPU's name (derived), else unknown."""
    gpu = next(g for g in topo.snapshot.gpus if f"gpu{g.index}" == card)
    mem = gpu_memory(gpu, topo.snapshot)
    return CardMemory(card, mem.total_bytes, mem.source, mem.kind == "given")


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
    if small.given and have < need <= have * MEMORY_CLASS_SPREAD:
        return MemoryFit(
            "unknown", need, have, small.card, small.source,
            f"needs {fmt_bytes(need)} per card; {small.card} holds at least its {fmt_bytes(have)} as sold, "
            f"and a card sold so up to {MEMORY_CLASS_SPREAD - 1:.0%} more (H100 80GB: 79.6 GiB); "
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
