"""The networkx layout graph/build.py relies on (issue 33 item 8): a host of a shape already built gets
a graph that shares every node and edge of the first host's, with only its host node's label its own,
by setting ``Graph._node`` and ``Graph._adj`` (40x cheaper than a copy). Those are private, so
pyproject.toml bounds networkx to the versions this test passed on; when it fails on a new networkx,
the bound must not be raised until graph/build.py's ``_relabelled`` is changed."""

from __future__ import annotations

import msgspec
import networkx as nx

from tests.conftest import SAMPLES
from topomap.graph import Shapes, build
from topomap.model.codec import load_snapshot

SNAP = SAMPLES / "snapshots" / "hgx-h200-8gpu-10nic.json"


def _two_hosts() -> tuple[nx.Graph, nx.Graph]:
    snap = load_snapshot(SNAP)
    a = msgspec.structs.replace(snap, host=msgspec.structs.replace(snap.host, hostname="node-a"))
    b = msgspec.structs.replace(snap, host=msgspec.structs.replace(snap.host, hostname="node-b"))
    shapes = Shapes()
    ga, gb = shapes.build(a).graph, shapes.build(b).graph
    assert len(shapes) == 1  # one shape, built once
    return ga, gb


def test_a_second_host_of_a_shape_shares_the_graph_but_its_own_host_label() -> None:
    ga, gb = _two_hosts()
    assert ga.nodes["host"]["label"] == "node-a" and gb.nodes["host"]["label"] == "node-b"
    assert ga is not gb and ga.graph is gb.graph
    shared = [n for n in ga if n != "host"]
    assert shared and all(ga.nodes[n] is gb.nodes[n] for n in shared)  # the attribute dicts themselves
    assert all(ga.edges[u, v] is gb.edges[u, v] for u, v in ga.edges)


def test_every_public_view_of_the_relabelled_graph_sees_the_shared_layout() -> None:
    """What the views ask of a graph (nodes, edges, adjacency, degree, paths, subgraphs, copies) answers
    on the second host exactly as on a graph built from scratch: networkx reads ``_node``/``_adj``."""
    ga, gb = _two_hosts()
    fresh = build(
        msgspec.structs.replace(
            load_snapshot(SNAP), host=msgspec.structs.replace(load_snapshot(SNAP).host, hostname="node-b")
        )
    ).graph
    assert dict(gb.nodes(data=True)) == dict(fresh.nodes(data=True))
    assert sorted(gb.edges(data="kind")) == sorted(fresh.edges(data="kind"))
    assert {n: set(nb) for n, nb in gb.adj.items()} == {n: set(nb) for n, nb in fresh.adj.items()}
    assert dict(gb.degree) == dict(fresh.degree) and gb.number_of_edges() == fresh.number_of_edges()
    assert nx.shortest_path(gb, "gpu0", "gpu7") == nx.shortest_path(fresh, "gpu0", "gpu7")
    sub = gb.subgraph(["host", *list(gb.neighbors("host"))])
    assert sub.nodes["host"]["label"] == "node-b" and set(sub) == set(fresh.subgraph(sub.nodes))
    assert gb.copy().nodes["host"]["label"] == "node-b" and ga.nodes["host"]["label"] == "node-a"


def test_networkx_keeps_nodes_and_adjacency_in_plain_dicts_read_by_its_views() -> None:
    """The private layout itself: ``Graph()`` holds ``_node`` and ``_adj`` dicts, and views made after
    they are set read the new ones (networkx resets its cached views when they are assigned)."""
    g = nx.Graph()
    assert type(g._node) is dict and type(g._adj) is dict
    g._node = {"x": {"label": "X"}, "y": {}}
    g._adj = {"x": {"y": {"kind": "pcie"}}, "y": {"x": {"kind": "pcie"}}}
    assert g.nodes["x"]["label"] == "X" and list(g.edges(data="kind")) == [("x", "y", "pcie")]
    assert g.has_edge("y", "x") and dict(g.degree) == {"x": 1, "y": 1}
