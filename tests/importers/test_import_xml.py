"""NCCL topology XML and hwloc XML from real machines (tests/data/real-topologies)."""

from __future__ import annotations

from pathlib import Path

import pytest

from topomap.importers import ImportFailure, import_file, import_text
from topomap.model.snapshot import Snapshot


def path(s: Snapshot, a: str, b: str) -> str | None:
    return next(p.path for p in s.pairs if {p.a, p.b} == {a, b})


def test_aws_p4d_two_sockets_two_switches_each(real: Path) -> None:
    s = import_file(real / "nccl-xml" / "aws-p4d-24xlarge.xml")
    assert s.source.kind == "nccl-xml" and len(s.gpus) == 8 and len(s.nics) == 4
    assert [g.pci_bus_id for g in s.gpus[:3]] == ["0000:10:1c.0", "0000:10:1d.0", "0000:20:1c.0"]
    assert path(s, "gpu0", "gpu1") == "PIX" and path(s, "gpu0", "nic0") == "PIX"
    assert path(s, "gpu0", "gpu2") == "PHB" and path(s, "gpu0", "gpu4") == "SYS"
    assert s.gpus[0].cpu_affinity == "0-23,48-71" and s.gpus[4].numa_node == 1
    assert s.gpus[0].pcie is not None and s.gpus[0].pcie.gen_max == 3 and s.gpus[0].pcie.width_max == 16
    assert any("PHB" in n and "NODE" in n for n in s.source.notes)


def test_aws_p5_gpu_with_four_efa_nics_per_switch(real: Path) -> None:
    s = import_file(real / "nccl-xml" / "aws-p5-48xlarge.xml")
    assert len(s.gpus) == 8 and len(s.nics) == 32
    assert s.nics[0].name == "rdmap79s0" and s.nics[0].kind == "efa" and s.nics[0].speed_gbit_s == 100.0
    assert [path(s, "gpu0", f"nic{i}") for i in range(5)] == ["PIX"] * 4 + ["PHB"]
    assert s.gpus[0].compute_capability == "9.0" and s.gpus[0].gdr is True
    assert all(p.nvlinks == 0 for p in s.pairs)  # the file has no <nvlink>


def test_ibm_h100_vsi_nvswitch_links_and_gpu_numbering_by_dev(real: Path) -> None:
    s = import_file(real / "nccl-xml" / "ibm-cloud-gx3d-h100-8gpu-vsi.xml")
    assert [g.pci_bus_id for g in s.gpus][:2] == ["0000:a4:00.0", "0000:ae:00.0"]
    assert {path(s, "gpu0", f"gpu{j}") for j in range(1, 8)} == {"NV18"}
    assert sorted(sw.id for sw in s.nvswitches) == ["0000:f3:00.0", "0000:f4:00.0", "0000:f5:00.0", "0000:f6:00.0"]
    assert s.nvswitches[0].links["gpu0"] == 4
    # NICs numbered by their net dev: nic7 is mlx5_7, beside GPU0
    assert s.nics[7].name == "mlx5_7" and path(s, "gpu0", "nic7") == "PIX" and path(s, "gpu0", "nic0") == "SYS"
    assert s.nics[0].speed_gbit_s == 200.0 and s.nics[0].gdr is True
    assert s.gpus[0].nvlinks[0].generation == 4


def test_azure_ndv4_virtual_switch_per_numa_node(real: Path) -> None:
    s = import_file(real / "nccl-xml" / "azure-ndv4.xml")
    assert len(s.gpus) == 8 and len(s.nics) == 8
    assert all(n.kind == "infiniband" for n in s.nics)
    assert s.gpus[0].pci_bus_id == "0001:00:00.0" and s.gpus[0].numa_node == 1  # bus-id order, no dev attribute
    assert path(s, "gpu0", "gpu1") == "PIX" and path(s, "gpu0", "gpu2") == "SYS"
    assert path(s, "gpu0", "nic0") == "PIX"


def test_azure_ncv4_self_targeted_nvlink_is_not_a_pair(real: Path) -> None:
    s = import_file(real / "nccl-xml" / "azure-ncv4.xml")
    assert len(s.gpus) == 4 and [g.numa_node for g in s.gpus] == [0, 1, 2, 3]
    assert len(s.gpus[0].nvlinks) == 12 and s.gpus[0].nvlinks[0].remote_pci_bus_id == s.gpus[0].pci_bus_id
    assert all(p.nvlinks == 0 for p in s.pairs) and path(s, "gpu0", "gpu1") == "SYS"
    assert s.nics[0].name == "eth0" and s.nics[0].pci_bus_id is None and s.nics[0].kind == "ethernet"
    assert any("targets its own GPU" in n for n in s.source.notes)


def test_dgx2h_hwloc_sixteen_v100_on_nvswitches(real: Path) -> None:
    s = import_file(real / "hwloc" / "nvidia-dgx2h.xml")
    assert s.source.kind == "hwloc-xml" and len(s.gpus) == 16
    assert s.gpus[0].uuid == "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6"
    assert s.gpus[0].name == "Tesla V100-SXM3-32GB-H" and s.gpus[0].pci_bus_id == "0000:34:00.0"
    assert len(s.nvswitches) == 12
    assert sum(x.active for x in s.gpus[0].nvlinks) == 6
    assert {p.path for p in s.pairs} == {"NV6"}
    pcie = {(p.a, p.b): p.pcie_path for p in s.pairs}
    assert pcie[("gpu0", "gpu1")] == "PIX" and pcie[("gpu0", "gpu2")] == "PXB"
    assert pcie[("gpu0", "gpu8")] == "SYS"
    assert s.gpus[0].numa_node == 0 and s.gpus[8].numa_node == 1
    assert s.host.cpu_model is not None and "8174" in s.host.cpu_model and s.host.sockets == 2


BOMB = """<?xml version="1.0"?>
<!DOCTYPE system [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
<system version="1"><cpu numaid="0" affinity="f">&b;</cpu></system>
"""
XXE = """<?xml version="1.0"?>
<!DOCTYPE system [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<system version="1"><cpu numaid="0">&x;</cpu></system>
"""


@pytest.mark.parametrize("text", [BOMB, XXE])
def test_entity_files_are_refused(text: str) -> None:
    with pytest.raises(ImportFailure) as exc:
        import_text(text, "evil.xml")
    assert "refused unsafe XML" in str(exc.value) and str(exc.value).startswith("evil.xml")


def test_truncated_xml_names_the_line(real: Path) -> None:
    text = (real / "nccl-xml" / "aws-p4d-24xlarge.xml").read_text()
    with pytest.raises(ImportFailure) as exc:
        import_text(text[: len(text) // 2], "cut.xml")
    assert str(exc.value).startswith("cut.xml:") and "malformed or truncated" in str(exc.value)


def test_xml_of_another_kind_says_what_was_expected() -> None:
    with pytest.raises(ImportFailure) as exc:
        import_text("<?xml version='1.0'?><html><body/></html>", "page.xml")
    assert "unknown format" in str(exc.value) and exc.value.hint and "NCCL" in exc.value.hint
