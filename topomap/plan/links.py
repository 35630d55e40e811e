"""The links a transfer's route crosses, as the resources concurrent transfers share (model).

A mapped arrow's route (:mod:`topomap.graph.routes`, or a network route through each end's NIC)
is a chain of graph nodes; each step between two of them is a :class:`Hop`:

- a PCIe link, keyed by its two ends *in the direction the data moves* (PCIe is full duplex, so a
  load and a write-back do not share a link), at the link's spec rate, or unknown
  (:func:`topomap.graph.query.pcie_edge_bandwidth`: no speed recorded, a VM's virtual bridge);
- a NIC's port, one way out and one way in, at its line rate (arrows through one NIC share it);
- an NVLink bundle at its rate; the inter-socket link, whose rate no source records;
- the step from a NUMA node's memory into a host bridge: *above the root ports*. A host bridge or
  root complex is not one x16 link: each root port has its own link, and what all of them share is
  host memory, whose bandwidth no snapshot records (``kind`` "host-memory", never a limit here; the
  plan says so and names the measurement that settles it).

Transfers share exactly the hops their routes have in common; :func:`fair_rates` splits each
shared hop of known rate max-min fairly (water-filling) and leaves every other hop alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from topomap.base.links import nic_bandwidth_gbps
from topomap.graph.nodeid import bare_id, nic_name, nic_node, node_kind, split_hop
from topomap.graph.query import pcie_edge_bandwidth
from topomap.plan.result import Hop

if TYPE_CHECKING:
    from topomap.graph import Topology

HOST_MEMORY_SETTLE = "nvbandwidth -b host_to_all_memcpy_ce (and all_to_host_memcpy_ce for writes)"
_EPS = 1e-9


def _nic_hop(topo: Topology | None, ref: str, node: str, way: str) -> Hop:
    nic = None if topo is None else next((n for n in topo.snapshot.nics if nic_node(n) == node), None)
    rate = None if nic is None or nic.speed_gbit_s is None else nic_bandwidth_gbps(nic.speed_gbit_s)
    return Hop(f"{ref}>{way}", f"NIC {nic_name(node)} ({way}) on {split_hop(ref)[0]}", rate, "nic")


def route_hops(topos: dict[str, Topology | None], route: Sequence[str]) -> tuple[Hop, ...]:
    """The hops of one route, in the direction the data moves (see the module docstring)."""
    out: list[Hop] = []
    for u, v in itertools.pairwise(route):
        hu, nu = split_hop(u)
        hv, nv = split_hop(v)
        if hu != hv or not nu or not nv:  # leaving one host for another: the NICs' ports
            if node_kind(nu) == "nic":
                out.append(_nic_hop(topos.get(hu), u, nu, "out"))
            if node_kind(nv) == "nic":
                out.append(_nic_hop(topos.get(hv), v, nv, "in"))
            continue
        topo = topos.get(hu)
        if topo is None or not topo.graph.has_edge(nu, nv):
            out.append(Hop(f"{u}>{v}", f"{bare_id(nu)} – {bare_id(nv)}", None, "unknown"))
            continue
        hop = _graph_hop(topo, u, v, nu, nv)
        out.append(Hop(hop.key, f"{hop.what} on {hu}", hop.gbps, hop.kind))
    return tuple(out)


def _graph_hop(topo: Topology, u: str, v: str, nu: str, nv: str) -> Hop:
    g = topo.graph
    edge = g.edges[nu, nv]
    kind = edge.get("kind")
    what = f"{bare_id(nu)} – {bare_id(nv)}"
    if kind == "pcie":
        gen, width = edge.get("gen"), edge.get("width")
        name = f"PCIe Gen{gen} x{width} {what}" if gen and width else f"PCIe link {what}"
        return Hop(f"{u}>{v}", name, pcie_edge_bandwidth(g, (nu, nv)), "pcie")
    kinds = {g.nodes[nu].get("kind"), g.nodes[nv].get("kind")}
    if "numa" in kinds and kind != "smp":
        numa = u if g.nodes[nu].get("kind") == "numa" else v
        return Hop(f"{numa}>memory", f"host memory of {bare_id(nu if numa == u else nv)}", None, "host-memory")
    if kind == "smp":
        return Hop(f"{u}>{v}", f"inter-socket link {what}", None, "smp")
    rate = edge.get("bandwidth_gbps")
    return Hop(f"{u}>{v}", f"{kind or 'link'} {what}", rate if isinstance(rate, float | int) else None, str(kind))


def fair_rates(
    caps: Sequence[float | None], hops: Sequence[Sequence[Hop]]
) -> tuple[list[float | None], dict[str, list[int]]]:
    """Each transfer's rate when all of them move data at once: max-min fair shares (water-filling)
    of every hop of known rate that two or more of them cross, each at most its own ``caps`` (its
    mapped bandwidth; None: unknown, and it takes no share). Returns the rates and, per hop key,
    the transfers that share it (two or more)."""
    users: dict[str, list[int]] = {}
    rate_of: dict[str, float | None] = {}
    limits: set[str] = set()  # a stated rate (storage) limits even one transfer
    for i, hs in enumerate(hops):
        for h in dict.fromkeys(hs):
            users.setdefault(h.key, []).append(i)
            rate_of[h.key] = h.gbps if h.kind != "host-memory" else None
            limits |= {h.key} if h.kind == "storage" else set()
    shared = {k: v for k, v in users.items() if len(v) > 1}
    left = {k: r for k, r in ((k, rate_of[k]) for k in shared.keys() | limits) if r is not None}
    members = {k: users[k] for k in left}
    rate = [0.0 if c is not None else None for c in caps]
    active = {i for i, c in enumerate(caps) if c is not None}
    while active:
        inc = min((caps[i] or 0.0) - (rate[i] or 0.0) for i in active)
        counts = {k: sum(1 for i in members[k] if i in active) for k in left}
        for k, n in counts.items():
            if n:
                inc = min(inc, left[k] / n)
        inc = max(inc, 0.0)
        for i in active:
            rate[i] = (rate[i] or 0.0) + inc
        full = set()
        for k, n in counts.items():
            left[k] -= inc * n
            if n and left[k] <= _EPS * max(1.0, rate_of[k] or 1.0):
                full |= {i for i in members[k] if i in active}
        full |= {i for i in active if (caps[i] or 0.0) - (rate[i] or 0.0) <= _EPS * max(1.0, caps[i] or 1.0)}
        if not full:  # cannot happen (each round fills a hop or a transfer); never loop forever
            break
        active -= full
    return rate, shared
