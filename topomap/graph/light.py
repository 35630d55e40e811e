"""The machine graph as it is built: nodes and edges in plain dicts, laid out as networkx lays out an
undirected graph (``_node``: node → attributes; ``_adj``: node → neighbour → the edge's attributes,
one dict shared by both ends; ``graph``: the graph's own attributes), with the few operations that
building it and the views without a path search (``show``) use, in networkx's own order.

Why not a networkx graph from the start: importing networkx takes longer than the rest of `topomap
show` together (issue 34: show was 9.7× `python -c pass`, the goal 8×). :attr:`Topology.graph`
(topomap.graph.topology) gives the networkx graph over these same dicts when a view asks for it,
without a copy, so every other view reads the graph it always read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from topomap.graph.nodeid import HOST

Attrs = dict[str, Any]


class Light:
    """An undirected graph in networkx's layout (see the module docstring)."""

    __slots__ = ("_adj", "_node", "graph")

    def __init__(self) -> None:
        self._node: dict[str, Attrs] = {}
        self._adj: dict[str, dict[str, Attrs]] = {}
        self.graph: Attrs = {}

    # --- building (networkx's add_node / add_edge: attributes merged into what is there) ---------

    def add_node(self, n: str, **attr: Any) -> None:
        if n not in self._node:
            self._adj[n] = {}
            self._node[n] = attr
        else:
            self._node[n].update(attr)

    def add_edge(self, u: str, v: str, **attr: Any) -> None:
        for n in (u, v):
            if n not in self._node:
                self._adj[n] = {}
                self._node[n] = {}
        data = self._adj[u].get(v, {})
        data.update(attr)
        self._adj[u][v] = data
        self._adj[v][u] = data

    def relabelled(self, label: str) -> Light:
        """This graph with its own host node labelled ``label``: every other node, every edge and their
        attribute dicts shared (hosts alike share one graph; topomap.graph.build.Shapes)."""
        h = Light()
        h.graph = self.graph
        h._node = {**self._node, HOST: {**self._node[HOST], "label": label}}
        h._adj = self._adj
        return h

    # --- reading ------------------------------------------------------------------------------

    def __contains__(self, n: object) -> bool:
        try:
            return n in self._node
        except TypeError:
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self._node)

    def __len__(self) -> int:
        return len(self._node)

    def has_edge(self, u: str, v: str) -> bool:
        return u in self._adj and v in self._adj[u]

    def neighbors(self, n: str) -> Iterator[str]:
        return iter(self._adj[n])

    def degree(self, n: str) -> int:
        return len(self._adj[n]) + (1 if n in self._adj[n] else 0)

    @property
    def nodes(self) -> Nodes:
        return Nodes(self._node)

    @property
    def edges(self) -> Edges:
        return Edges(self._adj)


class Nodes:
    """``g.nodes[n]`` (its attributes), ``g.nodes(data=True)``, iteration and ``in``."""

    __slots__ = ("_node",)

    def __init__(self, node: dict[str, Attrs]) -> None:
        self._node = node

    def __getitem__(self, n: Any) -> Attrs:  # Any: as networkx takes it (a key it holds, or KeyError)
        return self._node[n]

    def __iter__(self) -> Iterator[str]:
        return iter(self._node)

    def __contains__(self, n: object) -> bool:
        return n in self._node

    def __len__(self) -> int:
        return len(self._node)

    def __call__(self, data: bool = False) -> list[Any]:
        return list(self._node.items()) if data else list(self._node)


class Edges:
    """``g.edges[u, v]`` (its attributes), ``g.edges(data=True)`` and ``g.edges(n, data=True)``: each
    edge once, in networkx's order (by node, then by neighbour, an edge where its first end is met)."""

    __slots__ = ("_adj",)

    def __init__(self, adj: dict[str, dict[str, Attrs]]) -> None:
        self._adj = adj

    def __getitem__(self, e: tuple[str, str]) -> Attrs:
        u, v = e
        return self._adj[u][v]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return ((u, v) for u, v, _d in self._each(None))

    def __call__(self, nbunch: str | None = None, data: bool = False) -> list[Any]:
        if data:
            return list(self._each(nbunch))
        return [(u, v) for u, v, _d in self._each(nbunch)]

    def _each(self, nbunch: str | None) -> Iterator[tuple[str, str, Attrs]]:
        seen: set[str] = set()
        nodes = self._adj.items() if nbunch is None else [(nbunch, self._adj[nbunch])] if nbunch in self._adj else []
        for n, nbrs in nodes:
            for nbr, d in nbrs.items():
                if nbr not in seen:
                    yield n, nbr, d
            seen.add(n)
