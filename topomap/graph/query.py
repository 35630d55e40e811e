"""Structural path queries over a Topology: tree parents, the NUMA node above a device, the PCIe leg
between two nodes with its narrowest link, the structural PCIe class. What the hardware lets data
use (NVLink usable, P2P) is evidence (:mod:`topomap.graph.evidence`); routes that ask it are in
:mod:`topomap.graph.routes`."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from topomap.base.notes import Note
from topomap.base.pathclass import classify_chains
from topomap.graph.nodeid import HOST, node_words
from topomap.graph.topology import Leg, Topology, natural_key
from topomap.model.facts import BandwidthSource

if TYPE_CHECKING:
    import networkx as nx


def tree_parents(topo: Topology) -> dict[str, str]:
    """Parent of each node in the host → NUMA → PCI tree (NVLink and SMP edges ignored)."""
    if topo.index.parents is not None:
        return topo.index.parents
    g = topo.light
    parent: dict[str, str] = {}
    seen = {HOST}
    frontier = [HOST]
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
    topo.index.parents = parent
    return parent


def numa_of(topo: Topology, node: str) -> str | None:
    """The NUMA node (graph id) above a device in the tree, or None."""
    parents = tree_parents(topo)
    cur: str | None = node
    seen: set[str] = set()
    while cur is not None and cur != HOST and cur not in seen:
        seen.add(cur)
        if topo.light.nodes[cur].get("kind") == "numa":
            return cur
        cur = parents.get(cur)
    return None


def structural_class(topo: Topology, a: str, b: str) -> str | None:
    """PCIe class of two devices computed from the graph's structure alone."""
    ca, cb = topo.chains.get(a), topo.chains.get(b)
    if not ca or not cb:
        return None
    return classify_chains(ca, cb, topo.locality.get(a), topo.locality.get(b))


def _pcie_view(g: nx.Graph) -> Any:
    import networkx as nx  # start-up: only a path search needs it (topomap.graph.light)

    return nx.subgraph_view(g, filter_edge=lambda u, v: g.edges[u, v].get("kind") != "nvlink")


def has_pcie_route(topo: Topology, a: str, b: str) -> bool:
    import networkx as nx  # start-up: only a path search needs it (topomap.graph.light)

    return a in topo.light and b in topo.light and bool(nx.has_path(_pcie_view(topo.graph), a, b))


def pcie_leg(topo: Topology, a: str, b: str) -> tuple[list[str], float | None, tuple[str, str] | None, list[str]]:
    """Tree route between two nodes over PCIe (and the inter-socket link), its narrowest known PCIe
    link (GB/s, spec) and notes that say what limits it or what is unknown. Cached per topology."""
    legs = topo.index.legs
    if (a, b) not in legs:
        legs[(a, b)] = _leg(topo, a, b)
    nodes, bw, neck, notes = legs[(a, b)]
    return list(nodes), bw, neck, list(notes)


def _leg(topo: Topology, a: str, b: str) -> Leg:
    import networkx as nx  # start-up: only a path search needs it (topomap.graph.light)

    g = topo.graph
    if not has_pcie_route(topo, a, b):
        return (a, b), None, None, (f"no PCIe route between {a} and {b} in the snapshot",)
    nodes = list(nx.shortest_path(_pcie_view(g), a, b))
    edges = list(itertools.pairwise(nodes))
    pcie_edges = [e for e in edges if g.edges[e].get("kind") == "pcie"]
    virtual = [e for e in pcie_edges if is_virtual_bridge(g, e)]
    real = [e for e in pcie_edges if e not in virtual]
    bw, _, neck = narrowest(g, real)
    notes: list[str] = []
    for e in virtual:
        said = "PCIe Gen1 x1 declared on {bridge} – {parent}: a VM's virtual bridge, not the real link; "
        said += "its rate is unknown (`topomap measure` settles it)"
        notes.append(Note(said, bridge=node_words(e[0]), parent=node_words(e[1])))
    if bw is not None and (virtual or any(g.edges[e].get("bandwidth_gbps") is None for e in real)):
        notes.append("some PCIe links on the route have no known speed: the figure is an upper bound")
    if neck is not None:
        notes.append(bottleneck_note(g, neck))
    for e in pcie_edges:
        note = g.edges[e].get("note")
        if note:
            notes.append(str(note))
    smp = [e for e in edges if g.edges[e].get("kind") == "smp"]
    if smp and all(g.edges[e].get("matrix_class") == "NODE" for e in smp):
        # the matrix calls these NUMA nodes NODE to each other: one socket's nodes (SNC/NPS), as the notes say
        notes.append("crosses between NUMA nodes the matrix puts on one socket (NODE; bandwidth not recorded)")
    elif smp:
        notes.append("crosses the inter-socket link (bandwidth not recorded by any source)")
    if bw is None and real:
        notes.append("PCIe link speeds not recorded by this source")
    return tuple(nodes), bw, neck, tuple(dict.fromkeys(notes))


def narrowest(
    g: nx.Graph, edges: list[tuple[str, str]]
) -> tuple[float | None, BandwidthSource, tuple[str, str] | None]:
    best: tuple[float, tuple[str, str]] | None = None
    for e in edges:
        bw = pcie_edge_bandwidth(g, e)
        if bw is None:
            continue
        if best is None or bw < best[0]:
            best = (bw, e)
    if best is None:
        return None, "unknown", None
    return best[0], g.edges[best[1]].get("bandwidth_source", "spec"), best[1]  # spec, or a topology file's


def is_virtual_bridge(g: nx.Graph, edge: tuple[str, str]) -> bool:
    """A PCIe link declared Gen1 x1 on a route between GPUs, NICs and memory: what hypervisors' emulated
    bridges report (IBM Cloud gx3d, QEMU root ports), never a real GPU or NIC link."""
    e = g.edges[edge]
    gen, width = e.get("gen"), e.get("width")
    return gen is not None and width is not None and gen <= 1 and width <= 1


def pcie_edge_bandwidth(g: nx.Graph, edge: tuple[str, str]) -> float | None:
    """The spec GB/s of one PCIe link; None where it is unknown: no speed recorded, or a VM's
    virtual bridge (Gen1 x1 declared). Routes and diagrams both ask this."""
    return None if is_virtual_bridge(g, edge) else g.edges[edge].get("bandwidth_gbps")


def bottleneck_note(g: nx.Graph, edge: tuple[str, str]) -> str:
    """Which PCIe link limits a route."""
    e = g.edges[edge]
    said = f"narrowest link: PCIe Gen{e.get('gen')} x{e.get('width')} " + "({end} – {parent})"
    return Note(said, end=node_words(edge[0]), parent=node_words(edge[1]))
