"""Snapshot → networkx graph of the machine, and path queries over it.

Nodes: ``host``, ``numa<N>``, PCI nodes ``pci:<bus id>`` (host bridges, bridges, switch ports;
inferred ones ``pci:inferred-…``), ``gpu<N>``, ``nic:<name>``, ``nvswitch:<id>``.
Edges carry ``kind`` (``pcie``, ``nvlink``, ``smp``, ``c2c``, ``attach``), the link facts
(gen/width, link count/generation) and ``bandwidth_gbps`` with ``bandwidth_source``.

Where a source gives only path classes (an imported ``topo -m``), the least PCIe structure
consistent with them is built and marked ``inferred``: a switch per PIX group, an upper
switch per PXB group, a host bridge per PHB group, a NUMA node per NODE group.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx

from topomap.errors import TopomapError
from topomap.links import (
    PCIE_CLASSES,
    class_rank,
    nvlink_bandwidth_gbps,
    parse_path,
    pcie_bandwidth_gbps,
)
from topomap.model import Gpu, Nic, Pair, Snapshot
from topomap.nvlinks import gpu_buses, link_peer
from topomap.pathclass import classify_chains

BandwidthSource = Literal["spec", "derived", "model", "measured", "unknown"]
FABRIC = "nvswitch:fabric"


@dataclass(frozen=True)
class Route:
    """How data gets from one endpoint to another on one host."""

    a: str
    b: str
    nodes: tuple[str, ...]
    path: str | None  # NV<n>, PIX … SYS, or None when unknown
    via: str  # "nvlink", "nvswitch", "pcie", "c2c", "local"
    bandwidth_gbps: float | None
    bandwidth_source: BandwidthSource
    bottleneck: tuple[str, str] | None = None
    notes: tuple[str, ...] = ()


@dataclass
class Topology:
    """A machine as a graph, with the snapshot it came from."""

    snapshot: Snapshot
    graph: nx.Graph
    chains: dict[str, list[str]] = field(default_factory=dict)  # device → PCI chain (host bridge … device)
    locality: dict[str, object] = field(default_factory=dict)  # device → NUMA key
    inferred: bool = False
    notes: list[str] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict, repr=False)  # derived views, built once

    def endpoint(self, ref: str) -> str:
        """Graph node of a snapshot id (``gpu3``, ``nic2``) or a graph id."""
        if ref in self.graph:
            return ref
        if ref.startswith("nic") and ref[3:].isdigit():
            for n in self.snapshot.nics:
                if n.index == int(ref[3:]):
                    return nic_node(n)
        raise KeyError(ref)

    def _repr_svg_(self) -> str:  # pragma: no cover - notebooks only; lazy so graph never needs render
        from topomap.render.dot import render_svg

        return render_svg([self])


def nic_node(n: Nic) -> str:
    return f"nic:{n.name}"


def gpu_node(g: Gpu) -> str:
    return f"gpu{g.index}"


def snapshot_id(node: str, topo: Topology) -> str:
    """Snapshot id (``nic3``) of a graph node (``nic:mlx5_3``)."""
    if not node.startswith("nic:"):
        return node
    ids: dict[str, str] | None = topo.cache.get("nic_ids")
    if ids is None:
        ids = {nic_node(n): f"nic{n.index}" for n in topo.snapshot.nics}
        topo.cache["nic_ids"] = ids
    return ids.get(node, node)


def build(snap: Snapshot) -> Topology:
    """The graph of one host's snapshot (a merged snapshot: build each of ``hosts_of``)."""
    if snap.source.kind == "merge":
        raise TopomapError(
            f"{snap.source.origin}: a merged snapshot holds {len(snap.members)} hosts; this view takes one",
            hint="name one host, or use a command that reads clusters (show, matrix, render, map, diff, check)",
        )
    g = nx.Graph()
    host = "host"
    g.add_node(host, kind="host", label=snap.host.hostname or snap.source.origin, inferred=False)
    topo = Topology(snapshot=snap, graph=g)
    for gpu in snap.gpus:
        g.add_node(gpu_node(gpu), kind="gpu", label=f"GPU{gpu.index}", name=gpu.name or "", inferred=False)
    for nic in snap.nics:
        g.add_node(nic_node(nic), kind="nic", label=nic.name, nic_kind=nic.kind, inferred=False)
    if snap.pci:
        _tree_from_pci(topo)
    else:
        _infer_tree(topo)
    _numa_links(topo)
    _nvlinks(topo)
    return topo


# --- PCIe structure -------------------------------------------------------------------------


def _numa_node(topo: Topology, numa: object) -> str:
    node = f"numa{numa}" if numa is not None else "numa?"
    if node not in topo.graph:
        cpus = next((n.cpus for n in topo.snapshot.host.numa_nodes if n.id == numa), None)
        text = str(numa) if numa is not None else "?"
        if "#" in text:
            base, _, k = text.partition("#")
            text = f"{base} (SYS-separated group {k})"
        if text.startswith("?"):
            text = f"? (side {int(text[1:]) + 1})" if text[1:].isdigit() else "?"
        topo.graph.add_node(node, kind="numa", label=f"NUMA {text}", cpus=cpus or "", inferred=numa is None)
        topo.graph.add_edge("host", node, kind="attach")
    return node


def _pcie_edge(topo: Topology, parent: str, child: str, gen: int | None, width: int | None) -> None:
    bw = pcie_bandwidth_gbps(gen, width)
    topo.graph.add_edge(
        parent,
        child,
        kind="pcie",
        gen=gen,
        width=width,
        bandwidth_gbps=bw,
        bandwidth_source="spec" if bw is not None else "unknown",
    )


def _tree_from_pci(topo: Topology) -> None:
    snap, g = topo.snapshot, topo.graph
    dev_of: dict[str, str] = {}
    for gpu in snap.gpus:
        if gpu.pci_bus_id:
            dev_of[gpu.pci_bus_id] = gpu_node(gpu)
    for nic in snap.nics:
        if nic.pci_bus_id and nic.pci_bus_id not in dev_of:
            dev_of[nic.pci_bus_id] = nic_node(nic)
    by_id = {d.id: d for d in snap.pci}

    def node(pid: str) -> str:
        return dev_of.get(pid, f"pci:{pid}")

    for d in snap.pci:
        n = node(d.id)
        if n not in g:
            g.add_node(n, kind=d.kind, label=d.id, inferred=d.inferred)
        if d.parent is None:
            g.add_edge(_numa_node(topo, d.numa_node), n, kind="attach")
        else:
            parent = node(d.parent)
            if parent not in g:
                pd = by_id.get(d.parent)
                g.add_node(parent, kind=pd.kind if pd else "bridge", label=d.parent, inferred=False)
            _pcie_edge(topo, parent, n, d.link_gen, d.link_width)

    def chain(pid: str) -> list[str]:
        out: list[str] = []
        cur: str | None = pid
        while cur is not None:
            out.append(node(cur))
            cur = by_id[cur].parent if cur in by_id else None
        return out[::-1]

    for gpu in snap.gpus:
        if gpu.pci_bus_id in by_id:
            topo.chains[gpu_node(gpu)] = chain(gpu.pci_bus_id)
            topo.locality[gpu_node(gpu)] = gpu.numa_node
    for nic in snap.nics:
        nn = nic_node(nic)
        if nic.pci_bus_id in by_id:
            topo.chains[nn] = chain(nic.pci_bus_id)
        elif nic.numa_node is not None:
            g.add_edge(_numa_node(topo, nic.numa_node), nn, kind="attach")
            topo.chains[nn] = [f"numa{nic.numa_node}:direct", nn]
        topo.locality[nn] = nic.numa_node
    for dev in list(topo.chains):
        if dev not in g or g.degree(dev) == 0:
            g.add_edge(_numa_node(topo, topo.locality.get(dev)), dev, kind="attach")


class _Union:
    def __init__(self, items: list[str]) -> None:
        self.parent = {i: i for i in items}

    def find(self, x: str) -> str:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[list[str]]:
        out: dict[str, list[str]] = {}
        for i in self.parent:
            out.setdefault(self.find(i), []).append(i)
        return sorted(out.values())


def _infer_tree(topo: Topology) -> None:
    """Least PCIe structure reproducing the pairs' PCIe classes (ultrametric clustering)."""
    snap, g = topo.snapshot, topo.graph
    topo.inferred = True
    ids = {f"gpu{x.index}": gpu_node(x) for x in snap.gpus} | {f"nic{n.index}": nic_node(n) for n in snap.nics}
    devs = sorted(ids.values(), key=natural_key)
    level: dict[frozenset[str], int] = {}
    for p in snap.pairs:
        cls = p.pcie_path or (p.path if p.path in PCIE_CLASSES else None)
        if cls is not None and p.a in ids and p.b in ids:
            level[frozenset((ids[p.a], ids[p.b]))] = class_rank(cls)  # PIX 1 … SYS 5
    clusters: dict[int, list[list[str]]] = {}
    for t in (1, 2, 3, 4):
        u = _Union(devs)
        for pair, r in level.items():
            if r <= t:
                a, b = sorted(pair)
                u.union(a, b)
        clusters[t] = u.groups()
    numa_of: dict[str, object] = {gpu_node(x): x.numa_node for x in snap.gpus}
    used: set[str] = set()
    for k, grp in enumerate(clusters[4]):
        known = sorted({numa_of[d] for d in grp if numa_of.get(d) is not None}, key=str)
        numa: object = known[0] if len(known) == 1 else (None if not known else "+".join(map(str, known)))
        if len(known) > 1:
            topo.notes.append(
                f"the matrix puts NUMA nodes {', '.join(map(str, known))} on one side (NODE between them)"
            )
        if numa is None and len(clusters[4]) > 1:
            numa = f"?{k}"
        if f"numa{numa}" in used:
            # devices of one NUMA node that the matrix separates by SYS (seen on an 8x RTX 4090 box)
            topo.notes.append(f"devices of NUMA node {numa} are SYS to each other in the matrix")
            numa = f"{numa}#{k}"
        used.add(f"numa{numa}")
        numa_n = _numa_node(topo, numa)
        for d in grp:
            topo.locality[d] = k
        for hb_grp in [c for c in clusters[3] if c[0] in grp]:
            hb = f"pci:inferred-hb-{_slug(hb_grp[0])}"
            g.add_node(hb, kind="host-bridge", label="host bridge", inferred=True)
            g.add_edge(numa_n, hb, kind="attach")
            for pxb in [c for c in clusters[2] if c[0] in hb_grp]:
                pix_groups = [c for c in clusters[1] if c[0] in pxb]
                upper: str | None = None
                if len(pix_groups) > 1:
                    upper = f"pci:inferred-sw-{_slug(pxb[0])}"
                    g.add_node(upper, kind="switch", label="PCIe switch", inferred=True)
                    _pcie_edge(topo, hb, upper, None, None)
                for pix in pix_groups:
                    base = [hb] + ([upper] if upper else [])
                    if len(pix) > 1:
                        sw = f"pci:inferred-sw-{_slug(pix[0])}"
                        g.add_node(sw, kind="switch", label="PCIe switch", inferred=True)
                        if upper:
                            port = f"pci:inferred-port-{_slug(pix[0])}"
                            g.add_node(port, kind="port", label="", inferred=True)
                            _pcie_edge(topo, upper, port, None, None)
                            _pcie_edge(topo, port, sw, None, None)
                            base = [*base, port]
                        else:
                            _pcie_edge(topo, hb, sw, None, None)
                        base = [*base, sw]
                    for d in pix:
                        _pcie_edge(topo, base[-1], d, None, None)
                        topo.chains[d] = [*base, d]
    if level:
        topo.notes.append("PCIe structure inferred from path classes (the source has no PCI tree)")
    topo.notes[:] = list(dict.fromkeys(topo.notes))


def _slug(node: str) -> str:
    return node.replace(":", "-")


def natural_key(s: str) -> tuple[str, int, str]:
    """Sort gpu2 before gpu10."""
    head = s.rstrip("0123456789")
    tail = s[len(head) :]
    return head, int(tail) if tail else -1, s


def tree_parents(topo: Topology) -> dict[str, str]:
    """Parent of each node in the host → NUMA → PCI tree (NVLink and SMP edges ignored)."""
    cached: dict[str, str] | None = topo.cache.get("parents")
    if cached is not None:
        return cached
    g = topo.graph
    parent: dict[str, str] = {}
    seen = {"host"}
    frontier = ["host"]
    while frontier:
        nxt: list[str] = []
        for u in frontier:
            for v in sorted(g.neighbors(u), key=natural_key):
                if v in seen or g.edges[u, v].get("kind") in ("nvlink", "smp"):
                    continue
                seen.add(v)
                parent[v] = u
                nxt.append(v)
        frontier = nxt
    topo.cache["parents"] = parent
    return parent


def _numa_links(topo: Topology) -> None:
    """Inter-socket (SMP) links between NUMA nodes; bandwidth unknown (no source measures it)."""
    numas = sorted(n for n, d in topo.graph.nodes(data=True) if d.get("kind") == "numa")
    for i, a in enumerate(numas):
        for b in numas[i + 1 :]:
            topo.graph.add_edge(a, b, kind="smp", bandwidth_gbps=None, bandwidth_source="unknown")


# --- NVLink --------------------------------------------------------------------------------


def _nvlinks(topo: Topology) -> None:
    snap, g = topo.snapshot, topo.graph
    buses = gpu_buses(snap.gpus)
    by_id = {gpu_node(x): x for x in snap.gpus}
    have_links = any(x.nvlinks for x in snap.gpus)
    if have_links:
        for gpu in snap.gpus:
            counts: dict[str, int] = {}
            for link in gpu.nvlinks:
                if not link.active:
                    continue
                peer = link_peer(link, buses)
                if peer is None:
                    continue
                if peer == "switch":
                    peer = FABRIC  # the switches act as one crossbar: one hub, links summed
                elif peer == gpu_node(gpu):
                    continue
                counts[peer] = counts.get(peer, 0) + 1
            for peer, n in counts.items():
                if peer == FABRIC and peer not in g:
                    n_sw = len(snap.nvswitches)
                    label = f"NVSwitch ×{n_sw}" if n_sw > 1 else "NVSwitch"
                    if snap.nvswitches and all(sw.pci_bus_id is None for sw in snap.nvswitches):
                        label = "NVSwitch fabric (switches not visible to this host)"
                    g.add_node(peer, kind="nvswitch", label=label, switches=n_sw, inferred=False)
                if peer.startswith("gpu") and g.has_edge(gpu_node(gpu), peer):
                    continue
                _nvlink_edge(topo, gpu_node(gpu), peer, n, gpu, by_id.get(peer))
    if not have_links:
        _nvlinks_from_pairs(topo, by_id)


def _nvlinks_from_pairs(topo: Topology, by_id: dict[str, Gpu]) -> None:
    """NV# pairs from a source that lists no links (an imported matrix). Three or more GPUs
    joined all-to-all by the same NV# sit on an NVSwitch fabric: draw one inferred hub, not
    n(n-1)/2 edges. Other NV# pairs (bridges, DGX-1 cube mesh) are direct links."""
    nv: dict[frozenset[str], int] = {}
    for p in topo.snapshot.pairs:
        kind, n = parse_path(p.path or "")
        if kind == "NV" and p.a in by_id and p.b in by_id:
            nv[frozenset((p.a, p.b))] = n
    gpus = sorted({x for pair in nv for x in pair}, key=natural_key)
    counts = set(nv.values())
    full = len(gpus) >= 3 and len(counts) == 1 and len(nv) == len(gpus) * (len(gpus) - 1) // 2
    if full:
        n = counts.pop()
        topo.graph.add_node(FABRIC, kind="nvswitch", label="NVSwitch fabric (inferred)", switches=0, inferred=True)
        for x in gpus:
            _nvlink_edge(topo, x, FABRIC, n, by_id[x], None)
        topo.notes.append(f"{len(gpus)} GPUs all-to-all NV{n}: drawn as an NVSwitch fabric (inferred)")
        return
    for pair, n in sorted(nv.items(), key=lambda kv: sorted(kv[0], key=natural_key)):
        a, b = sorted(pair, key=natural_key)
        _nvlink_edge(topo, a, b, n, by_id[a], by_id[b])


def _nvlink_edge(topo: Topology, a: str, b: str, count: int, ga: Gpu, gb: Gpu | None) -> None:
    gens = {x.generation for x in ga.nvlinks if x.active and x.generation is not None}
    gen = gens.pop() if len(gens) == 1 else None
    speeds = {x.speed_gbps for x in ga.nvlinks if x.active and x.speed_gbps}
    # the source's reported per-link rate when it gives one, else the generation's nominal rate
    bw = round(speeds.pop() * count, 3) if len(speeds) == 1 else nvlink_bandwidth_gbps(gen, count, ga.name)
    topo.graph.add_edge(
        a,
        b,
        kind="nvlink",
        count=count,
        generation=gen,
        bandwidth_gbps=bw,
        bandwidth_source="spec" if bw is not None else "unknown",
    )


def _nvlink_view(g: nx.Graph) -> Any:
    return nx.subgraph_view(g, filter_edge=lambda u, v: g.edges[u, v].get("kind") == "nvlink")


def _pcie_view(g: nx.Graph) -> Any:
    return nx.subgraph_view(g, filter_edge=lambda u, v: g.edges[u, v].get("kind") != "nvlink")


# --- queries -------------------------------------------------------------------------------


def structural_class(topo: Topology, a: str, b: str) -> str | None:
    """PCIe class of two devices computed from the graph's structure alone."""
    ca, cb = topo.chains.get(a), topo.chains.get(b)
    if not ca or not cb:
        return None
    return classify_chains(ca, cb, topo.locality.get(a), topo.locality.get(b))


def snapshot_pair(topo: Topology, a: str, b: str) -> Pair | None:
    """The snapshot's record of two endpoints (graph or snapshot ids), looked up once per topology."""
    pairs: dict[frozenset[str], Pair] | None = topo.cache.get("pairs")
    if pairs is None:
        pairs = {frozenset((p.a, p.b)): p for p in topo.snapshot.pairs}
        topo.cache["pairs"] = pairs
    return pairs.get(frozenset((snapshot_id(a, topo), snapshot_id(b, topo))))


def snapshot_path(topo: Topology, a: str, b: str) -> str | None:
    """The snapshot's own path class for two endpoints."""
    p = snapshot_pair(topo, a, b)
    return p.path if p is not None else None


def route(topo: Topology, a_ref: str, b_ref: str) -> Route:
    """Route, class and narrowest link between two endpoints of one host."""
    a, b = topo.endpoint(a_ref), topo.endpoint(b_ref)
    g = topo.graph
    if a == b:
        return Route(a, b, (a,), None, "local", None, "unknown")
    nv = _nvlink_view(g)
    if a.startswith("gpu") and b.startswith("gpu") and nx.has_path(nv, a, b):
        nodes = tuple(nx.shortest_path(nv, a, b))
        edges = list(itertools.pairwise(nodes))
        via = "nvswitch" if FABRIC in nodes else "nvlink"
        count = min(g.edges[e].get("count", 0) for e in edges)
        path = snapshot_path(topo, a, b) or f"NV{count}"
        bw, src, neck = _narrowest(g, edges)
        return Route(a, b, nodes, path, via, bw, src, neck)
    if not nx.has_path(_pcie_view(g), a, b):
        return Route(a, b, (a, b), None, "pcie", None, "unknown", notes=("no PCIe route in the snapshot",))
    leg, bw, neck, notes = pcie_leg(topo, a, b)
    pcie_class = snapshot_path(topo, a, b)
    if pcie_class is None or pcie_class.startswith("NV"):
        pcie_class = structural_class(topo, a, b) or pcie_class
    source: BandwidthSource = "spec" if bw is not None else "unknown"
    return Route(a, b, tuple(leg), pcie_class, "pcie", bw, source, neck, tuple(notes))


def pcie_leg(topo: Topology, a: str, b: str) -> tuple[list[str], float | None, tuple[str, str] | None, list[str]]:
    """Tree route between two nodes over PCIe (and the inter-socket link), its narrowest known
    PCIe link (GB/s, spec) and notes that say what limits it or what is unknown. Cached."""
    legs: dict[tuple[str, str], Any] = topo.cache.setdefault("legs", {})
    if (a, b) in legs:
        nodes_c, bw_c, neck_c, notes_c = legs[(a, b)]
        return list(nodes_c), bw_c, neck_c, list(notes_c)
    g = topo.graph
    nodes = list(nx.shortest_path(_pcie_view(g), a, b))
    edges = list(itertools.pairwise(nodes))
    pcie_edges = [e for e in edges if g.edges[e].get("kind") == "pcie"]
    bw, _, neck = _narrowest(g, pcie_edges)
    notes: list[str] = []
    if bw is not None and _has_unknown(g, pcie_edges):
        notes.append("some PCIe links on the route have no recorded speed: the figure is an upper bound")
    if neck is not None:
        notes.append(bottleneck_note(g, neck))
    if any(g.edges[e].get("kind") == "smp" for e in edges):
        notes.append("crosses the inter-socket link (bandwidth not recorded by any source)")
    if bw is None and pcie_edges:
        notes.append("PCIe link speeds not recorded by this source")
    legs[(a, b)] = (tuple(nodes), bw, neck, tuple(notes))
    return nodes, bw, neck, notes


def _narrowest(
    g: nx.Graph, edges: list[tuple[str, str]]
) -> tuple[float | None, BandwidthSource, tuple[str, str] | None]:
    best: tuple[float, tuple[str, str]] | None = None
    for e in edges:
        bw = g.edges[e].get("bandwidth_gbps")
        if bw is None:
            continue
        if best is None or bw < best[0]:
            best = (bw, e)
    if best is None:
        return None, "unknown", None
    return best[0], "spec", best[1]


def bottleneck_note(g: nx.Graph, edge: tuple[str, str]) -> str:
    """Which PCIe link limits a route, and a warning when it looks like a VM's virtual bridge."""
    e = g.edges[edge]
    gen, width = e.get("gen"), e.get("width")
    note = f"narrowest link: PCIe Gen{gen} x{width} ({edge[0]} – {edge[1]})"
    if gen is not None and width is not None and gen <= 1 and width <= 1:
        note += "; a Gen1 x1 link on a GPU path is usually a VM's virtual bridge, not the real link"
    return note


def _has_unknown(g: nx.Graph, edges: list[tuple[str, str]]) -> bool:
    return any(g.edges[e].get("bandwidth_gbps") is None for e in edges)
