"""The Topology: a machine as a graph (built light, read through networkx where a view searches it),
the snapshot it came from, and typed indexes
built once on first use (pairs by ids, NIC ids, tree parents, PCIe legs, nearest NICs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from topomap.graph.light import Light
from topomap.graph.nodeid import FABRIC as FABRIC
from topomap.graph.nodeid import gpu_node as gpu_node
from topomap.graph.nodeid import nic_name
from topomap.graph.nodeid import nic_node as nic_node
from topomap.model.facts import NicChoice
from topomap.model.snapshot import Gpu, Pair, Snapshot

if TYPE_CHECKING:
    import networkx as nx

#: A PCIe leg: the nodes, the narrowest known bandwidth (GB/s), the narrowest edge, notes.
Leg = tuple[tuple[str, ...], float | None, tuple[str, str] | None, tuple[str, ...]]


@dataclass
class Indexes:
    """Derived lookups, each built once per topology by the function that owns it."""

    pairs: dict[frozenset[str], Pair] | None = None
    nic_ids: dict[str, str] | None = None  # graph node → snapshot id
    nic_nodes: dict[str, str] | None = None  # snapshot id → graph node
    gpus: dict[str, Gpu] | None = None  # snapshot id → Gpu
    parents: dict[str, str] | None = None
    legs: dict[tuple[str, str], Leg] = field(default_factory=dict)
    nearest_nic: dict[str, NicChoice] = field(default_factory=dict)


@dataclass
class Topology:
    """A machine as a graph, with the snapshot it came from."""

    snapshot: Snapshot
    light: Light  # the graph's nodes and edges (topomap.graph.light); ``graph``: the same as networkx's
    chains: dict[str, list[str]] = field(default_factory=dict)  # device → PCI chain (host bridge … device)
    locality: dict[str, object] = field(default_factory=dict)  # device → NUMA key
    inferred: bool = False
    notes: list[str] = field(default_factory=list)
    nvlink_unresolved: set[str] = field(default_factory=set)  # GPUs with active links to peers the source omits
    index: Indexes = field(default_factory=Indexes, repr=False)
    _nx: Any = field(default=None, repr=False, compare=False)

    @property
    def graph(self) -> nx.Graph:
        """The machine as a networkx graph over the same node and edge dicts as :attr:`light` (no
        copy: a change through either is seen by both), made on first use."""
        if self._nx is None:
            import networkx as nx  # start-up: `show` and the light views never ask for it (issue 34)

            g = nx.Graph()
            # networkx's own layout (tests/graph/test_graph_layout.py): set before any view of it is made
            g.graph = self.light.graph
            g._node = self.light._node
            g._adj = self.light._adj
            self._nx = g
        return self._nx

    def endpoint(self, ref: str) -> str:
        """Graph node of a snapshot id (``gpu3``, ``nic2``) or a graph id."""
        if ref in self.light:
            return ref
        if self.index.nic_nodes is None:
            self.index.nic_nodes = {f"nic{n.index}": nic_node(n) for n in self.snapshot.nics}
        if ref in self.index.nic_nodes:
            return self.index.nic_nodes[ref]
        raise KeyError(ref)

    def gpu(self, gid: str) -> Gpu | None:
        """The snapshot's GPU of a graph/snapshot id (``gpu3``), or None."""
        if self.index.gpus is None:
            self.index.gpus = {gpu_node(g): g for g in self.snapshot.gpus}
        return self.index.gpus.get(gid)


def natural_key(s: str) -> tuple[str, int, str]:
    """Sort gpu2 before gpu10."""
    head = s.rstrip("0123456789")
    tail = s[len(head) :]
    return head, int(tail) if tail and len(tail) <= 18 else (-1 if not tail else 10**18), s


def snapshot_id(node: str, topo: Topology) -> str:
    """Snapshot id (``nic3``) of a graph node (``nic:mlx5_3``)."""
    if nic_name(node) is None:
        return node
    if topo.index.nic_ids is None:
        topo.index.nic_ids = {nic_node(n): f"nic{n.index}" for n in topo.snapshot.nics}
    return topo.index.nic_ids.get(node, node)


def snapshot_pair(topo: Topology, a: str, b: str) -> Pair | None:
    """The snapshot's record of two endpoints (graph or snapshot ids)."""
    if topo.index.pairs is None:
        topo.index.pairs = {frozenset((p.a, p.b)): p for p in topo.snapshot.pairs}
    return topo.index.pairs.get(frozenset((snapshot_id(a, topo), snapshot_id(b, topo))))


def snapshot_path(topo: Topology, a: str, b: str) -> str | None:
    """The snapshot's own path class for two endpoints."""
    p = snapshot_pair(topo, a, b)
    return p.path if p is not None else None
