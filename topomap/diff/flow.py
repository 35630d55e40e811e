"""Two lots under a flow (``topomap diff --flow``): the flow's arrows mapped on each lot side by
side, and how its plan changes. A verdict about a flow is decided by what its arrows touch: per
arrow its medium, its figure (with its source and whether it is a lower bound), and the qualities
:mod:`topomap.diff.qualities` asks of the mapping and the evidence (GPUDirect, the inter-socket
link, a shared NIC, a PCIe link trained down). Machine differences no arrow touches never decide."""

from __future__ import annotations

import copy

from topomap.base.links import class_rank, is_nvlink
from topomap.base.units import fmt_span
from topomap.diff.changes import Change, Direction
from topomap.diff.collectives import compare_collectives
from topomap.diff.qualities import Quality, QualityChange, arrow_qualities
from topomap.diff.results import ArrowRow, DiffResult
from topomap.flow import Flow, FlowMap, MappedArrow, bind, gpus_of, map_flow
from topomap.flow.collective_time import CollectiveTime, collective_times
from topomap.graph import Topology
from topomap.model.ranking import compare_bandwidth
from topomap.plan import PlanResult, best_total_seconds, plan_changes, plan_flow

_MEDIUM_RANK = {"local": 0, "gpu-link": 1, "host-memory": 2, "network": 3}
_Key = tuple[str, str, str, str]


def diff_flow(result: DiffResult, flow: Flow, ta: Topology, tb: Topology) -> None:
    """Map the flow on A and on B (every host with a snapshot bound to that lot) and compare arrow by
    arrow (matched by steps and places). ``flow`` is read once and left unbound: binding expands
    placements per lot, so each lot binds its own copy."""
    result.flow = flow.name
    maps: list[FlowMap] = []
    bound_topos: list[dict[str, Topology | None]] = []
    plans: list[PlanResult] = []
    collectives: list[list[CollectiveTime]] = []
    for topo in (ta, tb):
        bound = copy.deepcopy(flow)
        on_gpus = _gpu_hosts(bound)
        topos: dict[str, Topology | None] = {
            h: (None if f is None and h not in on_gpus else topo) for h, f in bound.host_files.items()
        }
        bind(bound, gpus_of(topos))
        maps.append(map_flow(bound, topos))
        collectives.append(collective_times(bound, topos))
        bound_topos.append(topos)
        work = bound.work
        if work is not None and work.units:
            plans.append(plan_flow(bound, topos))
    if len(plans) == 2:
        _plan_change(result, plans[0], plans[1])
    compare_collectives(result, collectives[0], collectives[1])
    by_key = {_key(y): y for y in maps[1].arrows}
    seen: set[_Key] = set()
    for x in maps[0].arrows:
        y = by_key.get(_key(x))
        if y is None:
            result.only_a.append(f"{x.src} → {x.dst}")
            continue
        seen.add(_key(x))
        qa = arrow_qualities(x, maps[0], bound_topos[0])
        qb = arrow_qualities(y, maps[1], bound_topos[1])
        result.arrows.append(compare_arrow(x, y, qa, qb))
    result.only_b.extend(f"{y.src} → {y.dst}" for y in maps[1].arrows if _key(y) not in seen)


def _key(a: MappedArrow) -> _Key:
    return (a.src_step, a.dst_step, a.src, a.dst)


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


def compare_arrow(x: MappedArrow, y: MappedArrow, qa: dict[str, Quality], qb: dict[str, Quality]) -> ArrowRow:
    """One arrow on A (``x``) and on B (``y``): worse / better / neutral / unknown for B, why, and
    whether an unchanged arrow is confirmed equal (both figures recorded and exact).

    The order: the medium; then a figure both lots record (ranked only where the two ranges do not
    overlap); then the qualities (they decide when the figures do not: equal, unrecorded, or
    recorded on one side only, which the reason says); then PCIe path classes; last, figures that
    cannot be ranked are "cannot tell", with the command that settles them."""
    slower = _slower(x, y)
    if x.medium != y.medium:
        if "unknown" in (x.medium, y.medium):
            return ArrowRow(x, y, slower, "unknown", f"medium {x.medium} → {y.medium}")
        worse = _MEDIUM_RANK.get(y.medium, 9) > _MEDIUM_RANK.get(x.medium, 9)
        return ArrowRow(x, y, slower, "worse" if worse else "better", f"{x.medium} → {y.medium}")
    if x.medium == "unknown":  # on both lots: what it travels over is not known, so neither is a change
        if (x.via, x.path, x.bandwidth_gbps) != (y.via, y.path, y.bandwidth_gbps):
            return ArrowRow(x, y, slower, "unknown", f"medium unknown on both lots ({x.path} → {y.path})")
        return ArrowRow(x, y, slower, "neutral", "")
    figure, figure_why = _figure(x, y)
    if figure in ("worse", "better"):
        return ArrowRow(x, y, slower, figure, figure_why)
    lost, gained, blind = _quality_changes(qa, qb)
    one_sided = f"; {figure_why}" if figure == "unknown" else ""
    if lost and gained:
        why = f"{', '.join(lost)}; {', '.join(gained)}{one_sided}"
        return ArrowRow(x, y, slower, "unknown", why, qualities=[*lost, *gained])
    if lost or gained:
        direction: Direction = "worse" if lost else "better"
        why = f"{', '.join(lost or gained)}{one_sided}"
        return ArrowRow(x, y, slower, direction, why, qualities=lost or gained)
    by_path = _path_change(x.path, y.path)
    if by_path is not None and not (figure == "unknown" and by_path[0] == "unknown"):
        return ArrowRow(x, y, slower, by_path[0], by_path[1])
    if figure == "unknown":
        return ArrowRow(x, y, slower, "unknown", figure_why)
    confirmed = figure == "neutral" and not blind
    return ArrowRow(x, y, slower, "neutral", "", confirmed=confirmed)


def _slower(x: MappedArrow, y: MappedArrow) -> bool | None:
    """Slower in GB/s on B: where the two figures rank (:func:`~topomap.model.ranking.compare_bandwidth`:
    their ranges do not overlap); None where they cannot be told apart."""
    cmp = compare_bandwidth(x.bandwidth(), y.bandwidth())
    if cmp.verdict == "cannot-tell":
        return None
    return cmp.verdict == "better-a"


def _figure(x: MappedArrow, y: MappedArrow) -> tuple[Direction | None, str]:
    """The figures compared (:func:`~topomap.model.ranking.compare_bandwidth`): better / worse where
    their ranges do not overlap, neutral where both are exact and equal, None where neither lot
    records one or both give the same range (equal in what both record, not confirmed), unknown
    where they cannot be set against each other (overlapping ranges, one side unrecorded, a figure
    that is not the machine's), with why and what settles it."""
    cmp = compare_bandwidth(x.bandwidth(), y.bandwidth())
    if cmp.ranked:
        return cmp.direction, cmp.reason
    if cmp.verdict == "same" or cmp.identical:
        return ("neutral" if cmp.verdict == "same" else None), ""
    return "unknown", cmp.reason + (f"; {cmp.settle} settles it" if cmp.settle else "")


def _quality_changes(qa: dict[str, Quality], qb: dict[str, Quality]) -> tuple[list[str], list[str], bool]:
    """The qualities B loses and gains against A (each known on both sides), and whether one is
    unknown on a side (then an unchanged arrow is not confirmed equal)."""
    lost: list[QualityChange] = []
    gained: list[QualityChange] = []
    blind = False
    for key in dict.fromkeys([*qa, *qb]):
        a, b = qa.get(key), qb.get(key)
        if a is None or b is None or "unknown" in (a.value, b.value):
            blind = blind or any(q is not None and q.value == "unknown" for q in (a, b))
            continue
        change = b.change_from(a)
        if change is not None:
            (gained if change.gained else lost).append(change)
    return _both_ends(lost), _both_ends(gained), blind


def _both_ends(changes: list[QualityChange]) -> list[str]:
    """The same change at its source and at its destination reads "… at both ends"."""
    ends = {(c.words, c.end) for c in changes}
    out: list[str] = []
    for c in changes:
        if c.end == "its source" and (c.words, "its destination") in ends:
            out.append(f"{c.words} at both ends")
        elif not (c.end == "its destination" and (c.words, "its source") in ends):
            out.append(c.text())
    return out


def _path_change(pa: str | None, pb: str | None) -> tuple[Direction, str] | None:
    """The same medium and no GB/s to tell by: the PCIe path class (None: the paths do not tell).
    NVLink link counts never rank here: across two lots the same count may be two parts (an H800's
    NV18 carries less than an A100's NV12), and the figures above already said what they can."""
    if pa == pb or pa is None or pb is None:
        return None
    if is_nvlink(pa) and is_nvlink(pb):
        return "unknown", f"{pa} → {pb} links: link counts of parts not known do not rank"
    try:
        ra, rb = class_rank(pa), class_rank(pb)
    except ValueError:
        return "unknown", f"{pa} → {pb}"
    if ra != rb:
        return ("worse" if rb > ra else "better"), f"{pa} → {pb}"
    return None
