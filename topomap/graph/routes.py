"""Routes between two endpoints of one host: the NVLink route where the evidence says NVLink is
usable, else the PCIe leg, with its class and narrowest link (so it never disagrees with map or
check)."""

from __future__ import annotations

from dataclasses import dataclass

from topomap.base.links import pcie_class_of
from topomap.graph.evidence import nvlink, pcie_path_class
from topomap.graph.nodeid import node_kind
from topomap.graph.query import pcie_leg
from topomap.graph.topology import Topology, snapshot_path
from topomap.model.facts import BandwidthSource


@dataclass(frozen=True)
class Route:
    """How data gets from one endpoint to another on one host."""

    a: str
    b: str
    nodes: tuple[str, ...]
    path: str | None  # NV<n>, PIX … SYS, or None when unknown
    via: str  # "nvlink", "nvswitch", "pcie", "local"
    bandwidth_gbps: float | None
    bandwidth_source: BandwidthSource
    bottleneck: tuple[str, str] | None = None
    notes: tuple[str, ...] = ()


def route(topo: Topology, a_ref: str, b_ref: str) -> Route:
    """Route, class and narrowest link between two endpoints of one host. Between two GPUs the
    NVLink route is taken only where the evidence says NVLink is usable; otherwise PCIe."""
    a, b = topo.endpoint(a_ref), topo.endpoint(b_ref)
    if a == b:
        return Route(a, b, (a,), None, "local", None, "unknown")
    if node_kind(a) == "gpu" and node_kind(b) == "gpu":
        nv = nvlink(topo, a, b)
        if nv.usable.yes:
            bw = nv.bandwidth
            return Route(a, b, nv.nodes, nv.path, nv.via, bw.gbps, bw.source, None, (bw.basis,) if bw.basis else ())
    leg, bw_pcie, neck, notes = pcie_leg(topo, a, b)
    pcie_class = pcie_path_class(topo, a, b)
    if pcie_class is None:
        pcie_class = pcie_class_of(snapshot_path(topo, a, b))
    source: BandwidthSource = "unknown"
    if bw_pcie is not None:  # the narrowest link's own kind: spec, or a static topology file's placeholder
        source = topo.graph.edges[neck].get("bandwidth_source", "spec") if neck is not None else "spec"
    return Route(a, b, tuple(leg), pcie_class, "pcie", bw_pcie, source, neck, tuple(notes))
