"""Which device of B stands for which of A: by index, or by structure (the renumbering that makes the
two typed GPU/NIC graphs isomorphic, so renumbered but identical machines diff as equal)."""

from __future__ import annotations

import networkx as nx
from networkx.algorithms import isomorphism

from topomap.diff.results import Match
from topomap.model.snapshot import Snapshot


def _typed_graph(s: Snapshot) -> nx.Graph:
    g = nx.Graph()
    for x in s.gpus:
        g.add_node(f"gpu{x.index}", kind="gpu", numa=x.numa_node)
    for n in s.nics:
        if n.rdma:
            g.add_node(f"nic{n.index}", kind="nic")
    for p in s.pairs:
        if p.a in g and p.b in g:
            g.add_edge(p.a, p.b, path=p.path)
    return g


def match_devices(a: Snapshot, b: Snapshot, how: Match) -> tuple[dict[str, str], list[str], Match]:
    """A id → B id, the notes, and how they were matched. ``structure``: an isomorphism of the typed
    GPU/NIC graphs (identity when it is one); none existing, index with a note."""
    ids_a = [f"gpu{x.index}" for x in a.gpus] + [f"nic{n.index}" for n in a.nics]
    ids_b = set([f"gpu{x.index}" for x in b.gpus] + [f"nic{n.index}" for n in b.nics])
    by_index = {i: i for i in ids_a if i in ids_b}
    if how == "index":
        return by_index, [], "index"
    ga, gb = _typed_graph(a), _typed_graph(b)
    if set(ga.nodes) == set(gb.nodes) and all(
        gb.has_edge(u, v) and gb.edges[u, v]["path"] == d["path"] for u, v, d in ga.edges(data=True)
    ):
        return by_index, [], "structure"
    gm = isomorphism.GraphMatcher(
        ga,
        gb,
        node_match=lambda x, y: (
            x["kind"] == y["kind"]
            and (x.get("numa") is None or y.get("numa") is None or x.get("numa") == y.get("numa"))
        ),
        edge_match=lambda x, y: x.get("path") == y.get("path"),
    )
    if gm.is_isomorphic():
        mapping = dict(sorted(gm.mapping.items()))
        for n in a.nics:
            if not n.rdma and f"nic{n.index}" in ids_b:
                mapping[f"nic{n.index}"] = f"nic{n.index}"
        return mapping, [], "structure"
    return by_index, ["no renumbering makes the two machines' structures equal: compared by index"], "index"
