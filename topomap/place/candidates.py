"""The GPUs a placement may use and the facts the objective ranks: each usable GPU (lost, MIG, busy
and excluded GPUs skipped with their reason), its memory node, its usable NICs at the best path
class, and the link of every pair ranked. Every fact comes from the one function that decides it
(:mod:`topomap.graph.evidence`, :mod:`topomap.model.facts`); nothing here re-derives NVLink or P2P.

Busy GPUs: the snapshot records no running processes or memory in use (no such field in
``topomap.snapshot/1``), so no GPU is skipped as busy; the answer says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from topomap.base.links import PCIE_CLASSES, class_rank
from topomap.graph import Topology
from topomap.graph.evidence import (
    GPU_LINK_VIAS,
    gpu_link,
    gpu_usable,
    memory_node,
    nics_at_best_class,
    pcie_path_class,
)
from topomap.model.facts import SETTLE, Bandwidth, NicChoice
from topomap.model.ranking import compare_bandwidth, per_link_range

#: Link tiers, best last: staged through host memory, PCIe peer-to-peer, NVLink (direct or NVSwitch).
STAGED, P2P, NVLINK = 1, 2, 3


@dataclass(frozen=True)
class PairLink:
    """How two candidate GPUs exchange data, as the objective ranks it.

    ``tier`` and ``strength`` are what is known at least: NVLink by bundle bandwidth (mGB/s; the
    link count where no rate is known), PCIe by path class (PIX 4 … SYS 0, -1 unknown). ``certain``
    is False when a fact that could make the pair better is unknown (``unknown``: which fact,
    ``settle``: the command whose output decides it); such a pair ranks just below a known pair of
    the same tier and class, never as "no NVLink"."""

    a: str
    b: str
    tier: int
    strength: int
    certain: bool
    text: str
    nvlinks: int = 0
    nvlink_mgbps: int = 0  # NVLink bundle bandwidth in MB/s per direction (0 off NVLink), for the total
    unknown: str | None = None
    settle: str | None = None
    figure: Bandwidth | None = None  # the NVLink bundle's figure, which ranks pairs (:func:`rank_nvlink`)

    @property
    def key(self) -> tuple[int, int, int]:
        return self.tier, self.strength, int(self.certain)


def rank_nvlink(links: list[PairLink]) -> list[PairLink]:
    """The NVLink pairs' strengths from their figures, compared as one machine's
    (:func:`~topomap.model.ranking.compare_bandwidth` with ``one_machine``): figures sorted, and a
    figure that cannot be told from every figure of the strength before it shares that strength
    (overlapping ranges never rank; a tie may hide a ranking, never invent one). Where every NVLink
    figure of the machine is exact or all rest on one per-link range, the pairs keep their MB/s for
    the group totals (sums of such figures rank as their link counts do); otherwise a total would
    rank overlapping ranges, so it is left out (0)."""
    nv = sorted(
        (p for p in links if p.tier == NVLINK and p.figure is not None),
        key=lambda p: (p.figure.gbps or 0.0, p.figure.high or math.inf) if p.figure else (0.0, 0.0),
    )
    level: dict[tuple[str, str], int] = {}
    current: list[Bandwidth] = []
    n = 0
    for p in nv:
        assert p.figure is not None
        if current and all(compare_bandwidth(c, p.figure, one_machine=True).ranked for c in current):
            n, current = n + 1, []
        current.append(p.figure)
        level[(p.a, p.b)] = n + 1
    figures = [p.figure for p in nv if p.figure is not None]
    totals = all(f.exact for f in figures) or len({per_link_range(f) for f in figures}) <= 1
    return [
        replace(p, strength=level[(p.a, p.b)], nvlink_mgbps=p.nvlink_mgbps if totals else 0)
        if (p.a, p.b) in level
        else p
        for p in links
    ]


def pcie_strength(cls: str | None) -> int:
    """PIX 4, PXB 3, PHB 2, NODE 1, SYS 0 (higher is better: :func:`class_rank` turned round); -1 when
    the class is unknown."""
    return len(PCIE_CLASSES) - class_rank(cls) if cls in PCIE_CLASSES else -1


def pair_link(topo: Topology, a: str, b: str) -> PairLink:
    """Rank the link between two usable GPUs from :func:`topomap.graph.evidence.gpu_link`."""
    gl = gpu_link(topo, a, b)
    nv = gl.nvlink
    if gl.medium == "gpu-link" and gl.via in GPU_LINK_VIAS:
        bw = nv.bandwidth
        links = nv.links or 0
        mgbps = round(bw.gbps * 1000) if bw.gbps is not None else 0
        via = "through NVSwitch" if gl.via == "nvswitch" else "direct"
        code = "XGMI" if gl.via == "xgmi" else f"NV{links}"  # AMD (issue 35)
        text = f"{code} {via}, {bw.text()}"
        return PairLink(a, b, NVLINK, 0, True, text, links, mgbps, figure=bw)
    cls = pcie_path_class(topo, a, b)
    where = cls or "PCIe path unknown"
    nv_unknown = nv.usable.value == "unknown"
    if gl.medium == "gpu-link":
        assumed = " (assumed: NCCL's rule)" if gl.p2p.assumed else ""
        text = f"PCIe P2P {where}{assumed}"
        if nv_unknown:
            return PairLink(
                a,
                b,
                P2P,
                pcie_strength(cls),
                False,
                f"NVLink unknown; {text}",
                0,
                0,
                "NVLink",
                nv.usable.settle or SETTLE["nvlink"],
            )
        return PairLink(a, b, P2P, pcie_strength(cls), True, text)
    if gl.medium == "host-memory":
        return PairLink(a, b, STAGED, pcie_strength(cls), True, f"staged through host memory ({where})")
    tier = P2P if gl.p2p.yes else STAGED
    floor = f"PCIe P2P {where} assumed" if tier == P2P else f"staged ({where})"
    fact = "NVLink" if nv_unknown else "PCIe P2P"
    settle = (nv.usable.settle or SETTLE["nvlink"]) if nv_unknown else (gl.settle or SETTLE["p2p"])
    return PairLink(a, b, tier, pcie_strength(cls), False, f"{fact} unknown; at least {floor}", 0, 0, fact, settle)


@dataclass(frozen=True)
class Candidate:
    """A usable GPU: graph id, NVML index, memory node (``numa_node``: None when not recorded) and
    the usable NICs at its best path class (``evidence.nics_at_best_class``: lowest index first, never
    empty; one whose ``nic`` is None when the snapshot has none). Which of them the GPU gets depends
    on the group (:mod:`topomap.place.nics`)."""

    gid: str
    index: int
    numa_node: int | None
    nics: tuple[NicChoice, ...]

    @property
    def nic_names(self) -> tuple[str | None, ...]:
        return tuple(c.nic.name if c.nic is not None else None for c in self.nics)


@dataclass(frozen=True)
class Skip:
    gid: str
    reason: str


def numa_number(topo: Topology, gid: str) -> int | None:
    """The NUMA node whose memory serves a GPU (``evidence.memory_node``), as a number; None unknown."""
    found = re.fullmatch(r"numa(\d+)", memory_node(topo, gid) or "")
    return int(found.group(1)) if found else None


def candidates(topo: Topology, exclude: set[str]) -> tuple[list[Candidate], list[Skip]]:
    """The GPUs a placement may use, in index order, and those skipped with the reason."""
    usable: list[Candidate] = []
    skipped: list[Skip] = []
    for g in sorted(topo.snapshot.gpus, key=lambda x: x.index):
        gid = f"gpu{g.index}"
        alive = gpu_usable(topo, gid)
        if not alive.yes:
            skipped.append(Skip(gid, alive.why()))
        elif g.mig is not None and g.mig.enabled:
            skipped.append(Skip(gid, "MIG mode is on: the GPU is split into instances (no NVLink peer access)"))
        elif gid in exclude:
            skipped.append(Skip(gid, "excluded (--exclude)"))
        else:
            usable.append(Candidate(gid, g.index, numa_number(topo, gid), nics_at_best_class(topo, gid)))
    return usable, skipped


def parse_exclude(text: str | None) -> set[str]:
    """``--exclude 3,gpu5,GPU6`` → {gpu3, gpu5, gpu6}; raises ValueError on anything else."""
    out: set[str] = set()
    for part in (text or "").replace(" ", "").split(","):
        if not part:
            continue
        m = re.fullmatch(r"(?:gpu)?(\d+)", part, re.IGNORECASE)  # GPU3: nvidia-smi's spelling
        if m is None:
            raise ValueError(part)
        out.add(f"gpu{int(m.group(1))}")
    return out
