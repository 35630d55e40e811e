"""The machine as a graph: build it from a snapshot, query its structure, ask the path evidence.

``build(snapshot)`` gives a :class:`Topology`; :mod:`topomap.graph.evidence` answers each path
fact once (NVLink usable, P2P usable, nearest NIC, memory node); :mod:`topomap.graph.routes` gives
the route between two endpoints. Facts about one device take only a snapshot:
:mod:`topomap.model.facts`.
"""

from __future__ import annotations

from topomap.graph.build import Shapes, alike_topology, build
from topomap.graph.topology import FABRIC, Topology, gpu_node, natural_key, nic_node, snapshot_id, snapshot_pair

__all__ = [
    "FABRIC",
    "Shapes",
    "Topology",
    "alike_topology",
    "build",
    "gpu_node",
    "natural_key",
    "nic_node",
    "snapshot_id",
    "snapshot_pair",
]
