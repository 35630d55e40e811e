"""Mapping a flow onto machines: each arrow gets a medium, a route, a class and a bandwidth.

The rules are DESIGN.md's "How an arrow gets its medium": same device → local; two GPUs of a
host → GPU link over NVLink/NVSwitch, else PCIe peer-to-peer where P2P read and write are OK,
else staged through host memory (with the reason); GPU ↔ host memory → host memory over the
GPU's PCIe path (C2C on Grace-class parts); different hosts → one NVLink fabric clique
(MNNVL), else the network through the NIC nearest each endpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from topomap.flow import Flow, FlowArrow, FlowError, Placement, bind
from topomap.graph import BandwidthSource, Topology, pcie_leg, route, snapshot_pair, snapshot_path, tree_parents
from topomap.links import class_rank, nic_bandwidth_gbps
from topomap.model import Gpu, Nic, Snapshot

Medium = Literal["gpu-link", "host-memory", "network", "local"]
New = Callable[..., "MappedArrow"]
NCCL_P2P_LEVELS = ("PIX", "PXB")


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
            "volume_bytes": self.volume_bytes,
            "seconds": self.seconds,
            "both_ways": self.both_ways,
            "label": self.label,
            "notes": self.notes,
        }


@dataclass
class FlowMap:
    flow: Flow
    arrows: list[MappedArrow]

    def summary(self) -> list[dict[str, object]]:
        """Per medium: how many arrows, and the slowest one."""
        out: list[dict[str, object]] = []
        for medium in ("gpu-link", "host-memory", "network", "local"):
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
    return FlowMap(flow=flow, arrows=[_map(a, topos) for a in flow.arrows])


def _finish(a: FlowArrow, m: MappedArrow) -> MappedArrow:
    m.volume_bytes = a.volume_bytes
    if a.volume_bytes is not None and m.bandwidth_gbps:
        m.seconds = round(a.volume_bytes / (m.bandwidth_gbps * 1e9), 6)
    m.both_ways = a.both_ways
    m.label = a.label
    return m


def _map(a: FlowArrow, topos: dict[str, Topology | None]) -> MappedArrow:
    s, d = a.src, a.dst

    def new(
        medium: Medium,
        via: str,
        path: str | None,
        rt: list[str],
        bw: float | None,
        src: BandwidthSource,
        notes: list[str],
    ) -> MappedArrow:
        return _finish(
            a, MappedArrow(a.src_step, a.dst_step, s.label(), d.label(), medium, via, path, rt, bw, src, notes=notes)
        )

    if s == d or (s.host == d.host and s.kind == d.kind == "host"):
        topo = topos.get(s.host)
        node = s.host
        if topo is not None:
            node = s.gpu or "" if s.kind == "gpu" else _memory_node(topo, s, None, [])
        return new("local", "local", None, [_q(s.host, node)], None, "unknown", ["same device"])
    if s.host == d.host:
        topo = topos[s.host]
        if topo is None:
            return new(
                "host-memory",
                "unknown",
                None,
                [s.host],
                None,
                "unknown",
                [f"{s.host} has no snapshot: its internal paths are unknown"],
            )
        return _same_host(a, topo, new)
    return _cross_host(a, topos, new)


def _q(host: str, node: str) -> str:
    return f"{host}/{node}"


def _gpu(topo: Topology, gid: str) -> Gpu:
    return next(g for g in topo.snapshot.gpus if f"gpu{g.index}" == gid)


def _numa_of(topo: Topology, node: str) -> str | None:
    parents = tree_parents(topo)
    cur: str | None = node
    while cur is not None and cur != "host":
        if topo.graph.nodes[cur].get("kind") == "numa":
            return cur
        cur = parents.get(cur)
    return None


def _memory_node(topo: Topology, p: Placement, near: str | None, notes: list[str]) -> str:
    """Graph node of a memory/storage placement: the named NUMA node, or the one nearest ``near``."""
    if p.numa is not None:
        node = f"numa{p.numa}"
        if node not in topo.graph:
            raise FlowError(f"{p.label()}: the snapshot has no NUMA node {p.numa}")
        return node
    local = _numa_of(topo, near) if near else None
    if local is not None:
        what = "storage" if p.kind == "storage" else "host memory"
        notes.append(f"{what} taken on {near}'s own NUMA node ({local}); pin buffers there")
    else:
        numas = sorted(n for n, dd in topo.graph.nodes(data=True) if dd.get("kind") == "numa")
        local = numas[0] if numas else "host"
    if p.kind == "storage":
        notes.append("storage read/write rate not modelled: staged through host memory")
    return local


def _pcie_leg(topo: Topology, a: str, b: str) -> tuple[list[str], float | None, list[str]]:
    nodes, bw, _, notes = pcie_leg(topo, a, b)
    return nodes, bw, notes


def _same_host(a: FlowArrow, topo: Topology, new: New) -> MappedArrow:
    s, d, host = a.src, a.dst, a.src.host
    if s.kind == "gpu" and d.kind == "gpu":
        return _gpu_pair(a, topo, new)
    notes: list[str] = []
    if s.kind == "gpu" or d.kind == "gpu":
        gp, other = (s, d) if s.kind == "gpu" else (d, s)
        gid = gp.gpu or ""
        if other.kind == "host":
            other = Placement(host=host, kind="memory")
        mem = _memory_node(topo, other, gid, notes)
        gpu = _gpu(topo, gid)
        nodes, bw, leg_notes = _pcie_leg(topo, gid, mem)
        notes += leg_notes
        if gpu.gpu_numa_node is not None:
            notes.append("Grace-class GPU: host memory over NVLink-C2C (rate not in the reference tables)")
            return new("host-memory", "c2c", None, [_q(host, n) for n in nodes], None, "unknown", notes)
        if bw is None:
            notes.append("PCIe link speeds not recorded by this source")
        path = _gpu_host_class(topo, gid, mem)
        rt = [_q(host, n) for n in (nodes if s.kind == "gpu" else nodes[::-1])]
        return new("host-memory", "pcie", path, rt, bw, "spec" if bw is not None else "unknown", notes)
    # memory/storage ↔ memory/storage on one host
    ms = _memory_node(topo, s if s.kind != "host" else Placement(host=host, kind="memory"), None, notes)
    md = _memory_node(topo, d if d.kind != "host" else Placement(host=host, kind="memory"), None, notes)
    if ms == md:
        return new("local", "local", None, [_q(host, ms)], None, "unknown", [*notes, "same NUMA node"])
    nodes, _, leg = _pcie_leg(topo, ms, md)
    return new("host-memory", "smp", "SYS", [_q(host, n) for n in nodes], None, "unknown", notes + leg)


def _gpu_host_class(topo: Topology, gid: str, mem: str) -> str:
    return "SYS" if _numa_of(topo, gid) not in (mem, None) else "PHB"


def _gpu_pair(a: FlowArrow, topo: Topology, new: New) -> MappedArrow:
    host = a.src.host
    ga, gb = a.src.gpu or "", a.dst.gpu or ""
    r = route(topo, ga, gb)
    rt = [_q(host, n) for n in r.nodes]
    if r.via in ("nvlink", "nvswitch"):
        return new("gpu-link", r.via, r.path, rt, r.bandwidth_gbps, r.bandwidth_source, list(r.notes))
    pair = snapshot_pair(topo, ga, gb)
    p2p = pair.p2p if pair else None
    cuda = pair.cuda if pair else None
    notes: list[str] = list(r.notes)
    ok: bool | None
    if p2p is not None and p2p.read is not None and p2p.write is not None:
        ok = p2p.read == "OK" and p2p.write == "OK"
        reason = f"P2P read {p2p.read}, write {p2p.write}"
    else:
        ok = None
        reason = "P2P status not recorded by this source"
    if cuda is not None and cuda.can_access_peer is False:
        ok, reason = False, reason + "; cuDeviceCanAccessPeer = 0"
    if ok is None:
        ok = r.path in NCCL_P2P_LEVELS
        notes.append(
            f"{reason}: assumed NCCL's rule (PCIe P2P only up to PXB); this pair is {r.path}"
            + (" → peer-to-peer assumed" if ok else " → staged through host memory")
        )
    if ok:
        if not any("assumed" in n for n in notes):
            notes.append(reason)
        return new("gpu-link", "pcie-p2p", r.path, rt, r.bandwidth_gbps, r.bandwidth_source, notes)
    # staged: GPU A → its host memory → GPU B
    mem = _numa_of(topo, ga) or "host"
    n1, bw1, l1 = _pcie_leg(topo, ga, mem)
    n2, bw2, l2 = _pcie_leg(topo, mem, gb)
    bws = [b for b in (bw1, bw2) if b is not None]
    if not any("assumed" in n for n in notes):
        notes.append(f"staged through host memory: {reason}")
    notes += [n for n in l1 + l2 if n not in notes]
    bw = min(bws) if bws else None
    if bw is None:
        notes.append("PCIe link speeds not recorded by this source")
    return new(
        "host-memory",
        "pcie",
        r.path,
        [_q(host, n) for n in n1 + n2[1:]],
        bw,
        "spec" if bw is not None else "unknown",
        notes,
    )


# --- across hosts ----------------------------------------------------------------------------


def _nearest_nic(topo: Topology, node: str) -> tuple[Nic | None, str | None]:
    """The NIC closest to a GPU (best pair class) or on a memory node's NUMA node. Cached."""
    cache: dict[str, tuple[Nic | None, str | None]] = topo.cache.setdefault("nearest_nic", {})
    if node not in cache:
        cache[node] = _find_nearest_nic(topo, node)
    return cache[node]


def _find_nearest_nic(topo: Topology, node: str) -> tuple[Nic | None, str | None]:
    nics = [n for n in topo.snapshot.nics if n.rdma] or list(topo.snapshot.nics)
    if not nics:
        return None, None
    if node.startswith("gpu"):
        best: tuple[int, int, Nic, str] | None = None
        for n in nics:
            cls = snapshot_path(topo, node, f"nic:{n.name}")
            if cls is None:
                continue
            key = (class_rank(cls), n.index)
            if best is None or key < best[:2]:
                best = (key[0], key[1], n, cls)
        if best is not None:
            return best[2], best[3]
    numa = node if node.startswith("numa") else _numa_of(topo, node)
    same = [n for n in nics if numa and f"numa{n.numa_node}" == numa]
    return (same or nics)[0], None


def _fabric_peers(ta: Topology, ga: str, tb: Topology, gb: str) -> bool:
    """Same NVLink domain: equal cluster UUID and clique id, fabric registered (NCCL's rule).
    Two flow hosts bound to one snapshot share GPU UUIDs: they stand for two identical
    machines, whose fabrics are separate."""
    xa, xb = _gpu(ta, ga), _gpu(tb, gb)
    if {g.uuid for g in ta.snapshot.gpus if g.uuid} & {g.uuid for g in tb.snapshot.gpus if g.uuid}:
        return False
    fa, fb = xa.fabric, xb.fabric
    return bool(
        fa
        and fb
        and fa.state == "completed"
        and fb.state == "completed"
        and fa.cluster_uuid
        and fa.cluster_uuid == fb.cluster_uuid
        and fa.clique_id == fb.clique_id
    )


def _fabric_bw(topo: Topology, gid: str) -> float | None:
    from topomap.graph import FABRIC

    g = topo.graph
    if g.has_edge(gid, FABRIC):
        bw = g.edges[gid, FABRIC].get("bandwidth_gbps")
        return float(bw) if bw is not None else None
    return None


def _cross_host(a: FlowArrow, topos: dict[str, Topology | None], new: New) -> MappedArrow:
    s, d = a.src, a.dst
    ts, td = topos[s.host], topos[d.host]
    notes: list[str] = []
    if s.kind == "gpu" and d.kind == "gpu" and ts and td and _fabric_peers(ts, s.gpu or "", td, d.gpu or ""):
        bws = [b for b in (_fabric_bw(ts, s.gpu or ""), _fabric_bw(td, d.gpu or "")) if b is not None]
        bw = min(bws) if len(bws) == 2 else None
        notes.append("same NVLink fabric clique (cluster UUID and clique id match): multi-node NVLink")
        rt = [_q(s.host, s.gpu or ""), "nvlink-fabric", _q(d.host, d.gpu or "")]
        return new("gpu-link", "mnnvl", "NV", rt, bw, "spec" if bw is not None else "unknown", notes)
    legs: list[list[str]] = []
    caps: list[float] = []
    kinds: list[str] = []
    unknown = False
    for side, topo, p in (("from", ts, s), ("to", td, d)):
        if topo is None:
            notes.append(f"{p.host} has no snapshot: its NIC and bandwidth are unknown")
            legs.append([p.host])
            unknown = True
            continue
        mem_place = p if p.kind != "host" else Placement(host=p.host, kind="memory")
        node = p.gpu if p.kind == "gpu" and p.gpu else _memory_node(topo, mem_place, None, notes)
        nic, cls = _nearest_nic(topo, node)
        if nic is None:
            notes.append(f"{p.host}'s snapshot records no NIC")
            legs.append([_q(p.host, node)])
            unknown = True
            continue
        nic_node = f"nic:{nic.name}"
        nodes, bw, leg = _pcie_leg(topo, node, nic_node)
        notes += leg
        if bw is not None:
            caps.append(bw)
        if nic.speed_gbit_s is not None:
            caps.append(nic_bandwidth_gbps(nic.speed_gbit_s))
        else:
            notes.append(f"{p.host}: speed of NIC {nic.name} not recorded")
            unknown = True
        kinds.append(nic.kind)
        if p.kind == "gpu":
            if cls in NCCL_P2P_LEVELS and nic.gdr is not False:
                notes.append(f"GPUDirect RDMA possible on {p.host}: NIC {nic.name} is {cls} to {node}")
            else:
                notes.append(
                    f"no GPUDirect RDMA on {p.host}: NIC {nic.name} is {cls or 'of unknown class'} to {node}; "
                    "data bounces through host memory"
                )
        hop = [_q(p.host, n) for n in nodes]
        legs.append(hop if side == "from" else hop[::-1])
    via = "infiniband" if kinds and all(k == "infiniband" for k in kinds) else "ethernet" if kinds else "network"
    bw = None if unknown or not caps else min(caps)
    return new("network", via, "NET", legs[0] + legs[1], bw, "spec" if bw is not None else "unknown", notes)


def bind_hosts(flow: Flow, probes: list[str]) -> dict[str, Topology | None]:
    """Bind the flow's hosts to snapshots: ``NAME=FILE`` (or a bare FILE for a one-host flow)
    from the command line first, then the paths in the flow file (relative to it)."""
    from pathlib import Path

    from topomap.graph import build
    from topomap.importers import load_any

    files: dict[str, str | None] = {}
    for h, p in flow.host_files.items():
        files[h] = str(Path(flow.path).parent / p) if p else None
    snap_hosts = [h for h in flow.spec.hosts]
    for arg in probes:
        name, sep, path = arg.partition("=")
        if not sep and _is_cluster(arg):
            # a merged snapshot binds every flow host named like one of its hosts
            for h in flow.spec.hosts:
                if h in _cluster_names(arg):
                    files[h] = arg
            continue
        if not sep:
            if len(snap_hosts) != 1:
                raise FlowError(
                    f"--probe {arg}: the flow has hosts {', '.join(snap_hosts)}; say which",
                    hint=f"--probe {snap_hosts[0]}={arg}",
                )
            name, path = snap_hosts[0], arg
        if name not in flow.spec.hosts:
            raise FlowError(
                f"--probe {arg}: the flow {flow.path} has no host {name!r}",
                hint=f"its hosts: {', '.join(flow.spec.hosts)}",
            )
        files[name] = path
    topos: dict[str, Topology | None] = {}
    cache: dict[str, Snapshot] = {}
    built: dict[int, Topology] = {}
    for h, f in files.items():
        if f is None:
            topos[h] = None
            continue
        if f not in cache:
            cache[f] = load_any(f)
        snap = _host_in(cache[f], h, f)
        if id(snap) not in built:
            built[id(snap)] = build(snap)
        topos[h] = built[id(snap)]
    bind(flow, gpus_of(topos))
    return topos


def _is_cluster(path: str) -> bool:
    from topomap.importers import load_any

    return load_any(path).source.kind == "merge"


def _cluster_names(path: str) -> set[str]:
    from topomap.importers import load_any

    return {m.host.hostname or "" for m in load_any(path).members}


def _host_in(snap: Snapshot, flow_host: str, path: str) -> Snapshot:
    """The snapshot a flow host is bound to; in a merged file, the member of that name."""
    if snap.source.kind != "merge":
        return snap
    for m in snap.members:
        if m.host.hostname == flow_host:
            return m
    names = ", ".join(m.host.hostname or "?" for m in snap.members[:8])
    raise FlowError(
        f"{path}: the cluster has no host named {flow_host!r}",
        hint=f"name flow hosts after the cluster's hosts ({names}…) or bind NAME=HOST_FILE",
    )
