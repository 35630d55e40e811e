"""Planning a bound flow: the work, the lot and its usable cards, checked and said plainly when
missing; then the plan (build.py), refused when a figure it reports is not a finite number."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from topomap.base.errors import TopomapError
from topomap.plan.build import build_plan
from topomap.plan.costs import cards_of, lot_of
from topomap.plan.money import plan_money
from topomap.plan.observed import apply_observed
from topomap.plan.result import PlanResult

if TYPE_CHECKING:
    from topomap.flow.spec import Flow
    from topomap.graph import Topology


def plan_flow(
    flow: Flow,
    topos: dict[str, Topology | None],
    cards: list[int] | None = None,
    observed: tuple[dict[str, Any], str] | None = None,
) -> PlanResult:
    """Plan a bound flow (``topos`` from :func:`topomap.flow.bind_hosts`) for ``cards`` card counts
    (default 1…N, N the GPUs of the lot) from the work the flow carries (``flow.work``, parsed once
    when the file was read). ``observed``: (figures, origin) from
    :func:`topomap.record.observed_for_plan`, used in place of the assumed duration and memory."""
    work = flow.work
    if work is not None and work.units and observed is not None:
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
    result = _finite(build_plan(flow, topos, lot, have, counts, work), flow.path)
    result.money = plan_money(result, topo.snapshot.lot, len(topo.snapshot.gpus))  # a priced lot's costs
    return result


def _finite(result: PlanResult, origin: str) -> PlanResult:
    """The plan, once every figure it reports is a finite number. The work's numbers are bounded
    where they are read (flow/work.py), so this is the last guard: an infinite total once reached
    every view (NaN in the terminal Gantt, matplotlib's limits, `Infinity` in the JSON)."""
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
