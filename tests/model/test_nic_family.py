"""NIC families (issue 19 item 5): AWS EFA, ConnectX (InfiniBand / RoCE), Broadcom and Intel RDMA
Ethernet, plain Ethernet — recognised from PCI ids and names by one function (model.facts.nic_family),
which show, map, check and diff ask, with what each family implies for GPUDirect RDMA."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import REAL
from tests.fakes.flows import cross_host, map_text
from topomap.flow.mapping import MappedArrow
from topomap.graph import build
from topomap.graph.evidence import nearest_nic
from topomap.importers import import_file
from topomap.model.facts import nic_family, nic_gdr
from topomap.model.nic_ids import pci_id
from topomap.model.snapshot import Nic, Snapshot
from topomap.probe.sysfs import SysfsReader

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"
P5 = REAL / "nccl-xml" / "aws-p5-48xlarge.xml"  # aws-ofi-nccl's static p5 file: rdmap* names, no PCI ids
P5_DUMP = FIXTURES / "nccl-xml-p5-efa-autogen-excerpt.xml"  # NCCL's own p5 dump: vendor 0x1d0f, 0xefa1


def _arrow(snap: Snapshot) -> MappedArrow:
    return map_text(cross_host("gpu0"), {"a": build(snap), "b": build(snap)}).arrows[0]


def test_pci_ids_are_stored_in_one_spelling() -> None:
    assert pci_id("0x15B3") == "0x15b3" and pci_id("1d0f") == "0x1d0f" and pci_id("eth0") is None


def test_aws_efa_is_neither_infiniband_nor_roce_on_both_aws_files() -> None:
    for path in (P5, P5_DUMP):
        snap = import_file(path)
        fams = {nic_family(n).family for n in snap.nics}
        assert fams == {"efa"}, path
        a = _arrow(snap)
        assert a.medium == "network" and a.via == "efa"
        assert not any("InfiniBand or RoCE" in n for n in a.notes)
    dump = import_file(P5_DUMP)
    nic = dump.nics[0]
    assert (nic.pci_vendor_id, nic.pci_device_id) == ("0x1d0f", "0xefa1")
    fam = nic_family(nic)
    # the family alone does not settle it (issue 30): the dump's own gdr="1" (NCCL asked the plugin) does
    assert fam.evidence == "PCI vendor 0x1d0f" and fam.gdr.value == "unknown" and "FI_HMEM" in fam.gdr.why()
    assert nic_gdr(nic).yes and "records GPUDirect RDMA support" in nic_gdr(nic).why()
    assert nearest_nic(build(dump), "gpu0").gdr.yes  # PIX and the dump's gdr="1"
    static = import_file(P5)  # aws-ofi-nccl's static p5 file writes gdr="1" on every <net>: its word holds
    assert {nearest_nic(build(static), f"gpu{g.index}").gdr.value for g in static.gpus} == {"yes"}


def test_connectx_from_its_pci_vendor_and_class_is_roce_on_ibm_gx3d() -> None:
    snap = import_file(REAL / "nccl-xml" / "ibm-cloud-gx3d-h100-8gpu-vsi.xml")
    n = snap.nics[0]
    assert (n.pci_vendor_id, n.pci_device_id) == ("0x15b3", "0x101e")
    fam = nic_family(n)
    assert (fam.family, fam.transport, fam.short) == ("connectx", "roce", "RoCE (CX)")


def test_an_rdma_nic_of_unknown_family_does_not_claim_infiniband_or_roce() -> None:
    """AWS p4d's static file names its NICs by bus id only (they are EFA): the family is unknown and
    the arrow's note lists EFA among the possibilities; DGX-1's mlx5_* are ConnectX: IB or RoCE."""
    p4d = import_file(REAL / "nccl-xml" / "aws-p4d-24xlarge.xml")
    assert {nic_family(n).family for n in p4d.nics} == {"rdma"}
    assert any("InfiniBand, RoCE or EFA" in n for n in _arrow(p4d).notes)
    dgx1 = import_file(REAL / "nvidia-smi" / "dgx1-v100-pytorch-ddp-bench.txt")
    assert {nic_family(n).label for n in dgx1.nics} == {"NVIDIA ConnectX (InfiniBand or RoCE)"}
    assert any("(InfiniBand or RoCE)" in n for n in _arrow(dgx1).notes)


def _pci(root: Path, bus: str, vendor: str, device: str) -> Path:
    d = root / "sys" / "devices" / "pci0000:00" / bus
    d.mkdir(parents=True)
    (d / "vendor").write_text(vendor + "\n")
    (d / "device").write_text(device + "\n")
    (d / "class").write_text("0x020000\n")
    (d / "numa_node").write_text("0\n")
    bus_dir = root / "sys" / "bus" / "pci" / "devices"
    bus_dir.mkdir(parents=True, exist_ok=True)
    os.symlink(d, bus_dir / bus)
    return d


def _hca(root: Path, name: str, pci: Path, layer: str) -> None:
    hca = root / "sys" / "class" / "infiniband" / name
    (hca / "ports" / "1").mkdir(parents=True)
    (hca / "ports" / "1" / "link_layer").write_text(layer + "\n")
    (hca / "ports" / "1" / "rate").write_text("100 Gb/sec (4X EDR)\n")
    (hca / "ports" / "1" / "state").write_text("4: ACTIVE\n")
    os.symlink(pci, hca / "device")


def test_sysfs_ids_name_each_family(tmp_path: Path) -> None:
    """A small /sys tree in the kernel's layout: an EFA (efa driver: rdmap*, 0x1d0f:0xefa1), a first-gen
    EFA (0xefa0), a Broadcom NetXtreme-E (bnxt_re, 0x14e4:0x1750), an Intel E810 (irdma, 0x8086:0x159b)
    and an ENA (0x1d0f:0xec20: plain Ethernet, TCP only)."""
    _hca(tmp_path, "rdmap16s27", _pci(tmp_path, "0000:10:1b.0", "0x1d0f", "0xefa1"), "Unspecified")
    _hca(tmp_path, "efa_0", _pci(tmp_path, "0000:10:1c.0", "0x1d0f", "0xefa0"), "Unspecified")
    _hca(tmp_path, "bnxt_re0", _pci(tmp_path, "0000:20:00.0", "0x14e4", "0x1750"), "Ethernet")
    _hca(tmp_path, "irdma0", _pci(tmp_path, "0000:30:00.0", "0x8086", "0x159b"), "Ethernet")
    ena = _pci(tmp_path, "0000:40:00.0", "0x1d0f", "0xec20")
    net = tmp_path / "sys" / "class" / "net" / "ens5"
    net.mkdir(parents=True)
    os.symlink(ena, net / "device")
    (net / "operstate").write_text("up\n")
    sys_nics = SysfsReader(tmp_path).nics()
    nics = [
        Nic(
            index=i,
            name=n.name,
            kind=n.kind,
            rdma=n.rdma,
            pci_vendor_id=pci_id(n.vendor),
            pci_device_id=pci_id(n.device),
        )
        for i, n in enumerate(sys_nics)
    ]
    fam = {n.name: nic_family(n) for n in nics}
    assert {k: v.family for k, v in fam.items()} == {
        "rdmap16s27": "efa",
        "efa_0": "efa",
        "bnxt_re0": "broadcom",
        "irdma0": "intel",
        "ens5": "ethernet",
    }
    assert fam["rdmap16s27"].transport == "efa" and fam["rdmap16s27"].gdr.value == "unknown"
    # 0xefa0 is p3dn's EFA (no RDMA read) and p4d's (GPUDirect RDMA): the device id does not tell (issue 30)
    assert fam["efa_0"].gdr.value == "unknown" and "fi_info -p efa" in (fam["efa_0"].gdr.settle or "")
    assert fam["bnxt_re0"].transport == "roce" and fam["bnxt_re0"].gdr.value == "unknown"
    assert fam["ens5"].transport == "ethernet" and fam["ens5"].gdr.no
    assert fam["irdma0"].evidence == "PCI vendor 0x8086"
