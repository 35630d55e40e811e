"""Mapping a flow onto machines: each arrow gets a medium, a route, a class and a bandwidth.

The rules are DESIGN.md's "How an arrow gets its medium": :mod:`topomap.flow.onehost` within a
host, :mod:`topomap.flow.crosshost` between hosts, :mod:`topomap.flow.memory` for host memory and
storage places. Every fact they rest on comes from ``topomap.graph`` (the same functions check,
show, diff and render ask). Each rule returns a small :class:`~topomap.flow.decision.Decision`;
one function here turns a decision into a :class:`MappedArrow`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from topomap.base.links import pcie_bandwidth_gbps
from topomap.base.units import fmt_gbps
from topomap.flow.crosshost import NicShare, cross_host, share_nics
from topomap.flow.decision import MEDIA, Decision, Medium, on_host
from topomap.flow.memory import check_numa_places, placement_node
from topomap.flow.ncclarrow import nccl_arrow, nccl_marked
from topomap.flow.onehost import same_host
from topomap.flow.spec import Flow, FlowArrow, FlowError, Placement
from topomap.graph import Topology
from topomap.graph.evidence import gpu_usable
from topomap.graph.nodeid import node_kind, split_hop
from topomap.model.facts import Bandwidth, BandwidthSource, gpu_pcie_link
from topomap.model.origins import fact_origin
from topomap.transport.decide import Decision as NcclDecision

if TYPE_CHECKING:
    from topomap.flow.collective_time import CollectiveTime


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
    ceiling_gbps: float | None = None  # for an unknown figure over PCIe: the most it can be (see medium_summary)
    ceiling_source: str = "spec"  # "declared" / "catalogue …" where a lot gave the PCIe generation (model.origins)
    shared_nics: list[NicShare] = field(default_factory=list)  # NICs other arrows of this step use too
    nccl: NcclDecision | None = None  # NCCL's transport, for an arrow NCCL sends (`nccl: true`)
    bandwidth_high_gbps: float | None = None  # the figure's high end (a range over parts not known; None: exact)
    bandwidth_settle: str | None = None  # what would make an inexact figure exact

    def bandwidth(self) -> Bandwidth:
        """The arrow's figure as the one Bandwidth value every view writes (``.text()``: "≥ 253 GB/s
        derived", the ≥ of a lower bound and a shared NIC included)."""
        shared = max((x.arrows for x in self.shared_nics), default=0)
        return Bandwidth(
            self.bandwidth_gbps,
            self.bandwidth_source,
            self.bandwidth_basis,
            self.lower_bound,
            shared_by=shared,
            high_gbps=self.bandwidth_high_gbps,
            settle=self.bandwidth_settle,
        )

    def nccl_text(self) -> str | None:
        """NCCL's transport as the views show it: ``SHM (host memory)``, ``NET, no GPUDirect RDMA``."""
        return None if self.nccl is None else nccl_label(self.nccl)

    def nccl_stands_out(self) -> bool:
        """SHM and network hops without GPUDirect RDMA: the diagram and the report mark them."""
        return self.nccl is not None and self.nccl.transport in ("SHM", "NET")

    def to_json(self) -> dict[str, object]:
        extra: dict[str, object] = {}
        if self.nccl is not None:
            n = self.nccl
            extra["nccl"] = {"transport": n.transport, "rule": n.rule, "env": list(n.env), "detail": n.detail}
        return extra | {
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
            "bandwidth_high_gbps": self.bandwidth_high_gbps,
            "volume_bytes": self.volume_bytes,
            "seconds": self.seconds,
            "both_ways": self.both_ways,
            "label": self.label,
            "notes": [str(n) for n in self.notes],
            "assumptions": self.assumptions,
            "candidates": self.candidates,
            "settle": self.settle,
            "shared_nics": [x.to_json() for x in self.shared_nics],
        }


def nccl_label(n: NcclDecision) -> str:
    """One NCCL transport in a few words, the hops that stand out said so."""
    said = {
        "SHM": "SHM (host memory)",
        "NET": "NET, no GPUDirect RDMA",
        "NET+GDR": "NET+GDR",
        "unknown": "unknown",
    }
    return said.get(n.transport, n.transport)


@dataclass
class FlowMap:
    flow: Flow
    arrows: list[MappedArrow]
    collectives: list[CollectiveTime] = field(default_factory=list)  # `map`: exchange steps, nccl arrows

    def summary(self) -> list[dict[str, object]]:
        """Per medium (``map --json``): how many arrows, the slowest known one, and the members whose
        figure is unknown with their ceiling (:func:`medium_summary`)."""
        return [m.to_json() for m in medium_summary(self)]


#: Unknown members named in a summary line before the rest are counted.
NAMED_UNKNOWN = 4


@dataclass(frozen=True)
class MediumSummary:
    """The arrows of one medium: the slowest with a known figure, and those whose figure is unknown
    (named, never hidden) with the highest their figure can be where the route's PCIe generation is
    known (``ceiling_gbps``: that generation's rate at the GPUs' width, x16 when not recorded)."""

    medium: Medium
    arrows: tuple[MappedArrow, ...]
    slowest: MappedArrow | None
    unknown: tuple[MappedArrow, ...]
    ceiling_gbps: float | None
    ceiling_source: str = "spec"

    def unknown_names(self) -> str:
        names = [f"{a.src} → {a.dst}" for a in self.unknown]
        more = len(names) - NAMED_UNKNOWN
        return ", ".join(names[:NAMED_UNKNOWN]) + (f", … and {more} more" if more > 0 else "")

    def text(self) -> str:
        """After the medium's name: ``6 arrow(s); 4 of 6 unknown (≤ 31.5 GB/s spec, PCIe x16 ceiling):
        lot:gpu0 → lot:gpu2, …; of the rest, slowest ≥ 141 GB/s derived: shards → allreduce (…)``."""
        n = len(self.arrows)
        if self.medium == "local":
            return f"{n} arrow(s) stay on their device (no transfer)"
        parts = [f"{n} arrow(s)"]
        if self.unknown:
            ceiling, src = fmt_gbps(self.ceiling_gbps), self.ceiling_source
            bound = f" (≤ {ceiling} GB/s {src}, the PCIe x16 ceiling)" if self.ceiling_gbps else ""
            every = "all" if len(self.unknown) == n else f"{len(self.unknown)} of {n}"
            parts.append(f"bandwidth unknown for {every}{bound}: {self.unknown_names()}")
        a = self.slowest
        if a is not None:
            lead = "of the rest, slowest" if self.unknown else "slowest"
            parts.append(f"{lead} {a.bandwidth().text()}: {a.src_step} → {a.dst_step} ({a.src} → {a.dst})")
        return "; ".join(parts)

    def to_json(self) -> dict[str, object]:
        a = self.slowest
        return {
            "medium": self.medium,
            "arrows": len(self.arrows),
            "unknown_bandwidth": len(self.unknown),
            "slowest": None if a is None else {"from": a.src, "to": a.dst, "bandwidth_gbps": a.bandwidth_gbps},
            "unknown": [{"from": x.src, "to": x.dst} for x in self.unknown],
            "unknown_ceiling_gbps": self.ceiling_gbps,
        }


def medium_summary(fmap: FlowMap) -> list[MediumSummary]:
    """Per medium, in a fixed order (arrows of medium ``unknown`` included): the one summary that
    ``map``, ``report`` and ``render`` print and ``map --json`` carries."""
    out: list[MediumSummary] = []
    for medium in MEDIA:
        arrows = tuple(a for a in fmap.arrows if a.medium == medium)
        if not arrows:
            continue
        known = [a for a in arrows if a.bandwidth_gbps is not None]
        slowest = min(known, key=lambda a: a.bandwidth_gbps or 0.0) if known else None
        unknown = tuple(a for a in arrows if a.bandwidth_gbps is None)
        ceilings = [a.ceiling_gbps for a in unknown]
        ceiling = max(c for c in ceilings if c is not None) if unknown and None not in ceilings else None
        src = next((a.ceiling_source for a in unknown if a.ceiling_gbps == ceiling), "spec")
        out.append(MediumSummary(medium, arrows, slowest, unknown, ceiling, src))
    return out


def _ceiling(a: FlowArrow, d: Decision, topos: dict[str, Topology | None]) -> float | None:
    """For an arrow over PCIe whose figure is unknown: the most it can carry, the PCIe rate of the
    lowest generation among the GPUs its route crosses at their width (x16 when not recorded);
    None when a generation is not recorded or the arrow is not over PCIe."""
    if d.bandwidth.gbps is not None or d.via not in ("pcie", "pcie-p2p"):
        return None
    rates: list[float] = []
    for hop in d.route:
        host, node = split_hop(hop)
        topo = topos.get(host)
        gpu = topo.gpu(node) if topo is not None and node_kind(node) == "gpu" else None
        if gpu is None:
            continue
        link = gpu_pcie_link(gpu)
        rate = pcie_bandwidth_gbps(link.gen, link.width_max or 16)
        if rate is None:
            return None
        rates.append(rate)
    return min(rates) if rates else None


def _ceiling_source(d: Decision, topos: dict[str, Topology | None]) -> str:
    """Where the ceiling's PCIe generation comes from: "spec", or a lot's ("declared", "catalogue …")."""
    for hop in d.route:
        topo = topos.get(split_hop(hop)[0])
        origin = fact_origin(topo.snapshot, "gpus.pcie") if topo is not None else None
        if origin is not None:
            return origin.inner()
    return "spec"


def map_flow(flow: Flow, topos: dict[str, Topology | None], nic_sharing: bool = True) -> FlowMap:
    """Classify every concrete arrow of a bound flow (``topos`` from :func:`topomap.flow.bind_hosts`).

    ``nic_sharing``: the replicas of one flow arrow run at once and split the NICs they share (the
    map's reading); False for a caller that models concurrency itself (``plan``'s per-card legs)."""
    missing = [h for h in flow.spec.hosts if h not in topos]
    if missing:
        raise FlowError(f"{flow.path}: host {missing[0]!r} is not bound to a snapshot or to null")
    check_numa_places(flow, topos)
    decided = [(a, _decided(flow, a, topos)) for a in flow.arrows]
    shares = (
        share_nics([(f"{a.src.label()}→{a.dst.label()}", (a.src_step, a.dst_step), d) for a, d in decided])
        if nic_sharing
        else [() for _ in decided]
    )
    out = FlowMap(flow=flow, arrows=[])
    for (a, d), shared in zip(decided, shares):
        m = _arrow(a, d, shared)
        m.ceiling_gbps = _ceiling(a, d, topos)
        m.ceiling_source = _ceiling_source(d, topos) if m.ceiling_gbps is not None else "spec"
        out.arrows.append(m)
    return out


def _arrow(a: FlowArrow, d: Decision, shared: tuple[NicShare, ...] = ()) -> MappedArrow:
    """The one place a decision becomes an arrow: notes once each, a shared NIC's part of its rate, time
    from volume and bandwidth."""
    bw = _shared_bandwidth(d.bandwidth, shared)
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
        shared_nics=list(shared),
        nccl=d.nccl,
        bandwidth_high_gbps=bw.high_gbps if bw.gbps is not None else None,
        bandwidth_settle=bw.settle if bw.gbps is not None else None,
    )
    m.notes += [x.text() for x in shared]
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


def _shared_bandwidth(bw: Bandwidth, shared: tuple[NicShare, ...]) -> Bandwidth:
    """An arrow's figure where its NIC carries other arrows of its step too: its part of the NIC's rate
    when that is lower (the figure stays unknown where it was)."""
    parts = [x for x in shared if x.share_gbps is not None]
    if bw.gbps is None or not parts:
        return bw
    low = min(parts, key=lambda x: x.share_gbps or 0.0)
    if low.share_gbps is None or low.share_gbps >= bw.gbps:
        return bw
    basis = f"{bw.basis}; NIC {'/'.join(low.nics)} split among the {low.arrows} arrows of this step on it"
    high = bw.high
    return replace(bw, gbps=low.share_gbps, basis=basis, high_gbps=min(high, low.share_gbps) if high else None)


def _decided(flow: Flow, a: FlowArrow, topos: dict[str, Topology | None]) -> Decision:
    """The arrow's decision; NCCL's transport where NCCL sends it (:mod:`topomap.flow.ncclarrow`)."""
    d = _decide(a, topos)
    return nccl_arrow(flow, a, d, topos) if nccl_marked(flow, a) else d


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
