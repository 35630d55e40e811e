"""Mapping a flow onto machines: each arrow gets a medium, a route, a class and a bandwidth.

The rules are DESIGN.md's "How an arrow gets its medium": :mod:`topomap.flow.onehost` within a
host, :mod:`topomap.flow.crosshost` between hosts, :mod:`topomap.flow.memory` for host memory and
storage places. Every fact they rest on comes from ``topomap.graph`` (the same functions check,
show, diff and render ask). Each rule returns a small :class:`~topomap.flow.decision.Decision`;
one function here turns a decision into a :class:`MappedArrow`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topomap.flow.crosshost import cross_host
from topomap.flow.decision import MEDIA, Decision, Medium, on_host
from topomap.flow.memory import check_numa_places, placement_node
from topomap.flow.onehost import same_host
from topomap.flow.spec import Flow, FlowArrow, FlowError, Placement
from topomap.graph import Topology
from topomap.graph.evidence import gpu_usable
from topomap.model.facts import Bandwidth, BandwidthSource


@dataclass
class MappedArrow:
    """One concrete arrow mapped onto the machines. ``src``/``dst`` are the placements' labels
    (``lot:gpu3``, as the JSON and the views print them); ``src_place``/``dst_place`` the placements
    themselves, for views that group by host or GPU (never parse the labels back)."""

    src_step: str
    dst_step: str
    src: str
    dst: str
    medium: Medium
    via: str
    path: str | None
    route: list[str]
    bandwidth_gbps: float | None
    bandwidth_source: BandwidthSource
    src_place: Placement
    dst_place: Placement
    volume_bytes: int | None = None
    seconds: float | None = None
    notes: list[str] = field(default_factory=list)
    both_ways: bool = False
    label: str | None = None  # the flow arrow's own label, e.g. "activations (cross-node)"
    bandwidth_basis: str = ""  # how the figure was obtained ("18 links × 26.6 GB/s per link (driver-reported)")
    lower_bound: bool = False  # the bandwidth is at least this much
    assumptions: list[str] = field(default_factory=list)  # rules assumed where the source was silent
    candidates: list[str] = field(default_factory=list)  # for an unknown medium: what it could be
    settle: str | None = None  # for an unknown: the command whose output would decide it

    def bandwidth(self) -> Bandwidth:
        """The arrow's figure as the one Bandwidth value every view writes (``.text()``: "≥ 253 GB/s
        derived", the ≥ of a lower bound included)."""
        return Bandwidth(self.bandwidth_gbps, self.bandwidth_source, self.bandwidth_basis, self.lower_bound)

    def to_json(self) -> dict[str, object]:
        return {
            "from": self.src,
            "to": self.dst,
            "from_step": self.src_step,
            "to_step": self.dst_step,
            "medium": self.medium,
            "via": self.via,
            "path": self.path,
            "route": self.route,
            "bandwidth_gbps": self.bandwidth_gbps,
            "bandwidth_source": self.bandwidth_source,
            "bandwidth_basis": self.bandwidth_basis,
            "lower_bound": self.lower_bound,
            "volume_bytes": self.volume_bytes,
            "seconds": self.seconds,
            "both_ways": self.both_ways,
            "label": self.label,
            "notes": [str(n) for n in self.notes],
            "assumptions": self.assumptions,
            "candidates": self.candidates,
            "settle": self.settle,
        }


@dataclass
class FlowMap:
    flow: Flow
    arrows: list[MappedArrow]

    def summary(self) -> list[dict[str, object]]:
        """Per medium: how many arrows, and the slowest one."""
        out: list[dict[str, object]] = []
        for medium in MEDIA:
            arrows = [a for a in self.arrows if a.medium == medium]
            if not arrows:
                continue
            known = [a for a in arrows if a.bandwidth_gbps is not None]
            slowest = min(known, key=lambda a: a.bandwidth_gbps or 0.0) if known else None
            out.append(
                {
                    "medium": medium,
                    "arrows": len(arrows),
                    "unknown_bandwidth": len(arrows) - len(known),
                    "slowest": None
                    if slowest is None
                    else {"from": slowest.src, "to": slowest.dst, "bandwidth_gbps": slowest.bandwidth_gbps},
                }
            )
        return out


def map_flow(flow: Flow, topos: dict[str, Topology | None]) -> FlowMap:
    """Classify every concrete arrow of a bound flow (``topos`` from :func:`topomap.flow.bind_hosts`)."""
    missing = [h for h in flow.spec.hosts if h not in topos]
    if missing:
        raise FlowError(f"{flow.path}: host {missing[0]!r} is not bound to a snapshot or to null")
    check_numa_places(flow, topos)
    return FlowMap(flow=flow, arrows=[_arrow(a, _decide(a, topos)) for a in flow.arrows])


def _arrow(a: FlowArrow, d: Decision) -> MappedArrow:
    """The one place a decision becomes an arrow: notes once each, time from volume and bandwidth."""
    bw = d.bandwidth
    m = MappedArrow(
        a.src_step,
        a.dst_step,
        a.src.label(),
        a.dst.label(),
        d.medium,
        d.via,
        d.path,
        list(d.route),
        bw.gbps,
        bw.source if bw.gbps is not None else "unknown",
        a.src,
        a.dst,
        notes=list(dict.fromkeys([*d.reasons, *d.assumptions])),
        both_ways=a.both_ways,
        label=a.label,
        bandwidth_basis=bw.basis if bw.gbps is not None else "",
        lower_bound=bw.lower_bound,
        assumptions=list(dict.fromkeys(d.assumptions)),
        candidates=list(d.candidates),
        settle=d.settle,
    )
    if d.medium == "unknown" and d.candidates:
        m.notes.append(
            f"medium unknown: {', '.join(d.candidates[:-1])} or {d.candidates[-1]}"
            + (f"; {d.settle} settles it" if d.settle else "")
        )
    m.volume_bytes = a.volume_bytes
    if a.volume_bytes is not None and m.bandwidth_gbps:
        m.seconds = round(a.volume_bytes / (m.bandwidth_gbps * 1e9), 6)
        if m.lower_bound:
            m.notes.append("the time is an upper bound (the bandwidth is a lower bound)")
    return m


def _decide(a: FlowArrow, topos: dict[str, Topology | None]) -> Decision:
    s, d = a.src, a.dst
    if s == d or (s.host == d.host and s.kind == d.kind == "host"):
        topo = topos.get(s.host)
        node = s.host
        if topo is not None:
            node = s.gpu or "" if s.kind == "gpu" else placement_node(topo, s, None, [])
        return Decision("local", "local", None, (on_host(s.host, node),), reasons=("same device",))
    for p in (s, d):
        topo = topos.get(p.host)
        if p.kind == "gpu" and topo is not None and p.gpu and not gpu_usable(topo, p.gpu).yes:
            return Decision(
                "unknown",
                "unknown",
                None,
                (on_host(p.host, p.gpu),),
                reasons=(f"cannot map this arrow: {gpu_usable(topo, p.gpu).why()}",),
            )
    if s.host == d.host:
        topo = topos[s.host]
        if topo is None:
            return Decision(
                "host-memory",
                "unknown",
                None,
                (s.host,),
                reasons=(f"{s.host} has no snapshot: its internal paths are unknown",),
            )
        return same_host(a, topo)
    return cross_host(a, topos)
