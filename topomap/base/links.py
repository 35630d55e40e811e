"""Link facts, held once: path classes, P2P status codes, the NVML NVLink version enum, PCIe rates.

Every number here is nominal per direction, with its source in
``shared/reference/formats-and-pitfalls.md`` §4 and ``nvml-cuda.md`` §4. NVLink rates and link
counts are per part, in the parts table (:mod:`topomap.base.parts`). Nothing else in topomap
repeats these numbers.
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal

import msgspec

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


#: The path code of two AMD GPUs joined by XGMI (Infinity Fabric): topomap's own, as ``rocm-smi``'s
#: "Link Type" spells it; nvidia-smi never prints it (issue 35).
XGMI_PATH: Final = "XGMI"

#: The most NVLinks one GPU pair (and one GPU) may have in a snapshot: 18 on Hopper and Blackwell.
MAX_NVLINKS: Final = 64
_NV_COUNT: Final = "[1-9]|[1-5][0-9]|6[0-4]"  # 1 … MAX_NVLINKS, no leading zero (tests/base/test_links.py)

#: What a path code may be: ``NV<n>`` (n NVLinks, 1 to :data:`MAX_NVLINKS`), :data:`XGMI_PATH`, or one
#: of :data:`PCIE_CLASSES`. The snapshot's JSON Schema carries it, and decoding checks it.
PATH_CODE_PATTERN: Final = f"^(?:NV(?:{_NV_COUNT})|{XGMI_PATH}|{'|'.join(PCIE_CLASSES)})$"
_PATH_CODE: Final = re.compile(PATH_CODE_PATTERN)
_NV_CODE: Final = re.compile(f"NV({_NV_COUNT})")  # fullmatch

#: A matrix cell's path code as a snapshot holds it (``Pair.path``): the text nvidia-smi prints
#: (``NV18``, ``PIX`` …; ``XGMI`` for AMD), checked against :data:`PATH_CODE_PATTERN` when a snapshot
#: is decoded. Read it with :func:`nvlinks_of`, :func:`is_nvlink`, :func:`pcie_class_of`, never by hand.
PathCode = Annotated[str, msgspec.Meta(pattern=PATH_CODE_PATTERN)]

#: What a path code names, its NVLink count left out.
PathKind = Literal["NV", "XGMI", "PIX", "PXB", "PHB", "NODE", "SYS"]

#: In words, the path codes there are (for messages naming a bad one).
PATH_CODES_WORDS: Final = f"NV<n>, {XGMI_PATH}, {', '.join(PCIE_CLASSES[:-1])} or {PCIE_CLASSES[-1]}"


def is_path_code(code: str) -> bool:
    """True for a valid `topo -m` cell code other than X (and topomap's XGMI): a :data:`PathCode`."""
    return _PATH_CODE.fullmatch(code) is not None  # fullmatch: ``$`` alone lets "PIX\n" through


def path_kind(code: str) -> PathKind:
    """What a path code names: ``NV18`` → "NV", ``XGMI`` → "XGMI", ``PIX`` → "PIX"; ValueError for
    anything else."""
    if code in PCIE_CLASSES or code == XGMI_PATH:
        return code  # type: ignore[return-value]  # one of PathKind's values, just tested
    if _NV_CODE.fullmatch(code):
        return "NV"
    raise ValueError(f"{code!r} is not a path code ({PATH_CODES_WORDS})")


def nvlinks_of(code: str | None) -> int:
    """The NVLink count a path code names: ``NV18`` → 18; 0 for any other code, and for None."""
    m = _NV_CODE.fullmatch(code) if code else None
    return int(m.group(1)) if m else 0


def is_nvlink(code: str | None) -> bool:
    """True for an ``NV<n>`` path code."""
    return code is not None and _NV_CODE.fullmatch(code) is not None


def is_xgmi(code: str | None) -> bool:
    """True for the XGMI path code (two AMD GPUs joined by Infinity Fabric)."""
    return code == XGMI_PATH


def is_gpu_link(code: str | None) -> bool:
    """True for a path code of a GPU link: ``NV<n>``, or XGMI between two AMD GPUs."""
    return is_xgmi(code) or is_nvlink(code)


def pcie_class_of(code: str | None) -> PathClass | None:
    """The PCIe class a path code is (``PIX`` … ``SYS``), None for a GPU link's code (NV#, XGMI) or None."""
    for c in PCIE_CLASSES:
        if code == c:
            return c
    return None


def nvlink_path(links: int) -> PathCode:
    """The path code of ``links`` NVLinks (1 or more): 18 → ``NV18`` (what `nvidia-smi topo -m` prints).
    A count beyond :data:`MAX_NVLINKS` (a machine's or a file's absurdity) is written as it is, for
    validation to refuse in one line naming the pair."""
    return f"NV{links}"


def path_code_problem(code: str) -> str | None:
    """Why ``code`` is no :data:`PathCode`, in words after the field's name, or None when it is one:
    ``'NVX' is not NV<n>, …``; ``NV65 links (at most 64 per pair)``."""
    if is_path_code(code):
        return None
    digits = code[2:] if code.startswith("NV") else ""
    if 0 < len(digits) <= 9 and digits.isascii() and digits.isdigit() and int(digits) > MAX_NVLINKS:
        return f"{code} links (at most {MAX_NVLINKS} per pair)"
    if digits and digits.isascii() and digits.strip("0") == "":  # NV0, NV00: no int() of a long string
        return f"{code!r}: an NVLink path has at least one link (NV1 to NV{MAX_NVLINKS})"
    return f"{code!r} is not {PATH_CODES_WORDS}"


def pcie_class_problem(code: str) -> str:
    """Why ``code`` is no PCIe class (a ``pcie_path``), in words after the field's name."""
    return f"{code!r} is not {', '.join(PCIE_CLASSES[:-1])} or {PCIE_CLASSES[-1]}"


def class_rank(code: str) -> int:
    """Rank of a path code, lower is better: any NV# (and XGMI, a GPU link too) ranks 0, then PIX..SYS."""
    if is_gpu_link(code):
        return 0
    return 1 + [str(c) for c in PCIE_CLASSES].index(code)


#: NCCL's default for PCIe peer-to-peer and GPUDirect RDMA (NCCL_P2P_LEVEL, NCCL_NET_GDR_LEVEL):
#: only within PXB (the device pair shares a PCIe switch, possibly several).
NCCL_P2P_LEVELS: Final[tuple[PathClass, ...]] = ("PIX", "PXB")
