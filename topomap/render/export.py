"""Topology → GraphML and node-link JSON for other graph tools (Gephi, yEd, networkx users)."""

from __future__ import annotations

import io
import json
from typing import Any

import networkx as nx

from topomap.graph import Topology
from topomap.render.text import visible


def combined_graph(topos: list[Topology]) -> nx.Graph:
    """One graph for several hosts: node ids prefixed with the host name when there are several."""
    if len(topos) == 1:
        return topos[0].graph
    out = nx.Graph()
    for k, t in enumerate(topos):
        prefix = (t.snapshot.host.hostname or f"host{k}") + "/"
        out.update(nx.relabel_nodes(t.graph, {n: prefix + n for n in t.graph.nodes}, copy=True))
    return out


def xml_safe(text: str) -> str:
    """Text GraphML can hold: control characters written visibly as \\xNN by the one rule
    (:func:`topomap.render.text.visible`), tab, newline and return kept as data. A name from a paste can
    carry them (issue 14: GraphML was invalid XML)."""
    return visible(text, keep="\t\n\r")


def _value(v: object) -> object:
    return xml_safe(v) if isinstance(v, str) else v


def _scalar_only(g: nx.Graph) -> nx.Graph:
    """GraphML holds scalars only: drop None, keep bool/int/float/str; strings made XML-safe."""
    h = nx.Graph()
    for n, d in g.nodes(data=True):
        h.add_node(_value(n), **{k: _value(v) for k, v in d.items() if isinstance(v, (bool, int, float, str))})
    for u, v, d in g.edges(data=True):
        h.add_edge(
            _value(u),
            _value(v),
            **{k: _value(val) for k, val in d.items() if isinstance(val, (bool, int, float, str))},
        )
    return h


def graphml(topos: list[Topology]) -> bytes:
    buf = io.BytesIO()
    g = _scalar_only(combined_graph(topos))
    h = nx.Graph()
    h.add_nodes_from(sorted(g.nodes(data=True)))
    h.add_edges_from(sorted((min(u, v), max(u, v), d) for u, v, d in g.edges(data=True)))
    nx.write_graphml(h, buf)
    return buf.getvalue()


def node_link_json(topos: list[Topology]) -> bytes:
    g = combined_graph(topos)
    data: dict[str, Any] = nx.node_link_data(g, edges="edges")
    data["nodes"] = sorted(data["nodes"], key=lambda n: str(n["id"]))
    data["edges"] = sorted(data["edges"], key=lambda e: (str(e["source"]), str(e["target"])))
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
