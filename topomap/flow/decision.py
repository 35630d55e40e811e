"""What a mapping rule decides for one arrow (a :class:`Decision`), before
:func:`topomap.flow.mapping.map_flow` turns it into a mapped arrow; and the names the rules share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from topomap.graph.nodeid import join_hop
from topomap.model.facts import SETTLE, UNKNOWN_BW, Bandwidth, pcie_placeholders
from topomap.model.snapshot import Snapshot
from topomap.transport.decide import Decision as NcclDecision

Medium = Literal["gpu-link", "host-memory", "network", "local", "unknown"]
MEDIA: tuple[Medium, ...] = ("gpu-link", "host-memory", "network", "local", "unknown")


@dataclass(frozen=True)
class NicEnd:
    """One end of a network arrow: the flow host, the NICs its traffic leaves (``out``) or enters
    (``in``) through (NCCL's channels: the first is the route's) with each line rate in GB/s (None:
    not recorded). Arrows of one flow arrow through one NIC share it (:func:`topomap.flow.crosshost.share_nics`)."""

    host: str
    direction: Literal["out", "in"]
    nics: tuple[tuple[str, float | None], ...]


@dataclass(frozen=True)
class Decision:
    """What a rule decided for one arrow, before it becomes a MappedArrow."""

    medium: Medium
    via: str
    path: str | None
    route: tuple[str, ...]
    bandwidth: Bandwidth = UNKNOWN_BW
    reasons: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()
    settle: str | None = None
    nic_ends: tuple[NicEnd, ...] = ()
    nccl: NcclDecision | None = None  # NCCL's transport, for an arrow NCCL sends (topomap.flow.ncclarrow)


def on_host(host: str, node: str) -> str:
    """A route hop: the graph node ``node`` of flow host ``host`` (``lot/gpu3``)."""
    return join_hop(host, node)


def on_host_all(host: str, nodes: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(on_host(host, n) for n in nodes)


def pcie_bandwidth(gbps: float | None, snap: Snapshot | None = None) -> Bandwidth:
    """A PCIe route's nominal figure (its narrowest link), or unknown; where the snapshot's PCIe
    figures are a static topology file's placeholders (:func:`~topomap.model.facts.pcie_placeholders`),
    the file's figure, which never ranks, with what settles it."""
    if not gbps:
        return UNKNOWN_BW
    basis = "PCIe lanes × per-lane rate at the narrowest link (nominal)"
    if snap is not None and pcie_placeholders(snap):
        why = f"{basis}, as the topology file writes every link"
        return Bandwidth(gbps, "topology-file", why, high_gbps=gbps, settle=SETTLE["pcie_link_machine"])
    return Bandwidth(gbps, "spec", basis)
