"""Path evidence: facts about two devices or a route, one function each, with their reasons.

Every view (map, check, show, diff, render, plan) asks these functions and none re-derives the
answer, so they cannot disagree. Facts: a GPU is usable (not lost); NVLink usable between two GPUs
(links, via, bandwidth); PCIe peer-to-peer usable; how two GPUs exchange data; the nearest usable
NIC (and every NIC as near) and whether GPUDirect RDMA is possible; the memory node that serves a
GPU. Facts about one device (its PCIe link, memory, model, NVLink bundle rate, fabric, NIC state)
take only a snapshot and live in :mod:`topomap.model.facts`; a rule taken from elsewhere (NCCL's
PCIe P2P levels) is ``assumed``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Literal

from topomap.base.links import NCCL_P2P_LEVELS, class_rank, pcie_class_of
from topomap.base.notes import Note, cat, said
from topomap.graph.edges import edge_bandwidth
from topomap.graph.gpudirect import mirror_bits, pair_gdr, unplaced_gdr
from topomap.graph.nodeid import gpu_node, node_kind
from topomap.graph.query import numa_of, structural_class
from topomap.graph.topology import FABRIC, Topology, snapshot_pair
from topomap.graph.xgmi_edges import xgmi_reason
from topomap.model.facts import (
    P2P_BLOCKERS,
    SETTLE,
    UNKNOWN_BW,
    Answer,
    Bandwidth,
    NicChoice,
    Tri,
    fabric_hold,
    findings_about,
    gpu_alive,
    nic_usable,
)
from topomap.model.filled_facts import lot_gdr
from topomap.model.origins import fact_origin
from topomap.model.snapshot import Nic, Snapshot
from topomap.model.source_facts import Fact, is_amd_source, settle, settle_for, source_facts, source_knows

# --- one GPU -----------------------------------------------------------------------------------------


def gpu_usable(topo: Topology, gid: str) -> Answer:
    """A GPU is usable unless it fell off the bus (NVML GPU_IS_LOST) or is not in the snapshot."""
    g = topo.gpu(gid)
    if g is None:
        return Answer("no", (f"{gid} is not in this snapshot",))
    return gpu_alive(g)


# --- two GPUs ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NvlinkFact:
    """NVLink between two GPUs: usable or not and why, the links joining them, the route (direct,
    or through the NVSwitch fabric — never through a third GPU), the bundle bandwidth."""

    usable: Answer
    links: int | None  # None: the source cannot say
    via: str  # "nvlink" (direct or bridge), "nvswitch", "none"
    nodes: tuple[str, ...]
    bandwidth: Bandwidth

    @property
    def path(self) -> str | None:
        if self.via == "xgmi":  # AMD Infinity Fabric (issue 35): topomap's XGMI path code
            return "XGMI"
        return f"NV{self.links}" if self.links else None

    @property
    def link_name(self) -> str:
        """The GPU link family in words: "NVLink", or "XGMI" on AMD GPUs (issue 35)."""
        return "XGMI" if self.via == "xgmi" else "NVLink"


#: The ``via`` of a GPU link (NVLink direct or through NVSwitch, AMD's XGMI): every view that asks
#: "is this a GPU link, not PCIe P2P" asks this (issue 35).
GPU_LINK_VIAS = ("nvlink", "nvswitch", "xgmi")


def nvlink_route(topo: Topology, a: str, b: str) -> tuple[tuple[str, ...], int, str] | None:
    """The NVLink route the hardware offers between two GPUs: a direct bundle (a bridge or the
    DGX-1 mesh) or both GPUs on the NVSwitch fabric. Peer access never relays through a third GPU."""
    g = topo.light
    if a == b or a not in g or b not in g:
        return None
    if g.has_edge(a, b) and g.edges[a, b].get("kind") == "xgmi":  # AMD: a mesh, direct (issue 35)
        return (a, b), int(g.edges[a, b].get("count") or 0), "xgmi"
    direct = g.edges[a, b]["count"] if g.has_edge(a, b) and g.edges[a, b].get("kind") == "nvlink" else 0
    sw = 0
    if FABRIC in g and g.has_edge(a, FABRIC) and g.has_edge(b, FABRIC):
        sw = min(int(g.edges[a, FABRIC]["count"]), int(g.edges[b, FABRIC]["count"]))
    if direct and direct >= sw:
        return (a, b), int(direct), "nvlink"
    if sw:
        return (a, FABRIC, b), sw, "nvswitch"
    return None


def nvlink(topo: Topology, a: str, b: str) -> NvlinkFact:
    """Is NVLink usable between GPUs ``a`` and ``b``, and why (graph ids ``gpu3``)."""
    snap = topo.snapshot
    for gid in (a, b):
        alive = gpu_usable(topo, gid)
        if not alive.yes:
            return NvlinkFact(alive, None, "none", (), UNKNOWN_BW)
    r = nvlink_route(topo, a, b)
    ga, gb = topo.gpu(a), topo.gpu(b)
    assert ga is not None and gb is not None
    if r is None:
        pair = snapshot_pair(topo, a, b)
        if a in topo.nvlink_unresolved and b in topo.nvlink_unresolved:
            return NvlinkFact(
                Answer(
                    "unknown",
                    ("both GPUs have active NVLinks but the source does not say what they reach",),
                    SETTLE["nvlink"],
                ),
                None,
                "none",
                (),
                UNKNOWN_BW,
            )
        if not source_knows(snap, "nvlink"):
            return NvlinkFact(
                Answer(
                    "unknown",
                    (_nvlink_silence(snap),),
                    settle_for(snap, Fact.NVLINK) if is_amd_source(snap) else SETTLE["nvlink"],
                ),
                None,
                "none",
                (),
                UNKNOWN_BW,
            )
        listed = [x for x in (*ga.nvlinks, *gb.nvlinks)]
        if listed and not any(x.active for x in listed):
            reason = f"all NVLinks of {a} and {b} are inactive ({len(listed)} links listed, none up)"
        elif any(x.nvlinks and not any(y.active for y in x.nvlinks) for x in (ga, gb)):
            down = next(x for x in (ga, gb) if x.nvlinks and not any(y.active for y in x.nvlinks))
            reason = f"all {len(down.nvlinks)} NVLinks of gpu{down.index} are inactive"
        else:
            reason = f"no NVLink between them (path {pair.path if pair and pair.path else 'unknown'})"
        return NvlinkFact(Answer("no", (reason,)), 0, "none", (), UNKNOWN_BW)
    nodes, count, via = r
    bw = _route_bandwidth(topo, nodes)
    reasons: list[str] = [f"{count} link(s) {'through the NVSwitch fabric' if via == 'nvswitch' else 'direct'}"]
    if via == "xgmi":
        reasons = [xgmi_reason(topo, a, b)]
    blockers: list[str] = []
    for x in (ga, gb):
        if x.mig is not None and x.mig.enabled:
            blockers.append(f"MIG mode is on for gpu{x.index}: no NVLink peer access between MIG instances")
    if via == "nvswitch":
        holds = [(x, fabric_hold(x.fabric)) for x in (ga, gb)]
        blockers += [hold.text_for(gpu_node(x)) for x, hold in holds if hold is not None]
    pair = snapshot_pair(topo, a, b)
    if pair is not None and pair.p2p is not None and pair.p2p.nvlink not in (None, "OK"):
        blockers.append(f"NVML reports NVLink P2P status {pair.p2p.nvlink} for this pair")
    if pair is not None and pair.cuda is not None and pair.cuda.can_access_peer is False:
        blockers.append("CUDA cuDeviceCanAccessPeer = 0 for this pair")
    for found in findings_about(snap, ("p2p-corrupt", "measure-hang"), a, b):
        blockers.append(f"measured: {found.text}")
    if blockers:
        return NvlinkFact(Answer("no", tuple(blockers)), count, via, nodes, bw)
    if pair is not None and pair.p2p is not None and pair.p2p.nvlink == "OK":
        reasons.append("NVML NVLink P2P status OK")
    if pair is not None and pair.cuda is not None and pair.cuda.can_access_peer:
        reasons.append("CUDA peer access OK")
    return NvlinkFact(Answer("yes", tuple(reasons)), count or None if via == "xgmi" else count, via, nodes, bw)


def nvlink_edge_usable(topo: Topology, u: str, v: str) -> Answer:
    """Can data use this drawn NVLink bundle: a direct one asks :func:`nvlink` for its two GPUs; a GPU's
    bundle to the NVSwitch fabric is usable when that GPU reaches some other GPU over it."""
    if FABRIC not in (u, v):
        return nvlink(topo, u, v).usable
    gid = v if u == FABRIC else u
    others = [x for x in topo.light.neighbors(FABRIC) if x != gid and node_kind(x) == "gpu"]
    answers = [nvlink(topo, gid, o).usable for o in others]
    if not answers or any(a.yes for a in answers):
        return Answer("yes")
    return answers[0]


def _nvlink_silence(snap: Snapshot) -> str:
    """Why a source says nothing about NVLink, in its own terms."""
    if snap.source.kind == "nccl-xml":
        return "this NCCL topology file has no NVLink elements (NCCL adds NVLink from NVML at run time)"
    if is_amd_source(snap):
        return f"{source_facts(snap).words()} does not say which GPUs XGMI joins"
    return source_facts(snap).why_not(Fact.NVLINK)  # "`nvidia-smi topo -p2p` does not carry which GPUs NVLink joins"


def _route_bandwidth(topo: Topology, nodes: tuple[str, ...]) -> Bandwidth:
    """The narrowest bundle along an NVLink route (one or two bundles)."""
    g = topo.light
    best: Bandwidth | None = None
    for u, v in itertools.pairwise(nodes):
        e = g.edges[u, v]
        bw = edge_bandwidth(e)
        if bw.gbps is None:
            return bw
        if best is None or best.gbps is None or bw.gbps < best.gbps:
            best = bw
    return best or UNKNOWN_BW


def pcie_path_class(topo: Topology, a: str, b: str) -> str | None:
    """The PCIe class between two devices: the snapshot's own (PCIe part under an NV# cell where the
    source gives it), else the structure's."""
    p = snapshot_pair(topo, a, b)
    if p is not None:
        own = pcie_class_of(p.path) or p.pcie_path
        if own is not None:
            return own
    if topo.inferred:
        return None  # an inferred tree has no PCIe class for pairs the matrix did not give one
    return structural_class(topo, a, b)


def pcie_p2p(topo: Topology, a: str, b: str) -> Answer:
    """Is peer-to-peer over PCIe usable between two GPUs: NVML P2P read/write status and CUDA peer
    access when recorded; else NCCL's rule (P2P only up to PXB), marked assumed."""
    for gid in (a, b):
        alive = gpu_usable(topo, gid)
        if not alive.yes:
            return alive
    pair = snapshot_pair(topo, a, b)
    p2p = pair.p2p if pair else None
    cuda = pair.cuda if pair else None
    reasons: list[str] = []
    verdict: Tri | None = None
    if p2p is not None and p2p.read is not None and p2p.write is not None:
        reasons.append(f"P2P read {p2p.read}, write {p2p.write}")
        verdict = "yes" if p2p.read == "OK" and p2p.write == "OK" else "no"
    elif p2p is not None and {p2p.read, p2p.write} - {None, "OK", "U"}:  # one recorded, not OK: needs both
        reasons.append(p2p_unrecorded(topo, a, b)[0])
        verdict = "no"
    if cuda is not None and cuda.can_access_peer is False:
        reasons.append("cuDeviceCanAccessPeer = 0")
        verdict = "no"
    elif cuda is not None and cuda.can_access_peer and verdict is None:
        reasons.append("cuDeviceCanAccessPeer = 1")
        verdict = "yes"
    guards = findings_about(topo.snapshot, P2P_BLOCKERS, a, b)
    if guards:
        said = ["; ".join(reasons)] if reasons else []
        return Answer("no", tuple(dict.fromkeys([*said, *(f.text for f in guards)])))
    if verdict is not None:
        return Answer(verdict, ("; ".join(reasons),))
    cls = pcie_path_class(topo, a, b)
    missing, how = p2p_unrecorded(topo, a, b)
    if cls is None:
        return Answer("unknown", (missing.replace("P2P status not", "P2P status and PCIe path not"),), how)
    ok = cls in NCCL_P2P_LEVELS
    outcome = "peer-to-peer assumed" if ok else "staged through host memory"
    return Answer(
        "yes" if ok else "no",
        (f"{missing}: assumed NCCL's rule (PCIe P2P only up to PXB); this pair is {cls} → {outcome}",),
        how,
        assumed=True,
    )


def p2p_unrecorded(topo: Topology, a: str, b: str) -> tuple[str, str]:
    """Which P2P status (read, write) a source did not record for two GPUs, what settles it."""
    p2p = getattr(snapshot_pair(topo, a, b), "p2p", None)
    got = {k: v for k, v in (("read", p2p.read), ("write", p2p.write)) if v is not None} if p2p else {}
    if len(got) != 1:
        return "P2P status not recorded by this source", SETTLE["p2p"]
    (have, value), lack = next(iter(got.items())), "write" if "read" in got else "read"
    how = f"`nvidia-smi topo -p2p {lack[0]}` (or `topomap probe`)"
    return f"P2P {lack} status not recorded by this source ({have} {value}; P2P needs both)", how


@dataclass(frozen=True)
class GpuLink:
    """How two GPUs of one host exchange data: ``gpu-link`` (NVLink/NVSwitch or PCIe P2P),
    ``host-memory`` (staged), or ``unknown`` with the candidates and what would settle it."""

    medium: Literal["gpu-link", "host-memory", "unknown"]
    via: str  # nvlink, nvswitch, pcie-p2p, pcie, unknown
    nvlink: NvlinkFact
    p2p: Answer
    reasons: tuple[str, ...]
    candidates: tuple[str, ...] = ()
    settle: str | None = None


def gpu_link(topo: Topology, a: str, b: str) -> GpuLink:
    """The medium between two GPUs of one host, decided once for every view."""
    nv = nvlink(topo, a, b)
    if nv.usable.yes:
        return GpuLink("gpu-link", nv.via, nv, Answer("unknown"), nv.usable.reasons)
    p2p = pcie_p2p(topo, a, b)
    lost = [gid for gid in (a, b) if not gpu_usable(topo, gid).yes]
    if lost:
        return GpuLink("unknown", "unknown", nv, p2p, gpu_usable(topo, lost[0]).reasons)
    if nv.usable.value == "unknown":
        if p2p.yes and not p2p.assumed:
            return GpuLink("gpu-link", "pcie-p2p", nv, p2p, (*p2p.reasons, *nv.usable.reasons))
        return GpuLink(
            "unknown",
            "unknown",
            nv,
            p2p,
            (*nv.usable.reasons, *p2p.reasons),
            candidates=("gpu-link over NVLink", "gpu-link over PCIe P2P", "host-memory (staged)")
            if not p2p.no or p2p.assumed
            else ("gpu-link over NVLink", "host-memory (staged)"),
            settle=settle_for(topo.snapshot, Fact.NVLINK),  # AMD's command on AMD GPUs (issue 35)
        )
    nv_reasons = nv.usable.reasons if nv.links else ()
    if p2p.yes:
        return GpuLink("gpu-link", "pcie-p2p", nv, p2p, (*nv_reasons, *p2p.reasons))
    if p2p.value == "unknown":
        return GpuLink(
            "unknown",
            "unknown",
            nv,
            p2p,
            (*nv_reasons, *p2p.reasons),
            candidates=("gpu-link over PCIe P2P", "host-memory (staged)"),
            settle=p2p.settle,
        )
    return GpuLink("host-memory", "pcie", nv, p2p, (*nv_reasons, *p2p.reasons))


# --- NICs --------------------------------------------------------------------------------------------


def nearest_nic(topo: Topology, node: str) -> NicChoice:
    """The usable NIC a GPU's network traffic leaves through: at its best path class, and among several
    equally near the one NCCL gives this GPU (spread by device number, :func:`_spread`); for a memory
    node, a NIC on its NUMA node. A NIC whose port is down is never chosen. Every view (map, check,
    diff, render, report, nccl) asks this."""
    cache = topo.index.nearest_nic
    if node not in cache:
        cache[node] = _find_nearest_nic(topo, node)
    return cache[node]


def _find_nearest_nic(topo: Topology, node: str) -> NicChoice:
    options = nics_at_best_class(topo, node)
    if len(options) < 2 or node_kind(node) != "gpu":
        return options[0]
    return _spread(topo, node, options)


# NCCL 2.30.7 (github.com/NVIDIA/nccl @5067397, src/graph/topo.cc ncclTopoGetLocalNetType and
# ncclTopoGetLocal): a GPU's NET candidates are those at its best path; the GPUs "local" to the first
# candidate are counted the same way; the GPU's CUDA device number modulo that count, bit-mirrored when
# the candidates are a power of two, picks its NIC (channel c adds c modulo ceil(NICs / local GPUs)).
# So eight GPUs all SYS to four NICs take NICs 0,2,1,3,0,2,1,3: two GPUs on each.
def _spread(topo: Topology, gid: str, options: tuple[NicChoice, ...]) -> NicChoice:
    """Which of several equally near NICs this GPU's traffic leaves through, by NCCL's rule."""
    g = topo.gpu(gid)
    first = options[0].nic
    assert g is not None and first is not None
    ranks: list[int] = []
    for other in topo.snapshot.gpus:
        if other.lost:
            continue
        cls = pcie_path_class(topo, gpu_node(other), f"nic{first.index}")
        ranks.append(class_rank(cls) if cls is not None else 99)
    local_gpus = max(1, ranks.count(min(ranks))) if ranks else 1
    count = len(options)
    dev = g.cuda_ordinal if g.cuda_ordinal is not None else g.index
    base = dev % local_gpus
    if count & (count - 1) == 0:
        base = mirror_bits(base, count)
    per_gpu = -(-count // local_gpus)
    channels = tuple(options[(base + c) % count] for c in range(per_gpu))
    pick = channels[0]
    assert pick.nic is not None
    names = tuple(o.nic.name for o in options if o.nic is not None)
    if pick.path is None:  # a declared lot's NICs: where each sits is not given
        why = Note(
            "{nic}: one of the "
            + said(f"{count} declared NICs ({', '.join(names)}; where each sits is not given)")
            + "; NCCL spreads GPUs over NICs equally near by device number",
            nic=pick.nic.name,
        )
    else:
        why = Note(
            "{nic}: one of " + said(f"{count} NICs equally near ") + "{gpu}"
            + said(f" ({pick.path}: {', '.join(names)}); NCCL spreads GPUs over them by device number ")
            + said(f"({local_gpus} GPU(s) as near to {first.name})"),
            nic=pick.nic.name,
            gpu=gid,
        )  # fmt: skip
    if per_gpu > 1:
        why = cat(why, f"; its other channels use {', '.join(c.nic.name for c in channels[1:] if c.nic is not None)}")
    return replace(
        pick,
        reasons=(*pick.reasons, why),
        equally_near=names,
        channels=tuple(c.nic.name for c in channels if c.nic is not None),
    )


def nics_at_best_class(topo: Topology, node: str) -> tuple[NicChoice, ...]:
    """Every usable NIC at the best path class to a GPU, lowest index first, each with its
    GPUDirect answer (NCCL spreads GPUs over equally near NICs); :func:`nearest_nic` is the first.
    For a memory node, or a GPU with no recorded path to any NIC, the one NIC chosen as nearest.
    A NIC whose port is down is never listed."""
    snap = topo.snapshot
    all_nics = [n for n in snap.nics if n.rdma] or list(snap.nics)
    down = [n for n in all_nics if nic_usable(n).no]
    nics = [n for n in all_nics if not nic_usable(n).no]
    skipped = tuple(f"skipped NIC {n.name}: port {n.state}" for n in down)
    if not nics and not down and not source_knows(snap, Fact.NICS):  # `topo -p2p`, `nvlink -s`: not "none"
        why = "no NIC listed: this source does not record NICs"  # Answer.why() adds what settles it
        return (NicChoice(None, None, Answer("unknown", (why,), settle(Fact.NICS)), skipped),)
    if not nics:
        why = "no usable NIC recorded" + (" (every port is down)" if down else "")
        return (NicChoice(None, None, Answer("no", (why,)), skipped),)
    if node_kind(node) == "gpu":
        classed: list[tuple[int, int, Nic, str]] = []
        for n in nics:
            cls = pcie_path_class(topo, node, f"nic{n.index}")
            if cls is not None:
                classed.append((class_rank(cls), n.index, n, cls))
        if classed:
            top = min(c[0] for c in classed)
            best = sorted((c for c in classed if c[0] == top), key=lambda c: c[1])
            return tuple(NicChoice(n, cls, pair_gdr(topo, node, n, cls), skipped) for _, _, n, cls in best)
        why = Note("the source gives no path between {gpu} and any NIC", gpu=node)
        declared = lot_gdr(snap, nics)
        if fact_origin(snap, "nics") is not None and len(nics) > 1:
            # a declared lot's NICs are the ones its GPU traffic uses, where each sits is not given: as NCCL
            # does with NICs equally near, the GPUs are spread over all of them (:func:`_spread`)
            gdr = declared or unplaced_gdr(nics, why)
            return tuple(NicChoice(n, None, gdr, skipped) for n in nics)
        return (NicChoice(nics[0], None, declared or unplaced_gdr(nics, why), skipped),)
    numa = node if node_kind(node) == "numa" else numa_of(topo, node)
    numa_id = topo.light.nodes[numa].get("label") if numa in topo.light else None
    same = [n for n in nics if numa and numa_id == f"NUMA {n.numa_node}"]
    host = Answer("no", ("host memory is not a GPU: no GPUDirect",))
    return (NicChoice((same or nics)[0], None, host, skipped),)


# --- memory ------------------------------------------------------------------------------------------


def memory_node(topo: Topology, gid: str) -> str | None:
    """The NUMA node (graph id) whose memory serves a GPU: the node above it in the tree."""
    return numa_of(topo, gid)
