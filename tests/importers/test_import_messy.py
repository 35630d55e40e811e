"""Messy and hostile pastes (issue 14): glued cells, two outputs in one file, crafted long lines,
CPU masks; each is read right or refused with one line that says why."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from topomap.base.cpus import cpus_from_hex_mask, format_cpulist, parse_cpulist
from topomap.base.errors import TopomapError
from topomap.importers import import_text

B200 = "gcp-gke-a4-b200-8gpu-8nic.txt"


def paste(real: Path, name: str) -> str:
    return (real / "nvidia-smi" / name).read_text()


def test_numa_glued_onto_cpu_affinity_is_split(real: Path) -> None:
    # Both sockets glued: the split that gives equal-length (hyperthread sibling) ranges wins.
    text = paste(real, B200)
    glued = text.replace("0-55,112-167    0 N/A", "0-55,112-1670 N/A").replace(
        "56-111,168-223  1 N/A", "56-111,168-2231 N/A"
    )
    s = import_text(glued, "glued.txt")
    assert [g.cpu_affinity for g in s.gpus] == ["0-55,112-167"] * 4 + ["56-111,168-223"] * 4
    assert [g.numa_node for g in s.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert all(g.gpu_numa_node is None for g in s.gpus)
    assert any("GPU0: NUMA Affinity glued onto the CPU Affinity cell (0-55,112-1670)" in n for n in s.source.notes)
    # One row glued: the CPU list the clean rows print settles it.
    one = text.replace("0-55,112-167    0 N/A", "0-55,112-1670 N/A", 1)
    s = import_text(one, "one.txt")
    assert s.gpus[0].cpu_affinity == "0-55,112-167" and s.gpus[0].numa_node == 0
    assert s.gpus[1].cpu_affinity == "0-55,112-167" and len(s.source.notes) == 1


def test_glued_cell_that_cannot_be_split_is_refused(real: Path) -> None:
    text = paste(real, "gh200-1gpu-4nic-bluefield3-aerial.txt").replace("0-71    0               1", "0-710   1")
    with pytest.raises(TopomapError) as err:
        import_text(text, "gh.txt")
    msg = str(err.value)
    assert msg.startswith("gh.txt:2: GPU0: CPU Affinity '0-710' with the NUMA Affinity cell missing")
    assert "\n" not in msg


def test_untouched_pastes_have_no_glue_notes(real: Path) -> None:
    for f in sorted((real / "nvidia-smi").glob("*.txt")):
        s = import_text(f.read_text(), f.name)
        assert not any("glued onto" in n for n in s.source.notes), f.name


def test_two_different_outputs_in_one_file_refused(real: Path) -> None:
    a, b = paste(real, B200), paste(real, "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt")
    with pytest.raises(TopomapError) as err:
        import_text(a + "\n" + b, "two.txt")
    first_b = len(a.splitlines()) + 2
    assert str(err.value).startswith(f"two.txt:{first_b}: a second, different `nvidia-smi topo -m` output")
    assert err.value.hint is not None and "topomap merge" in err.value.hint
    s = import_text(a + "\n" + a, "twice.txt")  # the same output pasted twice is read once
    assert len(s.gpus) == 8 and any("repeats the one at line 1" in n for n in s.source.notes)


def test_one_legend_naming_a_nic_twice_refused(real: Path) -> None:
    text = paste(real, B200)
    legend = text[text.index("NIC Legend:") :]
    with pytest.raises(TopomapError, match="the NIC Legend names NIC0 twice"):
        import_text(text + "\n" + legend.replace("NIC0: mlx5_0", "NIC0: mlx5_9"), "x.txt")


@pytest.mark.parametrize(
    "line",
    [
        "GPU 0: " + " " * 50_000 + "x",
        "GPU 0: (UUID: " + " " * 50_000,
        "GPU0" + " " * 50_000 + "X",
        "\tGPU0\tGPU1" + " " * 50_000 + "CPU Affinity",
        "NIC0:" + " " * 50_000 + "x y",
        "topo " * 10_000 + "-p2p" + " " * 50_000,
        "  Link 0: " + " " * 50_000 + "1 GB/s",
    ],
)
def test_long_crafted_lines_take_linear_time(real: Path, line: str) -> None:
    base = paste(real, "rtx3090-2gpu-nv4-club3090-rig-report.txt")
    t = time.monotonic()
    for text in (line + "\n", base + line + "\n", line + "\n" + base):
        with contextlib.suppress(TopomapError):
            import_text(text, "long.txt")
    assert time.monotonic() - t < 2


def test_header_with_absurd_device_count_refused() -> None:
    header = "\t" + "\t".join(f"GPU{i}" for i in range(2000)) + "\n"
    with pytest.raises(TopomapError, match="names 2000 devices"):
        import_text(header + "GPU0\tX\n", "big.txt")


def test_hex_masks_hwloc_elided_words_and_linear_time() -> None:
    assert cpus_from_hex_mask("0x00000303,,0x03030303") == [0, 1, 8, 9, 16, 17, 24, 25, 64, 65, 72, 73]
    assert format_cpulist(cpus_from_hex_mask("000000ff,ffff0000,00ffffff")) == "0-23,48-71"
    assert format_cpulist(cpus_from_hex_mask("0x000000ff,0xffff0000,0x00ffffff")) == "0-23,48-71"
    assert format_cpulist(cpus_from_hex_mask("0xffffffffffff")) == "0-47"
    assert cpus_from_hex_mask("") == [] and cpus_from_hex_mask("0x0") == []
    t = time.monotonic()
    assert cpus_from_hex_mask("0" * 250_000) == []
    with pytest.raises(ValueError, match="at most 65535"):
        cpus_from_hex_mask("f" * 250_000)
    with pytest.raises(ValueError):
        cpus_from_hex_mask("0xzz")
    assert time.monotonic() - t < 1
    with pytest.raises(ValueError, match="past any machine"):
        parse_cpulist("0-100000000000")


FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"


def test_nvidia_smi_query_gives_identity_device_id_memory_and_trained_width() -> None:
    s = import_text((FIXTURES / "nvidia-smi-q-2gpu-h100-pcie.txt").read_text(), "q.txt")
    assert [(g.index, g.name, g.pci_bus_id, g.pci_device_id) for g in s.gpus] == [
        (0, "NVIDIA H100 PCIe", "0000:4a:00.0", "0x2331"),
        (1, "NVIDIA H100 PCIe", "0000:61:00.0", "0x2331"),
    ]
    assert s.gpus[0].memory_total_bytes == 81559 * 2**20 and s.gpus[0].architecture == "hopper"
    assert s.gpus[1].pcie is not None and (s.gpus[1].pcie.width_max, s.gpus[1].pcie.width_current) == (16, 8)
    assert s.gpus[0].uuid == "GPU-3f1c2a6e-9b0d-4c7e-8a51-2d6f0b9e7c14" and s.gpus[0].persistence_mode is True
    assert s.software.driver_version == "560.35.03" and s.software.cuda_driver_version == "12.6"
    unknown = set(s.source.unknown_fields)
    assert not unknown & {"gpus.pci_bus_id", "gpus.memory_total_bytes", "gpus.pcie", "gpus.name", "software"}
    assert "pairs.path" in unknown  # no `topo -m` in this file


def test_query_joins_the_matrix_by_index(real: Path) -> None:
    topo = paste(real, "hpe-dl380a-gen11-2x-h100-pcie-nvlink-bridge.txt")
    s = import_text(topo + "\n" + (FIXTURES / "nvidia-smi-q-2gpu-h100-pcie.txt").read_text(), "both.txt")
    assert [g.pci_device_id for g in s.gpus] == ["0x2331", "0x2331"] and s.pairs[0].path == "NV12"
    assert "pairs.path" not in s.source.unknown_fields and not s.source.notes


def test_xml_with_absurd_device_count_refused_before_pairing() -> None:
    gpus = "".join(
        f'<pci busid="0000:{b // 256:02x}:{b % 32:02x}.{b % 8}" class="0x030200"><gpu dev="{b}" sm="90"/></pci>'
        for b in range(600)
    )
    t = time.monotonic()
    with pytest.raises(TopomapError, match=r"^big.xml: 600 GPUs and 0 RDMA NICs in one host \(at most 512 together\)"):
        import_text(f'<system version="1"><cpu numaid="0" affinity="ff">{gpus}</cpu></system>', "big.xml")
    assert time.monotonic() - t < 2


def test_a_query_paste_with_a_huge_line_of_spaces_reads_in_linear_time(real: Path) -> None:
    """Found by the final fuzz: a 50 KB line of spaces in an `nvidia-smi -q` paste made the
    key-value pattern backtrack for minutes (a hang). The reader scans for the colon instead."""
    import time

    from topomap.importers import import_text

    text = (Path(__file__).resolve().parents[1] / "data" / "fixtures" / "nvidia-smi-q-2gpu-h100-pcie.txt").read_text()
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "Product Name" in line)
    lines.insert(at, " " * 50_000 + "x" + " " * 50_000)
    t = time.monotonic()
    s = import_text("\n".join(lines), "q.txt")
    assert time.monotonic() - t < 2 and [g.name for g in s.gpus] == ["NVIDIA H100 PCIe"] * 2
