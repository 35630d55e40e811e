"""Link facts, held once: path classes, P2P status codes, the NVML NVLink version enum, PCIe rates.

Every number here is nominal per direction, with its source in
``shared/reference/formats-and-pitfalls.md`` §4 and ``nvml-cuda.md`` §4. NVLink rates and link
counts are per part, in the parts table (:mod:`topomap.base.parts`). Nothing else in topomap
repeats these numbers.
"""

from __future__ import annotations

import re
from typing import Final, Literal

PathClass = Literal["PIX", "PXB", "PHB", "NODE", "SYS"]
P2PStatus = Literal["OK", "CNS", "GNS", "TNS", "DR", "NS", "U"]

#: PCIe path classes, best first (as `nvidia-smi topo -m` ranks them).
PCIE_CLASSES: Final[tuple[PathClass, ...]] = ("PIX", "PXB", "PHB", "NODE", "SYS")

#: `nvmlGpuTopologyLevel_t` → nvidia-smi symbol. INTERNAL (0, two GPUs on one board) prints
#: as a single-bridge path.
NVML_TOPOLOGY_LEVELS: Final[dict[int, PathClass]] = {
    0: "PIX",
    10: "PIX",
    20: "PXB",
    30: "PHB",
    40: "NODE",
    50: "SYS",
}

#: `nvmlGpuP2PStatus_t` 0..6 → `nvidia-smi topo -p2p` code.
P2P_STATUS_CODES: Final[dict[int, P2PStatus]] = {
    0: "OK",
    1: "CNS",
    2: "GNS",
    3: "TNS",
    4: "DR",
    5: "NS",
    6: "U",
}

#: `nvmlNvlinkVersion_t` enum → NVLink generation. The enum is not the generation:
#: A100 and GA102 return 5 ("3.1"); hwloc#658.
NVLINK_VERSION_ENUM: Final[dict[int, int]] = {1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 5, 8: 6}

#: PCIe per-lane rate per direction after line encoding, GB/s, by generation: GT/s × encoding / 8
#: (8b/10b for Gen1-2, 128b/130b for Gen3-5, FLIT 242/256 for Gen6). Gen5 x16 = 63.0 GB/s.
PCIE_GBPS_PER_LANE: Final[dict[int, float]] = {
    1: 2.5 * 8 / 10 / 8,
    2: 5.0 * 8 / 10 / 8,
    3: 8.0 * 128 / 130 / 8,
    4: 16.0 * 128 / 130 / 8,
    5: 32.0 * 128 / 130 / 8,
    6: 64.0 * 242 / 256 / 8,
}

#: Transfer rate per lane in GT/s by generation (sysfs and NCCL speak in GT/s).
PCIE_GTS: Final[dict[int, float]] = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}

_NV_RE: Final = re.compile(r"^NV(\d+)$")


def pcie_gen_from_gts(gts: float) -> int | None:
    """PCIe generation for a per-lane transfer rate in GT/s (2.5 → 1 … 64 → 6)."""
    for gen, rate in PCIE_GTS.items():
        if abs(rate - gts) < 0.01:
            return gen
    return None


def pcie_gen_from_speed_text(text: str) -> int | None:
    """Parse a sysfs/NCCL speed string (``16.0 GT/s PCIe``, ``8 GT/s``) to a generation."""
    m = re.match(r"^\s*([0-9.]+)\s*GT/s", text)
    if not m:
        return None
    return pcie_gen_from_gts(float(m.group(1)))


def pcie_bandwidth_gbps(gen: int | None, width: int | None) -> float | None:
    """Nominal PCIe bandwidth per direction in GB/s for a gen and lane count, or None."""
    if gen is None or width is None or width <= 0 or gen not in PCIE_GBPS_PER_LANE:
        return None
    return round(PCIE_GBPS_PER_LANE[gen] * width, 3)


def nic_bandwidth_gbps(line_rate_gbit_s: float) -> float:
    """A NIC's line rate (Gb/s) as GB/s per direction, the unit of every other link here."""
    return line_rate_gbit_s / 8.0


def parse_path(code: str) -> tuple[str, int]:
    """Split a matrix code into (kind, nvlinks): ``NV18`` → ("NV", 18), ``PIX`` → ("PIX", 0)."""
    m = _NV_RE.match(code)
    if m:
        return "NV", int(m.group(1))
    return code, 0


#: The path code of two AMD GPUs joined by XGMI (Infinity Fabric): topomap's own, as ``rocm-smi``'s
#: "Link Type" spells it; nvidia-smi never prints it (issue 35).
XGMI_PATH: Final = "XGMI"


def is_path_code(code: str) -> bool:
    """True for a valid `topo -m` cell code other than X (and topomap's XGMI)."""
    return code in PCIE_CLASSES or bool(_NV_RE.match(code)) or code == XGMI_PATH


def class_rank(code: str) -> int:
    """Rank of a path code, lower is better: any NV# (and XGMI, a GPU link too) ranks 0, then PIX..SYS."""
    kind, _ = parse_path(code)
    if kind in ("NV", XGMI_PATH):
        return 0
    return 1 + [str(c) for c in PCIE_CLASSES].index(code)


#: NCCL's default for PCIe peer-to-peer and GPUDirect RDMA (NCCL_P2P_LEVEL, NCCL_NET_GDR_LEVEL):
#: only within PXB (the device pair shares a PCIe switch, possibly several).
NCCL_P2P_LEVELS: Final[tuple[PathClass, ...]] = ("PIX", "PXB")
