"""Per-device facts: what one GPU or NIC of a snapshot is, can do and carries, each decided once.

These need only the snapshot (no graph), so the model's neighbours (merge, the measured-figure
readers, run summaries) ask them as the views do. Path facts (NVLink between two GPUs, P2P, the
nearest NIC) live in :mod:`topomap.graph.evidence`. A fact the source does not carry is
``unknown`` with the command whose output would settle it (:data:`SETTLE`); a fact the input
implies (NVLink generation from the GPU model) is ``derived`` and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from topomap.base.devices import cc_major, model_of
from topomap.base.links import NVLINK_C2C_GBPS, NVLINK_GBPS_PER_LINK, nvlink_generation_for_cc, pcie_bandwidth_gbps
from topomap.base.units import fmt_bandwidth, fmt_gbps
from topomap.model.nic_ids import FAMILY_NAMES, NIC_VENDORS, NicFamilyName
from topomap.model.nvlinks import NvlinkPart, nvlink_floor, nvlink_part
from topomap.model.origins import fact_origin, relabel
from topomap.model.snapshot import Fabric, Finding, Gpu, Nic, Snapshot
from topomap.model.source_facts import Fact, settle, source_knows

#: Where a bandwidth figure comes from (``declared``, ``catalogue``: a declared lot's, topomap.model.origins).
BandwidthSource = Literal["spec", "derived", "model", "measured", "unknown", "declared", "catalogue"]

Tri = Literal["yes", "no", "unknown"]


#: The command whose output settles each fact a source may not carry.
SETTLE: dict[str, str] = {
    "nvlink": "`nvidia-smi topo -m` run inside the container (or `topomap probe`)",
    "nvlink_links": "`nvidia-smi nvlink -s` (or `topomap probe`)",
    "p2p": "`nvidia-smi topo -p2p rw` (or `topomap probe`)",
    "path": "`nvidia-smi topo -m` run inside the container",
    "fabric": "`nvidia-smi -q` (section Fabric) or `topomap probe`",
    "mig": "`nvidia-smi -q` (section MIG Mode) or `topomap probe`",
    "nic": "`nvidia-smi topo -m` (its NIC legend) or `topomap probe`",
    "nic_speed": settle(Fact.NIC_SPEED),
    "nic_state": settle(Fact.NIC_SPEED),  # `ibstat` prints each port's State beside its Rate
    "gpu_model": "`nvidia-smi -L` or `topomap probe`",
    "gpu_memory": settle(Fact.GPU_MEMORY),
    "numa": settle(Fact.NUMA),
    "driver": settle(Fact.DRIVER),
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
    shared_by: int = 0  # a network arrow's NIC carries this many arrows of its step at once (0: not shared)
    detail: str = ""  # a catalogue figure's entry ("aws/p4de.24xlarge"), printed beside its source

    def text(self) -> str:
        source = f"{self.source} ({self.detail})" if self.detail else self.source
        text = fmt_bandwidth(self.gbps, source, self.lower_bound)
        return text + (f" (NIC shared by {self.shared_by} arrows)" if self.shared_by > 1 else "")


UNKNOWN_BW = Bandwidth(None, "unknown", "not recorded by this source")


def findings_about(snap: Snapshot, kinds: tuple[str, ...], *subjects: str) -> list[Finding]:
    """The probe's / measurement's findings of these kinds about a GPU (``gpu3``), a pair (``gpu0``,
    ``gpu1``, matched either way round as ``gpu0-gpu1``) or the host."""
    want = set(subjects)
    if len(subjects) == 2:
        want = {f"{subjects[0]}-{subjects[1]}", f"{subjects[1]}-{subjects[0]}"}
    return [f for f in snap.findings if f.kind in kinds and f.subject in want]


#: Findings that make peer-to-peer between two GPUs unusable, with what the measurement saw.
P2P_BLOCKERS = ("p2p-corrupt", "measure-hang", "acs-redirect")


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


def gpu_memory(gpu: Gpu, snap: Snapshot | None = None) -> GpuMemory:
    """The memory of one card: the snapshot's figure (with ``snap``: "declared" or "catalogue (…)" where a
    declared lot or the catalogue gave it); else the model's (device table, from the name or the PCI device
    id), else a size written in the name ("Tesla V100-SXM3-32GB-H"), labelled derived."""
    if gpu.memory_total_bytes is not None:
        origin = fact_origin(snap, "gpus.memory_total_bytes")
        return GpuMemory(gpu.memory_total_bytes, origin.with_value() if origin is not None else "snapshot")
    model = model_of(gpu.name, gpu.pci_device_id)
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
    m = model_of(gpu.name, gpu.pci_device_id)
    if m is not None and m.nvlink_generation is not None:
        return m.nvlink_generation, f"the model ({m.name})"
    major = cc_major(gpu.compute_capability)
    gen = nvlink_generation_for_cc(major) if major is not None else None
    if gen is not None:
        return gen, f"compute capability {gpu.compute_capability}"
    return None, ""


def c2c_bandwidth(gpu: Gpu) -> Bandwidth:
    """A Grace CPU's memory to its GPU over NVLink-C2C, per direction. Published for Grace Hopper
    (GH200: one GPU on the link); for other parts (GB200 shares a Grace between two GPUs) or an
    unknown model the figure is unknown."""
    model = model_of(gpu.name, gpu.pci_device_id)
    hopper = (model is not None and model.architecture == "hopper") or "GH200" in (gpu.name or "")
    if hopper:
        return Bandwidth(
            NVLINK_C2C_GBPS, "spec", f"NVLink-C2C (Grace Hopper), {NVLINK_C2C_GBPS:g} GB/s per direction (nominal)"
        )
    why = "the GPU model is not recorded" if model is None and not gpu.name else f"not published for {gpu.name}"
    return Bandwidth(None, "unknown", f"NVLink-C2C rate per GPU: {why} (Grace Hopper: {NVLINK_C2C_GBPS:g} GB/s)")


def nvlink_bundle_bandwidth(gpu: Gpu, count: int, snap: Snapshot | None = None) -> Bandwidth:
    """:func:`_bundle_bandwidth`, declared / catalogue where the NVLink topology was (origins.relabel)."""
    return relabel(_bundle_bandwidth(gpu, count, snap), fact_origin(snap, "pairs.nvlink"), f"NV{count}")


def _bundle_bandwidth(gpu: Gpu, count: int, snap: Snapshot | None = None) -> Bandwidth:
    """Bandwidth of ``count`` NVLinks of a GPU, per direction, from the best evidence there is:
    the per-link rate the driver (or file) reports (never above the part's published total); else the
    part's published figure (:func:`~topomap.model.nvlinks.nvlink_part`: the model, export variants
    included); else a floor over every part the GPU could be (same NVLink generation or compute
    capability when known, any part otherwise: :func:`~topomap.model.nvlinks.nvlink_floor`), labelled a
    lower bound unless all those parts agree; unknown when no known part has that many links."""
    if count <= 0:
        return Bandwidth(None, "unknown", "no NVLink")
    active = [x for x in gpu.nvlinks if x.active]
    speeds = {x.speed_gbps for x in active if x.speed_gbps}
    gens = {x.generation for x in active if x.generation is not None}
    gen = gens.pop() if len(gens) == 1 else None
    part = nvlink_part(gpu)
    if len(speeds) == 1:
        return _reported_bandwidth(speeds.pop(), count, gen, part, snap)
    if part is not None and part.cc == "8.6" and part.links == 4:
        return Bandwidth(
            part.gbps_per_link * count,
            "spec",
            f"{count} links × {part.gbps_per_link:g} GB/s per link (GA102 NVLink bridge, nominal)",
            generation=3,
            tag="GA102 bridge nominal",
        )
    if part is not None and gen is not None and not part.export and part.gbps_per_link == NVLINK_GBPS_PER_LINK.get(gen):
        rate = part.gbps_per_link  # the generation the links report, at the rate this part runs them
        return Bandwidth(
            rate * count,
            "spec",
            f"{count} links × {rate:g} GB/s per link (NVLink {gen}, nominal)",
            generation=gen,
            tag=f"NVLink {gen} nominal",
        )
    if part is not None:
        return _part_bandwidth(part, count)
    cc = gpu.compute_capability if gpu.compute_capability else None
    floor = nvlink_floor(count, generation=gen) if gen is not None else nvlink_floor(count, cc=cc)
    what = f"NVLink {gen}" if gen is not None else f"compute capability {cc}" if cc else "model unknown"
    if floor.gbps is None or floor.per_link is None:
        floor = nvlink_floor(count)  # a generation / capability no listed part has: any part
    if floor.gbps is None or floor.per_link is None:
        return Bandwidth(
            None,
            "unknown",
            f"{count} links, {what}: no known part has that many (settle it with the GPU model: {SETTLE['gpu_model']})",
        )
    source: BandwidthSource = "spec" if gen is not None else "derived"
    if floor.exact:
        return Bandwidth(
            floor.gbps,
            source,
            f"{count} links × {floor.per_link:.4g} GB/s per link ({what}: every such part alike, nominal)",
            generation=gen,
            tag=f"{what}, nominal",
        )
    return Bandwidth(
        floor.gbps,
        source,
        f"{count} links, {what}: at least {floor.per_link:.4g} GB/s per link, the slowest part that can report "
        f"NV{count} ({floor.slowest}); the GPU model settles it ({SETTLE['gpu_model']})",
        lower_bound=True,
        generation=gen,
        tag=f"lower bound, {what}",
    )


_SIGNALLING_MARGIN = 26.5625 / 25 + 1e-3


def _reported_bandwidth(
    rate: float, count: int, gen: int | None, part: NvlinkPart | None, snap: Snapshot | None
) -> Bandwidth:
    """Links × the reported per-link rate; an export variant whose published total is lower keeps its total.
    Drivers print a link's signalling rate (26.562 GB/s for NVLink 4's nominal 25: +6.25 %), so only a
    figure beyond that margin over the published total is capped."""
    reporter = (
        {"hwloc-xml": "hwloc", "lstopo": "hwloc", "nccl-log": "NCCL"}.get(snap.source.kind, "driver")
        if snap is not None
        else "driver"
    )
    if part is not None and rate * count > part.per_direction_gbps * _SIGNALLING_MARGIN:
        return Bandwidth(
            part.per_direction_gbps,
            "spec",
            f"{count} links × {rate:g} GB/s per link ({reporter}-reported rate), capped at the "
            f"{part.name}'s published {part.total_gbps:g} GB/s in total both ways",
            generation=gen,
            tag=f"{part.name} published total",
        )
    return Bandwidth(
        rate * count,
        "spec",
        f"{count} links × {rate:g} GB/s per link ({reporter}-reported rate)",
        generation=gen,
        tag=f"{reporter}-reported rate",
    )


def _part_bandwidth(part: NvlinkPart, count: int) -> Bandwidth:
    """``count`` links of a known part: its published total over its links; where the link count is
    not published, the least per link (its die's most links) and never above its total."""
    gbps = min(count * part.gbps_per_link, part.per_direction_gbps)
    if part.links is None:
        return Bandwidth(
            gbps,
            "derived",
            f"{count} links, {part.name}: {part.total_gbps:g} GB/s in total both ways ({part.source}); "
            f"at least {part.gbps_per_link:.4g} GB/s per link",
            lower_bound=gbps < part.per_direction_gbps,
            generation=part.generation,
            tag=f"{part.name}, link count not published",
        )
    return Bandwidth(
        gbps,
        "derived",
        f"{count} links × {part.gbps_per_link:.4g} GB/s per link ({part.name}: {part.total_gbps:g} GB/s over "
        f"{part.links} links in total both ways, {part.source})",
        generation=part.generation,
        tag=f"{part.name} published",
    )


@dataclass(frozen=True)
class NicChoice:
    """The NIC nearest an endpoint among the usable ones, its path class, and GPUDirect RDMA.
    ``equally_near``: every NIC at that class (this one among them) where there are several;
    ``channels``: the NICs NCCL's channels of this GPU use, this one first (several where fewer GPUs
    than NICs share them)."""

    nic: Nic | None
    path: str | None
    gdr: Answer
    reasons: tuple[str, ...] = ()
    equally_near: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()


def nic_usable(nic: Nic) -> Answer:
    """A NIC can carry traffic unless its port is down; RDMA is what GPU traffic wants."""
    state = (nic.state or "").lower()
    if state in ("down", "disabled", "polling", "init", "armed"):
        return Answer("no", (f"NIC {nic.name} port is {nic.state}",))
    if nic.state is None:
        return Answer("unknown", (f"port state of NIC {nic.name} not recorded",), SETTLE["nic_state"])
    return Answer("yes", (f"NIC {nic.name} port {nic.state}",))


@dataclass(frozen=True)
class NicFamily:
    """What a NIC is and what that implies: ``transport`` is the link an arrow crosses (``infiniband``,
    ``roce``, ``efa``, ``ethernet`` (TCP sockets), ``rdma`` (RDMA, link layer not recorded)); ``gdr``
    what the family implies for GPUDirect RDMA (the path and the source's own flag decide the rest)."""

    family: NicFamilyName
    label: str
    transport: str
    gdr: Answer
    evidence: str  # what it was recognised from

    @property
    def short(self) -> str:
        """The family in a table cell: "IB (CX)" (ConnectX), "RoCE (BCM)", "EFA", "TCP only", "RDMA (?)"."""
        if self.family == "connectx":
            return {"infiniband": "IB (CX)", "roce": "RoCE (CX)"}.get(self.transport, "IB/RoCE (CX)")
        return {
            "efa": "EFA",
            "broadcom": "RoCE (BCM)",
            "intel": "RDMA (Intel)",
            "ethernet": "TCP only",
            "rdma": {"infiniband": "IB (?)", "roce": "RoCE (?)"}.get(self.transport, "RDMA (?)"),
        }.get(self.family, "unknown")


def nic_family(nic: Nic) -> NicFamily:
    """The NIC's family from its PCI vendor/device ids, else its RDMA device name, else what the source
    says of it (link layer, RDMA or not). AWS EFA is neither InfiniBand nor RoCE (SRD over AWS's
    fabric, through libfabric); ConnectX is InfiniBand or RoCE by its port's link layer; Broadcom
    (bnxt_re) and Intel (irdma) RDMA run over Ethernet; a NIC with no RDMA device carries TCP only."""
    fam: NicFamilyName | None = None
    evidence = ""
    if nic.pci_vendor_id in NIC_VENDORS and (nic.rdma or NIC_VENDORS[nic.pci_vendor_id] == "efa"):
        fam, evidence = NIC_VENDORS[nic.pci_vendor_id], f"PCI vendor {nic.pci_vendor_id}"
        if fam == "efa" and not (nic.pci_device_id or "").startswith("0xefa"):
            fam = None  # Amazon's ENA (0xec20) and others: not EFA
    if fam is None and nic.rdma:
        fam = next((f for prefixes, f in FAMILY_NAMES if nic.name.startswith(prefixes)), None)
        evidence = f"RDMA device name {nic.name}" if fam else ""
    if fam is None and nic.kind == "efa":
        fam, evidence = "efa", "the source's link layer"
    if fam == "efa":
        return _efa(nic, evidence)
    layer = nic.kind if nic.kind in ("infiniband", "roce") else None
    if fam is None and not nic.rdma:
        known = nic.kind == "ethernet" or nic.pci_vendor_id is not None
        no = Answer("no", (f"NIC {nic.name} has no RDMA device: NCCL uses TCP sockets, staged through host memory",))
        if known:
            return NicFamily("ethernet", "plain Ethernet (no RDMA)", "ethernet", no, "no RDMA device")
        return NicFamily("unknown", "network device", "network", Answer("unknown", ()), "")
    if fam is None:
        label = "RDMA NIC, family not recorded (InfiniBand, RoCE or EFA)"
        return NicFamily("rdma", label, layer or "rdma", Answer("unknown", ()), "an RDMA device")
    gdr_yes = Answer("yes", (f"{nic.name} is a ConnectX: GPUDirect RDMA with nvidia-peermem or dma-buf",))
    maybe = Answer(
        "unknown",
        (f"GPUDirect RDMA over {nic.name} needs the driver's peer-memory or dma-buf support",),
        "NCCL's log (`NCCL_DEBUG=INFO`: 'GPU Direct RDMA Enabled for ... HCA')",
    )
    if fam == "connectx":
        what = {"infiniband": "InfiniBand", "roce": "RoCE"}.get(layer or "", "InfiniBand or RoCE")
        return NicFamily("connectx", f"NVIDIA ConnectX ({what})", layer or "rdma", gdr_yes, evidence)
    if fam == "broadcom":
        return NicFamily("broadcom", "Broadcom RDMA Ethernet (bnxt_re, RoCE)", "roce", maybe, evidence)
    return NicFamily("intel", "Intel RDMA Ethernet (irdma: iWARP or RoCEv2)", layer or "roce", maybe, evidence)


def _efa(nic: Nic, evidence: str) -> NicFamily:
    """AWS EFA: GPUDirect RDMA on p4d/p4de/p5 (EFA with RDMA read) with the efa kernel driver and NCCL's
    aws-ofi-nccl plugin; the first EFA (0xefa0: p3dn, c5n) has no RDMA read, so no GPUDirect."""
    if nic.pci_device_id == "0xefa0":
        gdr = Answer("no", (f"{nic.name} is a first-generation EFA (0xefa0): no RDMA read, no GPUDirect RDMA",))
    elif nic.pci_device_id is not None and nic.pci_device_id.startswith("0xefa"):
        gdr = Answer(
            "yes",
            (
                f"{nic.name} is an EFA with RDMA read ({nic.pci_device_id}): GPUDirect RDMA with the efa driver "
                "and the aws-ofi-nccl plugin",
            ),
        )
    else:
        gdr = Answer(
            "unknown",
            (f"{nic.name} is an EFA; GPUDirect RDMA needs EFA with RDMA read (p4d, p4de, p5) and aws-ofi-nccl",),
            "`fi_info -p efa -v` (FI_HMEM) or the instance type",
        )
    return NicFamily("efa", "AWS EFA (SRD; neither InfiniBand nor RoCE)", "efa", gdr, evidence)


def nic_link_layer(nic: Nic) -> str:
    """The network an arrow through this NIC crosses: :func:`nic_family`'s transport."""
    return nic_family(nic).transport


def fabric_ready(snap: Snapshot, g: Gpu) -> Answer:
    """Is this GPU's NVLink fabric (NVSwitch / multi-node NVLink) registered and usable."""
    if g.lost:
        return Answer(
            "no",
            (f"gpu{g.index} was lost during the probe (fell off the bus): reset or reseat it; `dmesg` shows Xid 79",),
        )
    f = g.fabric
    if f is None:
        if not source_knows(snap, "fabric"):
            return Answer("unknown", ("fabric state not recorded by this source",), SETTLE["fabric"])
        return Answer("unknown", ("the driver did not report a fabric state",), SETTLE["fabric"])
    if f.state in (None, "not-supported"):
        return Answer("no", ("the GPU reports no NVLink fabric (not-supported: not an NVSwitch-fabric part)",))
    if f.state != "completed":
        return Answer("no", (f"fabric state {f.state}: Fabric Manager / NVLink training has not finished",))
    if f.status not in (None, "success"):
        return Answer("no", (f"fabric registration status {f.status}",))
    if not _in_cluster(f):  # an HGX board: its NVSwitches serve this host alone; NVML says so this way
        return Answer("yes", ("fabric completed, no cluster UUID: an NVLink domain of this host only",))
    if not f.clique_id:
        return Answer("no", ("fabric completed but clique id 0 (never registered in a clique)",))
    return Answer("yes", (f"fabric completed, clique {f.clique_id}",))


def _in_cluster(f: Fabric) -> bool:
    """The fabric names a multi-node NVLink cluster (a non-zero cluster UUID): GB200 NVL racks and the
    like. HGX H100/H200 boards report completed with an all-zero UUID and clique 0."""
    return f.cluster_uuid is not None and not set(f.cluster_uuid.replace("-", "")) <= {"0"}


def fabric_clique(snap: Snapshot, g: Gpu) -> tuple[str, int] | None:
    """The NVLink domain a GPU belongs to (cluster UUID, clique id) when its fabric is ready; GPUs of
    two hosts with the same key reach each other over multi-node NVLink (NCCL's rule). None when the
    fabric is not ready, absent or not recorded."""
    f = g.fabric
    if f is None or f.cluster_uuid is None or f.clique_id is None or not _in_cluster(f):
        return None
    if not fabric_ready(snap, g).yes:
        return None
    return f.cluster_uuid, f.clique_id
