"""What an arrow of a flow can gain or lose on another lot without changing its medium or a known
figure: GPUDirect RDMA at a GPU end of a network arrow and how near its NIC is (the PCIe path class,
the inter-socket link crossed at SYS), a crossing of the inter-socket link, a NIC shared with other
arrows of the same flow arrow, a GPU's PCIe link trained below its width on the
route. Every answer is asked of the function that decides it for ``map`` — the mapped arrow itself
(:class:`~topomap.flow.mapping.MappedArrow`: medium, path class, route) and ``topomap.graph.evidence``
(the GPU's NIC, its path class and GPUDirect; ``topomap.model.facts.gpu_pcie_link`` for the trained
link) — never re-derived here."""

from __future__ import annotations

from dataclasses import dataclass

from topomap.base.links import class_rank
from topomap.flow.mapping import FlowMap, MappedArrow
from topomap.graph import Topology
from topomap.graph.evidence import nearest_nic, nics_at_best_class
from topomap.graph.nodeid import gpu_index, hop_node, nic_name, split_hop
from topomap.model.facts import NicChoice, Tri, gpu_pcie_link


@dataclass(frozen=True)
class QualityChange:
    """What B gains or loses against A in one quality: ``words`` ("loses GPUDirect RDMA") and the arrow
    end it is at (``end``: "its source", "its destination"; "" for the arrow as a whole), kept apart so
    the same change at both ends reads once."""

    gained: bool
    words: str
    end: str = ""

    def text(self) -> str:
        return f"{self.words} at {self.end}" if self.end else self.words


@dataclass(frozen=True)
class Quality:
    """One quality of an arrow on one lot: ``key`` names it (``gdr its source``), ``value`` is
    yes / no / unknown, ``good`` the value that is better for the arrow; ``worse`` and ``better``
    say what a change to this lot's value means ("loses GPUDirect RDMA"), at the arrow end ``end``
    ("its source"; "" for the whole arrow). A NIC distance (``distance``) has a PCIe path class for
    ``value`` (PIX … SYS, or unknown): nearer is better, and the words name both classes."""

    key: str
    value: str
    good: str
    worse: str
    better: str
    end: str = ""
    distance: bool = False

    def change_from(self, a: Quality) -> QualityChange | None:
        """This lot's value against A's, None when equal or unknown on a side."""
        if a.value == self.value or "unknown" in (a.value, self.value):
            return None
        if not self.distance:
            gained = self.value == self.good
            return QualityChange(gained, self.better if gained else self.worse, self.end)
        nearer = class_rank(self.value) < class_rank(a.value)
        if "SYS" in (a.value, self.value):  # the inter-socket link: the words that say so
            return QualityChange(nearer, self.better if nearer else self.worse, self.end)
        return QualityChange(nearer, f"its NIC {'nearer' if nearer else 'farther'}: {a.value} → {self.value}", self.end)


def arrow_qualities(a: MappedArrow, fmap: FlowMap, topos: dict[str, Topology | None]) -> dict[str, Quality]:
    """The qualities of one mapped arrow on the lot ``topos`` was bound to (hosts without a snapshot
    are None). Only what the arrow touches is asked: a GPU↔GPU arrow inside a host has no NIC."""
    out: dict[str, Quality] = {}
    if a.medium == "network":
        for end, place in (("its source", a.src_place), ("its destination", a.dst_place)):
            topo = topos.get(place.host)
            if place.kind != "gpu" or topo is None or not place.gpu:
                continue
            leg = _nic_leg(topo, place.gpu, _route_nic(a, place.host))
            gdr = "GPUDirect RDMA"
            out[f"gdr {end}"] = Quality(f"gdr {end}", leg.gdr.value, "yes", f"loses {gdr}", f"gains {gdr}", end)
            link = "the inter-socket link to its NIC"
            out[f"nic {end}"] = Quality(
                f"nic {end}", leg.path or "unknown", "", f"crosses {link}", f"no longer crosses {link}", end, True
            )
        shared = _nic_sharing(a, fmap)
        if shared:
            worse = f"shares a NIC with {shared - 1} other arrow(s) of the same flow arrow"
            out["shared nic"] = Quality(
                "shared nic", "yes" if shared > 1 else "no", "no", worse, "no longer shares a NIC"
            )
    elif a.medium in ("host-memory", "gpu-link") and a.via in ("pcie", "pcie-p2p"):
        crosses = "unknown" if a.path is None else "yes" if a.path == "SYS" else "no"
        link = "the inter-socket link"
        out["socket"] = Quality("socket", crosses, "no", f"crosses {link}", f"no longer crosses {link}")
    if a.medium in ("host-memory", "network") or a.via == "pcie-p2p":
        for host, gid in _route_gpus(a):
            topo = topos.get(host)
            gpu = topo.gpu(gid) if topo is not None else None
            if gpu is None or a.via == "c2c":
                continue
            trained = gpu_pcie_link(gpu)
            down: Tri = "yes" if trained.downtrained else "unknown" if trained.width is None else "no"
            key = f"pcie {host}:{gid}"
            what = f"{host}:{gid}'s PCIe link"
            out[key] = Quality(key, down, "no", f"{what} trained below its width", f"{what} at full width")
    return out


def _route_nic(a: MappedArrow, host: str) -> str | None:
    """The NIC the arrow's route takes on ``host`` (route hops are ``host/nic:NAME``)."""
    for hop in a.route:
        h, node = split_hop(hop)
        name = nic_name(node)
        if h == host and name is not None:
            return name
    return None


def _nic_leg(topo: Topology, gid: str, nic: str | None) -> NicChoice:
    """The GPU's way to the NIC its arrow took: that NIC among the equally near ones, else the nearest."""
    for c in nics_at_best_class(topo, gid):
        if c.nic is not None and c.nic.name == nic:
            return c
    return nearest_nic(topo, gid)


def _route_gpus(a: MappedArrow) -> list[tuple[str, str]]:
    """The GPUs (host, gpu id) whose own PCIe link the arrow crosses."""
    out: list[tuple[str, str]] = []
    for hop in a.route:
        host, node = split_hop(hop)
        if gpu_index(node) is not None:
            out.append((host, node))
    return out


def _nic_sharing(a: MappedArrow, fmap: FlowMap) -> int:
    """How many arrows of the same flow arrow (its replicas, which run together) leave or enter by
    the busiest NIC on this arrow's route (1: none shares it; 0: the route names no NIC)."""
    nics = {hop for hop in a.route if nic_name(hop_node(hop)) is not None}
    if not nics:
        return 0
    count = 0
    for hop in nics:
        users = sum(
            1
            for b in fmap.arrows
            if b.medium == "network" and (b.src_step, b.dst_step) == (a.src_step, a.dst_step) and hop in b.route
        )
        count = max(count, users)
    return count
