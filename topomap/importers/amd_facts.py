"""What AMD's tools print, gathered before it becomes a snapshot (issue 35).

Each reader (:mod:`~topomap.importers.rocm_smi`, :mod:`~topomap.importers.amd_smi`,
:mod:`~topomap.importers.rocminfo`) fills one :class:`AmdFacts` from its part of a paste; the builder
(:mod:`~topomap.importers.amd_build`) turns them into one snapshot. GPUs are keyed by the index the
tool prints (rocm-smi's ``GPU[i]``, amd-smi's ``GPU: i``); amd-smi's tables are keyed by bus id and
joined to those indices through amd-smi's GPU table or ``amd-smi list``, else in bus-id order (amd-smi
numbers GPUs by bus id since ROCm 6.0: amdsmi CHANGELOG, "GPU index sorting made consistent").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topomap.model.snapshot import SourceFormat

Pair = tuple[int, int]


@dataclass
class AmdGpu:
    """One GPU as the paste describes it; None: not printed."""

    index: int
    bus: str | None = None
    name: str | None = None
    device_id: str | None = None  # "0x74a1"
    uuid: str | None = None
    memory_bytes: int | None = None
    numa: int | None = None
    gfx: str | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    driver: str | None = None
    xgmi_gbps: float | None = None  # one XGMI link per direction, GB/s (amd-smi xgmi's max_bandwidth)


@dataclass
class AmdFacts:
    """The facts of one AMD paste. Matrices map an ordered GPU index pair to the cell as printed
    (``weight`` numbers, ``hops`` numbers, ``link`` "XGMI"/"PCIE", ``access`` True/False, ``bw`` the
    KFD min/max bandwidth in MB/s); a cell that said N/A is absent."""

    gpus: dict[int, AmdGpu] = field(default_factory=dict)
    by_bus: dict[str, int] = field(default_factory=dict)  # amd-smi bus id → GPU index
    weight: dict[Pair, int] = field(default_factory=dict)
    hops: dict[Pair, int] = field(default_factory=dict)
    link: dict[Pair, str] = field(default_factory=dict)
    access: dict[Pair, bool] = field(default_factory=dict)
    bw: dict[Pair, tuple[int, int]] = field(default_factory=dict)
    xgmi_links: dict[Pair, int] = field(default_factory=dict)
    formats: list[SourceFormat] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    hostname: str | None = None
    cpu_model: str | None = None

    def gpu(self, index: int) -> AmdGpu:
        if index not in self.gpus:
            self.gpus[index] = AmdGpu(index=index)
        return self.gpus[index]

    def saw(self, fmt: SourceFormat) -> None:
        if fmt not in self.formats:
            self.formats.append(fmt)
