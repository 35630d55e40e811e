"""NIC identity as sources record it, and the one table of NIC families (issue 30 item 8).

Every place that tells a NIC's family, whether a name is an RDMA device, or what link a NIC's port
runs asks this module: the probe's sysfs reader, the NCCL-XML, hwloc-XML and lstopo importers, and
:func:`topomap.model.facts.nic_family` (which adds the source's own words: link layer, RDMA or
not). Each row says how a family is recognised (PCI vendor and device ids, RDMA device names),
which link its ports run and what the family implies for GPUDirect RDMA, with where that is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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


NicFamilyName = Literal["efa", "connectx", "broadcom", "intel", "gvnic", "cassini", "ethernet", "rdma", "unknown"]
#: What a family implies for GPUDirect RDMA by itself: yes (the hardware does it), no, or unknown
#: (it depends on more than the family: the device generation, the driver, the plugin).
GdrRule = Literal["yes", "no", "unknown"]


@dataclass(frozen=True)
class NicFamilyRow:
    """One NIC family: how it is recognised, the link its ports run, and GPUDirect RDMA.

    ``vendor``: its PCI vendor id; ``not_devices``: that vendor's device ids that are not this family
    (Amazon's ENA is plain Ethernet); ``devices``: the only device ids that are (None: any device of
    the vendor with an RDMA device); ``names``: prefixes of its RDMA device names; ``layer``: the
    link when the family fixes it (``efa``, ``roce``), else None (the port's link layer decides);
    ``gdr``/``gdr_why``/``settle``: what the family implies for GPUDirect RDMA, why, and (for
    unknown) the command whose output settles it."""

    family: NicFamilyName
    label: str
    vendor: str | None
    names: tuple[str, ...]
    layer: str | None
    gdr: GdrRule
    gdr_why: str
    settle: str | None = None
    devices: tuple[str, ...] | None = None
    not_devices: tuple[str, ...] = ()
    rdma: bool = True  # known by its ids only with an RDMA device (a ConnectX port without one is Ethernet)


#: The command that settles an EFA's GPUDirect RDMA, in the order a renter can run them.
EFA_SETTLE = (
    "`fi_info -p efa -c FI_HMEM` (lists efa where GPUDirect RDMA works), the instance type (aws-ofi-nccl "
    "requires GPUDirect RDMA on p4d, p4de, p5* and p6*), or NCCL's log (`via NET/AWS Libfabric/N/GDRDMA`)"
)
#: For a ConnectX-class verbs NIC whose driver support is the open question.
VERBS_SETTLE = "NCCL's log (`NCCL_DEBUG=INFO`: 'GPU Direct RDMA Enabled for ... HCA', or `via NET/IB/N/GDRDMA`)"

#: The families renters meet. PCI vendor and device ids: pci.ids @c1c12547; RDMA device names: the
#: Linux kernel's drivers/infiniband/hw/* (mlx5_0, bnxt_re0, irdma0, efa_0) and rdma-core's
#: kernel-boot/rdma_rename.c (NAME_FALLBACK: ``ibp…`` InfiniBand, ``rocep…`` RoCE, ``iwp…`` iWARP,
#: ``rdmap…`` other link layers, which is how the efa driver's devices are named on current AMIs).
FAMILIES: tuple[NicFamilyRow, ...] = (
    NicFamilyRow(
        "efa",
        "AWS EFA (SRD; neither InfiniBand nor RoCE)",
        "0x1d0f",  # Amazon.com, Inc.
        ("efa", "rdmap"),
        "efa",
        "unknown",
        # aws-ofi-nccl (src/nccl_ofi_net.cpp, src/nccl_ofi_ofiutils.cpp @2daf7d3) offers NCCL GPU memory
        # (NCCL_PTR_CUDA) only where libfabric's efa provider reports FI_HMEM, and libfabric gates FI_HMEM on
        # the device's RDMA read and P2P support (prov/efa efa_user_info.c, efa_hmem.c): the first EFA
        # generation (p3dn, c5n) has no RDMA read, p4d's has, both as PCI device 0xefa0 (aws-ofi-nccl's
        # p4d/p4de topology files, and a p4d run whose channels read NET/AWS Libfabric/N/GDRDMA: issue 30).
        "an EFA: GPUDirect RDMA needs its RDMA read (p4d and later; p3dn and c5n have none, with the same PCI "
        "device id) and libfabric's FI_HMEM for aws-ofi-nccl",
        EFA_SETTLE,
        devices=("0xefa0", "0xefa1", "0xefa2", "0xefa3"),  # efa0..efa3; 0xec20 is the ENA (plain Ethernet)
        rdma=False,  # the device id tells EFA whether the source saw its RDMA device or not
    ),
    NicFamilyRow(
        "connectx",
        "NVIDIA ConnectX",
        "0x15b3",  # Mellanox Technologies (NVIDIA ConnectX, BlueField)
        ("mlx4", "mlx5"),
        None,
        "yes",
        "a ConnectX: GPUDirect RDMA with nvidia-peermem or dma-buf",
    ),
    NicFamilyRow(
        "broadcom",
        "Broadcom RDMA Ethernet (bnxt_re, RoCE)",
        "0x14e4",  # Broadcom (NetXtreme-E: bnxt_en, RDMA by bnxt_re)
        ("bnxt_re",),
        "roce",
        "unknown",
        "GPUDirect RDMA over a Broadcom NIC needs the bnxt_re driver's peer-memory or dma-buf support",
        VERBS_SETTLE,
    ),
    NicFamilyRow(
        "intel",
        "Intel RDMA Ethernet (irdma: iWARP or RoCEv2)",
        "0x8086",  # Intel (E810 / X722: ice / i40e, RDMA by irdma)
        ("irdma", "i40iw"),
        None,
        "unknown",
        "GPUDirect RDMA over an Intel NIC needs the irdma driver's peer-memory or dma-buf support",
        VERBS_SETTLE,
    ),
    NicFamilyRow(
        "gvnic",
        "Google gVNIC (TCP; GPUDirect-TCPX/TCPXO through Google's NCCL plugin)",
        "0x1ae0",  # Google, Inc.: 0x0042 Compute Engine Virtual Ethernet [gVNIC]
        (),
        "ethernet",
        "unknown",
        "a gVNIC has no RDMA; on A3 machines Google's GPUDirect-TCPX(O) NCCL plugin moves GPU memory over TCP "
        "without host staging, elsewhere NCCL's sockets stage through host memory",
        "NCCL's log (`NCCL_DEBUG=INFO`: 'Using network GPUDirectTCPX' or FasTrak, and its channel lines)",
        devices=("0x0042",),
        rdma=False,
    ),
    NicFamilyRow(
        "cassini",
        "HPE Slingshot (Cassini; through aws-ofi-nccl's CXI provider)",
        "0x17db",  # Cray Inc (HPE Slingshot 11 Cassini NICs, pci.ids)
        ("cxi",),
        "slingshot",
        "unknown",
        "a Cassini NIC: NCCL reaches it through aws-ofi-nccl's libfabric CXI provider, which moves GPU memory "
        "where libfabric reports FI_HMEM for it",
        "`fi_info -p cxi -c FI_HMEM`, or NCCL's log ('Using network AWS Libfabric' and its channel lines)",
        rdma=False,
    ),
)

#: Every RDMA device name prefix (kernel drivers/infiniband/hw and sw): the families' and the others
#: that carry verbs (hfi1/qib Omni-Path, erdma Alibaba, qedr Marvell, hns HiSilicon, mana Azure, ionic
#: AMD Pensando, rxe/siw soft RDMA, cxgb4 Chelsio, ocrdma Emulex, vmw_pvrdma VMware).
OTHER_RDMA_NAMES = (
    *("hfi", "qib", "erdma", "qedr", "hns", "mana", "ionic", "rxe", "siw", "cxgb4", "ocrdma", "vmw_pvrdma"),
)
RDMA_NAMES: tuple[str, ...] = tuple(p for row in FAMILIES for p in row.names) + OTHER_RDMA_NAMES
#: rdma-core's fallback names carry the link layer: ibp0s1 (InfiniBand), rocep1s0f0 (RoCE), iwp (iWARP)
_RENAMED = re.compile(r"^(?P<kind>ibp|rocep|iwp)\d")

NIC_VENDORS: dict[str, NicFamilyName] = {row.vendor: row.family for row in FAMILIES if row.vendor}
FAMILY_NAMES: tuple[tuple[tuple[str, ...], NicFamilyName], ...] = tuple((row.names, row.family) for row in FAMILIES)
_BY_FAMILY: dict[str, NicFamilyRow] = {row.family: row for row in FAMILIES}


def family_row(family: str) -> NicFamilyRow | None:
    """The table's row of a family (None for ``ethernet``, ``rdma``, ``unknown``: no row of their own)."""
    return _BY_FAMILY.get(family)


def is_rdma_name(name: str) -> bool:
    """An RDMA device's name (``mlx5_0``, ``rdmap16s27``, ``bnxt_re0``, ``ibp12s0``), not a netdev's (``ib0``,
    ``eth0``, ``ens5``)."""
    return name.startswith(RDMA_NAMES) or _RENAMED.match(name) is not None


def family_of_name(name: str) -> NicFamilyName | None:
    """The family an RDMA device name tells (``efa_0``/``rdmap…`` EFA, ``mlx5_*`` ConnectX …), or None."""
    return next((row.family for row in FAMILIES if name.startswith(row.names)), None)


def family_of_ids(vendor: str | None, device: str | None, rdma: bool = True) -> NicFamilyName | None:
    """The family PCI ids tell: the vendor's row, unless the device id is one the row excludes (or,
    where the row lists its devices, is known and not among them), or the row needs an RDMA device the
    source did not see (``rdma``). None: no row for the vendor."""
    row = next((r for r in FAMILIES if vendor is not None and r.vendor == vendor), None)
    if row is None or (row.rdma and not rdma):
        return None
    if device is not None and (device in row.not_devices or (row.devices is not None and device not in row.devices)):
        return None
    if device is None and row.devices is not None:
        return None  # a vendor with several kinds of NIC (Amazon: ENA and EFA): the device decides
    return row.family


def layer_of_name(name: str) -> Literal["infiniband", "roce", "efa"] | None:
    """The link an RDMA device name implies: EFA's names, rdma-core's ``ibp…`` (InfiniBand) and
    ``rocep…`` (RoCE); None where the name does not say (``mlx5_0`` is either)."""
    if family_of_name(name) == "efa":
        return "efa"
    m = _RENAMED.match(name)
    if m is None:
        return None
    return {"ibp": "infiniband", "rocep": "roce"}.get(m.group("kind"))  # type: ignore[return-value]
