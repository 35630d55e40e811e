"""nvidia-smi text from real machines (tests/data/real-topologies/nvidia-smi)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from topomap.importers import ImportFailure, import_file, import_text
from topomap.model.snapshot import Snapshot
from topomap.render.matrix import render_matrix, render_p2p_matrix


def path(s: Snapshot, a: str, b: str) -> str | None:
    for p in s.pairs:
        if {p.a, p.b} == {a, b}:
            return p.path
    raise KeyError((a, b))


def smi(real: Path, name: str) -> Snapshot:
    return import_file(real / "nvidia-smi" / name)


def test_hgx_a100_nv12_pxb_and_nic_legend(real: Path) -> None:
    s = smi(real, "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt")
    assert len(s.gpus) == 8 and [n.name for n in s.nics] == [f"mlx5_{i}" for i in range(8)]
    assert all(path(s, f"gpu{i}", f"gpu{j}") == "NV12" for i in range(8) for j in range(i + 1, 8))
    assert path(s, "gpu0", "nic0") == "PXB" and path(s, "gpu0", "nic2") == "NODE" and path(s, "gpu0", "nic4") == "SYS"
    assert path(s, "nic0", "nic1") == "PIX"
    assert s.gpus[0].cpu_affinity == "0-31,64-95" and s.gpus[0].numa_node == 0
    assert s.gpus[7].cpu_affinity == "32-63,96-127" and s.gpus[7].numa_node == 1
    assert s.gpus[0].gpu_numa_node is None  # driver 525 prints no GPU NUMA ID column
    assert s.source.kind == "nvidia-smi" and "gpus.uuid" in s.source.unknown_fields


def test_dgx1_old_format_nic_names_as_headers(real: Path) -> None:
    s = smi(real, "dgx1-v100-pytorch-ddp-bench.txt")
    assert [n.name for n in s.nics] == ["mlx5_2", "mlx5_0", "mlx5_3", "mlx5_1"]
    by = {n.name: f"nic{n.index}" for n in s.nics}
    assert path(s, "gpu0", "gpu1") == "NV1" and path(s, "gpu0", "gpu3") == "NV2" and path(s, "gpu0", "gpu5") == "SYS"
    assert path(s, "gpu0", by["mlx5_0"]) == "PIX" and path(s, "gpu0", by["mlx5_1"]) == "PHB"
    assert path(s, "gpu4", by["mlx5_2"]) == "PIX"
    assert next(p for p in s.pairs if {p.a, p.b} == {"gpu0", "gpu3"}).nvlinks == 2
    assert all(g.numa_node is None and g.cpu_affinity == "0-19,40-59" for g in s.gpus)


def test_b200_gcp_numa_glued_to_gpu_numa_id(real: Path) -> None:
    s = smi(real, "gcp-gke-a4-b200-8gpu-8nic.txt")
    assert {path(s, "gpu0", f"gpu{j}") for j in range(1, 8)} == {"NV18"}
    assert path(s, "gpu0", "nic0") == "PIX" and path(s, "gpu0", "nic2") == "NODE" and path(s, "gpu0", "nic5") == "SYS"
    assert [g.numa_node for g in s.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert s.gpus[4].cpu_affinity == "56-111,168-223" and s.gpus[4].gpu_numa_node is None


def test_gh200_gpu_has_its_own_numa_node(real: Path) -> None:
    s = smi(real, "gh200-1gpu-4nic-bluefield3-aerial.txt")
    g = s.gpus[0]
    assert g.cpu_affinity == "0-71" and g.numa_node == 0 and g.gpu_numa_node == 1
    assert [path(s, "gpu0", f"nic{i}") for i in range(4)] == ["NODE"] * 4
    assert path(s, "nic0", "nic1") == "PIX" and path(s, "nic2", "nic3") == "PIX" and path(s, "nic1", "nic2") == "NODE"


def test_h100_nv6_cut_legend_and_unnamed_nics(real: Path) -> None:
    s = smi(real, "h100-4gpu-nv6-4nic-nccl1617.txt")
    assert {path(s, "gpu0", f"gpu{j}") for j in range(1, 4)} == {"NV6"}
    assert [path(s, f"gpu{i}", f"nic{i}") for i in range(4)] == ["PIX"] * 4
    assert path(s, "gpu0", "nic1") == "SYS"
    assert [g.numa_node for g in s.gpus] == [3, 1, 7, 5]
    assert s.gpus[0].cpu_affinity == "6,14,22,30"
    assert [n.name for n in s.nics] == ["NIC0", "NIC1", "NIC2", "NIC3"]
    assert any("NIC names not shown" in n for n in s.source.notes)


def test_h20_vm_without_legend(real: Path) -> None:
    s = smi(real, "h20-3e-8gpu-vm-tencent.txt")
    assert path(s, "gpu0", "nic7") == "PIX" and path(s, "gpu7", "nic0") == "PIX" and path(s, "gpu0", "nic0") == "SYS"
    assert path(s, "gpu3", "nic4") == "PIX" and path(s, "gpu0", "nic4") == "NODE"
    assert s.gpus[4].cpu_affinity == "64-127" and s.gpus[4].numa_node == 1


def test_h200_slurm_job_with_empty_cpu_affinity(real: Path) -> None:
    s = smi(real, "hgx-h200-8gpu-10nic-nchc-nano4.txt")
    assert len(s.nics) == 10 and s.nics[9].name == "mlx5_9"
    assert [g.cpu_affinity for g in s.gpus] == ["", "", "", "", "56", "56", "56", "56"]
    assert [g.numa_node for g in s.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert path(s, "gpu0", "nic0") == "PIX" and path(s, "gpu1", "nic3") == "PIX" and path(s, "gpu7", "nic9") == "PIX"
    assert path(s, "nic1", "nic2") == "PIX" and path(s, "gpu0", "nic1") == "NODE"


def test_pcie_switch_tree_without_nics(real: Path) -> None:
    s = smi(real, "pcie-8gpu-pix-pxb-switch-tree-vllm11122.txt")
    assert path(s, "gpu0", "gpu1") == "PIX" and path(s, "gpu0", "gpu2") == "PXB" and path(s, "gpu0", "gpu4") == "SYS"
    assert path(s, "gpu4", "gpu5") == "PIX" and path(s, "gpu6", "gpu7") == "PXB"
    assert all(g.numa_node is None and g.cpu_affinity == "0-95" for g in s.gpus)


def test_rtx4090_tab_separated_without_legend(real: Path) -> None:
    s = smi(real, "rtx4090-8gpu-2nic-go-gpuallocator17.txt")
    assert {p.path for p in s.pairs if p.a.startswith("gpu") and p.b.startswith("gpu")} == {"SYS"}
    assert path(s, "gpu6", "nic0") == "PHB" and path(s, "gpu6", "nic1") == "PHB" and path(s, "gpu7", "nic0") == "SYS"
    assert path(s, "nic0", "nic1") == "PIX"
    assert s.gpus[0].cpu_affinity == "0-55,112-167" and s.gpus[0].numa_node == 0 and s.gpus[0].gpu_numa_node is None
    assert s.gpus[6].numa_node == 1


def test_rtx5090_topo_and_p2p_gns(real: Path) -> None:
    s = smi(real, "rtx5090-2gpu-phb-topo-and-p2p-rw-club3090-1229.txt")
    p = s.pairs[0]
    assert p.path == "PHB" and p.p2p is not None and p.p2p.read == "GNS" and p.p2p.write == "GNS"
    assert p.p2p.nvlink is None
    assert "pairs.p2p" not in s.source.unknown_fields
    text = render_p2p_matrix(s, "r")
    # byte for byte what `nvidia-smi topo -p2p r` printed on that machine, its legend included
    printed = (real / "nvidia-smi" / "rtx5090-2gpu-phb-topo-and-p2p-rw-club3090-1229.txt").read_text()
    start = printed.index(" \tGPU0\tGPU1\t\n GPU0\tX\tGNS")
    end = printed.index("  U    = Unknown\n", start) + len("  U    = Unknown\n")
    assert text == printed[start:end]


def test_rtx3090_bridge_nv4(real: Path) -> None:
    s = smi(real, "rtx3090-2gpu-nv4-club3090-rig-report.txt")
    assert s.pairs[0].path == "NV4" and s.pairs[0].nvlinks == 4 and s.gpus[0].cpu_affinity == "0-5"


def test_hpe_nvlink_status_speeds_and_inactive_links(real: Path) -> None:
    s = smi(real, "hpe-dl380a-gen11-2x-h100-pcie-nvlink-s.txt")
    g0 = s.gpus[0]
    assert g0.name == "NVIDIA H100 PCIe" and g0.uuid == "GPU-6968dfc2-d444-d92c-c36b-6abe53445cb9"
    assert len(g0.nvlinks) == 18
    active = [x.link for x in g0.nvlinks if x.active]
    assert active == [0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15]
    assert all(x.speed_gbps == 26.562 for x in g0.nvlinks if x.active)


def test_hpe_nvlink_remote_map(real: Path) -> None:
    s = smi(real, "hpe-dl380a-gen11-2x-h100-pcie-nvlink-R.txt")
    assert [x.remote_pci_bus_id for x in s.gpus[0].nvlinks] == ["0000:d5:00.0"] * 12
    assert {x.remote_pci_bus_id for x in s.gpus[1].nvlinks} == {"0000:c2:00.0"}


def test_several_outputs_pasted_together_combine(real: Path) -> None:
    d = real / "nvidia-smi"
    text = "\n".join(
        (d / f).read_text()
        for f in (
            "hpe-dl380a-gen11-2x-h100-pcie-nvlink-bridge.txt",
            "hpe-dl380a-gen11-2x-h100-pcie-nvlink-s.txt",
            "hpe-dl380a-gen11-2x-h100-pcie-nvlink-R.txt",
        )
    )
    s = import_text("$ nvidia-smi topo -m\n" + text, "combined.txt")
    assert s.pairs[0].path == "NV12"
    g0 = s.gpus[0]
    assert g0.uuid and sum(x.active for x in g0.nvlinks) == 12
    assert g0.nvlinks[0].remote_pci_bus_id == "0000:d5:00.0" and g0.nvlinks[0].speed_gbps == 26.562
    assert g0.cpu_affinity == "32-63,96-127"


COMPLETE = [
    "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt",
    "dgx1-v100-pytorch-ddp-bench.txt",
    "gcp-gke-a4-b200-8gpu-8nic.txt",
    "gh200-1gpu-4nic-bluefield3-aerial.txt",
    "h20-3e-8gpu-vm-tencent.txt",
    "hgx-h200-8gpu-10nic-nchc-nano4.txt",
    "hpe-dl380a-gen11-2x-h100-pcie-nvlink-bridge.txt",
    "rtx3090-2gpu-nv4-club3090-rig-report.txt",
    "rtx4090-8gpu-2nic-go-gpuallocator17.txt",
    "rtx5090-2gpu-phb-topo-and-p2p-rw-club3090-1229.txt",
    "h100-4gpu-nv6-4nic-nccl1617.txt",
    "pcie-8gpu-pix-pxb-switch-tree-vllm11122.txt",
]


def _cells(text: str) -> dict[tuple[str, str], str]:
    """Every matrix cell (and trailing value) of a `topo -m` text, read independently."""
    lines = text.splitlines()
    head = next(i for i, x in enumerate(lines) if x.split()[:1] == ["GPU0"])
    labels = [t for t in re.sub(r"CPU Affinity|NUMA Affinity|GPU NUMA ID", " ", lines[head]).split()]
    out: dict[tuple[str, str], str] = {}
    for line in lines[head + 1 : head + 1 + len(labels)]:
        toks = line.split()
        for col, cell in zip(labels, toks[1 : 1 + len(labels)]):
            out[(toks[0], col)] = cell
    return out


@pytest.mark.parametrize("name", COMPLETE)
def test_import_then_matrix_reproduces_every_cell(real: Path, name: str) -> None:
    original = (real / "nvidia-smi" / name).read_text()
    s = import_text(original, name)
    again = render_matrix(s)
    want = _cells(original)
    got = _cells(again)
    if s.nics and s.nics[0].name.startswith("mlx") and "NIC Legend" not in original:
        # old format names NICs in the header; the matrix prints NIC<n> plus a NIC Legend
        rename = {f"NIC{n.index}": n.name for n in s.nics}
        got = {(rename.get(a, a), rename.get(b, b)): v for (a, b), v in got.items()}
    assert got == want
    s2 = import_text(again, "again")
    assert [(p.a, p.b, p.path) for p in s2.pairs] == [(p.a, p.b, p.path) for p in s.pairs]
    assert [(g.cpu_affinity, g.numa_node, g.gpu_numa_node) for g in s2.gpus] == [
        (g.cpu_affinity, g.numa_node, g.gpu_numa_node) for g in s.gpus
    ]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("hello world\n", "unknown format"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV4\n", "stop before GPU1"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\n", "has 1 cells"),
        ("\tGPU0\tGPU1\nGPU0\t X \tFOO\nGPU1\tFOO\t X \n", "'FOO' is not a topology code"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tPIX\t X \n", "not symmetric"),
        ("\tGPU0\tGPU1\nGPU1\t X \tNV4\nGPU0\tNV4\t X \n", "out of order"),
    ],
)
def test_bad_pastes_fail_with_one_line_naming_file_and_line(text: str, needle: str) -> None:
    with pytest.raises(ImportFailure) as exc:
        import_text(text, "paste.txt")
    msg = str(exc.value)
    assert needle in msg and msg.startswith("paste.txt") and "\n" not in msg


def test_matrix_invents_no_legend_and_no_column_the_source_lacked(real: Path) -> None:
    """A paste without a NIC Legend gets none made up (it printed "NIC0: NIC0"); an older driver's
    matrix without NUMA columns prints `?` there, not nvidia-smi's "N/A" (not applicable)."""
    s = import_text((real / "nvidia-smi" / "h100-4gpu-nv6-4nic-nccl1617.txt").read_text(), "h100")
    assert "nics.name" in s.source.unknown_fields and "NIC Legend" not in render_matrix(s)
    dgx1 = import_text((real / "nvidia-smi" / "dgx1-v100-pytorch-ddp-bench.txt").read_text(), "dgx1")
    assert {"gpus.numa_node", "gpus.gpu_numa_node"} <= set(dgx1.source.unknown_fields)
    row = render_matrix(dgx1).splitlines()[1].split("\t")
    assert row[0] == "GPU0" and row[-4:] == ["0-19,40-59", "?", "", "?"]
    named = import_text((real / "nvidia-smi" / "hgx-h200-8gpu-10nic-nchc-nano4.txt").read_text(), "h200")
    assert "  NIC0: mlx5_0" in render_matrix(named) and "gpus.numa_node" not in named.source.unknown_fields


def test_nvlink_r_of_two_bridged_gpus_gives_their_bus_ids_and_the_pair(real: Path) -> None:
    """HPE DL380a `nvlink -R`: gpu0's 12 links reach 0000:d5:00.0 and gpu1's reach 0000:c2:00.0, so
    the two are bridged and each sits at the bus the other reaches (derived); the pair is NV12, as
    `topo -m` of the same machine prints; the total link count is not in the file."""
    from topomap.graph import build
    from topomap.graph.link_summary import gpu_pairs_nvlink_summary

    s = import_text((real / "nvidia-smi" / "hpe-dl380a-gen11-2x-h100-pcie-nvlink-R.txt").read_text(), "R")
    assert [(g.pci_bus_id, g.derived) for g in s.gpus] == [
        ("0000:c2:00.0", ["pci_bus_id"]),
        ("0000:d5:00.0", ["pci_bus_id"]),
    ]
    assert "gpus.pci_bus_id" not in s.source.unknown_fields
    assert [(p.a, p.b, p.path, p.nvlinks) for p in s.pairs] == [("gpu0", "gpu1", "NV12", 12)]
    assert render_matrix(s).splitlines()[1].split("\t")[:3] == ["GPU0", " X ", "NV12"]
    assert gpu_pairs_nvlink_summary(build(s), "gpu0").startswith("12 active (links down not listed)")
