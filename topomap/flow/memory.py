"""Host memory and storage placements on one host: which NUMA node serves them, whether a
``memory@numaN`` the flow names exists, and the path class between a GPU and a memory node.

The memory node serving a GPU is :func:`topomap.graph.evidence.memory_node` (one home for that fact).
"""

from __future__ import annotations

import re

from topomap.base.notes import Note
from topomap.flow.spec import Flow, FlowError, Placement
from topomap.graph import Topology, natural_key
from topomap.graph.evidence import memory_node
from topomap.graph.nodeid import numa_id, numa_unknown
from topomap.model.facts import SETTLE


def placement_node(topo: Topology, p: Placement, near: str | None, notes: list[str]) -> str:
    """Graph node of a memory/storage placement: the named NUMA node (map_flow checked it exists),
    or the one serving GPU ``near``, or the lowest recorded one; ``notes`` says which was taken."""
    if p.numa is not None:
        nodes = numa_nodes(topo, p.numa)
        if not nodes:
            raise FlowError(f"{p.label()}: {_no_numa(topo, p.numa)}")
        mine = memory_node(topo, near) if near else None
        return mine if mine in nodes else nodes[0]
    local = memory_node(topo, near) if near else None
    what = "storage" if p.kind == "storage" else "host memory"
    if local is not None and near is not None and not numa_unknown(local):
        notes.append(
            Note(what + " taken on the NUMA node of {gpu} ({numa}); pin buffers there", p.host, gpu=near, numa=local)
        )
    elif local is not None and near is not None:
        settle = SETTLE["numa"].replace("{", "{{").replace("}", "}}")
        said = "{gpu}'s NUMA node is not recorded by this source; pin host buffers on the GPU's node: "
        notes.append(Note(said + settle + " says which", p.host, gpu=near))
    else:  # no GPU to be near: the lowest NUMA node the source records (an unrecorded one last)
        numas = sorted(
            (n for n, dd in topo.graph.nodes(data=True) if dd.get("kind") == "numa"),
            key=lambda n: (numa_unknown(n), natural_key(n)),
        )
        local = numas[0] if numas else "host"
    if p.kind == "storage":
        notes.append("storage read/write rate not modelled: staged through host memory")
    return local


def as_memory(p: Placement) -> Placement:
    """A placement on a whole host, taken as that host's memory; other placements as they are."""
    return Placement(host=p.host, kind="memory") if p.kind == "host" else p


def numa_nodes(topo: Topology, numa: int) -> list[str]:
    """The graph node of NUMA node ``numa`` (``numa0``), as a list: empty where the graph has none."""
    return [numa_id(numa)] if numa_id(numa) in topo.graph else []


def _recorded_numa(topo: Topology) -> list[int]:
    """The NUMA node numbers the snapshot records (none for a source without NUMA affinity)."""
    found = (re.fullmatch(r"numa(\d+)", str(n)) for n in topo.graph)
    return sorted({int(m.group(1)) for m in found if m is not None})


def _no_numa(topo: Topology, numa: int) -> str:
    """Why ``memory@numaN`` names nothing: the source records no NUMA node, or not this one."""
    known = _recorded_numa(topo)
    own = next((g for g in topo.snapshot.gpus if g.gpu_numa_node == numa), None)
    if own is not None:
        return (
            f"NUMA node {numa} is gpu{own.index}'s own memory (its GPU NUMA ID), not host memory: "
            f"a step there is on gpu{own.index}"
        )
    if not known:
        return f"this source ({topo.snapshot.source.kind}) does not record NUMA nodes, so NUMA node {numa} is unknown"
    return f"the snapshot has no NUMA node {numa} (it has {', '.join(map(str, known))})"


def check_numa_places(flow: Flow, topos: dict[str, Topology | None]) -> None:
    """Every ``HOST:memory@numaN`` names a NUMA node its snapshot records; refused with the flow's line."""
    for st in flow.steps.values():
        for p in st.placements:
            topo = topos.get(p.host)
            if p.numa is None or topo is None or numa_nodes(topo, p.numa):
                continue
            line = flow.line(f"$.steps.{st.name}.on")
            other = "a NUMA node it has" if _recorded_numa(topo) else f"a snapshot that records them: {SETTLE['numa']}"
            raise FlowError(
                f"{flow.path}:{line}: step {st.name}: {p.label()}: {_no_numa(topo, p.numa)}",
                hint=f"place it on {p.host}:memory (the memory nearest each GPU), or use {other}",
            )


def host_path_class(topo: Topology, gid: str, mem: str) -> str | None:
    """Path class between a GPU and a host memory node: PHB on the GPU's own NUMA node, SYS across the
    inter-socket link (NODE where the matrix puts the two nodes on one socket); None (unknown) when
    the source records no NUMA node for either end."""
    local = memory_node(topo, gid)
    if local is None or numa_unknown(local) or numa_unknown(mem) or topo.graph.nodes[mem].get("kind") != "numa":
        return None
    if local == mem:
        return "PHB"
    g = topo.graph  # the matrix may put two recorded NUMA nodes on one socket (NODE, H200 NCHC)
    return "NODE" if g.has_edge(local, mem) and g.edges[local, mem].get("matrix_class") == "NODE" else "SYS"
