"""Two priced lots under a flow (``topomap diff --flow FLOW A.yaml B.yaml``): which does the flow's work
for less, from each lot's plan (``plan/money.py``: the cheapest arrangement whose tasks fit, card-minutes
× price). A calculation, as the plan is; prices in two currencies are said and not compared."""

from __future__ import annotations

import copy

from topomap.flow import Flow, bind, gpus_of
from topomap.graph import Topology, build
from topomap.model.snapshot import Snapshot
from topomap.plan import plan_flow
from topomap.plan.money import PlanMoney, cheaper


def _priced(snap: Snapshot) -> bool:
    return snap.lot is not None and snap.lot.price is not None


def cost_line(flow: Flow, a: Snapshot, b: Snapshot, names: tuple[str, str]) -> str | None:
    """One line: which lot does the work for less; None unless both lots are priced and the flow has work."""
    if not (_priced(a) and _priced(b)) or flow.work is None or not flow.work.units:
        return None
    money = [_money(flow, s) for s in (a, b)]
    return cheaper(money[0], money[1], names)


def _money(flow: Flow, snap: Snapshot) -> PlanMoney | None:
    """The flow planned on one lot (every host of the flow on it, as `diff --flow` binds them)."""
    bound = copy.deepcopy(flow)
    topo = build(snap)
    on_gpus = {p.host for st in bound.steps.values() for p in st.placements if p.kind == "gpu"}
    topos: dict[str, Topology | None] = {
        h: (None if f is None and h not in on_gpus else topo) for h, f in bound.host_files.items()
    }
    bind(bound, gpus_of(topos))
    return plan_flow(bound, topos).money
