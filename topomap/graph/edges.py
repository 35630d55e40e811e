"""The two kinds of link edge every graph builder adds, each with its bandwidth from the one
function that decides it: a PCIe link (nominal rate at its generation and width) and an NVLink
bundle (:func:`topomap.model.facts.nvlink_bundle_bandwidth`)."""

from __future__ import annotations

from topomap.base.links import pcie_bandwidth_gbps
from topomap.graph.topology import Topology
from topomap.model.facts import nvlink_bundle_bandwidth
from topomap.model.snapshot import Gpu


def pcie_edge(topo: Topology, parent: str, child: str, gen: int | None, width: int | None) -> None:
    """A PCIe link with its nominal bandwidth (spec) at this generation and width."""
    bw = pcie_bandwidth_gbps(gen, width)
    topo.light.add_edge(
        parent,
        child,
        kind="pcie",
        gen=gen,
        width=width,
        bandwidth_gbps=bw,
        bandwidth_source="spec" if bw is not None else "unknown",
    )


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
        lower_bound=bw.lower_bound,
    )
