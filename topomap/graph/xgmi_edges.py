"""XGMI edges of an AMD host's graph (issue 35): one edge per XGMI-joined GPU pair, with its link count,
hops and bandwidth from :func:`topomap.model.xgmi.xgmi_bandwidth`. XGMI is a mesh (MI300X: every GPU to
every other), not a switch: no hub node."""

from __future__ import annotations

from topomap.base.links import is_xgmi
from topomap.graph.nodeid import gpu_node
from topomap.graph.topology import Topology
from topomap.model.xgmi import xgmi_bandwidth, xgmi_links


def add_xgmi_edges(topo: Topology) -> None:
    """Add an ``xgmi`` edge for every pair of the snapshot whose path is XGMI."""
    snap, g = topo.snapshot, topo.light
    by_id = {gpu_node(x): x for x in snap.gpus}
    for p in snap.pairs:
        if not is_xgmi(p.path) or p.a not in by_id or p.b not in by_id or p.a not in g or p.b not in g:
            continue
        a, b = by_id[p.a], by_id[p.b]
        if a.lost or b.lost:
            continue
        bw = xgmi_bandwidth(p, a, b, snap)
        links, _ = xgmi_links(p, a, snap)
        g.add_edge(
            p.a,
            p.b,
            kind="xgmi",
            count=links or 0,
            hops=p.xgmi.hops if p.xgmi is not None else None,
            generation=None,
            bandwidth_gbps=bw.gbps,
            bandwidth_source=bw.source,
            bandwidth_basis=bw.basis,
            bandwidth_tag=bw.tag,
            lower_bound=bw.lower_bound,
        )


def xgmi_summary(topo: Topology, gid: str) -> str | None:
    """One line for an AMD GPU's XGMI in `show`: the peers XGMI joins, links and rate; None where the
    source records neither XGMI nor a path class (not known)."""
    g = topo.light
    peers = sorted((v for v in g.neighbors(gid) if g.edges[gid, v].get("kind") == "xgmi"), key=lambda x: int(x[3:]))
    if not peers:
        return "no XGMI (PCIe only)" if any(p.path is not None for p in topo.snapshot.pairs) else None
    rates = {(g.edges[gid, v].get("bandwidth_gbps"), g.edges[gid, v].get("bandwidth_source")) for v in peers}
    hops = sorted({g.edges[gid, v].get("hops") or 1 for v in peers})
    far = (
        f" ({sum(1 for v in peers if (g.edges[gid, v].get('hops') or 1) > 1)} over {max(hops)} hops)"
        if max(hops) > 1
        else ""
    )
    if len(rates) == 1:
        gbps, source = next(iter(rates))
        rate = f", {gbps:g} GB/s per pair ({source})" if gbps is not None else ", rate unknown"
    else:
        rate = ", rates differ per pair"
    return f"XGMI to {len(peers)} GPU(s){far}{rate}"


def xgmi_reason(topo: Topology, a: str, b: str) -> str:
    """Why two GPUs are on XGMI, in words: links and hops of their edge."""
    e = topo.light.edges[a, b]
    count, hops = e.get("count"), e.get("hops")
    many = f", {hops} XGMI hops (through other GPUs' links)" if hops and hops > 1 else ""
    return (f"XGMI, {count} link(s) direct" if count else "XGMI (link count not recorded)") + many
