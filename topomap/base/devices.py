"""NVIDIA datacenter and workstation GPUs by PCI device id: what the id implies (issue 9).

A source that gives the PCI device id but not the name (an NCCL topology file's ``device=``,
hwloc's ``pci_type``, ``nvidia-smi -q``'s "Device Id") still tells the model, its memory class and
its NVLink generation. Facts filled from here are *derived*, and say so (``Gpu.derived``).

Sources:
- device ids and the bracketed names: the PCI ID database, github.com/pciutils/pciids ``pci.ids``
  @c1c12547 (2026-08-22), vendor ``10de``;
- ``name``: the name NVML / ``nvidia-smi`` reports for the part (as seen in real outputs where we
  have them, e.g. ``NVIDIA H100 80GB HBM3``, ``Tesla V100-SXM2-16GB``);
- memory as sold (decimal GB), form factor, NVLink generation and NVLink links per GPU when fully
  trained: NVIDIA's product datasheets (V100, A100, A10, A30, A40, L4, L40/L40S, H100, H200, H20,
  GH200, HGX B200, GB200 NVL72, RTX 3090/4090/5090, RTX A6000). A PCIe card's links are those of
  its NVLink bridge (A100/H100 PCIe: 12 links, 600 GB/s; A30/A40/RTX A6000/RTX 3090: 4 links).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuModel:
    """One GPU product. ``memory_gb`` is decimal gigabytes as the vendor sells it (an "80 GB" card
    reports 81559 MiB); ``nvlink_links`` is per GPU when every link is trained, None without NVLink."""

    name: str
    architecture: str  # "volta", "ampere", "ada", "hopper", "blackwell"
    memory_gb: float | None
    form: str  # "sxm", "pcie", "superchip" (Grace + GPU module)
    nvlink_generation: int | None
    nvlink_links: int | None
    aliases: tuple[str, ...] = ()  # other spellings of the name (pci.ids bracket names, older drivers)


def _m(
    name: str, arch: str, mem: float | None, form: str, gen: int | None, links: int | None, *aliases: str
) -> GpuModel:
    return GpuModel(name, arch, mem, form, gen, links, aliases)


# PCI device id (vendor 10de) → model. Comments give the pci.ids name where it differs.
_BY_ID: dict[int, GpuModel] = {
    # Volta
    0x1DB1: _m("Tesla V100-SXM2-16GB", "volta", 16, "sxm", 2, 6, "V100 SXM2 16GB"),
    0x1DF5: _m("Tesla V100-SXM2-16GB", "volta", 16, "sxm", 2, 6, "V100 SXM2 16GB"),
    0x1DB5: _m("Tesla V100-SXM2-32GB", "volta", 32, "sxm", 2, 6, "V100 SXM2 32GB"),
    0x1DB8: _m("Tesla V100-SXM3-32GB", "volta", 32, "sxm", 2, 6, "V100 SXM3 32GB", "Tesla V100-SXM3-32GB-H"),
    0x1DB4: _m("Tesla V100-PCIE-16GB", "volta", 16, "pcie", None, None, "V100 PCIe 16GB"),
    0x1DB6: _m("Tesla V100-PCIE-32GB", "volta", 32, "pcie", None, None, "V100 PCIe 32GB"),
    0x1DF6: _m("Tesla V100S-PCIE-32GB", "volta", 32, "pcie", None, None, "V100S PCIe 32GB"),
    # Ampere
    0x20B0: _m("NVIDIA A100-SXM4-40GB", "ampere", 40, "sxm", 3, 12, "A100 SXM4 40GB"),
    0x20B2: _m("NVIDIA A100-SXM4-80GB", "ampere", 80, "sxm", 3, 12, "A100 SXM4 80GB"),
    0x20B1: _m("NVIDIA A100-PCIE-40GB", "ampere", 40, "pcie", 3, 12, "A100 PCIe 40GB"),
    0x20F1: _m("NVIDIA A100-PCIE-40GB", "ampere", 40, "pcie", 3, 12, "A100 PCIe 40GB"),
    0x20B5: _m("NVIDIA A100 80GB PCIe", "ampere", 80, "pcie", 3, 12, "A100 PCIe 80GB"),
    0x20B7: _m("NVIDIA A30", "ampere", 24, "pcie", 3, 4, "A30 PCIe"),
    0x2236: _m("NVIDIA A10", "ampere", 24, "pcie", None, None),
    0x2235: _m("NVIDIA A40", "ampere", 48, "pcie", 3, 4),
    0x2230: _m("NVIDIA RTX A6000", "ampere", 48, "pcie", 3, 4),
    0x2204: _m("NVIDIA GeForce RTX 3090", "ampere", 24, "pcie", 3, 4),
    0x2203: _m("NVIDIA GeForce RTX 3090 Ti", "ampere", 24, "pcie", 3, 4),
    # Ada Lovelace
    0x27B8: _m("NVIDIA L4", "ada", 24, "pcie", None, None),
    0x26B5: _m("NVIDIA L40", "ada", 48, "pcie", None, None),
    0x26B9: _m("NVIDIA L40S", "ada", 48, "pcie", None, None),
    0x26B1: _m("NVIDIA RTX 6000 Ada Generation", "ada", 48, "pcie", None, None),
    0x2684: _m("NVIDIA GeForce RTX 4090", "ada", 24, "pcie", None, None),
    # Hopper
    0x2330: _m("NVIDIA H100 80GB HBM3", "hopper", 80, "sxm", 4, 18, "H100 SXM5 80GB", "H100 SXM"),
    0x2331: _m("NVIDIA H100 PCIe", "hopper", 80, "pcie", 4, 12),
    0x2321: _m("NVIDIA H100 NVL", "hopper", 94, "pcie", 4, 12, "H100L 94GB"),  # pci.ids: "H100L 94GB"
    0x2335: _m("NVIDIA H200", "hopper", 141, "sxm", 4, 18, "H200 SXM 141GB", "H200 SXM"),
    0x233B: _m("NVIDIA H200 NVL", "hopper", 141, "pcie", 4, 18),
    0x2329: _m("NVIDIA H20", "hopper", 96, "sxm", 4, 18),
    0x232C: _m("NVIDIA H20 HBM3e", "hopper", 141, "sxm", 4, 18, "H20-3e"),
    0x2342: _m("NVIDIA GH200 480GB", "hopper", 96, "superchip", 4, 18, "GH200 120GB / 480GB"),
    0x2348: _m("NVIDIA GH200 144G HBM3e", "hopper", 144, "superchip", 4, 18),
    # Blackwell
    0x2901: _m("NVIDIA B200", "blackwell", 180, "sxm", 5, 18),
    0x2941: _m("NVIDIA GB200", "blackwell", 186, "superchip", 5, 18, "HGX GB200"),  # pci.ids: "HGX GB200"
    0x2B85: _m("NVIDIA GeForce RTX 5090", "blackwell", 32, "pcie", None, None),
}

_NOISE = re.compile(r"\b(nvidia|tesla|geforce|corporation)\b")


def _norm(name: str) -> str:
    """``"NVIDIA A100-SXM4-80GB"`` → ``"a100 sxm4 80gb"``: case, vendor words and separators ignored."""
    bracket = re.search(r"\[([^\]]+)\]", name)  # pci.ids style: "GH100 [H100 SXM5 80GB]"
    if bracket:
        name = bracket.group(1)
    text = _NOISE.sub(" ", name.lower().replace("_", " ").replace("-", " "))
    return " ".join(text.split())


_BY_NAME: dict[str, GpuModel] = {}
for _model in _BY_ID.values():
    for _spelling in (_model.name, *_model.aliases):
        _BY_NAME.setdefault(_norm(_spelling), _model)


def parse_device_id(device_id: str) -> int | None:
    """``"0x2330"``, ``"2330"``, or nvidia-smi -q's ``"0x233010DE"`` (device, then vendor) → 0x2330."""
    text = device_id.strip().lower()
    if text.startswith("0x"):
        text = text[2:]
    if len(text) == 8 and text.endswith("10de"):
        text = text[:4]
    if not 1 <= len(text) <= 4 or any(c not in "0123456789abcdef" for c in text):
        return None
    return int(text, 16)


def format_device_id(value: int) -> str:
    """0x2330 → ``"0x2330"`` (the spelling snapshots store)."""
    return f"0x{value:04x}"


def model_from_device_id(device_id: str) -> GpuModel | None:
    """The product a PCI device id (vendor NVIDIA) names; None when not in the table."""
    value = parse_device_id(device_id)
    return _BY_ID.get(value) if value is not None else None


def model_from_name(name: str) -> GpuModel | None:
    """The product an NVML/nvidia-smi name names (``"NVIDIA H100 80GB HBM3"``,
    ``"Tesla V100-SXM2-16GB"``); exact after normalising case, vendor words and separators."""
    return _BY_NAME.get(_norm(name))


def model_of(name: str | None, device_id: str | None) -> GpuModel | None:
    """The product a GPU is, by its name first, else by its PCI device id; None when neither tells."""
    found = model_from_name(name) if name else None
    return found if found is not None or not device_id else model_from_device_id(device_id)


def cc_major(compute_capability: str | None) -> int | None:
    """``"9.0"`` → 9; None when absent or not a number."""
    head = (compute_capability or "").split(".")[0]
    return int(head) if head.isdigit() else None
