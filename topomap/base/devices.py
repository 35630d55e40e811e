"""PCI device ids and compute capabilities as sources spell them.

A source that gives the PCI device id but not the name (an NCCL topology file's ``device=``,
hwloc's ``pci_type``, ``nvidia-smi -q``'s "Device Id") still tells the model: the parts table
(:mod:`topomap.base.parts`, looked up by :mod:`topomap.base.part_names`) maps ids to parts. Facts
filled from there are *derived*, and say so (``Gpu.derived``).
"""

from __future__ import annotations


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


def cc_major(compute_capability: str | None) -> int | None:
    """``"9.0"`` → 9; None when absent or not a number."""
    head = (compute_capability or "").split(".")[0]
    return int(head) if head.isdigit() else None
