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

from topomap.base.links import pcie_bandwidth_gbps
from topomap.base.notes import Note, cat, said
from topomap.base.part_names import model_of
from topomap.base.parts import NVLINK_C2C_GBPS, nvlink_generation_of_cc
from topomap.base.units import fmt_bandwidth, fmt_gbps
from topomap.model.nic_ids import NicFamilyName, family_of_ids, family_of_name, family_row, layer_of_name
from topomap.model.origins import fact_origin
from topomap.model.snapshot import Fabric, Finding, Gpu, Nic, Snapshot
from topomap.model.source_facts import Fact, settle, source_knows

#: Where a bandwidth figure comes from. "topology-file": a figure a static topology file carries (a
#: cloud's NCCL_TOPO_FILE writes the same PCIe placeholder on every link), not read from the machine;
#: "declared", "catalogue": a declared lot's or the catalogue of public instance types' (topomap.model.origins).
BandwidthSource = Literal["spec", "derived", "model", "measured", "unknown", "topology-file", "declared", "catalogue"]

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
    "nic_family": "`ibv_devinfo` or `ls /sys/class/infiniband` (the RDMA device names), or `topomap probe`",
    "nic_speed": settle(Fact.NIC_SPEED),
    "nic_state": settle(Fact.NIC_SPEED),  # `ibstat` prints each port's State beside its Rate
    "gpu_model": "`nvidia-smi -L` or `topomap probe`",
    "gpu_memory": settle(Fact.GPU_MEMORY),
    "numa": settle(Fact.NUMA),
    "driver": settle(Fact.DRIVER),
    "pcie_link": "`nvidia-smi -q` (section GPU Link Info) or `topomap probe`",
    "pcie_link_machine": "`nvidia-smi -q -d PCIE` on the machine (GPU Link Info; LnkSta in lspci -vv says the same)",
    "nvlink_part": "`nvidia-smi -L` or `nvidia-smi --query-gpu=index,name --format=csv` (the GPU model; append it "
    "to the paste)",
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

    def why_note(self) -> Note:
        """:meth:`why` as a :class:`~topomap.base.notes.Note`: each reason made a Note keeps its slots."""
        parts: list[str] = []
        for r in self.reasons:
            parts += ["; ", r] if parts else [r]
        if self.value == "unknown" and self.settle:
            parts.append(f" (settle it with {self.settle})")
        return cat(*parts)


@dataclass(frozen=True)
class Bandwidth:
    """GB/s per direction with where it comes from, as a range (issue 30 item 1): ``gbps`` is its low
    end (exact figure: the figure), ``high_gbps`` its high end (None: the same as ``gbps`` for an exact
    figure, unbounded for a lower bound). ``lower_bound``: at least ``gbps``, perhaps more. ``links``:
    the NVLinks the figure covers (0: not an NVLink bundle). ``settle``: the command whose output
    would make an inexact figure exact. Two figures are ranked only by :func:`topomap.model.ranking.
    compare_bandwidth`, never by their ``gbps``."""

    gbps: float | None
    source: BandwidthSource
    basis: str = ""
    lower_bound: bool = False
    generation: int | None = None
    tag: str = ""  # the basis in two or three words: "driver-reported", "NVLink 4 nominal", "lower bound"
    shared_by: int = 0  # a network arrow's NIC carries this many arrows of its step at once (0: not shared)
    high_gbps: float | None = None
    links: int = 0
    settle: str | None = None
    detail: str = ""  # a catalogue figure's entry ("aws/p4de.24xlarge"), printed beside its source

    @property
    def high(self) -> float | None:
        """The most this figure can be: ``high_gbps``, else ``gbps`` when exact, else None (unbounded)."""
        if self.high_gbps is not None:
            return self.high_gbps
        return None if self.lower_bound else self.gbps

    @property
    def exact(self) -> bool:
        return self.gbps is not None and not self.lower_bound

    def text(self) -> str:
        """A figure in a view: "450 GB/s spec", "≥ 200 GB/s derived", or with its source in words
        ("15.8 GB/s, from the topology file; not the machine's")."""
        words = SOURCE_WORDS.get(self.source)
        source = f"{self.source} ({self.detail})" if self.detail else self.source
        text = fmt_bandwidth(self.gbps, None if words else source, self.lower_bound)
        if words and self.gbps is not None:
            text += f", {words}"
        return text + (f" (NIC shared by {self.shared_by} arrows)" if self.shared_by > 1 else "")

    def range_text(self) -> str:
        """The whole range: "200–900 GB/s", "≥ 200 GB/s" (no upper end known), "300 GB/s", "unknown"."""
        if self.gbps is None:
            return "unknown"
        high = self.high
        if high is None:
            return f"≥ {fmt_gbps(self.gbps)} GB/s"
        if self.exact or abs(high - self.gbps) <= high * 1e-9:
            return f"{fmt_gbps(self.gbps)} GB/s"
        return f"{fmt_gbps(self.gbps)}–{fmt_gbps(high)} GB/s"


#: Sources whose figure is not the machine's and so never ranks (:func:`topomap.model.ranking.
#: compare_bandwidth`), with the words a view writes after the figure.
SOURCE_WORDS: dict[str, str] = {"topology-file": "from the topology file; not the machine's"}


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
    """A GPU's own PCIe link: generation at its best (idle GPUs lower their speed), width as trained.
    ``placeholder``: the figures are a static topology file's, not read from the machine."""

    gen: int | None
    width: int | None
    gen_max: int | None
    width_max: int | None
    downtrained: bool
    note: str | None
    placeholder: bool = False

    @property
    def gbps(self) -> float | None:
        return pcie_bandwidth_gbps(self.gen, self.width)

    def bandwidth(self) -> Bandwidth:
        """The link's nominal figure per direction: spec, or the topology file's (never ranked) with
        what settles it."""
        gbps = self.gbps
        if gbps is None:
            return UNKNOWN_BW
        basis = f"PCIe Gen{self.gen} x{self.width} (nominal)"
        if self.placeholder:
            why = f"{basis}, as the topology file writes it"
            return Bandwidth(gbps, "topology-file", why, high_gbps=gbps, settle=SETTLE["pcie_link_machine"])
        return Bandwidth(gbps, "spec", basis, high_gbps=gbps)


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
    return PcieLinkFact(gen, width, p.gen_max, p.width_max, down, note, p.placeholder)


def pcie_placeholders(snap: Snapshot) -> bool:
    """Whether the snapshot's PCIe figures are a static topology file's placeholders (a cloud's
    NCCL_TOPO_FILE, :mod:`topomap.importers.nccl_xml`), not the machine's."""
    return any(g.pcie is not None and g.pcie.placeholder for g in snap.gpus) or any(
        d.link_placeholder for d in snap.pci
    )


@dataclass(frozen=True)
class GpuMemory:
    """A card's memory: bytes (as the driver reports them, or the model's sold size in GiB) and where it
    comes from in words (``source``: "snapshot", "declared: 80 GB", "derived …" or "unknown") and as a
    kind (``kind``: "given" where a declared lot or the catalogue gave it)."""

    total_bytes: int | None
    source: str
    kind: Literal["snapshot", "given", "derived", "unknown"]

    @property
    def derived(self) -> bool:
        return self.kind == "derived"


_NAME_GB = re.compile(r"(\d+)\s*GB\b", re.IGNORECASE)


def gpu_memory(gpu: Gpu, snap: Snapshot | None = None) -> GpuMemory:
    """The memory of one card: the snapshot's figure (with ``snap``: "declared" or "catalogue (…)" where a
    declared lot or the catalogue gave it); else the model's (device table, from the name or the PCI device
    id), else a size written in the name ("Tesla V100-SXM3-32GB-H"), labelled derived."""
    if gpu.memory_total_bytes is not None:
        origin = fact_origin(snap, "gpus.memory_total_bytes")
        if origin is not None:
            return GpuMemory(gpu.memory_total_bytes, origin.with_value(), "given")
        return GpuMemory(gpu.memory_total_bytes, "snapshot", "snapshot")
    model = model_of(gpu.name, gpu.pci_device_id)
    if model is not None and model.memory_gb:
        return GpuMemory(int(model.memory_gb * 2**30), f"derived from the model ({model.name}), nominal", "derived")
    m = _NAME_GB.search(gpu.name or "")
    if m:
        return GpuMemory(int(m.group(1)) * 2**30, f"derived from the name {gpu.name!r}, nominal", "derived")
    return GpuMemory(None, "unknown", "unknown")


def gpu_model_name(gpu: Gpu) -> tuple[str | None, bool]:
    """The GPU's model and whether it was derived (from the PCI device id) rather than read."""
    return gpu.name, "name" in gpu.derived


def model_nvlink_generation(gpu: Gpu) -> tuple[int | None, str]:
    """NVLink generation implied by the GPU model or compute capability (the parts table): derived."""
    m = model_of(gpu.name, gpu.pci_device_id)
    if m is not None and m.nvlink_generation is not None:
        return m.nvlink_generation, f"the model ({m.name})"
    gen = nvlink_generation_of_cc(gpu.compute_capability)
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
    what the family implies for GPUDirect RDMA (:func:`nic_gdr` adds the source's own word, the path the rest)."""

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
            "gvnic": "TCP (gVNIC)",
            "cassini": "Slingshot",
            "rdma": {"infiniband": "IB (?)", "roce": "RoCE (?)"}.get(self.transport, "RDMA (?)"),
        }.get(self.family, "unknown")


def nic_family(nic: Nic) -> NicFamily:
    """The NIC's family from its PCI vendor/device ids, else its RDMA device name, else what the source
    says of it (link layer, RDMA or not), by the one table :data:`topomap.model.nic_ids.FAMILIES`. AWS EFA
    is neither InfiniBand nor RoCE (SRD over AWS's fabric, through libfabric); ConnectX is InfiniBand or
    RoCE by its port's link layer; Broadcom (bnxt_re) and Intel (irdma) RDMA run over Ethernet; a NIC with
    no RDMA device carries TCP only."""
    fam = family_of_ids(nic.pci_vendor_id, nic.pci_device_id, nic.rdma)
    evidence = f"PCI vendor {nic.pci_vendor_id}" if fam else ""
    if fam is None and nic.rdma:
        fam = family_of_name(nic.name)
        evidence = f"RDMA device name {nic.name}" if fam else ""
    if fam is None and nic.kind in ("efa", "slingshot"):  # a declared or recorded fabric with no ids
        fam, evidence = ("efa" if nic.kind == "efa" else "cassini"), "the source's link layer"
    if fam is None and nic.kind in ("tcpx", "tcpxo"):
        fam, evidence = "gvnic", "the source's fabric (GPUDirect-TCPX/TCPXO)"
    layer = nic.kind if nic.kind in ("infiniband", "roce") else layer_of_name(nic.name) if nic.rdma else None
    if fam is None and not nic.rdma:
        if nic.kind == "ethernet" or nic.pci_vendor_id is not None:
            why = Note("NIC {nic} has no RDMA device: NCCL uses TCP sockets, staged through host memory", nic=nic.name)
            return NicFamily("ethernet", "plain Ethernet (no RDMA)", "ethernet", Answer("no", (why,)), "no RDMA device")
        return NicFamily("unknown", "network device", "network", Answer("unknown", (), SETTLE["nic"]), "")
    row = family_row(fam) if fam is not None else None
    if row is None:
        could = {"infiniband": "an InfiniBand HCA", "roce": "a RoCE NIC"}.get(layer or "", "InfiniBand, RoCE or EFA")
        why = Note(
            "{nic}'s family (" + said(could) + ", vendor not recorded) is not known, and GPUDirect RDMA depends on it",
            nic=nic.name,
        )
        label = "RDMA NIC, family not recorded (InfiniBand, RoCE or EFA)"
        return NicFamily(
            "rdma", label, layer or "rdma", Answer("unknown", (why,), SETTLE["nic_family"]), "an RDMA device"
        )
    gdr = Answer(row.gdr, (Note("{nic}: " + said(row.gdr_why), nic=nic.name),), row.settle)
    if row.family == "connectx":
        what = {"infiniband": "InfiniBand", "roce": "RoCE"}.get(layer or "", "InfiniBand or RoCE")
        return NicFamily("connectx", f"{row.label} ({what})", layer or "rdma", gdr, evidence)
    return NicFamily(row.family, row.label, row.layer or layer or "roce", gdr, evidence)


def nic_gdr(nic: Nic, origin: str | None = None) -> Answer:
    """Can this NIC do GPUDirect RDMA at all (the path to a GPU aside): the one answer every view shows
    (``show``'s GDR column; :func:`topomap.graph.evidence.nearest_nic` adds the path). The source's own
    word first (NCCL's ``gdr`` attribute, or a fact filled in later with its origin: ``Nic.gdr``), else
    what the family implies (:func:`nic_family`); unknown where neither says, with what settles it."""
    where = said(f" ({origin})" if origin else "")
    if nic.gdr is True:
        return Answer("yes", (Note("the source records GPUDirect RDMA support for {nic}" + where, nic=nic.name),))
    if nic.gdr is False:
        return Answer("no", (Note("the source records no GPUDirect RDMA for {nic}" + where, nic=nic.name),))
    return nic_family(nic).gdr


def nic_link_layer(nic: Nic) -> str:
    """The network an arrow through this NIC crosses: :func:`nic_family`'s transport."""
    return nic_family(nic).transport


def gpu_alive(g: Gpu) -> Answer:
    """A GPU is of no use once it fell off the bus during the probe (NVML GPU_IS_LOST): the one answer
    to "GPU lost" (graph.evidence.gpu_usable and :func:`fabric_ready` ask it)."""
    if g.lost:
        return Answer(
            "no",
            (f"gpu{g.index} was lost during the probe (fell off the bus): reset or reseat it; `dmesg` shows Xid 79",),
        )
    return Answer("yes")


@dataclass(frozen=True)
class FabricHold:
    """What keeps a GPU's NVLink fabric from coming up: its ``state`` is not completed yet (Fabric Manager
    / NVLink training has not finished) or its registration ``status`` failed; ``value`` as NVML gave it."""

    field: Literal["state", "status"]
    value: str

    def text(self) -> str:
        """The words of :func:`fabric_ready`: "fabric state in-progress: Fabric Manager … has not finished"."""
        if self.field == "state":
            return f"fabric state {self.value}: Fabric Manager / NVLink training has not finished"
        return f"fabric registration status {self.value}"

    def text_for(self, gpu: str) -> str:
        """The words for one GPU of an NVLink pair: "gpu3 NVLink fabric state in-progress: …"."""
        if self.field == "state":
            return f"{gpu} NVLink fabric state {self.value}: Fabric Manager / NVLink training has not finished"
        return f"{gpu} NVLink fabric registration failed ({self.value})"


def fabric_hold(f: Fabric | None) -> FabricHold | None:
    """Why a fabric the GPU reports has not come up (state not completed, registration failed); None
    where it has, or where the GPU reports no fabric (absent, not-supported)."""
    if f is None or f.state in (None, "not-supported"):
        return None
    if f.state != "completed":
        return FabricHold("state", str(f.state))
    if f.status not in (None, "success"):
        return FabricHold("status", str(f.status))
    return None


def fabric_ready(snap: Snapshot, g: Gpu) -> Answer:
    """Is this GPU's NVLink fabric (NVSwitch / multi-node NVLink) registered and usable."""
    alive = gpu_alive(g)
    if not alive.yes:
        return alive
    f = g.fabric
    if f is None:
        if not source_knows(snap, "fabric"):
            return Answer("unknown", ("fabric state not recorded by this source",), SETTLE["fabric"])
        return Answer("unknown", ("the driver did not report a fabric state",), SETTLE["fabric"])
    if f.state in (None, "not-supported"):
        return Answer("no", ("the GPU reports no NVLink fabric (not-supported: not an NVSwitch-fabric part)",))
    hold = fabric_hold(f)
    if hold is not None:
        return Answer("no", (hold.text(),))
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
