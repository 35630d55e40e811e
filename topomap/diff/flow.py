"""Two lots under a flow (``topomap diff --flow``): the flow's arrows mapped on each lot side by
side, and how its plan changes. A verdict about a flow is decided by what its arrows touch."""

from __future__ import annotations

import copy

from topomap.base.links import class_rank
from topomap.base.units import fmt_gbps, fmt_span
from topomap.diff.results import ArrowRow, Change, DiffResult, Direction
from topomap.flow import Flow, FlowMap, MappedArrow, bind, gpus_of, map_flow
from topomap.graph import Topology
from topomap.plan import PlanResult, best_total_seconds, plan_changes, plan_flow

_MEDIUM_RANK = {"local": 0, "gpu-link": 1, "host-memory": 2, "network": 3}


def diff_flow(result: DiffResult, flow: Flow, ta: Topology, tb: Topology) -> None:
    """Map the flow on A and on B (every host with a snapshot bound to that lot) and compare.
    ``flow`` is read once and left unbound: binding expands placements per lot, so each lot binds
    its own copy."""
    maps: list[FlowMap] = []
    plans: list[PlanResult] = []
    for topo in (ta, tb):
        bound = copy.deepcopy(flow)
        on_gpus = _gpu_hosts(bound)
        topos: dict[str, Topology | None] = {
            h: (None if f is None and h not in on_gpus else topo) for h, f in bound.host_files.items()
        }
        bind(bound, gpus_of(topos))
        maps.append(map_flow(bound, topos))
        work = bound.work
        if work is not None and work.units:
            plans.append(plan_flow(bound, topos))
    if len(plans) == 2:
        _plan_change(result, plans[0], plans[1])
    for x, y in zip(maps[0].arrows, maps[1].arrows):
        direction, reason, slower = _arrow_change(x, y)
        result.arrows.append(ArrowRow(a=x, b=y, slower=slower, direction=direction, reason=reason))


def _gpu_hosts(flow: Flow) -> set[str]:
    """Hosts a flow places steps on by GPU: they need a snapshot even if the file says null."""
    return {p.host for st in flow.steps.values() for p in st.placements if p.kind == "gpu"}


def _plan_change(result: DiffResult, pa: PlanResult, pb: PlanResult) -> None:
    """How the flow's plan (topomap plan) changes from A to B: the best total, and why."""
    ta, tb = best_total_seconds(pa), best_total_seconds(pb)
    result.plan_lines = plan_changes(pa, pb)
    if ta == tb:
        return
    direction: Direction = "unknown"
    if ta is not None and tb is not None:
        direction = "worse" if tb > ta * 1.001 else "better" if tb < ta * 0.999 else "neutral"
    elif ta is not None and tb is None:
        direction = "worse"  # nothing fits on B
    elif tb is not None:
        direction = "better"
    text = f"plan: best total {fmt_span(ta)} → {fmt_span(tb)} (calculated, see topomap plan)"
    result.changes.append(
        Change(kind="plan", subject="plan", field="best total", a=ta, b=tb, direction=direction, text=text)
    )


def _arrow_change(x: MappedArrow, y: MappedArrow) -> tuple[Direction, str, bool | None]:
    """Is the arrow worse or better on B, why, and is it slower in GB/s (None: cannot be told)."""
    ma, mb = x.medium, y.medium
    ba, bb = x.bandwidth_gbps, y.bandwidth_gbps
    exact = ba is not None and bb is not None and not x.lower_bound and not y.lower_bound
    slower: bool | None = None
    if exact and ba is not None and bb is not None:
        slower = bb < ba * 0.999
    if ma != mb:
        if "unknown" in (ma, mb):
            return "unknown", f"medium {ma} → {mb}", slower
        worse = _MEDIUM_RANK.get(mb, 9) > _MEDIUM_RANK.get(ma, 9)
        return ("worse" if worse else "better"), f"{ma} → {mb}", slower
    if exact and ba is not None and bb is not None and abs(bb - ba) > ba * 0.001:
        return ("worse" if bb < ba else "better"), f"{fmt_gbps(ba)} → {fmt_gbps(bb)} GB/s", slower
    by_path = _path_change(x.path, y.path)
    if by_path is not None:
        return by_path[0], by_path[1], slower
    if not exact and (ba is None) != (bb is None):
        return "unknown", "bandwidth known on one side only", slower
    return "neutral", "", slower


def _path_change(pa: str | None, pb: str | None) -> tuple[Direction, str] | None:
    """The same medium and no GB/s to tell by: NVLink link counts, else the PCIe path class (None:
    the paths do not tell)."""
    if pa == pb or pa is None or pb is None:
        return None
    if pa.startswith("NV") and pb.startswith("NV") and pa[2:].isdigit() and pb[2:].isdigit():
        return ("worse" if int(pb[2:]) < int(pa[2:]) else "better"), f"{pa} → {pb} links"
    try:
        ra, rb = class_rank(pa), class_rank(pb)
    except ValueError:
        return "unknown", f"{pa} → {pb}"
    if ra != rb:
        return ("worse" if rb > ra else "better"), f"{pa} → {pb}"
    return None
