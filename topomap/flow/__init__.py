"""The flow file, its work block, binding hosts to snapshots, mapping arrows onto topologies.

    flow = read_flow(path)                  # steps, arrows and the work block (flow.work), checked
    topos = bind_hosts(flow, files)         # each flow host → its (loaded) snapshot's topology
    fmap = map_flow(flow, topos)            # every arrow: medium, route, class, bandwidth

Reading machine files named by path is the library's (``topomap.api.bind_snapshots``, which the CLI uses); here the
snapshots arrive loaded. Modules: spec (the types), reader, work, binding, mapping with its rules
(onehost, crosshost, memory, decision).
"""

from __future__ import annotations

from topomap.flow.binding import GivenSnapshot, SnapshotFile, bind, bind_hosts, claim_hosts, gpus_of
from topomap.flow.mapping import FlowMap, MappedArrow, map_flow
from topomap.flow.reader import parse_flow, read_flow
from topomap.flow.spec import Flow, FlowArrow, FlowError, Placement, Unit, Work
from topomap.flow.work import work_of

__all__ = [
    "Flow",
    "FlowArrow",
    "FlowError",
    "FlowMap",
    "GivenSnapshot",
    "MappedArrow",
    "Placement",
    "SnapshotFile",
    "Unit",
    "Work",
    "bind",
    "bind_hosts",
    "claim_hosts",
    "gpus_of",
    "map_flow",
    "parse_flow",
    "read_flow",
    "work_of",
]
