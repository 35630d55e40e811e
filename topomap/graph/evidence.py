"""Evidence: one function per fact, each answering with its reasons.

Every view (map, check, show, diff, render, plan) asks these functions and none re-derives the
answer, so they cannot disagree. A fact the source does not carry is ``unknown`` with the command
whose output would settle it; a fact the input implies (NVLink generation from the GPU model) is
``derived`` and says so; a rule taken from elsewhere (NCCL's PCIe P2P levels) is ``assumed``.

Facts: a GPU is usable (not lost); NVLink usable between two GPUs (links, via, bandwidth);
PCIe peer-to-peer usable; the NVLink fabric ready; the nearest usable NIC and whether GPUDirect
RDMA is possible; a GPU's PCIe link as trained; an NVLink bundle's bandwidth and its source; the
memory node that serves a GPU.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any, Literal

from topomap.base.devices import model_from_device_id, model_from_name
from topomap.base.links import (
    NVLINK_C2C_GBPS,
    NVLINK_GA102_GBPS_PER_LINK,
    NVLINK_GBPS_PER_LINK,
    PCIE_CLASSES,
    class_rank,
    is_ga102,
    nvlink_generation_for_cc,
    parse_path,
    pcie_bandwidth_gbps,
)
from topomap.base.units import fmt_bandwidth, fmt_gbps
from topomap.graph.topology import FABRIC, BandwidthSource, Topology, natural_key, snapshot_pair
from topomap.model.snapshot import Finding, Gpu, Nic, Snapshot
from topomap.model.source_facts import source_knows as source_knows  # the one test of what a source can know

Tri = Literal["yes", "no", "unknown"]

#: NCCL's default for PCIe peer-to-peer (NCCL_P2P_LEVEL): only within PXB.
NCCL_P2P_LEVELS = ("PIX", "PXB")

#: The command whose output settles each fact a source may not carry.
SETTLE: dict[str, str] = {
    "nvlink": "`nvidia-smi topo -m` run inside the container (or `topomap probe`)",
    "nvlink_links": "`nvidia-smi nvlink -s` (or `topomap probe`)",
    "p2p": "`nvidia-smi topo -p2p rw` (or `topomap probe`)",
    "path": "`nvidia-smi topo -m` run inside the container",
    "fabric": "`nvidia-smi -q` (section Fabric) or `topomap probe`",
    "mig": "`nvidia-smi -q` (section MIG Mode) or `topomap probe`",
    "nic": "`nvidia-smi topo -m` (its NIC legend) or `topomap probe`",
    "nic_speed": "`ibstat` / `ethtool <netdev>` or `topomap probe`",
    "nic_state": "`ibstat` / `ip link` or `topomap probe`",
    "gpu_model": "`nvidia-smi -L` or `topomap probe`",
    "gpu_memory": "`nvidia-smi --query-gpu=memory.total --format=csv` or `topomap probe`",
    "numa": "`topomap probe` on the machine (or `cat /sys/bus/pci/devices/<bus id>/numa_node`; "
    "a recent driver's `nvidia-smi topo -m` prints a NUMA Affinity column)",
    "driver": "`nvidia-smi` (its header) or `topomap probe`",
    "pcie_link": "`nvidia-smi -q` (section GPU Link Info) or `topomap probe`",
}


@dataclass(frozen=True)
class Answer:
    """A yes / no / unknown with the reasons that decide it."""

    value: Tri
    reasons: tuple[str, ...] = ()
    settle: str | None = None  # for unknown: the command whose output would decide it
    assumed: bool = False  # decided by a stated rule, not by what the source recorded

    @property
    def yes(self) -> bool:
        return self.value == "yes"

    @property
    def no(self) -> bool:
        return self.value == "no"

    def why(self) -> str:
        text = "; ".join(self.reasons)
        if self.value == "unknown" and self.settle:
            text += f" (settle it with {self.settle})"
        return text


@dataclass(frozen=True)
class Bandwidth:
    """GB/s per direction with where it comes from. ``lower_bound``: at least this much."""

    gbps: float | None
    source: BandwidthSource
    basis: str = ""
    lower_bound: bool = False
    generation: int | None = None
    tag: str = ""  # the basis in two or three words: "driver-reported", "NVLink 4 nominal", "lower bound"

    def text(self) -> str:
        return fmt_bandwidth(self.gbps, self.source, self.lower_bound)


UNKNOWN_BW = Bandwidth(None, "unknown", "not recorded by this source")


def with_measurement(snap: Snapshot, src: str, dst: str, kind: str, nominal: Bandwidth) -> tuple[Bandwidth, str | None]:
    """The figure an arrow shows: a verified (or imported) measurement of this copy when there is one,
    labelled measured with the nominal beside it, else the nominal. Second value: a warning when the
    measured figure is under :data:`DEGRADED_FRACTION` of nominal."""
    from topomap.model.measured import DEGRADED_FRACTION, measured_bandwidth

    found = measured_bandwidth(snap, src, dst, kind)  # type: ignore[arg-type]
    if found is None:
        return nominal, None
    gbps, m = found
    size = f", {m.size_bytes / 2**20:g} MiB copies" if m.size_bytes else ""
    basis = f"measured by {m.origin} (median{size}); nominal {nominal.text()}"
    warning = None
    if nominal.gbps and not nominal.lower_bound and gbps < DEGRADED_FRACTION * nominal.gbps:
        warning = (
            f"{src} → {dst} delivers {fmt_gbps(gbps)} GB/s measured, {gbps / nominal.gbps:.0%} of "
            f"{fmt_gbps(nominal.gbps)} GB/s nominal: a downtrained link, ACS/IOMMU redirection or contention"
        )
    return Bandwidth(gbps, "measured", basis, tag=f"measured by {m.origin}"), warning


# --- what the source can know ----------------------------------------------------------------------


def findings_about(snap: Snapshot, kinds: tuple[str, ...], *subjects: str) -> list[Finding]:
    """The probe's / measurement's findings of these kinds about a GPU (``gpu3``), a pair (``gpu0``,
    ``gpu1``, matched either way round as ``gpu0-gpu1``) or the host."""
    want = set(subjects)
    if len(subjects) == 2:
        want = {f"{subjects[0]}-{subjects[1]}", f"{subjects[1]}-{subjects[0]}"}
    return [f for f in snap.findings if f.kind in kinds and f.subject in want]


#: Findings that make peer-to-peer between two GPUs unusable, with what the measurement saw.
P2P_BLOCKERS = ("p2p-corrupt", "measure-hang", "acs-redirect")


# --- one GPU -----------------------------------------------------------------------------------------


def gpu_usable(topo: Topology, gid: str) -> Answer:
    """A GPU is usable unless it fell off the bus (NVML GPU_IS_LOST) or is not in the snapshot."""
    g = topo.gpu(gid)
    if g is None:
        return Answer("no", (f"{gid} is not in this snapshot",))
    if g.lost:
        return Answer(
            "no",
            (f"{gid} was lost during the probe (fell off the bus): reset or reseat it; `dmesg` shows Xid 79",),
        )
    return Answer("yes")


@dataclass(frozen=True)
class PcieLinkFact:
    """A GPU's own PCIe link: generation at its best (idle GPUs lower their speed), width as trained."""

    gen: int | None
    width: int | None
    gen_max: int | None
    width_max: int | None
    downtrained: bool
    note: str | None

    @property
    def gbps(self) -> float | None:
        return pcie_bandwidth_gbps(self.gen, self.width)


def gpu_pcie_link(gpu: Gpu) -> PcieLinkFact:
    """The link the GPU really has: max generation (the current one drops at idle), trained width
    (the current width does not change with load; x8 in an x16 slot stays x8)."""
    p = gpu.pcie
    if p is None:
        return PcieLinkFact(None, None, None, None, False, None)
    gen = p.gen_max if p.gen_max is not None else p.gen_current
    width = p.width_current if p.width_current is not None else p.width_max
    down = p.width_current is not None and p.width_max is not None and p.width_current < p.width_max
    note = None
    if down:
        note = (
            f"gpu{gpu.index} trained at x{p.width_current} of x{p.width_max}: "
            f"{fmt_gbps(pcie_bandwidth_gbps(gen, width))} GB/s instead of "
            f"{fmt_gbps(pcie_bandwidth_gbps(gen, p.width_max))} (reseat the card or check the slot/riser)"
        )
    return PcieLinkFact(gen, width, p.gen_max, p.width_max, down, note)


@dataclass(frozen=True)
class GpuMemory:
    """A card's memory: bytes (as the driver reports them, or the model's sold size in GiB) and where it
    comes from ("snapshot", "derived …" or "unknown")."""

    total_bytes: int | None
    source: str

    @property
    def derived(self) -> bool:
        return self.source.startswith("derived")


_NAME_GB = re.compile(r"(\d+)\s*GB\b", re.IGNORECASE)


def gpu_memory(gpu: Gpu) -> GpuMemory:
    """The memory of one card: the snapshot's figure; else the model's (device table, from the name or the
    PCI device id), else a size written in the name ("Tesla V100-SXM3-32GB-H"), labelled derived."""
    if gpu.memory_total_bytes is not None:
        return GpuMemory(gpu.memory_total_bytes, "snapshot")
    model = (model_from_name(gpu.name) if gpu.name else None) or (
        model_from_device_id(gpu.pci_device_id) if gpu.pci_device_id else None
    )
    if model is not None and model.memory_gb:
        return GpuMemory(int(model.memory_gb * 2**30), f"derived from the model ({model.name}), nominal")
    m = _NAME_GB.search(gpu.name or "")
    if m:
        return GpuMemory(int(m.group(1)) * 2**30, f"derived from the name {gpu.name!r}, nominal")
    return GpuMemory(None, "unknown")


def gpu_model_name(gpu: Gpu) -> tuple[str | None, bool]:
    """The GPU's model and whether it was derived (from the PCI device id) rather than read."""
    return gpu.name, "name" in gpu.derived


def model_nvlink_generation(gpu: Gpu) -> tuple[int | None, str]:
    """NVLink generation implied by the GPU model (device table) or compute capability: derived."""
    m = model_from_name(gpu.name) if gpu.name else None
    if m is None and gpu.pci_device_id:
        m = model_from_device_id(gpu.pci_device_id)
    if m is not None and m.nvlink_generation is not None:
        return m.nvlink_generation, f"the model ({m.name})"
    if gpu.compute_capability:
        try:
            major = int(gpu.compute_capability.split(".")[0])
        except ValueError:
            return None, ""
        gen = nvlink_generation_for_cc(major)
        if gen is not None:
            return gen, f"compute capability {gpu.compute_capability}"
    return None, ""


def c2c_bandwidth(gpu: Gpu) -> Bandwidth:
    """A Grace CPU's memory to its GPU over NVLink-C2C, per direction. Published for Grace Hopper
    (GH200: one GPU on the link); for other parts (GB200 shares a Grace between two GPUs) or an
    unknown model the figure is unknown."""
    model = model_from_name(gpu.name) if gpu.name else None
    if model is None and gpu.pci_device_id:
        model = model_from_device_id(gpu.pci_device_id)
    hopper = (model is not None and model.architecture == "hopper") or "GH200" in (gpu.name or "")
    if hopper:
        return Bandwidth(
            NVLINK_C2C_GBPS, "spec", f"NVLink-C2C (Grace Hopper), {NVLINK_C2C_GBPS:g} GB/s per direction (nominal)"
        )
    why = "the GPU model is not recorded" if model is None and not gpu.name else f"not published for {gpu.name}"
    return Bandwidth(None, "unknown", f"NVLink-C2C rate per GPU: {why} (Grace Hopper: {NVLINK_C2C_GBPS:g} GB/s)")


def nvlink_bundle_bandwidth(gpu: Gpu, count: int, snap: Snapshot | None = None) -> Bandwidth:
    """Bandwidth of ``count`` NVLinks of a GPU, per direction, from the best evidence there is:
    the per-link rate the driver (or file) reports; else the generation's nominal rate, the
    generation read from the links (spec) or derived from the model; else a lower bound (no NVLink
    generation has slower links than NVLink 1, or a GA102 bridge when the model is unknown)."""
    if count <= 0:
        return Bandwidth(None, "unknown", "no NVLink")
    active = [x for x in gpu.nvlinks if x.active]
    speeds = {x.speed_gbps for x in active if x.speed_gbps}
    gens = {x.generation for x in active if x.generation is not None}
    gen = gens.pop() if len(gens) == 1 else None
    reporter = "hwloc" if snap is not None and snap.source.kind == "hwloc-xml" else "driver"
    if len(speeds) == 1:
        rate = speeds.pop()
        return Bandwidth(
            rate * count,
            "spec",
            f"{count} links × {rate:g} GB/s per link ({reporter}-reported rate)",
            generation=gen,
            tag=f"{reporter}-reported rate",
        )
    if gpu.name and is_ga102(gpu.name):
        return Bandwidth(
            NVLINK_GA102_GBPS_PER_LINK * count,
            "spec",
            f"{count} links × {NVLINK_GA102_GBPS_PER_LINK:g} GB/s per link (GA102 NVLink bridge, nominal)",
            generation=3,
            tag="GA102 bridge nominal",
        )
    if gen is not None and gen in NVLINK_GBPS_PER_LINK:
        rate = NVLINK_GBPS_PER_LINK[gen]
        return Bandwidth(
            rate * count,
            "spec",
            f"{count} links × {rate:g} GB/s per link (NVLink {gen}, nominal)",
            generation=gen,
            tag=f"NVLink {gen} nominal",
        )
    dgen, from_what = model_nvlink_generation(gpu)
    if dgen is not None and dgen in NVLINK_GBPS_PER_LINK:
        if gpu.compute_capability == "8.6" and not gpu.name:
            rate = NVLINK_GA102_GBPS_PER_LINK  # GA10x parts with NVLink are bridge boards
        else:
            rate = NVLINK_GBPS_PER_LINK[dgen]
        return Bandwidth(
            rate * count,
            "derived",
            f"{count} links × {rate:g} GB/s per link (NVLink {dgen} from {from_what}, nominal)",
            generation=dgen,
            tag=f"NVLink {dgen} from the model",
        )
    floor = min(NVLINK_GBPS_PER_LINK.values()) if gpu.name else NVLINK_GA102_GBPS_PER_LINK
    return Bandwidth(
        floor * count,
        "derived",
        f"{count} links, generation unknown: at least {floor:g} GB/s per link (the slowest NVLink)",
        lower_bound=True,
        tag="lower bound, generation unknown",
    )


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
        return f"NV{self.links}" if self.links else None


def nvlink_route(topo: Topology, a: str, b: str) -> tuple[tuple[str, ...], int, str] | None:
    """The NVLink route the hardware offers between two GPUs: a direct bundle (a bridge or the
    DGX-1 mesh) or both GPUs on the NVSwitch fabric. Peer access never relays through a third GPU."""
    g = topo.graph
    if a == b or a not in g or b not in g:
        return None
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
                    SETTLE["nvlink"],
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
    blockers: list[str] = []
    for x in (ga, gb):
        if x.mig is not None and x.mig.enabled:
            blockers.append(f"MIG mode is on for gpu{x.index}: no NVLink peer access between MIG instances")
    if via == "nvswitch":
        for x in (ga, gb):
            f = x.fabric
            if f is None or f.state in (None, "not-supported"):
                continue
            if f.state != "completed":
                blockers.append(
                    f"gpu{x.index} NVLink fabric state {f.state}: Fabric Manager / NVLink training has not finished"
                )
            elif f.status not in (None, "success"):
                blockers.append(f"gpu{x.index} NVLink fabric registration failed ({f.status})")
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
    return NvlinkFact(Answer("yes", tuple(reasons)), count, via, nodes, bw)


def nvlink_edge_usable(topo: Topology, u: str, v: str) -> Answer:
    """Can data use this drawn NVLink bundle: a direct one asks :func:`nvlink` for its two GPUs; a GPU's
    bundle to the NVSwitch fabric is usable when that GPU reaches some other GPU over it."""
    if FABRIC not in (u, v):
        return nvlink(topo, u, v).usable
    gid = v if u == FABRIC else u
    others = [x for x in topo.graph.neighbors(FABRIC) if x != gid and x.startswith("gpu")]
    answers = [nvlink(topo, gid, o).usable for o in others]
    if not answers or any(a.yes for a in answers):
        return Answer("yes")
    return answers[0]


def _nvlink_silence(snap: Snapshot) -> str:
    """Why a source says nothing about NVLink, in its own terms."""
    if snap.source.kind == "nccl-xml":
        return "this NCCL topology file has no NVLink elements (NCCL adds NVLink from NVML at run time)"
    return f"this {snap.source.kind} source does not record NVLink"


def _route_bandwidth(topo: Topology, nodes: tuple[str, ...]) -> Bandwidth:
    """The narrowest bundle along an NVLink route (one or two bundles)."""
    g = topo.graph
    best: Bandwidth | None = None
    for u, v in itertools.pairwise(nodes):
        e = g.edges[u, v]
        bw = edge_bandwidth(e)
        if bw.gbps is None:
            return bw
        if best is None or best.gbps is None or bw.gbps < best.gbps:
            best = bw
    return best or UNKNOWN_BW


def edge_bandwidth(e: dict[str, Any]) -> Bandwidth:
    """The Bandwidth an NVLink edge carries (set by nvlink_bundle_bandwidth when the graph was built)."""
    return Bandwidth(
        e.get("bandwidth_gbps"),
        e.get("bandwidth_source", "unknown"),
        str(e.get("bandwidth_basis", "")),
        bool(e.get("lower_bound", False)),
        e.get("generation"),
        str(e.get("bandwidth_tag", "")),
    )


def pcie_path_class(topo: Topology, a: str, b: str) -> str | None:
    """The PCIe class between two devices: the snapshot's own (PCIe part under an NV# cell where the
    source gives it), else the structure's."""
    from topomap.graph.query import structural_class

    p = snapshot_pair(topo, a, b)
    if p is not None:
        if p.path is not None and p.path in PCIE_CLASSES:
            return p.path
        if p.pcie_path is not None:
            return p.pcie_path
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
    if cls is None:
        return Answer("unknown", ("P2P status and PCIe path not recorded by this source",), SETTLE["p2p"])
    ok = cls in NCCL_P2P_LEVELS
    outcome = "peer-to-peer assumed" if ok else "staged through host memory"
    return Answer(
        "yes" if ok else "no",
        (
            f"P2P status not recorded by this source: assumed NCCL's rule (PCIe P2P only up to PXB); "
            f"this pair is {cls} → {outcome}",
        ),
        SETTLE["p2p"],
        assumed=True,
    )


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
            settle=SETTLE["nvlink"],
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


# --- fabric ------------------------------------------------------------------------------------------


def fabric_ready(topo: Topology, gid: str) -> Answer:
    """Is this GPU's NVLink fabric (NVSwitch / multi-node NVLink) registered and usable."""
    alive = gpu_usable(topo, gid)
    if not alive.yes:
        return alive
    g = topo.gpu(gid)
    assert g is not None
    f = g.fabric
    if f is None:
        if not source_knows(topo.snapshot, "fabric"):
            return Answer("unknown", ("fabric state not recorded by this source",), SETTLE["fabric"])
        return Answer("unknown", ("the driver did not report a fabric state",), SETTLE["fabric"])
    if f.state in (None, "not-supported"):
        return Answer("no", ("the GPU reports no NVLink fabric (not-supported: not an NVSwitch-fabric part)",))
    if f.state != "completed":
        return Answer("no", (f"fabric state {f.state}: Fabric Manager / NVLink training has not finished",))
    if f.status not in (None, "success"):
        return Answer("no", (f"fabric registration status {f.status}",))
    if not f.clique_id:
        return Answer("no", ("fabric completed but clique id 0 (never registered in a clique)",))
    if f.cluster_uuid is not None and set(f.cluster_uuid.replace("-", "")) <= {"0"}:
        return Answer("no", ("fabric cluster UUID is all zeros (not registered)",))
    return Answer("yes", (f"fabric completed, clique {f.clique_id}",))


# --- NICs --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NicChoice:
    """The NIC nearest an endpoint among the usable ones, its path class, and GPUDirect RDMA."""

    nic: Nic | None
    path: str | None
    gdr: Answer
    reasons: tuple[str, ...] = ()


def nic_usable(nic: Nic) -> Answer:
    """A NIC can carry traffic unless its port is down; RDMA is what GPU traffic wants."""
    state = (nic.state or "").lower()
    if state in ("down", "disabled", "polling", "init", "armed"):
        return Answer("no", (f"NIC {nic.name} port is {nic.state}",))
    if nic.state is None:
        return Answer("unknown", (f"port state of NIC {nic.name} not recorded",), SETTLE["nic_state"])
    return Answer("yes", (f"NIC {nic.name} port {nic.state}",))


def nic_link_layer(nic: Nic) -> str:
    """`infiniband`, `roce` (RDMA over Ethernet), `ethernet` (plain: TCP), `efa`, or `rdma` when only
    an RDMA device name is known (mlx5_*: InfiniBand or RoCE), never guessed."""
    if nic.kind in ("infiniband", "roce", "ethernet"):
        return nic.kind
    if nic.kind == "efa":
        return "efa"
    return "rdma" if nic.rdma else "network"


def nearest_nic(topo: Topology, node: str) -> NicChoice:
    """The usable NIC closest to a GPU (best pair class, then index) or on a memory node's NUMA
    node. A NIC whose port is down is never chosen."""
    cache = topo.index.nearest_nic
    if node not in cache:
        cache[node] = _find_nearest_nic(topo, node)
    return cache[node]


def _find_nearest_nic(topo: Topology, node: str) -> NicChoice:
    snap = topo.snapshot
    all_nics = [n for n in snap.nics if n.rdma] or list(snap.nics)
    down = [n for n in all_nics if nic_usable(n).no]
    nics = [n for n in all_nics if not nic_usable(n).no]
    skipped = tuple(f"skipped NIC {n.name}: port {n.state}" for n in down)
    if not nics:
        why = "no usable NIC recorded" + (" (every port is down)" if down else "")
        return NicChoice(None, None, Answer("no", (why,)), skipped)
    if node.startswith("gpu"):
        best: tuple[int, int, Nic, str] | None = None
        for n in nics:
            cls = pcie_path_class(topo, node, f"nic{n.index}")
            if cls is None:
                continue
            key = (class_rank(cls), n.index)
            if best is None or key < best[:2]:
                best = (key[0], key[1], n, cls)
        if best is not None:
            return NicChoice(best[2], best[3], _gdr(topo, node, best[2], best[3]), skipped)
        return NicChoice(
            nics[0],
            None,
            Answer("unknown", (f"the source gives no path between {node} and any NIC",), SETTLE["nic"]),
            skipped,
        )
    from topomap.graph.query import numa_of

    numa = node if node.startswith("numa") else numa_of(topo, node)
    numa_id = topo.graph.nodes[numa].get("label") if numa in topo.graph else None
    same = [n for n in nics if numa and numa_id == f"NUMA {n.numa_node}"]
    return NicChoice((same or nics)[0], None, Answer("no", ("host memory is not a GPU: no GPUDirect",)), skipped)


def _gdr(topo: Topology, gid: str, nic: Nic, cls: str) -> Answer:
    g = topo.gpu(gid)
    if cls not in NCCL_P2P_LEVELS:
        return Answer("no", (f"NIC {nic.name} is {cls} to {gid}; data bounces through host memory",))
    if nic.gdr is False or (g is not None and g.gdr is False):
        return Answer("no", (f"the source says GPUDirect RDMA is off for {gid} / {nic.name}",))
    missing = findings_about(topo.snapshot, ("gpudirect-missing",), "host")
    if missing:
        return Answer("no", (f"NIC {nic.name} is {cls} to {gid}, but {missing[0].text}",))
    ready = findings_about(topo.snapshot, ("gpudirect-ready",), "host")
    if ready:
        return Answer("yes", (f"NIC {nic.name} is {cls} to {gid}; {ready[0].text}",))
    return Answer("yes", (f"NIC {nic.name} is {cls} to {gid}",))


# --- memory ------------------------------------------------------------------------------------------


def memory_node(topo: Topology, gid: str) -> str | None:
    """The NUMA node (graph id) whose memory serves a GPU: the node above it in the tree."""
    from topomap.graph.query import numa_of

    return numa_of(topo, gid)


def gpu_pairs_nvlink_summary(topo: Topology, gid: str) -> str:
    """One line for a GPU's NVLink in `show`: active links, bundle rate and its source, or why unknown."""
    g = topo.gpu(gid)
    if g is None:
        return "—"
    if g.lost:
        return "unknown (GPU lost during the probe)"
    snap = topo.snapshot
    active = [x for x in g.nvlinks if x.active]
    peers = sorted(
        (o for o in (f"gpu{x.index}" for x in snap.gpus) if o != gid and nvlink_route(topo, gid, o) is not None),
        key=natural_key,
    )
    if g.nvlinks:
        if not active:
            return f"0 of {len(g.nvlinks)} links active: no NVLink"
        bw = nvlink_bundle_bandwidth(g, len(active), snap)
        # `nvidia-smi nvlink -R` alone lists only the links that reach something: no total to show
        remotes_only = all(x.active and x.remote_pci_bus_id and x.speed_gbps is None for x in g.nvlinks)
        listed_all = not (snap.source.kind == "nvidia-smi" and remotes_only)
        total = f"/{len(g.nvlinks)}" if listed_all else ""
        text = f"{len(active)}{total} active" + ("" if listed_all else " (links down not listed)")
        model = model_from_name(g.name) if g.name else None
        if model is not None and model.nvlink_links and len(active) < model.nvlink_links and model.form == "sxm":
            text += f" — {model.nvlink_links - len(active)} fewer than an {model.name} has"
        return text + f", {bw.text()} ({bw.tag})" if bw.gbps is not None else text
    if peers:
        counts = sorted({(nvlink_route(topo, gid, o) or ((), 0, ""))[1] for o in peers})
        return f"NV{'/'.join(map(str, counts))} to {len(peers)} GPU(s) (from the matrix)"
    if not source_knows(snap, "nvlink"):
        return f"unknown: this source does not record NVLink (settle it with {SETTLE['nvlink']})"
    return "none"


def nv_pairs(snap: Snapshot) -> dict[frozenset[str], int]:
    """GPU pairs the source marks NV#, with the count."""
    out: dict[frozenset[str], int] = {}
    for p in snap.pairs:
        kind, n = parse_path(p.path or "")
        if kind == "NV":
            out[frozenset((p.a, p.b))] = n
    return out
