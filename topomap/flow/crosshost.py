"""Arrows between two hosts: multi-node NVLink where both GPUs are in one fabric clique, else the
network through the usable NIC nearest each end (with whether GPUDirect RDMA is possible)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from topomap.base.links import nic_bandwidth_gbps
from topomap.base.notes import Note, cat
from topomap.flow.decision import Decision, NicEnd, on_host, on_host_all
from topomap.flow.memory import as_memory, placement_node
from topomap.flow.spec import FlowArrow, Placement
from topomap.graph import FABRIC, Topology
from topomap.graph.edges import edge_bandwidth
from topomap.graph.evidence import nearest_nic
from topomap.graph.nodeid import nic_node
from topomap.graph.query import pcie_leg
from topomap.model.facts import SETTLE, UNKNOWN_BW, Bandwidth, fabric_ready, nic_family
from topomap.model.origins import fact_origin, relabel


def cross_host(a: FlowArrow, topos: dict[str, Topology | None]) -> Decision:
    s, d = a.src, a.dst
    ts, td = topos[s.host], topos[d.host]
    if s.kind == "gpu" and d.kind == "gpu" and ts and td and _fabric_peers(ts, s.gpu or "", td, d.gpu or ""):
        return _mnnvl(a, ts, td)
    notes: list[str] = []
    legs: list[tuple[str, ...]] = []
    caps: list[float] = []
    layers: list[str] = []
    families: list[str] = []
    ends: list[NicEnd] = []
    unknown = False
    for side, topo, p in (("from", ts, s), ("to", td, d)):
        if topo is None:
            notes.append(Note("{host} has no snapshot: its NIC and bandwidth are unknown", p.host))
            legs.append((p.host,))
            unknown = True
            continue
        hop, leg_unknown, nics = _nic_leg(topo, p, notes, caps, layers, families)
        unknown = unknown or leg_unknown
        legs.append(hop if side == "from" else hop[::-1])
        if nics:
            ways: tuple[Literal["out", "in"], ...] = (
                ("out", "in") if a.both_ways else ("out",) if side == "from" else ("in",)
            )
            ends += [NicEnd(p.host, way, nics) for way in ways]
    via = _network_kind(layers, [p.host for p, t in ((s, ts), (d, td)) if t is None], notes)
    if via == "rdma":
        could = "InfiniBand or RoCE" if set(families) == {"connectx"} else "InfiniBand, RoCE or EFA"
        notes.append(f"NIC link layer not recorded ({could}): `ibstat` or `ibv_devinfo` settles it")
    bw = UNKNOWN_BW
    if caps and not unknown:
        bw = Bandwidth(min(caps), "spec", "the narrower of the NICs' line rates and their PCIe legs (nominal)")
        bw = _rate_origin(bw, [t for t in (ts, td) if t is not None], caps)
    return Decision("network", via, "NET", legs[0] + legs[1], bw, tuple(notes), nic_ends=tuple(ends))


def _rate_origin(bw: Bandwidth, topos: list[Topology], caps: list[float]) -> Bandwidth:
    """A network figure set by a NIC rate a declared lot or the catalogue gave is that rate's: declared
    or catalogue, never spec (topomap.model.origins)."""
    for topo in topos:
        origin = fact_origin(topo.snapshot, "nics.speed_gbit_s")
        rates = {nic_bandwidth_gbps(n.speed_gbit_s) for n in topo.snapshot.nics if n.speed_gbit_s is not None}
        if origin is not None and min(caps) in rates:
            return relabel(bw, origin, "NIC rate")
    return bw


def _mnnvl(a: FlowArrow, ts: Topology, td: Topology) -> Decision:
    """Two GPUs of one NVLink fabric clique on two hosts: the slower of their fabric bundles."""
    s, d = a.src, a.dst
    bws = [_fabric_bw(ts, s.gpu or ""), _fabric_bw(td, d.gpu or "")]
    known = [b for b in bws if b.gbps is not None]
    bw = min(known, key=lambda b: b.gbps or 0.0) if len(known) == 2 else UNKNOWN_BW
    note = "same NVLink fabric clique (cluster UUID and clique id match): multi-node NVLink"
    rt = (on_host(s.host, s.gpu or ""), "nvlink-fabric", on_host(d.host, d.gpu or ""))
    return Decision("gpu-link", "mnnvl", "NV", rt, bw, (note,))


def _nic_leg(
    topo: Topology,
    p: Placement,
    notes: list[str],
    caps: list[float],
    layers: list[str],
    families: list[str],
) -> tuple[tuple[str, ...], bool, tuple[tuple[str, float | None], ...]]:
    """One end's way out: the route to the NIC its traffic uses (:func:`nearest_nic`; adding to
    ``notes``, the rate ``caps`` and the NICs' link ``layers``), whether its bandwidth is unknown, and
    the NICs NCCL's channels of this end use with their rates."""
    node = p.gpu if p.kind == "gpu" and p.gpu else placement_node(topo, as_memory(p), None, notes)
    choice = nearest_nic(topo, node)
    on = Note("{host}: ", p.host)  # each reason as the evidence made it, on this host, grouped by GPU
    notes += [cat(on, r).only(gpu=p.gpu) for r in choice.reasons]
    nic = choice.nic
    if nic is None:
        notes.append(cat(on, choice.gdr.why_note() or "the snapshot records no NIC").only(gpu=p.gpu))
        return (on_host(p.host, node),), True, ()
    nodes, leg_bw, _, leg = pcie_leg(topo, node, nic_node(nic))
    notes += leg
    unknown = False
    if leg_bw is not None:
        caps.append(leg_bw)
    if nic.speed_gbit_s is not None:
        caps.append(nic_bandwidth_gbps(nic.speed_gbit_s))
    else:
        settle = SETTLE["nic_speed"].replace("{", "{{").replace("}", "}}")
        notes.append(
            Note(f"NIC speed not recorded on {{host}}: {{nic}} (settle it with {settle})", p.host, nic=nic.name)
        )
        unknown = True
    family = nic_family(nic)
    layers.append(family.transport)
    families.append(family.family)
    if p.kind == "gpu":
        said = "GPUDirect RDMA possible on {host}" if choice.gdr.yes else "no GPUDirect RDMA on {host}"
        said = said if choice.gdr.yes or choice.gdr.no else "GPUDirect RDMA on {host} unknown"
        notes.append(cat(Note(said + ": ", p.host), choice.gdr.why_note()).only(nic=nic.name, gpu=p.gpu))
    rates = {
        n.name: nic_bandwidth_gbps(n.speed_gbit_s) if n.speed_gbit_s is not None else None for n in topo.snapshot.nics
    }
    used = tuple((name, rates.get(name)) for name in (choice.channels or (nic.name,)))
    return on_host_all(p.host, nodes), unknown, used


def _fabric_peers(ta: Topology, ga: str, tb: Topology, gb: str) -> bool:
    """Same NVLink domain: equal cluster UUID and clique id, both fabrics ready (NCCL's rule).
    Two flow hosts bound to one snapshot share GPU UUIDs: they stand for two identical machines,
    whose fabrics are separate."""
    if {g.uuid for g in ta.snapshot.gpus if g.uuid} & {g.uuid for g in tb.snapshot.gpus if g.uuid}:
        return False
    xa, xb = ta.gpu(ga), tb.gpu(gb)
    if xa is None or xb is None or not (fabric_ready(ta.snapshot, xa).yes and fabric_ready(tb.snapshot, xb).yes):
        return False
    fa, fb = xa.fabric, xb.fabric
    return bool(fa and fb and fa.cluster_uuid and fa.cluster_uuid == fb.cluster_uuid and fa.clique_id == fb.clique_id)


def _fabric_bw(topo: Topology, gid: str) -> Bandwidth:
    g = topo.graph
    if g.has_edge(gid, FABRIC):
        return edge_bandwidth(g.edges[gid, FABRIC])
    return UNKNOWN_BW


def _network_kind(layers: list[str], blind: list[str], notes: list[str]) -> str:
    """The network an arrow crosses (``infiniband``, ``ethernet``, ``efa``, ``rdma``), known only when
    both ends' NICs are known and agree; a host with no snapshot leaves it unknown (RDMA or TCP)."""
    if blind:
        notes.append(
            f"network kind (RDMA or TCP) unknown: {' and '.join(blind)} has no snapshot, so its NIC is unknown"
        )
        return "unknown"
    if len(layers) < 2:
        return "unknown"  # one end has no usable NIC (said in the notes)
    return layers[0] if len(set(layers)) == 1 else "network"


# --- arrows that share a NIC -------------------------------------------------------------------------


@dataclass(frozen=True)
class NicShare:
    """One end of a network arrow whose NIC(s) other arrows of the same flow arrow also use, in the same
    direction: ``with_arrows`` names them (``lot:gpu4→far:gpu4``); ``share_gbps`` is this arrow's part of
    the NICs' line rate (each NIC split evenly among the arrows on it), None when a rate is not recorded."""

    host: str
    direction: Literal["out", "in"]
    nics: tuple[str, ...]
    with_arrows: tuple[str, ...]
    share_gbps: float | None

    @property
    def arrows(self) -> int:
        """How many arrows (this one included) use these NICs."""
        return len(self.with_arrows) + 1

    def text(self) -> str:
        way = "out of" if self.direction == "out" else "into"
        rate = f": {self.share_gbps:.3g} GB/s each" if self.share_gbps is not None else " (NIC rate not recorded)"
        return (
            f"shares NIC {'/'.join(self.nics)} ({way} {self.host}) with {len(self.with_arrows)} other arrow(s) "
            f"of this step{rate}"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "host": self.host,
            "direction": self.direction,
            "nics": list(self.nics),
            "with": list(self.with_arrows),
            "share_gbps": self.share_gbps,
        }


def share_nics(items: Sequence[tuple[str, tuple[str, str], Decision]]) -> list[tuple[NicShare, ...]]:
    """For each arrow (its label, its flow arrow's (from step, to step), its decision), the NICs it shares
    with other arrows of the same flow arrow — those run at once (a step's replicas) — in the same
    direction. An arrow whose GPU uses several NICs (NCCL's channels) puts an equal part on each."""
    load: dict[tuple[tuple[str, str], str, str, str], float] = {}
    users: dict[tuple[tuple[str, str], str, str, str], list[int]] = {}
    for i, (_, steps, dec) in enumerate(items):
        for end in dec.nic_ends:
            for name, _rate in end.nics:
                key = (steps, end.host, end.direction, name)
                load[key] = load.get(key, 0.0) + 1.0 / len(end.nics)
                users.setdefault(key, []).append(i)
    out: list[tuple[NicShare, ...]] = []
    for i, (_, steps, dec) in enumerate(items):
        shares: list[NicShare] = []
        for end in dec.nic_ends:
            keys = [(steps, end.host, end.direction, name) for name, _ in end.nics]
            others = sorted({j for k in keys for j in users[k] if j != i})
            if not others:
                continue
            parts = [
                rate / len(end.nics) / load[k] if rate is not None else None for k, (_, rate) in zip(keys, end.nics)
            ]
            share = sum(p for p in parts if p is not None) if all(p is not None for p in parts) else None
            names = tuple(name for name, _ in end.nics)
            shares.append(NicShare(end.host, end.direction, names, tuple(items[j][0] for j in others), share))
        out.append(tuple(shares))
    return out
