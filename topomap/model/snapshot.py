"""The snapshot: topomap's versioned JSON contract (``topomap.snapshot/1``).

One msgspec definition both validates input (errors carry the JSON path of the bad field) and
generates the JSON Schema shipped in ``topomap/schema/snapshot.schema.json``. Unknown is
``None`` plus a :class:`Problem`, never a guess. Output is deterministic: the same snapshot
always encodes to the same bytes.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

import msgspec

from topomap.base.errors import TopomapError
from topomap.base.links import P2PStatus, PathClass, PathCode

SCHEMA = "topomap.snapshot/1"
SCHEMA_VERSION = 1

SourceKind = Literal[
    "probe", "nvidia-smi", "nccl-xml", "hwloc-xml", "merge", "lstopo", "nccl-log", "declared", "nccl-tests", "amd-smi"
]
#: The outputs one file held (a paste may hold several): what each can carry is
#: ``topomap.model.source_facts.CAN_CARRY``.
SourceFormat = Literal[
    "probe",
    "nccl-xml",
    "hwloc-xml",
    "topo-m",
    "topo-p2p",
    "nvlink-status",
    "nvlink-remote",
    "gpu-list",
    "nvidia-smi-q",
    "query-gpu-csv",
    "lstopo",
    "nccl-log",
    "ibstat",
    "declared",  # a declared lot (a catalogue line written as YAML): topomap.model.lots
    "nccl-tests",  # an nccl-tests output's rank table: hosts, GPU models, bus ids (issue 32)
    # AMD (issue 35): `rocm-smi --showtopo` and its --showtopoweight/--showtopohops/--showtopotype/
    # --shownodesbw/--showtoponuma parts, `amd-smi topology` (table or --json), `amd-smi static`,
    # `amd-smi list`, `amd-smi` (its GPU table), `amd-smi xgmi`, `rocminfo`
    "rocm-smi-topo",
    "rocm-smi-numa",
    "amd-smi-topology",
    "amd-smi-static",
    "amd-smi-list",
    "amd-smi-xgmi",
    "rocminfo",
]
SOURCE_FORMATS: tuple[SourceFormat, ...] = get_args(SourceFormat)
NicKind = Literal["infiniband", "roce", "ethernet", "efa", "unknown", "slingshot", "tcpx", "tcpxo"]
#: Where a fact filled into a snapshot comes from: a declared lot, or the catalogue of public instance types.
FillOrigin = Literal["declared", "catalogue"]
PciKind = Literal["host-bridge", "bridge", "switch-upstream", "switch-downstream", "gpu", "nic", "nvswitch", "other"]
RemoteType = Literal["gpu", "switch", "cpu", "unknown"]
GpuVendor = Literal["nvidia", "amd"]
FabricState = Literal["not-supported", "not-started", "in-progress", "completed"]


# Numbers as decoding checks them (in C, with the JSON path of a bad value; the JSON Schema
# carries the same bounds). JSON floats are finite already; integers may be any length in JSON,
# and a rate is bounded far above any link that exists. Snapshots built in memory (importers)
# are checked by the same bounds in topomap.model.validate.
MAX_RATE = 1e6  # GB/s or Gb/s: a thousand times any link that exists
I64_MIN, I64_MAX = -(2**63), 2**63 - 1  # what every JSON reader holds (msgspec bounds fit int64)
I64 = Annotated[int, msgspec.Meta(ge=I64_MIN, le=I64_MAX)]
Rate = Annotated[float, msgspec.Meta(ge=0, le=MAX_RATE)]


class _S(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, gc=False):
    """Base: strict decoding, keyword construction. ``gc=False``: a snapshot is a tree of values
    that never refers back to itself, so Python's cycle collector need not track its structs (msgspec's
    option for that case); a cluster of 10,000 hosts is over a million of them, and the collector's
    passes over them cost more than decoding the file (issue 34: 1.7 of 2.9 s)."""


class Filled(_S, kw_only=True):
    """One fact that no tool output gave: a declared lot's, or the catalogue's where a paste lacked it.
    ``field`` is the snapshot field it fills (``nics.speed_gbit_s``, the names ``unknown_fields`` uses);
    ``lot_field`` the lot's own key (``nics.rate``); ``value`` the value as the lot or catalogue writes it;
    ``detail`` the catalogue entry (``aws/p4de.24xlarge``) or the lot file; ``source_url`` and ``says``
    the public page a catalogue fact comes from and what it says there."""

    field: str
    origin: FillOrigin
    lot_field: str
    value: str
    detail: str | None = None
    source_url: str | None = None
    says: str | None = None


class Source(_S, kw_only=True):
    """Where a snapshot came from and what that source could not know."""

    kind: SourceKind
    origin: str  # host name for a probe, file path (or public URL) for an import
    captured_at: str | None = None  # ISO-8601 UTC
    tool: str  # e.g. "topomap 0.1.0"
    unknown_fields: list[str] = []  # dotted field names this source cannot provide
    # PCIe path classes this source cannot tell from another, each → the class it records instead:
    # NCCL's topology has no host bridges, so a pair nvidia-smi prints NODE is recorded PHB ({"NODE": "PHB"})
    path_recorded_as: dict[PathClass, PathClass] = {}
    notes: list[str] = []
    formats: list[SourceFormat] = []  # the outputs read (`topo-m`, `nvlink-status` …); [] before they were recorded
    filled: list[Filled] = []  # facts a declared lot or the catalogue gave, not read (topomap.model.origins)


class NumaNode(_S, kw_only=True):
    id: I64
    cpus: str | None = None  # cpulist, e.g. "0-31,64-95"; "" for a memory-only (GPU) node
    memory_total_bytes: I64 | None = None
    distances: list[I64] | None = None  # SLIT row


class Host(_S, kw_only=True):
    hostname: str | None = None
    cpu_model: str | None = None
    sockets: I64 | None = None
    numa_nodes: list[NumaNode] = []
    virtualization: str | None = None  # e.g. "kvm", "Amazon EC2", None when bare metal or unknown
    container: str | None = None  # e.g. "docker", "kubernetes", "lxc", None
    cgroup_cpus: str | None = None  # effective cpuset of this process, as a cpulist
    iommu: str | None = None  # "on", "passthrough", "off" or None when unknown
    environment: dict[str, str] = {}  # CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER


class Software(_S, kw_only=True):
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # "12.4"
    nvml_version: str | None = None
    bindings: dict[str, str] = {}  # python package → version, for a probe


class PcieLink(_S, kw_only=True):
    gen_current: I64 | None = None
    width_current: I64 | None = None
    gen_max: I64 | None = None
    width_max: I64 | None = None
    placeholder: bool = False  # the figures are a static topology file's (the same on every link), not the machine's


class NvLink(_S, kw_only=True):
    link: I64
    active: bool
    generation: I64 | None = None  # decoded from the NVML version enum
    version_enum: I64 | None = None
    remote_type: RemoteType | None = None
    remote_pci_bus_id: str | None = None
    speed_gbps: Rate | None = None  # GB/s per direction as reported by the source


class Fabric(_S, kw_only=True):
    cluster_uuid: str | None = None
    clique_id: I64 | None = None
    state: FabricState | None = None
    status: str | None = None  # NVML return of the registration, e.g. "success"
    health_mask: I64 | None = None


class MigDevice(_S, kw_only=True):
    index: I64
    uuid: str | None = None
    name: str | None = None
    memory_total_bytes: I64 | None = None


class Mig(_S, kw_only=True):
    enabled: bool | None = None
    pending: bool | None = None
    devices: list[MigDevice] = []


class Gpu(_S, kw_only=True):
    index: I64
    cuda_ordinal: I64 | None = None
    uuid: str | None = None
    name: str | None = None
    pci_bus_id: str | None = None
    numa_node: I64 | None = None  # host NUMA node nearest the GPU
    gpu_numa_node: I64 | None = None  # NUMA node of the GPU memory itself (Grace-class parts)
    cpu_affinity: str | None = None  # cpulist
    memory_total_bytes: I64 | None = None
    compute_capability: str | None = None  # "9.0"
    architecture: str | None = None  # "hopper"
    pcie: PcieLink | None = None
    persistence_mode: bool | None = None
    nvlinks: list[NvLink] = []
    fabric: Fabric | None = None
    mig: Mig | None = None
    gdr: bool | None = None  # GPUDirect RDMA capable, where the source says
    pci_device_id: str | None = None  # PCI device id, "0x2330"; the model can be derived from it
    lost: bool = False  # fell off the bus during the probe (NVML GPU_IS_LOST); facts after that unknown
    derived: list[str] = []  # fields filled from other facts (e.g. "name" from the PCI device id), not read
    # issue 35: the GPU's vendor where the source says or implies it (None: not recorded; a snapshot
    # written before AMD support names none, and its GPUs are NVIDIA's). AMD GPUs' links are XGMI (Pair.xgmi).
    vendor: GpuVendor | None = None


class Nic(_S, kw_only=True):
    index: I64
    name: str  # RDMA device (mlx5_0) or netdev (eth0)
    kind: NicKind = "unknown"
    rdma: bool = True  # shown in the `topo -m` matrix (nvidia-smi lists RDMA devices only)
    pci_bus_id: str | None = None
    numa_node: I64 | None = None
    speed_gbit_s: Rate | None = None  # line rate, gigabits per second
    state: str | None = None  # "active", "down", ...
    netdevs: list[str] = []
    gdr: bool | None = None
    pci_vendor_id: str | None = None  # "0x15b3" (sysfs, hwloc pci_type, NCCL <pci vendor=>): the NIC family
    pci_device_id: str | None = None  # "0x101e"


class P2P(_S, kw_only=True):
    """NVML P2P status per capability (`nvidia-smi topo -p2p r|w|n|a`)."""

    read: P2PStatus | None = None
    write: P2PStatus | None = None
    nvlink: P2PStatus | None = None
    atomics: P2PStatus | None = None


class CudaPeer(_S, kw_only=True):
    """CUDA driver view of a GPU pair, a→b and b→a."""

    can_access_peer: bool | None = None  # both directions
    performance_rank: I64 | None = None  # lower is better
    access_supported: bool | None = None
    native_atomics: bool | None = None


class XgmiPair(_S, kw_only=True):
    """AMD Infinity Fabric (XGMI) between two AMD GPUs, as ``rocm-smi`` / ``amd-smi`` / AMD SMI give it
    (issue 35). ``hops``: XGMI hops, read from the KFD link weight (15 per XGMI hop, amdkfd; not from
    the tools' "hops", which AMD's maintainers say is 1 for every XGMI pair, ROCm/rocm-systems#5763);
    ``hops_reported`` the tools' own figure. ``links``: XGMI links joining the two (RCCL's ``<xgmi
    count>``, or the KFD bandwidth's max over its min); ``min_mbps``/``max_mbps``: the KFD io-link
    bandwidth in MB/s (`rocm-smi --shownodesbw`, `amd-smi topology`'s NUMA BW table; 0 for indirect
    peers, amdgpu_amdkfd_get_xgmi_bandwidth_mbytes). None: the source does not say."""

    hops: I64 | None = None
    hops_reported: I64 | None = None
    weight: I64 | None = None
    links: I64 | None = None
    min_mbps: I64 | None = None
    max_mbps: I64 | None = None


class Pair(_S, kw_only=True):
    a: str  # "gpu0", "nic3"
    b: str
    path: PathCode | None  # NV<n>, XGMI (two AMD GPUs joined by XGMI), PIX, PXB, PHB, NODE, SYS; None when unknown
    nvlinks: I64 = 0
    pcie_path: PathClass | None = None  # the PCIe class under an NV# or XGMI path, where known
    p2p: P2P | None = None
    cuda: CudaPeer | None = None
    xgmi: XgmiPair | None = None  # issue 35: XGMI between two AMD GPUs (path XGMI), else None
    link_weight: I64 | None = None  # issue 35: AMD's link weight for the pair as rocm-smi / amd-smi print it


class PciDevice(_S, kw_only=True):
    """One PCI function or bridge in the tree above GPUs and NICs."""

    id: str  # bus id "0000:17:00.0", or "pci0000:17" for a host bridge
    kind: PciKind
    parent: str | None = None
    numa_node: I64 | None = None
    link_gen: I64 | None = None
    link_width: I64 | None = None
    inferred: bool = False  # built to fit a path class, not read from the machine
    link_placeholder: bool = False  # link_gen/link_width are a static topology file's placeholders


class NvSwitch(_S, kw_only=True):
    id: str  # bus id, or "nvswitch<k>" when the switch is not PCI-visible
    pci_bus_id: str | None = None
    links: dict[str, I64] = {}  # gpu id → link count


class Problem(_S, kw_only=True):
    source: str  # "nvml", "cuda", "sysfs", "import"
    call: str  # e.g. "nvmlDeviceGetCpuAffinity"
    target: str | None = None  # e.g. "gpu3"
    error: str


class CollectiveResult(_S, kw_only=True):
    """What an nccl-tests run measured (a ``collective`` Measurement, ``topomap attach SNAP results.txt``): its
    program, ranks and hosts, the largest busbw it printed (GB/s, either half: the Measurement's ``max_gbps``,
    at ``size_bytes``) as printed, the largest size it ran and NCCL's version."""

    collective: str  # nccl-tests' program without "_perf": all_reduce, all_gather, …; "unknown" when not told
    ranks: I64 | None = None
    hosts: I64 | None = None
    gpus_per_host: I64 | None = None
    devices: list[I64] = []  # the CUDA devices the first host's ranks used (the rank table); empty: not told
    busbw_text: str  # the peak busbw as printed
    max_bytes: I64
    avg_busbw_gbps: float | None = None  # nccl-tests' "# Avg bus bandwidth" (all sizes, not the peak)
    nccl_version: str | None = None
    wrong: I64 = 0  # the #wrong counts summed (0: every size checked right, or not checked)
    command: str | None = None


MeasureKind = Literal["h2d", "d2h", "d2d", "latency", "collective"]
MeasureDirection = Literal["one-way", "both-way"]
MeasureRoute = Literal["peer", "staged", "host"]
Severity = Literal["info", "warning", "error"]


class Measurement(_S, kw_only=True):
    """One measured figure: copy bandwidth (GB/s, 1e9 bytes/s), small-copy latency (µs), or an nccl-tests
    run's peak busbw (kind ``collective``: ``max_gbps`` at ``size_bytes``, the run in ``collective``).

    ``src``/``dst`` are ids (``gpu0``) or ``host``; a both-way figure is the sum of the two
    directions copying at once. ``verified`` is True when the data that arrived was checked
    against what was sent, False when it came back wrong (the pair is then unusable), None
    when the source did not check (an imported figure).
    """

    kind: MeasureKind
    direction: MeasureDirection = "one-way"
    src: str
    dst: str
    route: MeasureRoute | None = None  # d2d: "peer" (P2P enabled) or "staged" (through host memory)
    method: str  # e.g. "copy engine, cuMemcpyAsync timed with CUDA events"
    origin: str  # "topomap measure", "nvbandwidth", "p2pBandwidthLatencyTest"
    size_bytes: I64 | None = None  # bytes per copy
    repetitions: I64 | None = None  # copies per sample
    samples: I64 | None = None  # timed samples the median is over
    median_gbps: Rate | None = None
    min_gbps: Rate | None = None
    max_gbps: Rate | None = None
    median_us: float | None = None  # latency: one small copy, microseconds
    verified: bool | None = None
    host_numa_node: I64 | None = None  # NUMA node of the pinned host buffer (h2d/d2h)
    notes: list[str] = []
    collective: CollectiveResult | None = None  # kind "collective": an nccl-tests run (src, dst: "ranks")


class Finding(_S, kw_only=True):
    """A health or truth check's result: what is wrong (or worth knowing) and the evidence."""

    kind: str  # e.g. "pcie-downtrained", "acs-redirect", "p2p-corrupt", "virtual-topology"
    subject: str  # "gpu3", "gpu0-gpu1", "nic2", "host"
    severity: Severity
    text: str
    evidence: list[str] = []
    source: str = "probe"  # "sysfs", "nvml", "measure", ...


PricedPer = Literal["gpu-hour", "host-hour", "lot-hour"]


class LotPrice(_S, kw_only=True):
    """A rental price as the lot gives it (``topomap.base.lotunits.Price``): never converted."""

    amount: Annotated[float, msgspec.Meta(ge=0, le=1e12)]
    currency: str
    per: PricedPer
    text: str


class LotTerms(_S, kw_only=True):
    """What a declared lot says beside its hardware: its name, catalogue type, hosts, price and the
    rental periods offered (seconds)."""

    name: str
    type: str | None = None
    hosts: I64 = 1
    price: LotPrice | None = None
    periods_s: list[Annotated[float, msgspec.Meta(gt=0, le=1e10)]] = []


class Snapshot(_S, kw_only=True):
    schema: str = SCHEMA
    source: Source
    host: Host = msgspec.field(default_factory=Host)
    software: Software = msgspec.field(default_factory=Software)
    gpus: list[Gpu] = []
    nics: list[Nic] = []
    pairs: list[Pair] = []
    pci: list[PciDevice] = []
    nvswitches: list[NvSwitch] = []
    problems: list[Problem] = []
    members: list[Snapshot] = []  # a merged cluster: one snapshot per host (source.kind "merge")
    measurements: list[Measurement] = []  # measured or imported figures (bandwidth, latency)
    findings: list[Finding] = []  # health and truth checks
    lot: LotTerms | None = None  # a declared lot's terms (name, price, periods); None for a probe or paste


def hosts_of(snap: Snapshot) -> list[Snapshot]:
    """The host snapshots a snapshot holds: its members when merged, else itself."""
    return list(snap.members) if snap.source.kind == "merge" else [snap]


class SnapshotError(TopomapError):
    """A snapshot file that cannot be read; the message is one line naming file and field."""
