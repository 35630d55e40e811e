"""The machine as a graph (build, infer, query) and the evidence functions every view asks.

``topomap.graph.build(snapshot)`` gives a :class:`Topology`; ``topomap.graph.evidence`` answers
each fact once (NVLink usable, P2P usable, fabric ready, nearest NIC, bundle bandwidth, memory node).
"""

from __future__ import annotations

from topomap.graph.build import build
from topomap.graph.query import (
    Route,
    bottleneck_note,
    numa_of,
    pcie_leg,
    route,
    structural_class,
    tree_parents,
)
from topomap.graph.topology import (
    FABRIC,
    BandwidthSource,
    Topology,
    gpu_node,
    natural_key,
    nic_node,
    snapshot_id,
    snapshot_pair,
    snapshot_path,
)

__all__ = [
    "FABRIC",
    "BandwidthSource",
    "Route",
    "Topology",
    "bottleneck_note",
    "build",
    "gpu_node",
    "natural_key",
    "nic_node",
    "numa_of",
    "pcie_leg",
    "route",
    "snapshot_id",
    "snapshot_pair",
    "snapshot_path",
    "structural_class",
    "tree_parents",
]
