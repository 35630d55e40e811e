"""Sources beyond nvidia-smi and whole XML files (issue 23 "Pastes refused today", issue 20's
`topomap import LOG`): lstopo text, hwloc XML fragments, NIC-only NCCL XML, NCCL log topology dumps.
All inputs are real outputs kept under tests/data (origins in the READMEs there)."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topomap.base.errors import TopomapError
from topomap.cli import app
from topomap.files.kind import sniff
from topomap.importers import ImportFailure, import_file, import_text, load_any
from topomap.model.snapshot import Snapshot

DATA = Path(__file__).parents[1] / "data"
LSTOPO = DATA / "real-topologies" / "lstopo"
LOGS = DATA / "real-nccl-logs"
DGX2_XML = DATA / "real-topologies" / "hwloc" / "nvidia-dgx2h.xml"
P4D_XML = DATA / "real-topologies" / "nccl-xml" / "aws-p4d-24xlarge.xml"
DUMP_LOGS = sorted(p for p in LOGS.glob("*.log") if "dump" in p.name)


def classes(snap: Snapshot) -> dict[tuple[str, str], str | None]:
    return {(p.a, p.b): p.pcie_path for p in snap.pairs}


def test_lstopo_text_gives_the_path_classes_the_hwloc_xml_of_the_same_machine_gives() -> None:
    xml = import_file(DGX2_XML)
    for name in ("nvidia-dgx2h-console.txt", "nvidia-dgx2h-console-v.txt"):
        snap = import_file(LSTOPO / name)
        assert snap.source.kind == "lstopo"
        assert [g.pci_bus_id for g in snap.gpus] == [g.pci_bus_id for g in xml.gpus]
        assert classes(snap) == classes(xml)
    snap = import_file(LSTOPO / "nvidia-dgx2h-console-v.txt")
    assert classes(snap)[("gpu0", "gpu1")] == "PIX" and classes(snap)[("gpu0", "gpu2")] == "PXB"
    assert classes(snap)[("gpu0", "gpu4")] == "NODE" and classes(snap)[("gpu0", "gpu8")] == "SYS"
    assert snap.gpus[0].name == "Tesla V100-SXM3-32GB-H"  # GPUModel of the NVML OS device (-v only)
    assert {d.id for d in snap.pci} == {d.id for d in xml.pci}  # -v shows every bridge's bus id
    # -v prints hwloc's NVLinkBandwidth matrix after the tree: 6 links per GPU to the NVSwitches
    assert {(p.a, p.b): p.path for p in snap.pairs} == {(p.a, p.b): p.path for p in xml.pairs}
    assert snap.pairs[0].path == "NV6" and len(snap.nvswitches) == 12
    plain = import_file(LSTOPO / "nvidia-dgx2h-console.txt")  # without -v: no matrix, NVLink unknown
    assert "pairs.nvlink" in plain.source.unknown_fields and plain.pairs[0].nvlinks == 0


def test_lstopo_without_v_has_no_gpu_model_and_says_why() -> None:
    snap = import_file(LSTOPO / "nvidia-dgx2h-console.txt")
    assert all(g.name is None for g in snap.gpus)
    assert "gpus.name" in snap.source.unknown_fields
    assert any("without -v" in n for n in snap.source.notes)


def test_lstopo_verbose_reads_infiniband_nic_numa_memory_and_hostname() -> None:
    snap = import_file(LSTOPO / "hp-sl390s-ib-gpu-console-v.txt")
    assert snap.host.hostname == "mirage004" and snap.host.sockets == 2
    ib = next(n for n in snap.nics if n.rdma)
    assert (ib.name, ib.kind, ib.netdevs, ib.numa_node) == ("mlx4_0", "infiniband", ["eth2", "ib0"], 0)
    assert [n.rdma for n in snap.nics if n.name.startswith("eth")] == [False, False]
    assert snap.host.numa_nodes[0].memory_total_bytes == 18863900 * 1024
    assert snap.host.numa_nodes[1].cpus == "1,3,5,7,9,11,13,15,17,19,21,23"
    assert [g.numa_node for g in snap.gpus] == [0, 1, 1]
    assert classes(snap)[("gpu0", "nic2")] == "PHB" and classes(snap)[("gpu1", "nic2")] == "SYS"


def test_lstopo_merge_and_physical_indexes() -> None:
    merged = import_file(LSTOPO / "hp-sl390s-ib-gpu-merge.txt")
    verbose = import_file(LSTOPO / "hp-sl390s-ib-gpu-console-v.txt")
    assert classes(merged) == classes(verbose)
    assert [n.name for n in merged.nics] == [n.name for n in verbose.nics]
    power8 = import_file(LSTOPO / "ibm-power8-4x-p100-console-p.txt")  # -p: P# only, PCI domains 0002..000b
    assert [g.pci_bus_id for g in power8.gpus] == ["0002:01:00.0", "0003:01:00.0", "000a:01:00.0", "000b:01:00.0"]
    assert [g.numa_node for g in power8.gpus] == [0, 0, 1, 1]
    assert classes(power8)[("gpu0", "gpu1")] == "NODE" and classes(power8)[("gpu1", "gpu2")] == "SYS"


def test_lstopo_nic_beside_a_gpu_under_one_bridge_is_pix() -> None:
    snap = import_file(LSTOPO / "intel-2socket-3gpu-eth-console.txt")
    assert [g.pci_bus_id for g in snap.gpus] == ["0000:03:00.0", "0000:83:00.0", "0000:84:00.0"]  # bus order
    assert snap.nics[0].name == "mlx5_0" and snap.nics[0].kind == "infiniband"
    assert classes(snap)[("gpu2", "nic0")] == "PIX" and classes(snap)[("gpu0", "nic0")] == "SYS"


def test_lstopo_users_paste_of_an_8_gpu_aws_node() -> None:
    snap = import_file(LSTOPO / "aws-8gpu-node-srun-lstopo-llnl-gmis25.txt")
    assert len(snap.gpus) == 8 and [g.numa_node for g in snap.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    cls = classes(snap)
    assert cls[("gpu0", "gpu1")] == "PHB"  # one host bridge, a root port each
    assert cls[("gpu0", "gpu2")] == "NODE" and cls[("gpu0", "gpu4")] == "SYS"
    assert snap.gpus[4].cpu_affinity == "24-47,72-95"
    login = import_file(LSTOPO / "aws-1gpu-login-lstopo-llnl-gmis25.txt")  # GPU and NIC right under the host bridge
    assert [g.pci_bus_id for g in login.gpus] == ["0000:00:1e.0"] and login.gpus[0].numa_node == 0
    assert [(n.name, n.kind, n.rdma) for n in login.nics] == [("ens5", "ethernet", False)]


def test_lstopo_paste_cut_before_the_io_part_is_a_one_line_error() -> None:
    path = LSTOPO / "lambda-lstopo21-paste-cut.partial"
    assert sniff(path.read_text()) == "lstopo"
    with pytest.raises(ImportFailure, match="no GPU and no NIC"):
        import_file(path)


@pytest.mark.parametrize("command", ["show", "import", "matrix", "render"])
def test_cut_lstopo_paste_on_the_command_line_says_why_not_that_it_is_the_wrong_kind(command: str) -> None:
    # The real cut paste is lstopo text, a kind every one of these commands reads: the error is the
    # importer's (no GPU, cut before the I/O part), never "this is lstopo text; show takes … a
    # topology paste" with a hint that repeats the same command.
    path = LSTOPO / "lambda-lstopo21-paste-cut.partial"
    r = CliRunner().invoke(app, [command, str(path), *(["-o", "x.svg"] if command == "render" else [])])
    assert r.exit_code == 2
    assert "no GPU and no NIC" in r.output and "cut before the I/O part" in r.output
    assert "this is `lstopo` text" not in r.output and "Traceback" not in r.output


def test_lstopo_nvlink_matrix_cut_leaves_nvlink_unknown() -> None:
    text = (LSTOPO / "nvidia-dgx2h-console-v.txt").read_text()
    cut = text[: text.index("0000:65:00.0        25000")]
    snap = import_text(cut, "cut.txt")
    assert "pairs.nvlink" in snap.source.unknown_fields and all(not g.nvlinks for g in snap.gpus)


def test_lstopo_line_that_is_no_object_names_its_line() -> None:
    lines = (LSTOPO / "nvidia-dgx2h-console.txt").read_text().splitlines()
    lines[10] = "    this is not an lstopo object (really)"
    with pytest.raises(ImportFailure, match=r"x\.txt:11: not an lstopo object line"):
        import_text("\n".join(lines), "x.txt")


def test_nccl_log_dump_of_a_vm_reads_gpus_nics_nvlink_and_the_emulated_tree() -> None:
    snap = import_file(LOGS / "h200-vm-dump-nccltests256.log")
    assert snap.source.kind == "nccl-log" and snap.host.hostname == "node_2"
    assert [g.pci_bus_id for g in snap.gpus] == ["0000:68:00.0", "0000:6b:00.0", "0000:70:00.0"]
    # NET/0-c…: hex in the dump; named in decimal, as NCCL's channel lines print the device
    assert [n.name for n in snap.nics] == ["NET/12", "NET/13", "NET/14"]
    assert snap.nics[0].speed_gbit_s == 400.0  # NET[50.0] GB/s
    pairs = {(p.a, p.b): p.path for p in snap.pairs}
    assert pairs[("gpu0", "gpu1")] == "NV18"  # 370.8 GB/s = 18 x 20.6 (NCCL's Hopper rate)
    assert pairs[("gpu0", "nic0")] == "PIX" and pairs[("gpu0", "nic1")] == "PHB"
    notes = " ".join(snap.source.notes)
    assert "emulated (VM) bridge" in notes and "dump is cut" in notes


@pytest.mark.parametrize("prefix", ["[1,0]<stdout>:", "[rank5]:", "2024-01-01T00:00:00.123Z "])
def test_nccl_log_dump_behind_launcher_prefixes_reads_the_same(prefix: str) -> None:
    text = (LOGS / "h200-vm-dump-nccltests256.log").read_text()
    plain = import_text(text, "plain.log")
    snap = import_text("".join(f"{prefix}{line}\n" for line in text.splitlines()), "prefixed.log")
    assert snap.host.hostname == "node_2"
    assert [(p.a, p.b, p.path) for p in snap.pairs] == [(p.a, p.b, p.path) for p in plain.pairs]


def test_nccl_log_dump_whose_start_was_cut_reads_what_is_there() -> None:
    snap = import_file(LOGS / "h100-plx-dump-nccl1519.log")
    assert [g.pci_bus_id for g in snap.gpus] == ["0000:84:00.0", "0000:85:00.0", "0000:8b:00.0", "0000:8c:00.0"]
    assert {g.numa_node for g in snap.gpus} == {1}
    pairs = {(p.a, p.b): p.path for p in snap.pairs}
    assert pairs[("gpu0", "nic0")] == "PIX" and pairs[("gpu2", "nic0")] == "PHB"
    assert [n.speed_gbit_s for n in snap.nics[:2]] == [200.0, 200.0]
    assert any("start is cut" in n for n in snap.source.notes)


def test_nccl_log_interleaved_dumps_read_one_process_and_a_gpu_cut_off_is_unknown_nvlink() -> None:
    snap = import_file(LOGS / "a100-interleaved-dumps-fastvideo256.log")
    assert [g.pci_bus_id for g in snap.gpus] == ["0000:92:00.0"]
    assert "pid 2092" in snap.source.notes[0]
    assert "pairs.nvlink" in snap.source.unknown_fields  # its NVL line was cut: unknown, not "none"
    old = import_file(LOGS / "nccl25-maxwidth-dump-nccl340.log")  # NCCL 2.5: maxWidth, CPU/FFFF...
    assert [g.pci_bus_id for g in old.gpus] == ["0000:01:00.0"] and old.host.numa_nodes == []


def test_nccl_log_without_a_dump_says_how_to_get_one() -> None:
    with pytest.raises(ImportFailure, match="without a topology dump") as err:
        import_file(LOGS / "l20-1proc-direct-nccl1817.log")
    assert "NCCL_DEBUG_SUBSYS" in (err.value.hint or "")


def _dgx2_objects(kind: str) -> ET.Element:
    root = ET.parse(DGX2_XML).getroot()
    for el in root.iter("object"):
        host = el.get("type") == "Bridge" and (el.get("bridge_type") or "").startswith("0-")
        if kind == "hostbridge" and host and el.find(".//object[@type='PCIDev']") is not None:
            return el
        if kind == "gpu" and el.get("type") == "PCIDev" and (el.get("pci_type") or "").startswith("0302"):
            return el
    raise AssertionError(kind)


def test_hwloc_fragment_of_one_host_bridge_reads_its_gpus_and_says_what_is_missing() -> None:
    xml = import_file(DGX2_XML)
    frag = ET.tostring(_dgx2_objects("hostbridge"), encoding="unicode")
    assert sniff(frag) == "hwloc-xml"
    snap = import_text(frag, "frag.xml")
    assert [g.pci_bus_id for g in snap.gpus] == [g.pci_bus_id for g in xml.gpus[: len(snap.gpus)]]
    whole = classes(xml)
    assert all(whole[k] == v for k, v in classes(snap).items())  # same classes where the fragment can say
    assert "host.numa_nodes" in snap.source.unknown_fields
    assert any("fragment" in n for n in snap.source.notes)


def test_hwloc_fragment_of_one_pci_device_is_one_gpu_with_nothing_claimed_about_neighbours() -> None:
    frag = ET.tostring(_dgx2_objects("gpu"), encoding="unicode")
    snap = import_text(frag, "gpu.xml")
    assert [g.pci_bus_id for g in snap.gpus] == ["0000:34:00.0"] and snap.pairs == []
    assert snap.gpus[0].name == "Tesla V100-SXM3-32GB-H"


def test_hwloc_topology_without_numa_nodes_leaves_node_vs_sys_unknown() -> None:
    root = ET.parse(DGX2_XML).getroot()
    for parent in list(root.iter()):
        for child in list(parent):
            if child.get("type") == "NUMANode":
                parent.remove(child)
    keep = import_text(ET.tostring(root, encoding="unicode"), "nonuma.xml")
    assert classes(keep)[("gpu0", "gpu8")] == "SYS"  # the packages' nodesets still say where they are
    for el in root.iter("object"):
        el.attrib.pop("nodeset", None)
    snap = import_text(ET.tostring(root, encoding="unicode"), "nonuma.xml")
    cls = classes(snap)
    assert cls[("gpu0", "gpu1")] == "PIX"  # inside one host bridge: still known
    assert cls[("gpu0", "gpu4")] is None and cls[("gpu0", "gpu8")] is None  # NODE or SYS: unknown
    assert any("no NUMA node" in n for n in snap.source.notes)


def test_nccl_xml_with_nics_only_reads_them_and_says_gpus_are_not_described() -> None:
    root = ET.parse(P4D_XML).getroot()
    for parent in list(root.iter()):
        for child in list(parent):
            if child.tag == "pci" and (child.get("class") or "").startswith("0x03"):
                parent.remove(child)
    snap = import_text(ET.tostring(root, encoding="unicode"), "nics.xml")
    assert snap.gpus == [] and len(snap.nics) == len(import_file(P4D_XML).nics) == 4
    assert "gpus" in snap.source.unknown_fields
    assert any("NICs only" in n for n in snap.source.notes)
    nic = next(p for p in ET.parse(P4D_XML).getroot().iter("pci") if (p.get("class") or "").startswith("0x02"))
    bare = import_text(ET.tostring(copy.deepcopy(nic), encoding="unicode"), "nic.xml")  # one NIC's <pci>, no <system>
    assert len(bare.nics) == 1 and bare.nics[0].pci_bus_id == nic.get("busid")
    assert any("without <system>" in n for n in bare.source.notes)


def test_show_of_a_nic_only_file_says_gpus_are_unknown_not_absent(tmp_path: Path) -> None:
    f = tmp_path / "nics.xml"
    f.write_text(
        '<system version="1"><cpu numaid="0"><nic><net name="mlx5_0" dev="0" speed="200000"/></nic></cpu></system>'
    )
    r = CliRunner().invoke(app, ["show", str(f)], env={"COLUMNS": "100"})
    assert r.exit_code == 0 and "not described by this source" in r.output and "No GPUs" not in r.output


@pytest.mark.parametrize("path", sorted(LSTOPO.glob("*.*")) + DUMP_LOGS, ids=lambda p: p.name)
def test_truncating_a_real_file_anywhere_never_tracebacks(path: Path) -> None:
    text = path.read_text()
    for k in range(1, 12):
        cut = text[: len(text) * k // 12]
        try:
            import_text(cut, f"{path.name}@{len(cut)}")
        except TopomapError as err:
            assert "\n" not in str(err)


@pytest.mark.parametrize(
    "path", [LSTOPO / "hp-sl390s-ib-gpu-console-v.txt", LOGS / "h200-vm-dump-nccltests256.log"], ids=lambda p: p.name
)
def test_new_sources_work_through_import_show_and_map(path: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "snap.json"
    r = runner.invoke(app, ["import", str(path), "-o", str(out)])
    assert r.exit_code == 0, r.output
    gpus = load_any(out).gpus
    assert gpus and load_any(path).gpus == gpus  # the file written is what the source says
    shown = runner.invoke(app, ["show", str(path), "--json"])
    assert shown.exit_code == 0 and len(json.loads(shown.stdout)["gpus"]) == len(gpus)
    flow = Path(__file__).parents[2] / "samples" / "flows" / "tensor-parallel.yaml"
    r = runner.invoke(app, ["map", str(flow), "--probe", f"lot={path}", "--json"])
    assert r.exit_code == 0, r.output
    arrows = json.loads(r.stdout)["arrows"]
    assert arrows and all(a["medium"] in ("gpu-link", "host-memory", "network", "local", "unknown") for a in arrows)


def test_bad_lstopo_paste_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("Machine (64GB total)\n  Package L#0\n    ???\n    NUMANode L#0 (P#0 32GB)\n")
    r = CliRunner().invoke(app, ["import", str(bad)])
    assert r.exit_code == 2 and "bad.txt:3" in r.output
