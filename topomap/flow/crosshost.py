"""Arrows between two hosts: multi-node NVLink where both GPUs are in one fabric clique, else the
network through the usable NIC nearest each end (with whether GPUDirect RDMA is possible)."""

from __future__ import annotations

from topomap.base.links import nic_bandwidth_gbps
from topomap.base.notes import Note
from topomap.flow.decision import Decision, on_host, on_host_all
from topomap.flow.memory import as_memory, placement_node
from topomap.flow.spec import FlowArrow, Placement
from topomap.graph import FABRIC, Topology
from topomap.graph.evidence import edge_bandwidth, nearest_nic
from topomap.graph.query import pcie_leg
from topomap.model.facts import SETTLE, UNKNOWN_BW, Bandwidth, fabric_ready, nic_link_layer


def cross_host(a: FlowArrow, topos: dict[str, Topology | None]) -> Decision:
    s, d = a.src, a.dst
    ts, td = topos[s.host], topos[d.host]
    if s.kind == "gpu" and d.kind == "gpu" and ts and td and _fabric_peers(ts, s.gpu or "", td, d.gpu or ""):
        return _mnnvl(a, ts, td)
    notes: list[str] = []
    legs: list[tuple[str, ...]] = []
    caps: list[float] = []
    layers: list[str] = []
    unknown = False
    for side, topo, p in (("from", ts, s), ("to", td, d)):
        if topo is None:
            notes.append(Note("{host} has no snapshot: its NIC and bandwidth are unknown", p.host))
            legs.append((p.host,))
            unknown = True
            continue
        hop, leg_unknown = _nic_leg(topo, p, notes, caps, layers)
        unknown = unknown or leg_unknown
        legs.append(hop if side == "from" else hop[::-1])
    via = _network_kind(layers, [p.host for p, t in ((s, ts), (d, td)) if t is None], notes)
    if via == "rdma":
        notes.append("NIC link layer not recorded (InfiniBand or RoCE): `ibstat` or `ibv_devinfo` settles it")
    bw = UNKNOWN_BW
    if caps and not unknown:
        bw = Bandwidth(min(caps), "spec", "the narrower of the NICs' line rates and their PCIe legs (nominal)")
    return Decision("network", via, "NET", legs[0] + legs[1], bw, tuple(notes))


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
    topo: Topology, p: Placement, notes: list[str], caps: list[float], layers: list[str]
) -> tuple[tuple[str, ...], bool]:
    """One end's way out: the route to its nearest usable NIC (adding to ``notes``, the rate ``caps``
    and the NICs' link ``layers``), and whether its bandwidth is unknown."""
    node = p.gpu if p.kind == "gpu" and p.gpu else placement_node(topo, as_memory(p), None, notes)
    choice = nearest_nic(topo, node)
    notes += [Note.about(f"{p.host}: {r}", p.host, gpu=p.gpu) for r in choice.reasons]
    nic = choice.nic
    if nic is None:
        notes.append(Note.about(f"{p.host}: {choice.gdr.why() or 'the snapshot records no NIC'}", p.host, gpu=p.gpu))
        return (on_host(p.host, node),), True
    nodes, leg_bw, _, leg = pcie_leg(topo, node, f"nic:{nic.name}")
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
    layers.append(nic_link_layer(nic))
    if p.kind == "gpu":
        said = "GPUDirect RDMA possible on {}" if choice.gdr.yes else "no GPUDirect RDMA on {}"
        said = said if choice.gdr.yes or choice.gdr.no else "GPUDirect RDMA on {} unknown"
        notes.append(Note.about(f"{said.format(p.host)}: {choice.gdr.why()}", p.host, nic=nic.name, gpu=p.gpu))
    return on_host_all(p.host, nodes), unknown


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
