"""The two kinds of link edge every graph builder adds, each with its bandwidth from the one
function that decides it: a PCIe link (nominal rate at its generation and width) and an NVLink
bundle (:func:`topomap.model.nvlink_rate.nvlink_bundle_bandwidth`)."""

from __future__ import annotations

from typing import Any

from topomap.base.links import pcie_bandwidth_gbps
from topomap.graph.topology import Topology
from topomap.model.facts import Bandwidth
from topomap.model.nvlink_rate import nvlink_bundle_bandwidth
from topomap.model.snapshot import Gpu


def pcie_edge(
    topo: Topology, parent: str, child: str, gen: int | None, width: int | None, placeholder: bool = False
) -> None:
    """A PCIe link with its nominal bandwidth at this generation and width: spec, or the topology
    file's (``placeholder``: a static file's figure, not the machine's, which never ranks)."""
    bw = pcie_bandwidth_gbps(gen, width)
    source = "unknown" if bw is None else "topology-file" if placeholder else "spec"
    topo.light.add_edge(parent, child, kind="pcie", gen=gen, width=width, bandwidth_gbps=bw, bandwidth_source=source)


def nvlink_edge(topo: Topology, a: str, b: str, count: int, ga: Gpu) -> None:
    """An NVLink bundle of ``count`` links, its bandwidth from the one function that decides it."""
    bw = nvlink_bundle_bandwidth(ga, count, topo.snapshot)
    topo.light.add_edge(
        a,
        b,
        kind="nvlink",
        count=count,
        generation=bw.generation,
        bandwidth_gbps=bw.gbps,
        bandwidth_source=bw.source,
        bandwidth_basis=bw.basis,
        bandwidth_tag=bw.tag,
        bandwidth_detail=bw.detail,
        lower_bound=bw.lower_bound,
        bandwidth_high_gbps=bw.high_gbps,
        bandwidth_settle=bw.settle,
    )


def edge_bandwidth(e: dict[str, Any]) -> Bandwidth:
    """The Bandwidth an NVLink edge carries (set by nvlink_bundle_bandwidth when the graph was built)."""
    return Bandwidth(
        e.get("bandwidth_gbps"),
        e.get("bandwidth_source", "unknown"),
        str(e.get("bandwidth_basis", "")),
        bool(e.get("lower_bound", False)),
        e.get("generation"),
        str(e.get("bandwidth_tag", "")),
        high_gbps=e.get("bandwidth_high_gbps"),
        links=int(e.get("count", 0) or 0),
        settle=e.get("bandwidth_settle"),
        detail=str(e.get("bandwidth_detail", "")),  # a catalogue figure's entry
    )
