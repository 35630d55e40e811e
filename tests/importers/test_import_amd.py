"""AMD pastes read right, fact by fact, on the real outputs kept in tests/data/real-topologies/amd/ (issue 35):
rocm-smi --showtopo and its parts, amd-smi topology (table and --json), static, list, xgmi, rocminfo and
RCCL's topology files; and the views on them (matrix, diff, place, check, plan, nccl)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES
from topomap.cli import app
from topomap.files.kind import sniff
from topomap.graph.build import build
from topomap.graph.evidence import gpu_link
from topomap.importers import import_file, import_text
from topomap.model.snapshot import Snapshot
from topomap.model.source_facts import Fact, cannot_know, settle_for

AMD = REAL / "amd"
_RUNNER = CliRunner()


def run_cli(*args: str) -> tuple[int, str, str]:
    r = _RUNNER.invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def pair(s: Snapshot, a: int, b: int):  # type: ignore[no-untyped-def]
    return next(p for p in s.pairs if {p.a, p.b} == {f"gpu{a}", f"gpu{b}"})


def test_mi308x_showtopo_is_an_xgmi_mesh_on_two_numa_nodes() -> None:
    s = import_file(AMD / "rocm-smi" / "mi308x-8gpu-showtopo-ms-swift.txt")
    assert sniff((AMD / "rocm-smi" / "mi308x-8gpu-showtopo-ms-swift.txt").read_text()) == "amd-smi"
    assert s.source.kind == "amd-smi" and s.source.formats == ["rocm-smi-topo", "rocm-smi-numa"]
    assert len(s.gpus) == 8 and {g.vendor for g in s.gpus} == {"amd"}
    assert [g.numa_node for g in s.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    p = pair(s, 0, 7)
    assert p.path == "XGMI" and p.xgmi is not None
    assert (p.xgmi.hops, p.xgmi.hops_reported, p.xgmi.weight) == (1, 1, 15)
    assert p.pcie_path == "SYS"  # GPU0 on NUMA 0, GPU7 on NUMA 1
    # what rocm-smi --showtopo cannot carry is unknown, with AMD's commands
    gaps = cannot_know(s)
    assert Fact.GPU_MODEL in gaps.facts and Fact.GPU_MEMORY in gaps.facts and Fact.FABRIC not in gaps.facts
    assert "amd-smi static" in gaps.settled_by()
    assert settle_for(s, Fact.GPU_MODEL).startswith("`amd-smi static`")


def test_two_xgmi_hives_and_the_inter_cpu_weight() -> None:
    """Weight 72 between the hives: 20 + 20 for the GPUs' PCIe segments and 32, the NUMA distance."""
    s = import_file(AMD / "rocm-smi" / "amd-8gpu-64gb-two-xgmi-hives-weight72.txt")
    assert pair(s, 0, 3).path == "XGMI" and pair(s, 4, 7).path == "XGMI"
    across = pair(s, 0, 4)
    assert (across.path, across.link_weight, across.xgmi) == ("SYS", 72, None)
    assert gpu_link(build(s), "gpu0", "gpu4").via != "xgmi"


def test_mi210_archer2_one_gpu_per_numa_node() -> None:
    s = import_file(AMD / "rocm-smi" / "mi210-4gpu-xgmi-nps4-archer2.txt")
    assert [g.numa_node for g in s.gpus] == [0, 1, 2, 3]
    assert {p.path for p in s.pairs} == {"XGMI"}


def test_pcie_only_weight_52_is_across_numa_nodes() -> None:
    """rocm_smi_lib#108: hops 3 and weight 52 (20 + 20 + the NUMA distance 12 within a socket)."""
    s = import_file(AMD / "rocm-smi" / "pcie-4gpu-weight52-hops3-rocmsmilib108.partial")
    assert {(p.path, p.link_weight) for p in s.pairs} == {("SYS", 52)}


def test_showtoponuma_alone_places_the_gcds_and_says_nothing_of_links() -> None:
    s = import_file(AMD / "rocm-smi" / "mi250x-8gcd-showtoponuma-lumi.txt")
    assert [g.numa_node for g in s.gpus] == [3, 3, 1, 1, 0, 0, 2, 2]
    assert {p.path for p in s.pairs} == {None}
    nv = gpu_link(build(s), "gpu0", "gpu1")
    assert nv.medium == "unknown" and "amd-smi topology" in (nv.settle or "")


def test_amd_smi_topology_of_an_mi300x_reads_the_kfd_bandwidth_as_one_link() -> None:
    s = import_file(AMD / "amd-smi" / "mi300x-8gpu-topology-amdsmi-changelog-rocm61.txt")
    assert [g.pci_bus_id for g in s.gpus][:2] == ["0000:0c:00.0", "0000:22:00.0"]
    p = pair(s, 0, 1)
    assert p.path == "XGMI" and p.xgmi is not None
    assert (p.xgmi.links, p.xgmi.min_mbps, p.xgmi.max_mbps) == (1, 50000, 50000)
    assert p.p2p is not None and p.p2p.read == "OK"
    bw = gpu_link(build(s), "gpu0", "gpu1").nvlink.bandwidth
    assert (bw.gbps, bw.source, bw.tag) == (50.0, "derived", "KFD-reported")  # no model in the paste


def test_rx7900xtx_amd_smi_names_memory_and_p2p_disabled() -> None:
    s = import_file(AMD / "amd-smi" / "rx7900xtx-2gpu-amd-smi-and-topology-rocm6074.txt")
    assert [g.name for g in s.gpus] == ["AMD Radeon RX 7900 XTX"] * 2
    assert s.gpus[0].memory_total_bytes == 24560 * 2**20
    p = pair(s, 0, 1)
    assert (p.path, p.link_weight) == ("NODE", 40)
    assert p.p2p is not None and (p.p2p.read, p.p2p.write) == ("NS", "NS")  # ACCESS TABLE: DISABLED
    assert gpu_link(build(s), "gpu0", "gpu1").medium == "host-memory"


def test_amd_smi_static_list_and_rocminfo() -> None:
    static = import_file(AMD / "amd-smi" / "mi300a-4apu-static-amdsmi-readme.txt")
    assert [(g.name, g.pci_bus_id, g.numa_node) for g in static.gpus][:2] == [
        ("MI300A", "0000:01:00.0", 0),
        ("MI300A", "0001:01:00.0", 1),
    ]
    assert static.gpus[0].memory_total_bytes == 64289 * 2**20 and static.gpus[0].pcie is not None
    listed = import_file(AMD / "amd-smi" / "mi308x-2gpu-list-amdsmi-changelog.txt")
    assert [g.pci_bus_id for g in listed.gpus] == ["0000:23:00.0", "0000:26:00.0"]
    asic = import_file(AMD / "amd-smi" / "mi308x-static-asic-amdsmi-changelog.txt")
    assert (asic.gpus[0].name, asic.gpus[0].pci_device_id) == ("MI308X", "0x74a2")
    assert "memory_total_bytes" in asic.gpus[0].derived  # 192 GB from the part, said so
    info = import_file(AMD / "rocminfo" / "mi300x-cpu0-gpu0-rocminfo-ml-engineering.partial")
    g = info.gpus[0]
    assert (g.name, g.pci_device_id, g.pci_bus_id, g.uuid) == (
        "AMD Instinct MI300X",
        "0x74a1",
        "0000:c6:00.0",  # BDFID 50688
        "GPU-ababaeeffecddc50",
    )
    assert g.memory_total_bytes == 206141652992 and info.host.cpu_model == "AMD EPYC 9534 64-Core Processor"


def test_amd_smi_xgmi_gives_the_link_rate() -> None:
    s = import_file(AMD / "amd-smi" / "mi300x-8gpu-xgmi-amdsmi-changelog-rocm61.txt")
    assert s.source.formats == ["amd-smi-xgmi"] and len(s.gpus) == 8


def test_amd_smi_topology_json_as_the_cli_writes_it() -> None:
    """The shape amdsmi_commands.py (@0ceca28) builds for --json (no real paste of it was found)."""
    links = [
        {"gpu": j, "bdf": f"0000:{b}:00.0", "weight": 0 if j == 0 else 15, "link_type": "SELF" if j == 0 else "XGMI",
         "num_hops": 0 if j == 0 else 1, "bandwidth": "N/A" if j == 0 else "50000-50000", "link_status": "ENABLED"}
        for j, b in enumerate(("0c", "22"))
    ]  # fmt: skip
    rows = [{"gpu": 0, "bdf": "0000:0c:00.0", "links": links}, {"gpu": 1, "bdf": "0000:22:00.0", "links": links[::-1]}]
    s = import_text(json.dumps(rows), "topo.json")
    p = pair(s, 0, 1)
    assert s.source.formats == ["amd-smi-topology"] and p.path == "XGMI" and p.xgmi and p.xgmi.links == 1


def test_rccl_topology_files_name_amd_gpus_and_their_xgmi() -> None:
    s = import_file(AMD / "rccl-xml" / "topo_8p_940.xml")
    assert [g.name for g in s.gpus] == ["AMD Instinct MI300X"] * 8 and s.gpus[0].compute_capability is None
    assert len(s.nics) == 8 and {p.path for p in s.pairs if p.a.startswith("gpu") and p.b.startswith("gpu")} == {"XGMI"}
    gcd = import_file(AMD / "rccl-xml" / "topo_8p_90a.xml")  # MI250X: three XGMI peers per GCD
    xgmi = [p for p in gcd.pairs if p.path == "XGMI"]
    assert len(xgmi) == 12 and pair(gcd, 0, 1).path == "XGMI" and pair(gcd, 0, 7).path != "XGMI"


def test_diff_mi300x_against_h100_for_tensor_parallel_gives_gb_s_on_both_sides() -> None:
    code, out, _ = run_cli(
        "diff",
        str(SAMPLES / "snapshots" / "mi300x-8gpu-8nic.json"),
        str(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"),
        "--flow",
        str(SAMPLES / "flows" / "tensor-parallel.yaml"),
        "--json",
    )
    assert code in (1, 3)
    rows = [r for r in json.loads(out)["arrows"] if r["a"]["medium"] == "gpu-link"]
    sides = {(r["a"]["via"], r["a"]["path"], r["a"]["bandwidth_gbps"], r["a"]["bandwidth_source"]) for r in rows}
    assert len(rows) == 28 and sides == {("xgmi", "XGMI", 64.0, "spec")}
    assert {(r["b"]["medium"], r["b"]["via"], r["b"]["path"], r["b"]["bandwidth_gbps"]) for r in rows} == {
        ("gpu-link", "nvswitch", "NV18", 450.0)
    }


def test_place_gives_hip_lines_and_check_takes_xgmi() -> None:
    snap = str(SAMPLES / "snapshots" / "mi300x-8gpu-8nic.json")
    code, out, _ = run_cli("place", snap, "--gpus", "4")
    assert code == 0 and "HIP_VISIBLE_DEVICES=" in out and "ROCR_VISIBLE_DEVICES=" in out
    assert "CUDA_VISIBLE_DEVICES" not in out
    req = SAMPLES / "requirements" / "tensor-parallel-gpu-link.yaml"
    assert run_cli("check", str(req), snap)[0] == 0


@pytest.mark.parametrize(
    ("log", "agree", "over"),
    [
        ("rx7900xtx-2gpu-phb-p2p-ipc-rocm6074-rccl2277.log", (2, 2), "PCIe"),
        ("radeon-pro-vega2-4gpu-xgmi-macpro-rccl2304.log", (8, 8), "XGMI"),
    ],
)
def test_rccl_logs_are_predicted_by_rccls_rules(log: str, agree: tuple[int, int], over: str) -> None:
    code, out, _ = run_cli("nccl", "--json", "--log", str(REAL.parent / "real-nccl-logs" / log))
    assert code == 0
    report = json.loads(out)
    assert report["library"] == "rccl" and report["rules"].startswith("RCCL ")
    assert (report["agreement"]["same"], report["agreement"]["total"]) == agree
    assert all(p["predicted"] == "P2P" for p in report["pairs"])
    assert not [s for s in report["skipped"] if "Ring" in s]  # RCCL's ring-neighbour lines are read, not refused


def test_snapshot_matrix_shows_rocm_smis_shape_after_topomaps() -> None:
    code, out, _ = run_cli("matrix", str(AMD / "rocm-smi" / "amd-8gpu-64gb-two-xgmi-hives-weight72.txt"))
    assert code == 0 and out.startswith("\tGPU0") and "XGMI = Connection traversing AMD Infinity Fabric" in out
    tail = out.split("As `rocm-smi --showtopo` prints it:")[1]
    assert "GPU0  0           15          15          15          72" in tail
    assert "GPU[5]\t\t: (Topology) Numa Node: 1" in tail


def test_expected_busbw_over_xgmi_is_unknown_not_nvlinks_ring() -> None:
    """`nccl --perf` on an MI300X lot: no NVLink ring efficiency on XGMI; unknown with rccl-tests to settle it."""
    code, out, _ = run_cli("nccl", str(SAMPLES / "snapshots" / "mi300x-8gpu-8nic.json"), "--perf")
    assert code == 0 and "NVLink" not in out
    assert "over XGMI (1 link, 64 GB/s per direction)" in out and "all_reduce_perf" in out


def test_a_cluster_of_mi300x_hosts_says_xgmi_not_no_nvlink(tmp_path: Path) -> None:
    mi, h100 = SAMPLES / "snapshots" / "mi300x-8gpu-8nic.json", SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"
    merged = tmp_path / "c.json"
    code, _, _ = run_cli("merge", f"a={mi}", f"b={mi}", f"c={h100}", "-o", str(merged))
    assert code == 0
    code, out, _ = run_cli("matrix", str(merged))
    assert code == 0 and "2 hosts alike (8 × AMD Instinct MI300X, XGMI all pairs, 8 NICs)" in out
    assert "(8 × NVIDIA H100 80GB HBM3, NV18 all pairs, 8 NICs): c" in out


def test_held_out_files_are_not_in_the_repository() -> None:
    """The held-out AMD outputs were read after the readers were written (see README); they are kept too."""
    held = sorted(p.name for p in (AMD / "held-out").glob("*"))
    assert held, "held-out outputs kept with their origins"


@pytest.fixture(scope="module")
def held() -> Path:
    return AMD / "held-out"


def test_held_out_mi355x_weights_of_zero_are_not_hops(held: Path) -> None:
    s = import_file(held / "mi355x-8gpu-amd-smi-topology-oci.partial")
    p = pair(s, 0, 1)
    assert p.path == "XGMI" and p.xgmi is not None and p.xgmi.hops is None and p.xgmi.links is None
    assert gpu_link(build(s), "gpu0", "gpu1").nvlink.bandwidth.gbps is None  # 0-0: not reported


def test_held_out_mi50_pcie_on_one_node(held: Path) -> None:
    s = import_file(held / "mi50-4gpu-pcie-showtopo.txt")
    assert {(p.path, p.link_weight) for p in s.pairs} == {("NODE", 40)} and {g.numa_node for g in s.gpus} == {0}


def test_held_out_mi300a_twelve_apus_over_four_numa_nodes(held: Path) -> None:
    s = import_file(held / "mi300a-12apu-showtoponuma-rocmsmilib-changelog.txt")
    assert [g.numa_node for g in s.gpus] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
