"""NIC identity as sources record it: PCI ids in one spelling, and the vendors and RDMA device names
that name a NIC family (:func:`topomap.model.facts.nic_family` decides the family from these)."""

from __future__ import annotations

from typing import Literal


def pci_id(text: str | None) -> str | None:
    """A PCI vendor or device id as snapshots store it: ``"0x15b3"`` (from ``0x15b3``, ``15b3``, ``0x15B3``)."""
    if not text:
        return None
    t = text.strip().lower()
    t = t[2:] if t.startswith("0x") else t
    if not 1 <= len(t) <= 4 or any(c not in "0123456789abcdef" for c in t):
        return None
    return f"0x{int(t, 16):04x}"


NicFamilyName = Literal["efa", "connectx", "broadcom", "intel", "ethernet", "rdma", "unknown"]

#: PCI vendor ids of the NIC families renters meet (pci.ids @c1c12547).
NIC_VENDORS: dict[str, NicFamilyName] = {
    "0x1d0f": "efa",  # Amazon.com, Inc. (efa0..efa4: Elastic Fabric Adapter; ec20 is ENA, plain Ethernet)
    "0x15b3": "connectx",  # Mellanox Technologies (NVIDIA ConnectX, BlueField)
    "0x14e4": "broadcom",  # Broadcom (NetXtreme-E: bnxt_en, RDMA by bnxt_re)
    "0x8086": "intel",  # Intel (E810 / X722: ice / i40e, RDMA by irdma)
}
FAMILY_NAMES: tuple[tuple[tuple[str, ...], NicFamilyName], ...] = (
    (("efa", "rdmap"), "efa"),  # efa_0 / rdmapXsY: the efa driver's RDMA device names
    (("mlx",), "connectx"),
    (("bnxt_re",), "broadcom"),
    (("irdma", "i40iw"), "intel"),
)
