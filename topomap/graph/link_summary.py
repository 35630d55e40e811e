"""A GPU's NVLink (or XGMI) in one line for `show`: active links, the bundle's rate and its source, the peers
it reaches, or why it is not known. The facts are the evidence's (:mod:`topomap.graph.evidence`)."""

from __future__ import annotations

from dataclasses import dataclass

from topomap.base.part_names import model_from_name
from topomap.graph.evidence import nvlink_route
from topomap.graph.nodeid import gpu_node
from topomap.graph.topology import Topology, natural_key
from topomap.graph.xgmi_edges import xgmi_summary
from topomap.model.facts import SETTLE
from topomap.model.filled_facts import said
from topomap.model.nvlink_rate import nvlink_bundle_bandwidth
from topomap.model.source_facts import source_knows


@dataclass(frozen=True)
class LinkSummary:
    """A GPU's NVLink (or XGMI) in one line for `show`; ``known`` is False where the line says nothing
    but that it is not known ("—", "unknown"), so a table may leave the column out."""

    text: str
    known: bool = True


def gpu_pairs_nvlink_summary(topo: Topology, gid: str) -> str:
    """One line for a GPU's NVLink in `show`: active links, bundle rate and its source, or why unknown."""
    return gpu_link_summary(topo, gid).text


def gpu_link_summary(topo: Topology, gid: str) -> LinkSummary:
    """:func:`gpu_pairs_nvlink_summary` with whether it is known (a table cell's data)."""
    g = topo.gpu(gid)
    if g is None:
        return LinkSummary("—", known=False)
    if g.lost:
        return LinkSummary("unknown (GPU lost during the probe)")
    if g.vendor == "amd":  # AMD's GPU link (issue 35)
        xgmi = xgmi_summary(topo, gid)
        return LinkSummary("unknown", known=False) if xgmi is None else LinkSummary(xgmi)
    snap, active = topo.snapshot, [x for x in g.nvlinks if x.active]
    peers = sorted(
        (o for o in (gpu_node(x) for x in snap.gpus) if o != gid and nvlink_route(topo, gid, o) is not None),
        key=natural_key,
    )
    if g.nvlinks:
        if not active:
            return LinkSummary(f"0 of {len(g.nvlinks)} links active: no NVLink")
        bw = nvlink_bundle_bandwidth(g, len(active), snap)
        # `nvidia-smi nvlink -R` alone lists only the links that reach something: no total to show
        remotes_only = all(x.active and x.remote_pci_bus_id and x.speed_gbps is None for x in g.nvlinks)
        listed_all = not (snap.source.kind == "nvidia-smi" and remotes_only)
        total = f"/{len(g.nvlinks)}" if listed_all else ""
        text = f"{len(active)}{total} active" + ("" if listed_all else " (links down not listed)")
        model = model_from_name(g.name) if g.name else None
        full = model.full_links if model is not None and model.links else 0
        if model is not None and full and len(active) < full and model.form == "sxm" and len(active) not in model.links:
            text += f" — {full - len(active)} fewer than an {model.name} has"
        return LinkSummary(text + f", {bw.text()} ({bw.tag})" if bw.gbps is not None else text)
    if peers:
        counts = sorted({(nvlink_route(topo, gid, o) or ((), 0, ""))[1] for o in peers})
        return LinkSummary(f"NV{'/'.join(map(str, counts))} to {len(peers)} GPU(s) ({said(snap, 'pairs.nvlink')})")
    if not source_knows(snap, "nvlink"):
        return LinkSummary(f"unknown: this source does not record NVLink (settle it with {SETTLE['nvlink']})")
    return LinkSummary("none")
