"""Building a plan: per card count, the arrangements, their lanes and their sums, the
assumptions they rest on and the warnings for what is unknown (result types in result.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topomap.base.units import fmt_bytes, fmt_span
from topomap.flow.spec import Work
from topomap.plan.costs import (
    card_memory,
    exchange_volume,
    map_pairs,
    memory_fit,
    replicas_of,
    share,
    unit_legs,
)
from topomap.plan.exchange import exchange_step
from topomap.plan.links import HOST_MEMORY_SETTLE
from topomap.plan.result import Arrangement, HostMemory, Leg, MemoryFit, PlanResult
from topomap.plan.sched import SCHEDULERS, Lane, SlotCost, one_slot

if TYPE_CHECKING:
    from topomap.flow.mapping import MappedArrow
    from topomap.flow.spec import Flow
    from topomap.graph import Topology
    from topomap.plan.result import SharedLink


class _Ctx:
    """What every arrangement of one plan shares."""

    def __init__(self, flow: Flow, topos: dict[str, Topology | None], lot: str, have: list[str], work: Work) -> None:
        self.flow, self.topos, self.lot, self.have, self.work = flow, topos, lot, have, work
        self.seconds = [u.seconds for u in work.units]
        topo = topos[lot]
        assert topo is not None
        self.memory = {c: card_memory(topo, c) for c in have}
        self.legs: list[Leg] = unit_legs(flow, topos, lot, have, work)
        self.warnings: list[str] = []
        self.unknown_legs: dict[tuple[str, str, int | None, str, str], list[str]] = {}
        self.pairs: dict[frozenset[str], MappedArrow] | None = None  # card pairs, mapped once when needed
        self.links: dict[int, list[SharedLink]] = {}  # per number of cards moving data at once

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def costs(self, used: list[str]) -> dict[str, tuple[float | None, float | None]]:
        """Per-unit (input, output) seconds of each used card when all of them move data at once."""
        if self.work.includes_transfers:
            return {c: (0.0, 0.0) for c in used}
        out: dict[str, tuple[float | None, float | None]] = {}
        costs, links = share(self.legs, used, self.work)
        self.links.setdefault(len(used), links)
        for cc in costs:
            out[cc.card] = (cc.input_s, cc.output_s)
            if cc.input_s is None or cc.output_s is None:
                for lg in self.legs:
                    if lg.card == cc.card and lg.seconds() is None:
                        key = (lg.direction, lg.other, lg.volume_bytes, lg.medium, lg.via)
                        cards = self.unknown_legs.setdefault(key, [])
                        cards += [] if lg.card in cards else [lg.card]
        return out

    def lower_bound(self, used: list[str]) -> bool:
        """The transfers of ``used`` cards at once cross a shared link whose rate is unknown (host
        memory above the root ports, an unrecorded PCIe or inter-socket link): their time is at least this."""
        if self.work.includes_transfers:
            return False
        return any(lk.each_gbps is not None and lk.hop.gbps is None for lk in self.links.get(len(used), []))

    def finish(
        self, k: int, kind: str, slots: list[list[str]], lanes: list[Lane], fit: MemoryFit, unknown: bool,
        exchange_s: float | None = None, notes: list[str] | None = None,
    ) -> Arrangement:  # fmt: skip
        parallel = max(ln.end for ln in lanes)
        last = max(lanes, key=lambda ln: (ln.end, -ln.slot))
        moved = len(last.units) * (last.cost.input_s + last.cost.output_s)
        total, assembly_s = self._assembly(lanes, parallel)
        n_cards = k if kind != "one card" else len(slots[0])
        busy = {i: ln.end for i, ln in enumerate(lanes)}
        idle = sum((parallel - busy.get(i, 0.0)) * len(s) for i, s in enumerate(slots))
        return Arrangement(
            k=k, kind=kind, slots=slots, lanes=lanes, parallel_s=parallel, transfers_s=moved,
            transfers_complete=not unknown,
            exchange_s=exchange_s, assembly_s=assembly_s, total_s=total, idle_card_s=idle,
            idle_assembly_card_s=(total - parallel) * n_cards, fit=fit, notes=notes or [],
            transfers_lower_bound=self.lower_bound([c for ln in lanes for c in slots[ln.slot]]),
        )  # fmt: skip

    def _assembly(self, lanes: list[Lane], parallel: float) -> tuple[float, float | None]:
        a = self.work.assembly
        if a is None:
            return parallel, None
        if a.waits_for_all:
            return parallel + a.seconds, a.seconds
        # streaming: one assembler takes each result as it arrives, an equal share of the time each
        done = sorted(end for ln in lanes for _, _, end in ln.spans())
        t, share = 0.0, a.seconds / len(done)
        for d in done:
            t = max(t, d) + share
        return t, a.seconds


def slot_cost(costs: dict[str, tuple[float | None, float | None]], cards: list[str]) -> tuple[SlotCost, bool]:
    """A slot's per-unit transfer seconds: the slowest of its cards; unknown parts count 0 (flagged)."""
    ins = [costs[c][0] for c in cards]
    outs = [costs[c][1] for c in cards]
    unknown = any(x is None for x in ins + outs)
    known_in = max((x for x in ins if x is not None), default=0.0)
    known_out = max((x for x in outs if x is not None), default=0.0)
    return SlotCost(known_in, known_out), unknown


def build_plan(
    flow: Flow, topos: dict[str, Topology | None], lot: str, have: list[str], counts: list[int], work: Work
) -> PlanResult:
    ctx = _Ctx(flow, topos, lot, have, work)
    c = work.cards_per_task
    arrangements: list[Arrangement] = []
    skipped: list[str] = []
    exchange_how: str | None = None
    for k in counts:
        if k < c:
            skipped.append(f"{k} card(s): a task needs {c} cards (work.cards_per_task)")
            continue
        if k == c:
            arrangements.append(_one_card(ctx))
        n_slots = k // c
        cap = work.limits.max_concurrent
        if cap is not None and n_slots > cap:
            n_slots = cap
        if n_slots > 1:
            arrangements += _independent(ctx, k, n_slots)
        elif k > c:
            skipped.append(f"{k} cards independent: only one task at a time (max_concurrent or cards_per_task)")
        if k > c:
            coord, how = _coordinated(ctx, k)
            if coord is None:
                line = f"coordinated: {how}" if work.split is None else f"{k} cards coordinated: {how}"
                skipped += [] if line in skipped else [line]
            else:
                arrangements.append(coord)
                exchange_how = how
    _unknown_transfer_warnings(ctx)
    base = next((a for a in arrangements if a.kind == "one card"), None)
    if base is None and len(have) >= c:
        base = _one_card(ctx)  # the speed-up is always over one card (one slot), shown or not
    for a in arrangements:
        a.speedup = None if base is None or a.total_s <= 0 else base.total_s / a.total_s
    return PlanResult(
        flow=flow.name, lot=lot, cards_available=have, units=work.units, unit_source=work.source,
        cards_per_task=c, arrangements=arrangements, legs=ctx.legs, memory=list(ctx.memory.values()),
        includes_transfers=work.includes_transfers, assumptions=_assumptions(ctx, exchange_how),
        warnings=ctx.warnings, skipped=skipped, exchange_how=exchange_how,
        assembly_on=work.assembly.on if work.assembly else None,
        unit_provenance=work.provenance,
        assembly_streamed=work.assembly is not None and not work.assembly.waits_for_all,
        sharing=_sharing(ctx), host_memory=_host_memory(ctx), volume_per=work.volume_per,
    )  # fmt: skip


def _sharing(ctx: _Ctx) -> list[SharedLink]:
    """The links shared below host memory, for each number of cards that move data at once."""
    return [
        lk
        for k in sorted(ctx.links)
        for lk in ctx.links[k]
        if lk.hop.kind != "host-memory" and lk.each_gbps is not None
    ]  # a link whose transfers are all of unknown time changes nothing: they are left out and named already


def _host_memory(ctx: _Ctx) -> HostMemory | None:
    """Host memory as the ceiling above the root ports when several cards load or write at once:
    its bandwidth is unknown; the sum of the cards' own rates is only an upper bound."""
    widest = max(
        (k for k, lks in ctx.links.items() if any(lk.hop.kind == "host-memory" and lk.total_gbps for lk in lks)),
        default=None,
    )
    if widest is None:
        return None
    lks = [lk for lk in ctx.links[widest] if lk.hop.kind == "host-memory" and lk.total_gbps]
    top = max(lks, key=lambda lk: (len(lk.cards), lk.direction == "input"))
    return HostMemory(len(set(top.cards)), top.direction, top.total_gbps, HOST_MEMORY_SETTLE)


def _one_card(ctx: _Ctx) -> Arrangement:
    c = ctx.work.cards_per_task
    slot = ctx.have[:c]
    cost, unknown = slot_cost(ctx.costs(slot), slot)
    fit = memory_fit(ctx.work, ctx.memory, slot, c, len(ctx.have))
    return ctx.finish(c, "one card", [slot], one_slot(ctx.seconds, cost), fit, unknown)


def _unknown_transfer_warnings(ctx: _Ctx) -> None:
    """One warning per unknown transfer path, naming the cards it concerns."""
    for (direction, other, vol, medium, via), cards in ctx.unknown_legs.items():
        who = cards[0] if len(cards) == 1 else f"{len(cards)} cards ({cards[0]}…{cards[-1]})"
        ends = f"{other} → {who}" if direction == "input" else f"{who} → {other}"
        what = "volume not declared" if vol is None else f"{fmt_bytes(vol)} per unit"
        ctx.warn(f"transfer time unknown, excluded from totals: {ends}, {what} over {medium}/{via}")


def _independent(ctx: _Ctx, k: int, n_slots: int) -> list[Arrangement]:
    c = ctx.work.cards_per_task
    slots = [ctx.have[i * c : (i + 1) * c] for i in range(k // c)]
    if k % c:
        slots.append(ctx.have[k - k % c : k])  # too few cards left for a task: idle throughout
    used = [card for s in slots[:n_slots] for card in s]
    costs = ctx.costs(used)
    per_slot = [slot_cost(costs, s) for s in slots[:n_slots]]
    unknown = any(u for _, u in per_slot)
    fit = memory_fit(ctx.work, ctx.memory, used, c, len(ctx.have))
    notes = []
    if n_slots < k // c:
        notes.append(f"at most {n_slots} tasks at once (work.limits.max_concurrent): {k - n_slots * c} card(s) wait")
    out = []
    for kind, fn in SCHEDULERS.items():
        lanes = fn(ctx.seconds, [sc for sc, _ in per_slot])
        out.append(ctx.finish(k, kind, slots, lanes, fit, unknown, notes=notes))
    return out


def _coordinated(ctx: _Ctx, k: int) -> tuple[Arrangement | None, str]:
    """One task at a time over all k cards: compute ÷ (k / cards_per_task), plus an exchange per step."""
    work = ctx.work
    if work.split is None:
        return None, "how a task splits is not declared (work.split: {steps: N, exchange: SIZE})"
    cards = ctx.have[:k]
    vol = exchange_volume(ctx.flow, work)
    if ctx.pairs is None:
        ctx.pairs = map_pairs(ctx.flow, ctx.topos, ctx.lot, ctx.have)
    per_step, how = exchange_step(ctx.topos[ctx.lot], ctx.pairs, cards, vol)
    c = work.cards_per_task
    base_step, _ = exchange_step(ctx.topos[ctx.lot], ctx.pairs, cards[:c], vol) if c > 1 else (0.0, "")
    if per_step is None:
        ctx.warn(f"exchange time unknown over {k} cards, excluded from totals: {how}")
    exch = None if per_step is None else work.split.steps * max(per_step - (base_step or 0.0), 0.0)
    cost, unknown = slot_cost(ctx.costs(cards), cards)
    compute = [s * c / k for s in ctx.seconds]
    lanes = one_slot(compute, SlotCost(cost.input_s, cost.output_s, exch or 0.0))
    fit = memory_fit(work, ctx.memory, cards, k, len(ctx.have))
    note = f"{work.split.steps} exchange steps per task of {fmt_span(per_step)} each ({how})"
    return ctx.finish(k, "coordinated", [cards], lanes, fit, unknown, exch, [note]), how


def volume_rule(w: Work, replicas: dict[str, int], lot: str) -> str:
    """Which per-unit volume the plan used (work.volume_per), and what follows from it on this lot."""
    if w.volume_per == "unit":
        return (
            "per-unit volume (work.volume_per: unit): an arrow's volume is what one unit moves into or out of its "
            "compute, whatever the replicas and the lot"
        )
    text = (
        "per-unit volume (work.volume_per: replica, the default): an arrow's volume is per replica of its steps; "
        f"the replicas' volumes summed ÷ {len(w.units)} units"
    )
    for name, n in replicas.items():
        text += (
            f"; step {name} runs on all {n} GPUs of {lot} ({lot}:gpus), so its per-unit volume grows with the lot's "
            "GPUs (`volume_per: unit` keeps it fixed)"
        )
    return text


def _assumptions(ctx: _Ctx, exchange_how: str | None) -> list[str]:
    w = ctx.work
    out = [
        f"a calculation from the flow's stated work ({len(w.units)} units, durations {w.provenance} from "
        f"{w.source}), not a measurement",
        "a card runs one task at a time, units do not wait for each other, and a unit takes as long on every card",
    ]
    if ctx.legs:
        out.append(volume_rule(w, replicas_of(ctx.flow, ctx.lot), ctx.lot))
    if w.includes_transfers and w.provenance == "observed":
        pass  # the observed run's own note says what its timing includes
    elif w.includes_transfers:
        out.append(
            "durations include each unit's loading and output, timed with one card working: "
            "cards do not slow each other's loading"
        )
    else:
        out.append("transfers: all cards of an arrangement move data at once (worst case, model)")
        out.append(
            "transfers share only the links their routes have in common (each PCIe link per direction, each NIC); "
            "a host bridge is not one link: each root port has its own"
        )
        out.append(
            "above the root ports is host memory, whose bandwidth a snapshot does not record: not a limit here, so "
            f"times of several cards loading at once are lower bounds (`{HOST_MEMORY_SETTLE}` measures it)"
        )
        if w.limits.storage_read_gbps is None and any(lg.other.endswith(":storage") for lg in ctx.legs):
            out.append("storage read rate not given (work.limits.storage_read): storage is not a shared limit")
    if w.assembly is not None:
        where = f" on {w.assembly.on}" if w.assembly.on else ""
        if w.assembly.waits_for_all:
            out.append(f"the assembly{where} starts when every unit is done and takes {fmt_span(w.assembly.seconds)}")
        else:
            out.append(f"the assembly{where} takes each result as it arrives, an equal share of its time per unit")
    else:
        out.append("no assembly step declared (work.assembly: {duration: …})")
    if w.cards_per_task > 1:
        out.append(f"a task occupies {w.cards_per_task} cards; each loads the unit's whole input, the slowest decides")
    if exchange_how is not None:
        out.append(
            "coordinated: one task over k cards divides its compute evenly and pays each exchange step as an "
            "NCCL all-reduce, 2(k−1)/k × the exchange volume at its expected busbw on those cards (model; "
            "`topomap nccl LOT --perf`), or at the slowest link between them where that figure is unknown"
        )
    if w.memory_per_task_bytes is not None:
        out.append("memory per card = duplicated state + the rest of a task's memory ÷ the cards holding it")
    return out + w.notes
