"""Mapping a flow onto machines: each arrow gets a medium, a route, a class and a bandwidth.

The rules are DESIGN.md's "How an arrow gets its medium", and every fact they rest on comes from
``topomap.graph.evidence`` (the same functions check, show, diff and render ask). Each rule returns
a small :class:`Decision`; one function turns a decision into a :class:`MappedArrow`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from topomap.base.links import nic_bandwidth_gbps
from topomap.files.yamlfile import YamlDoc
from topomap.flow.spec import Flow, FlowArrow, FlowError, Placement, bind, name_hint
from topomap.graph import FABRIC, Topology, natural_key
from topomap.graph.evidence import edge_bandwidth, gpu_link, gpu_usable, nearest_nic, pcie_path_class
from topomap.graph.query import numa_of, pcie_leg
from topomap.model.facts import (
    SETTLE,
    UNKNOWN_BW,
    Bandwidth,
    BandwidthSource,
    c2c_bandwidth,
    fabric_ready,
    nic_link_layer,
)
from topomap.model.measured import with_measurement
from topomap.model.snapshot import Snapshot

Medium = Literal["gpu-link", "host-memory", "network", "local", "unknown"]
MEDIA: tuple[Medium, ...] = ("gpu-link", "host-memory", "network", "local", "unknown")


@dataclass
class MappedArrow:
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
            "notes": self.notes,
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


@dataclass(frozen=True)
class Decision:
    """What a rule decided for one arrow, before it becomes a MappedArrow."""

    medium: Medium
    via: str
    path: str | None
    route: tuple[str, ...]
    bandwidth: Bandwidth = UNKNOWN_BW
    reasons: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()
    settle: str | None = None


def gpus_of(topos: dict[str, Topology | None]) -> dict[str, list[tuple[str, str | None, str | None]] | None]:
    return {
        h: None if t is None else [(f"gpu{g.index}", g.uuid, g.pci_bus_id) for g in t.snapshot.gpus]
        for h, t in topos.items()
    }


def map_flow(flow: Flow, topos: dict[str, Topology | None]) -> FlowMap:
    """Classify every concrete arrow of a bound flow."""
    missing = [h for h in flow.spec.hosts if h not in topos]
    if missing:
        raise FlowError(f"{flow.path}: host {missing[0]!r} is not bound to a snapshot or to null")
    _check_numa_places(flow, topos)
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


def _q(host: str, node: str) -> str:
    return f"{host}/{node}"


def _qs(host: str, nodes: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_q(host, n) for n in nodes)


def _decide(a: FlowArrow, topos: dict[str, Topology | None]) -> Decision:
    s, d = a.src, a.dst
    if s == d or (s.host == d.host and s.kind == d.kind == "host"):
        topo = topos.get(s.host)
        node = s.host
        if topo is not None:
            node = s.gpu or "" if s.kind == "gpu" else _memory_node(topo, s, None, [])
        return Decision("local", "local", None, (_q(s.host, node),), reasons=("same device",))
    for p in (s, d):
        topo = topos.get(p.host)
        if p.kind == "gpu" and topo is not None and p.gpu and not gpu_usable(topo, p.gpu).yes:
            return Decision(
                "unknown",
                "unknown",
                None,
                (_q(p.host, p.gpu),),
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
        return _same_host(a, topo)
    return _cross_host(a, topos)


def _memory_node(topo: Topology, p: Placement, near: str | None, notes: list[str]) -> str:
    """Graph node of a memory/storage placement: the named NUMA node (map_flow checked it exists),
    or the one nearest ``near``."""
    if p.numa is not None:
        nodes = numa_nodes(topo, p.numa)
        if not nodes:
            raise FlowError(f"{p.label()}: {_no_numa(topo, p.numa)}")
        mine = numa_of(topo, near) if near else None
        return mine if mine in nodes else nodes[0]
    local = numa_of(topo, near) if near else None
    what = "storage" if p.kind == "storage" else "host memory"
    if local is not None and near is not None and not numa_unknown(local):
        notes.append(f"{what} taken on {near}'s own NUMA node ({local}); pin buffers there")
    elif local is not None and near is not None:
        notes.append(
            f"{near}'s NUMA node is not recorded by this source; pin host buffers on the GPU's node: "
            f"{SETTLE['numa']} says which"
        )
    else:  # no GPU to be near: the lowest NUMA node the source records (an unrecorded one last)
        numas = sorted(
            (n for n, dd in topo.graph.nodes(data=True) if dd.get("kind") == "numa"),
            key=lambda n: (numa_unknown(n), natural_key(n)),
        )
        local = numas[0] if numas else "host"
    if p.kind == "storage":
        notes.append("storage read/write rate not modelled: staged through host memory")
    return local


def numa_unknown(node: str) -> bool:
    """Whether a graph NUMA node stands for a node the source did not record (``numa-unknown``)."""
    return node.startswith("numa-unknown")


def numa_nodes(topo: Topology, numa: int) -> list[str]:
    """The graph node of NUMA node ``numa`` (``numa0``), as a list: empty where the graph has none."""
    return [f"numa{numa}"] if f"numa{numa}" in topo.graph else []


def _recorded_numa(topo: Topology) -> list[int]:
    """The NUMA node numbers the snapshot records (none for a source without NUMA affinity)."""
    found = (re.fullmatch(r"numa(\d+)", str(n)) for n in topo.graph)
    return sorted({int(m.group(1)) for m in found if m is not None})


def _no_numa(topo: Topology, numa: int) -> str:
    """Why ``memory@numaN`` names nothing: the source records no NUMA node, or not this one."""
    known = _recorded_numa(topo)
    own = next((g for g in topo.snapshot.gpus if g.gpu_numa_node == numa), None)
    if own is not None:
        return (
            f"NUMA node {numa} is gpu{own.index}'s own memory (its GPU NUMA ID), not host memory: "
            f"a step there is on gpu{own.index}"
        )
    if not known:
        return f"this source ({topo.snapshot.source.kind}) does not record NUMA nodes, so NUMA node {numa} is unknown"
    return f"the snapshot has no NUMA node {numa} (it has {', '.join(map(str, known))})"


def _check_numa_places(flow: Flow, topos: dict[str, Topology | None]) -> None:
    """Every ``HOST:memory@numaN`` names a NUMA node its snapshot records; refused with the flow's line."""
    for st in flow.steps.values():
        for p in st.placements:
            topo = topos.get(p.host)
            if p.numa is None or topo is None or numa_nodes(topo, p.numa):
                continue
            line = YamlDoc("", None, flow.lines).line(f"$.steps.{st.name}.on")
            other = "a NUMA node it has" if _recorded_numa(topo) else f"a snapshot that records them: {SETTLE['numa']}"
            raise FlowError(
                f"{flow.path}:{line}: step {st.name}: {p.label()}: {_no_numa(topo, p.numa)}",
                hint=f"place it on {p.host}:memory (the memory nearest each GPU), or use {other}",
            )


def host_path_class(topo: Topology, gid: str, mem: str) -> str | None:
    """Path class between a GPU and a host memory node: PHB on the GPU's own NUMA node, SYS across the
    inter-socket link (NODE where the matrix puts the two nodes on one socket); None (unknown) when
    the source records no NUMA node for either end."""
    local = numa_of(topo, gid)
    if local is None or numa_unknown(local) or numa_unknown(mem) or topo.graph.nodes[mem].get("kind") != "numa":
        return None
    if local == mem:
        return "PHB"
    g = topo.graph  # the matrix may put two recorded NUMA nodes on one socket (NODE, H200 NCHC)
    return "NODE" if g.has_edge(local, mem) and g.edges[local, mem].get("matrix_class") == "NODE" else "SYS"


def _pcie_bw(bw: float | None) -> Bandwidth:
    return Bandwidth(bw, "spec", "PCIe lanes × per-lane rate at the narrowest link (nominal)") if bw else UNKNOWN_BW


def _same_host(a: FlowArrow, topo: Topology) -> Decision:
    s, d, host = a.src, a.dst, a.src.host
    if s.kind == "gpu" and d.kind == "gpu":
        return _gpu_pair(a, topo)
    notes: list[str] = []
    if s.kind == "gpu" or d.kind == "gpu":
        gp, other = (s, d) if s.kind == "gpu" else (d, s)
        gid = gp.gpu or ""
        if other.kind == "host":
            other = Placement(host=host, kind="memory")
        mem = _memory_node(topo, other, gid, notes)
        gpu = topo.gpu(gid)
        if gpu is not None and gpu.gpu_numa_node is not None:  # Grace: the CPU's memory is over C2C, not PCIe
            rt = _qs(host, [gid, mem] if s.kind == "gpu" else [mem, gid])
            notes.append(
                f"Grace-class GPU ({gid}'s own memory is NUMA node {gpu.gpu_numa_node}): host memory over "
                "NVLink-C2C, not PCIe"
            )
            kind, ends = ("d2h", (gid, "host")) if s.kind == "gpu" else ("h2d", ("host", gid))
            figure, warning = with_measurement(topo.snapshot, *ends, kind, c2c_bandwidth(gpu))
            return Decision("host-memory", "c2c", None, rt, figure, (*notes, *([warning] if warning else [])))
        nodes, bw, _, leg_notes = pcie_leg(topo, gid, mem)
        notes += leg_notes
        rt = _qs(host, nodes if s.kind == "gpu" else nodes[::-1])
        path = host_path_class(topo, gid, mem)
        if path is None:
            notes.append(
                f"path class between {gid} and host memory not recorded by this source: {SETTLE['path']} settles it"
            )
        kind, ends = ("d2h", (gid, "host")) if s.kind == "gpu" else ("h2d", ("host", gid))
        figure, warning = with_measurement(topo.snapshot, *ends, kind, _pcie_bw(bw))
        return Decision("host-memory", "pcie", path, rt, figure, (*notes, *([warning] if warning else [])))
    # memory/storage ↔ memory/storage on one host
    ms = _memory_node(topo, s if s.kind != "host" else Placement(host=host, kind="memory"), None, notes)
    md = _memory_node(topo, d if d.kind != "host" else Placement(host=host, kind="memory"), None, notes)
    if ms == md:
        return Decision("local", "local", None, (_q(host, ms),), reasons=(*notes, "same NUMA node"))
    nodes, _, _, leg = pcie_leg(topo, ms, md)
    return Decision("host-memory", "smp", "SYS", _qs(host, nodes), reasons=(*notes, *leg))


def _gpu_pair(a: FlowArrow, topo: Topology) -> Decision:
    host = a.src.host
    ga, gb = a.src.gpu or "", a.dst.gpu or ""
    link = gpu_link(topo, ga, gb)
    assumed = tuple(r for r in link.p2p.reasons if link.p2p.assumed) if link.via != "nvlink" else ()
    reasons = tuple(r for r in link.reasons if r not in assumed)
    if link.medium == "gpu-link" and link.via in ("nvlink", "nvswitch"):
        nv = link.nvlink
        figure, warning = with_measurement(topo.snapshot, ga, gb, "d2d", nv.bandwidth)
        notes = (*reasons, *([warning] if warning else []))
        return Decision("gpu-link", nv.via, nv.path, _qs(host, nv.nodes), figure, notes)
    cls = pcie_path_class(topo, ga, gb)
    nodes, bw, _, leg_notes = pcie_leg(topo, ga, gb)
    if link.medium == "gpu-link":  # PCIe peer-to-peer
        figure, warning = with_measurement(topo.snapshot, ga, gb, "d2d", _pcie_bw(bw))
        notes = (*reasons, *leg_notes, *([warning] if warning else []))
        return Decision("gpu-link", "pcie-p2p", cls, _qs(host, nodes), figure, notes, assumed)
    if link.medium == "unknown":
        return Decision(
            "unknown",
            "unknown",
            cls,
            _qs(host, nodes),
            UNKNOWN_BW,
            (*reasons, *leg_notes),
            assumed,
            link.candidates,
            link.settle,
        )
    # staged: GPU A → its host memory → GPU B
    mem = numa_of(topo, ga) or "host"
    n1, bw1, _, l1 = pcie_leg(topo, ga, mem)
    n2, bw2, _, l2 = pcie_leg(topo, mem, gb)
    bws = [b for b in (bw1, bw2) if b is not None]
    why = tuple(f"staged through host memory: {r}" for r in reasons if r not in assumed) or ()
    if assumed:
        why = (*why, "staged through host memory (by the assumed rule)")
    return Decision(
        "host-memory",
        "pcie",
        cls,
        _qs(host, n1 + n2[1:]),
        _pcie_bw(min(bws) if len(bws) == 2 else None),
        (*why, *l1, *l2),
        assumed,
    )


# --- across hosts ----------------------------------------------------------------------------


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


def _cross_host(a: FlowArrow, topos: dict[str, Topology | None]) -> Decision:
    s, d = a.src, a.dst
    ts, td = topos[s.host], topos[d.host]
    notes: list[str] = []
    if s.kind == "gpu" and d.kind == "gpu" and ts and td and _fabric_peers(ts, s.gpu or "", td, d.gpu or ""):
        bws = [_fabric_bw(ts, s.gpu or ""), _fabric_bw(td, d.gpu or "")]
        known = [b for b in bws if b.gbps is not None]
        bw = min(known, key=lambda b: b.gbps or 0.0) if len(known) == 2 else UNKNOWN_BW
        notes.append("same NVLink fabric clique (cluster UUID and clique id match): multi-node NVLink")
        rt = (_q(s.host, s.gpu or ""), "nvlink-fabric", _q(d.host, d.gpu or ""))
        return Decision("gpu-link", "mnnvl", "NV", rt, bw, tuple(notes))
    legs: list[tuple[str, ...]] = []
    caps: list[float] = []
    layers: list[str] = []
    unknown = False
    for side, topo, p in (("from", ts, s), ("to", td, d)):
        if topo is None:
            notes.append(f"{p.host} has no snapshot: its NIC and bandwidth are unknown")
            legs.append((p.host,))
            unknown = True
            continue
        mem_place = p if p.kind != "host" else Placement(host=p.host, kind="memory")
        node = p.gpu if p.kind == "gpu" and p.gpu else _memory_node(topo, mem_place, None, notes)
        choice = nearest_nic(topo, node)
        notes += [f"{p.host}: {r}" for r in choice.reasons]
        nic = choice.nic
        if nic is None:
            notes.append(f"{p.host}: {choice.gdr.why() or 'the snapshot records no NIC'}")
            legs.append((_q(p.host, node),))
            unknown = True
            continue
        nodes, leg_bw, _, leg = pcie_leg(topo, node, f"nic:{nic.name}")
        notes += leg
        if leg_bw is not None:
            caps.append(leg_bw)
        if nic.speed_gbit_s is not None:
            caps.append(nic_bandwidth_gbps(nic.speed_gbit_s))
        else:
            notes.append(f"{p.host}: speed of NIC {nic.name} not recorded (settle it with {SETTLE['nic_speed']})")
            unknown = True
        layers.append(nic_link_layer(nic))
        if p.kind == "gpu":
            if choice.gdr.yes:
                notes.append(f"GPUDirect RDMA possible on {p.host}: {choice.gdr.why()}")
            elif choice.gdr.no:
                notes.append(f"no GPUDirect RDMA on {p.host}: {choice.gdr.why()}")
            else:
                notes.append(f"GPUDirect RDMA on {p.host} unknown: {choice.gdr.why()}")
        hop = _qs(p.host, nodes)
        legs.append(hop if side == "from" else hop[::-1])
    via = _network_kind(layers, [p.host for p, t in ((s, ts), (d, td)) if t is None], notes)
    if via == "rdma":
        notes.append("NIC link layer not recorded (InfiniBand or RoCE): `ibstat` or `ibv_devinfo` settles it")
    bw = UNKNOWN_BW
    if caps and not unknown:
        bw = Bandwidth(min(caps), "spec", "the narrower of the NICs' line rates and their PCIe legs (nominal)")
    return Decision("network", via, "NET", legs[0] + legs[1], bw, tuple(notes))


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


def bind_hosts(flow: Flow, probes: list[str]) -> dict[str, Topology | None]:
    """Bind the flow's hosts to snapshots: ``NAME=FILE`` (or a bare FILE for a one-host flow, or a
    merged cluster file binding every flow host named like one of its hosts) from the command line
    first, then the paths in the flow file (relative to it). A binding that binds nothing, a host
    bound twice and an empty path are refused."""
    from pathlib import Path

    from topomap.graph import build
    from topomap.importers import load_any

    files: dict[str, str | None] = {}
    for h, p in flow.host_files.items():
        files[h] = str(Path(flow.path).parent / p) if p else None
    cache: dict[str, Snapshot] = {}

    def load(path: str) -> Snapshot:
        if path not in cache:
            cache[path] = load_any(path)
        return cache[path]

    bound: dict[str, str] = {}  # flow host → the --probe argument that bound it
    for arg in probes:
        for host, path in _binding(flow, arg, load):
            if host in bound:
                raise FlowError(
                    f"--probe {arg}: {host} is bound twice (also by --probe {bound[host]})",
                    hint=f"bind each flow host once: --probe {host}=FILE",
                )
            bound[host] = arg
            files[host] = path
    topos: dict[str, Topology | None] = {}
    built: dict[int, Topology] = {}
    members: dict[str, dict[str, Snapshot]] = {}
    for h, f in files.items():
        if f is None:
            topos[h] = None
            continue
        snap = _host_in(load(f), h, f, members)
        if id(snap) not in built:
            built[id(snap)] = build(snap)
        topos[h] = built[id(snap)]
    bind(flow, gpus_of(topos))
    return topos


def _binding(flow: Flow, arg: str, load: Callable[[str], Snapshot]) -> list[tuple[str, str]]:
    """The (flow host, file) pairs one ``--probe`` argument binds."""
    hosts = list(flow.spec.hosts)
    name, sep, path = arg.partition("=")
    if sep and not path.strip():
        raise FlowError(f"--probe {arg}: no file given", hint=f"--probe {name or hosts[0]}=SNAPSHOT")
    if sep and not name:
        raise FlowError(f"--probe {arg}: no host name before '='", hint=f"--probe {hosts[0]}={path}")
    if not sep and load(arg).source.kind == "merge":
        return _cluster_binding(flow, arg, load(arg))
    if not sep:
        if len(hosts) != 1:
            raise FlowError(
                f"--probe {arg}: the flow has hosts {', '.join(hosts)}; say which",
                hint=f"--probe {hosts[0]}={arg}",
            )
        return [(hosts[0], arg)]
    if name not in flow.spec.hosts:
        raise FlowError(
            f"--probe {arg}: the flow {flow.path} has no host {name!r}", hint=name_hint(name, hosts, "its hosts")
        )
    return [(name, path)]


def _cluster_binding(flow: Flow, arg: str, cluster: Snapshot) -> list[tuple[str, str]]:
    """A merged cluster binds every flow host named like one of its hosts; binding none is an error
    (the flow would silently run on the snapshots its file names)."""
    names = [m.host.hostname or "" for m in cluster.members]
    found = [(h, arg) for h in flow.spec.hosts if h in set(names)]
    if found:
        return found
    shown = ", ".join(names[:8]) + (f", … ({len(names)} in all)" if len(names) > 8 else "")
    raise FlowError(
        f"--probe {arg}: no host of the cluster is named like a flow host "
        f"(flow hosts: {', '.join(flow.spec.hosts)}; cluster hosts: {shown or 'none named'})",
        hint=f"NAME=FILE binds a flow host to one host's snapshot (--probe {next(iter(flow.spec.hosts))}=SNAPSHOT), "
        "or name the flow hosts after the cluster's hosts",
    )


def _host_in(snap: Snapshot, flow_host: str, path: str, members: dict[str, dict[str, Snapshot]]) -> Snapshot:
    """The snapshot a flow host is bound to; in a merged file, the member of that name (indexed once)."""
    if snap.source.kind != "merge":
        return snap
    if path not in members:
        members[path] = {m.host.hostname or "": m for m in snap.members}
    found = members[path].get(flow_host)
    if found is not None:
        return found
    names = ", ".join(m.host.hostname or "?" for m in snap.members[:8])
    raise FlowError(
        f"{path}: the cluster has no host named {flow_host!r}",
        hint=f"name flow hosts after the cluster's hosts ({names}…) or bind NAME=HOST_FILE",
    )
