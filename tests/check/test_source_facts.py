"""What each kind of paste can carry (issue 19 item 2), and `nvidia-smi --query-gpu … --format=csv`
alone or appended to a `topo -m` (issue 23): check never fails what a format cannot carry; it says
UNKNOWN with the command whose output carries it, and that output, pasted, settles it.

Data: tests/data/real-topologies/nvidia-smi — the RTX 5090 pair's `topo -p2p rw` (club-3090 #1229),
the HPE DL380a's `nvlink -s` (its first GPU block alone is what `nvlink --status -i 0` prints), the
L40S machine record holding `topo -m`, `topo -p2p` and `--query-gpu` of one machine, and MLPerf
v4.0's L40S `--query-gpu` of PCIe links (see the folder's README for origins).
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from topomap.check import Lot, check, parse_requirements
from topomap.cli import app
from topomap.files.kind import sniff
from topomap.graph import build
from topomap.importers import ImportFailure, import_text
from topomap.model.merge import merge
from topomap.model.snapshot import Snapshot
from topomap.model.source_facts import QUERY_GPU, Fact, cannot_know, formats_of, source_facts, source_knows

runner = CliRunner()
L40S = "l40s-8gpu-1nic-topo-query-gpu-p2p-record.txt"
MLPERF = "l40s-8gpu-query-gpu-pcie-mlperf-v4.txt"


def text_of(real: Path, name: str) -> str:
    return (real / "nvidia-smi" / name).read_text()


def p2p_only(real: Path) -> str:
    """The `topo -p2p rw` matrix and legend of the RTX 5090 paste, without its `topo -m`."""
    lines = text_of(real, "rtx5090-2gpu-phb-topo-and-p2p-rw-club3090-1229.txt").splitlines()
    start = next(i for i, x in enumerate(lines) if "GNS" in x) - 1
    return "\n".join(lines[start:]) + "\n"


def status_i0(real: Path) -> str:
    """`nvidia-smi nvlink --status -i 0`: the first GPU's block of the HPE `nvlink -s` output."""
    lines = text_of(real, "hpe-dl380a-gen11-2x-h100-pcie-nvlink-s.txt").splitlines()
    end = next(i for i, x in enumerate(lines) if x.startswith("GPU 1:"))
    return "\n".join(lines[:end]) + "\n"


def l40s_topo(real: Path) -> str:
    """The `topo -m` block of the L40S record alone."""
    lines = text_of(real, L40S).splitlines()
    start = next(i for i, x in enumerate(lines) if x.split()[:2] == ["GPU0", "GPU1"])
    return "\n".join(lines[start : start + 10]) + "\n"


def l40s_csv_lines(real: Path) -> list[str]:
    """The `--query-gpu` header and eight rows of the L40S record."""
    lines = text_of(real, L40S).splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("index, name"))
    return lines[start : start + 9]


def verdicts(rules: str, snap: Snapshot) -> dict[str, tuple[str, list[str], list[str]]]:
    reqs, _ = parse_requirements("requirements:\n" + rules, "r.yaml")
    res = check(reqs, [Lot("lot", build(snap))], None).results
    return {r.rule: (r.status, r.evidence, r.settle) for r in res}


# --- what each format carries ---------------------------------------------------------------------------


def test_each_paste_records_its_formats_and_what_they_carry(real: Path) -> None:
    p2p = source_facts(import_text(p2p_only(real), "p2p.txt"))
    assert p2p.formats == ("topo-p2p",) and p2p.knows(Fact.P2P) and p2p.knows(Fact.GPU_COUNT)
    assert p2p.missing(Fact.NVLINK, Fact.NICS, Fact.PATH, Fact.GPU_MEMORY) == (
        Fact.NVLINK, Fact.NICS, Fact.PATH, Fact.GPU_MEMORY,
    )  # fmt: skip
    nvs = source_facts(import_text(text_of(real, "hpe-dl380a-gen11-2x-h100-pcie-nvlink-s.txt"), "s.txt"))
    assert nvs.formats == ("nvlink-status",) and nvs.knows(Fact.NVLINK_LINKS) and nvs.knows(Fact.GPU_MODEL)
    assert not nvs.knows(Fact.GPU_COUNT) and not nvs.knows(Fact.NICS)
    topo = source_facts(import_text(text_of(real, "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt"), "a.txt"))
    assert topo.formats == ("topo-m",) and topo.knows(Fact.NICS) and topo.knows(Fact.GPU_COUNT)
    assert topo.knows(Fact.NVLINK) and not topo.knows(Fact.P2P) and not topo.knows(Fact.GPU_MEMORY)
    both = source_facts(import_text(text_of(real, "rtx5090-2gpu-phb-topo-and-p2p-rw-club3090-1229.txt"), "r"))
    assert both.formats == ("topo-m", "topo-p2p") and both.knows(Fact.P2P) and both.knows(Fact.NVLINK)
    # a topo -m without a NUMA column (DGX-1's old driver) does not carry NUMA, though the format can
    dgx1 = import_text(text_of(real, "dgx1-v100-pytorch-ddp-bench.txt"), "d")
    assert not source_facts(dgx1).knows(Fact.NUMA) and not source_knows(dgx1, "numa")


def test_formats_of_a_snapshot_written_before_they_were_recorded(real: Path) -> None:
    snap = import_text(p2p_only(real), "p2p.txt")
    old = msgspec.structs.replace(snap, source=msgspec.structs.replace(snap.source, formats=[]))
    assert formats_of(old) == ("topo-p2p",) and not source_knows(old, Fact.NVLINK)
    xml = import_text((real / "nccl-xml" / "aws-p5-48xlarge.xml").read_text(), "p5.xml")
    assert formats_of(xml) == ("nccl-xml",) and not source_knows(xml, Fact.NVLINK)  # no <nvlink> elements
    assert source_knows(xml, Fact.NICS)


def test_a_merged_cluster_carries_what_every_host_carries(real: Path) -> None:
    a = import_text(text_of(real, "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt"), "a.txt")
    b = import_text(text_of(real, "hpe-dl380a-gen11-2x-h100-pcie-nvlink-s.txt"), "s.txt")
    named = [
        msgspec.structs.replace(s, host=msgspec.structs.replace(s.host, hostname=n)) for n, s in (("a", a), ("b", b))
    ]
    facts = source_facts(merge([("node-a", named[0]), ("node-b", named[1])]))
    assert not facts.knows(Fact.NICS) and not facts.knows(Fact.GPU_COUNT) and facts.knows(Fact.NVLINK)


# --- check: what a format cannot carry is UNKNOWN, never FAIL -------------------------------------------


def test_topo_p2p_paste_does_not_fail_nvlink_or_gdr_nic(real: Path) -> None:
    v = verdicts("  - gpu_links: {min: nvlink}\n  - gdr_nic: {max_path: PXB}\n", import_text(p2p_only(real), "p"))
    status, evidence, settle = v["gpu_links"]
    assert status == "unknown"
    assert "gpu0–gpu1: NVLink unknown: `nvidia-smi topo -p2p` does not carry which GPUs NVLink joins" in evidence
    assert settle == ["`nvidia-smi topo -m` run inside the container (or `topomap probe`)"]
    status, evidence, settle = v["gdr_nic"]
    assert status == "unknown" and "gpu1: no NIC listed: `nvidia-smi topo -p2p` does not carry the NICs" in evidence
    assert settle[0].startswith("`nvidia-smi topo -m`")
    # the same machine's topo -m carries NVLink and NICs: there the pair fails (PHB, no NVLink) and so do NICs
    full = import_text(text_of(real, "rtx5090-2gpu-phb-topo-and-p2p-rw-club3090-1229.txt"), "r")
    v = verdicts("  - gpu_links: {min: nvlink}\n  - gdr_nic: {max_path: PXB}\n", full)
    assert (
        v["gpu_links"][0] == "fail"
        and "gpu0–gpu1: no usable NVLink: no NVLink between them (path PHB)" in (v["gpu_links"][1])
    )
    assert v["gdr_nic"][0] == "fail" and "gpu0: no usable NIC recorded" in v["gdr_nic"][1]


def test_nvlink_status_lists_no_nics(real: Path) -> None:
    snap = import_text(text_of(real, "hpe-dl380a-gen11-2x-h100-pcie-nvlink-s.txt"), "s.txt")
    status, evidence, _ = verdicts("  - gdr_nic: {max_path: PXB}\n", snap)["gdr_nic"]
    assert status == "unknown" and "gpu0: no NIC listed: `nvidia-smi nvlink -s` does not carry the NICs" in evidence


def test_nvlink_status_of_one_gpu_is_not_a_one_gpu_machine(real: Path) -> None:
    one = import_text(status_i0(real), "i0.txt")
    assert [g.index for g in one.gpus] == [0] and one.gpus[0].name == "NVIDIA H100 PCIe"
    v = verdicts("  - gpus: {min_count: 2}\n  - gpu_links: {min: nvlink}\n  - fabric_ready: {}\n", one)
    status, evidence, settle = v["gpus"]
    assert status == "unknown"
    assert evidence[0] == (
        "1 of the 1 GPUs listed qualify; `nvidia-smi nvlink -s` does not carry every GPU of the host "
        "(it may list only some)"
    )
    assert settle == [f"`{QUERY_GPU}` (or `nvidia-smi topo -m`, or `topomap probe`)"]
    assert v["gpu_links"][0] == "unknown" and v["gpu_links"][1][0].startswith("applies to no GPU pair: 1 GPU(s)")
    # both GPUs of the same output: two qualify; asking for four cannot be told from `nvlink -s` either
    two = import_text(text_of(real, "hpe-dl380a-gen11-2x-h100-pcie-nvlink-s.txt"), "s.txt")
    assert verdicts("  - gpus: {min_count: 2}\n", two)["gpus"][0] == "pass"
    assert verdicts("  - gpus: {min_count: 4}\n", two)["gpus"][0] == "unknown"
    # a topo -m lists every GPU: eight of sixteen fails
    a100 = import_text(text_of(real, "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt"), "a.txt")
    status, evidence, _ = verdicts("  - gpus: {min_count: 16}\n", a100)["gpus"]
    assert status == "fail" and evidence[0] == "8 GPUs qualify < 16 needed"


def test_topo_m_without_nics_still_fails_gdr_nic(real: Path) -> None:
    """`topo -m` lists the RDMA NICs: none listed there is a fact, not a gap."""
    snap = import_text(text_of(real, "hpe-dl380a-gen11-2x-h100-pcie-nvlink-bridge.txt"), "b.txt")
    assert verdicts("  - gdr_nic: {max_path: PXB}\n", snap)["gdr_nic"][0] == "fail"


def test_show_says_what_the_format_cannot_carry(real: Path, tmp_path: Path) -> None:
    snap = import_text(p2p_only(real), "p2p.txt")
    assert {Fact.NVLINK, Fact.NICS} <= set(cannot_know(snap).facts)
    f = tmp_path / "p2p.txt"
    f.write_text(p2p_only(real))
    r = runner.invoke(app, ["show", str(f)], env={"COLUMNS": "400"})
    assert r.exit_code == 0 and "which GPUs NVLink joins, per-link NVLink state, the PCIe path" in r.stdout
    assert "`nvidia-smi topo -m` (which GPUs NVLink joins, the PCIe path between devices, the NICs" in r.stdout


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("h100-sxm-8gpu-q-fabric-thamada.txt", "nvidia-smi-q"),
        ("l40s-8gpu-query-gpu-pcie-mlperf-v4.txt", "query-gpu-csv"),
    ],
)
def test_show_names_what_a_paste_without_path_classes_cannot_know(real: Path, name: str, fmt: str) -> None:
    """The newcomer trial: `show` of a real `nvidia-smi -q` or `--query-gpu` paste said it cannot know
    "the PCI tree (structure inferred from path classes)" — a source with no path classes infers no
    tree. It names what the output cannot carry (CAN_CARRY) and the command that records each
    (SETTLE_BY); NIC details are not listed beside "the NICs" themselves."""
    snap = import_text(text_of(real, name), name)
    assert snap.source.formats == [fmt]
    gaps = cannot_know(snap)
    assert {Fact.NVLINK, Fact.PATH, Fact.P2P, Fact.NICS, Fact.NUMA} <= set(gaps.facts)
    assert not {Fact.NIC_SPEED, Fact.NIC_KIND, Fact.NIC_NAMES} & set(gaps.facts)
    assert "pci" not in gaps.fields and not [f for f in gaps.fields if f.startswith("nics.")]
    assert gaps.settled_by()["nvidia-smi topo -m"] == [Fact.NVLINK, Fact.PATH, Fact.NICS, Fact.NUMA]
    r = runner.invoke(app, ["show", str(real / "nvidia-smi" / name)], env={"COLUMNS": "1000"})
    line = next(x for x in r.stdout.splitlines() if x.startswith("this source cannot know: "))
    assert "PCI tree" not in line and "NIC speeds" not in line and "NIC bus ids" not in line
    assert "the PCIe path between devices" in line and "the NICs" in line
    assert "\nrecorded by: `nvidia-smi topo -m` (which GPUs NVLink joins, the PCIe path between devices" in r.stdout
    # a `topo -m` carries path classes: the tree inferred from them is still named
    a100 = import_text(text_of(real, "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt"), "a.txt")
    assert "pci" in cannot_know(a100).fields


# --- `--query-gpu … --format=csv` ---------------------------------------------------------------------------


def test_query_gpu_appended_to_topo_m_joins_by_index(real: Path) -> None:
    snap = import_text(text_of(real, L40S), L40S)
    assert sniff(text_of(real, L40S)) == "nvidia-smi"
    assert snap.source.formats == ["topo-m", "topo-p2p", "query-gpu-csv"]
    g6 = next(g for g in snap.gpus if g.index == 6)
    assert (g6.name, g6.pci_bus_id, g6.memory_total_bytes) == ("NVIDIA L40S", "0000:e3:00.0", 46068 * 2**20)
    assert g6.numa_node == 1 and g6.cpu_affinity == "32-63,96-127"  # from the matrix
    assert snap.software.driver_version == "580.178.04" and snap.software.cuda_driver_version is None
    pair = next(p for p in snap.pairs if (p.a, p.b) == ("gpu0", "gpu1"))
    assert pair.path == "PIX" and pair.p2p is not None and pair.p2p.write == "OK"
    facts = source_facts(snap)
    assert facts.knows(Fact.GPU_MEMORY) and facts.knows(Fact.GPU_BUS_ID) and facts.knows(Fact.DRIVER)
    assert not facts.knows(Fact.CUDA) and not facts.knows(Fact.PCIE_LINK)


def test_memory_unknown_names_the_query_and_the_query_settles_it(real: Path) -> None:
    rules = "  - gpus: {min_count: 8, model: L40S, min_memory_gb: 48}\n"
    status, evidence, settle = verdicts(rules, import_text(l40s_topo(real), "topo.txt"))["gpus"]
    assert status == "unknown" and "model not recorded, memory not recorded" in evidence[1]
    assert settle == [f"`{QUERY_GPU}` (or `topomap probe`)"]
    appended = l40s_topo(real) + "\n$ " + QUERY_GPU + "\n" + "\n".join(l40s_csv_lines(real)) + "\n"
    status, evidence, _ = verdicts(rules, import_text(appended, "topo+csv.txt"))["gpus"]
    assert status == "pass" and evidence[0] == "8 GPUs qualify ≥ 8"  # 46068 MiB = 48.3 GB as sold
    status, evidence, _ = verdicts("  - gpus: {min_count: 8, min_memory_gb: 80}\n", import_text(appended, "t"))["gpus"]
    assert status == "fail" and "gpu0: 44.99 GiB = 48.3 GB < 80 GB" in evidence


def test_query_gpu_alone_is_gpus_without_links(real: Path) -> None:
    snap = import_text(text_of(real, MLPERF), MLPERF)
    assert [g.index for g in snap.gpus] == list(range(8)) and snap.pairs == []
    pcie = snap.gpus[3].pcie
    assert pcie is not None and (pcie.gen_current, pcie.gen_max, pcie.width_current, pcie.width_max) == (1, 4, 16, 16)
    facts = source_facts(snap)
    assert facts.formats == ("query-gpu-csv",) and facts.knows(Fact.PCIE_LINK) and facts.knows(Fact.GPU_COUNT)
    assert facts.missing(Fact.GPU_MODEL, Fact.GPU_MEMORY, Fact.NVLINK, Fact.NICS, Fact.PATH) == (
        Fact.GPU_MODEL, Fact.GPU_MEMORY, Fact.NVLINK, Fact.NICS, Fact.PATH,
    )  # fmt: skip
    v = verdicts("  - gpus: {min_count: 8}\n  - gpu_links: {min: nvlink}\n  - gdr_nic: {max_path: PXB}\n", snap)
    assert v["gpus"][0] == "pass" and v["gpu_links"][0] == "unknown" and v["gdr_nic"][0] == "unknown"


def test_noheader_nounits_and_any_column_order_read_the_same(real: Path) -> None:
    rows = [[c.strip() for c in line.split(",")] for line in l40s_csv_lines(real)[1:]]
    # noheader,nounits: the columns come from the command line; the cells lose " MiB"
    plain = "\n".join(", ".join([r[3].removesuffix(" MiB"), r[0], r[2], r[1]]) for r in rows)
    cmd = "$ nvidia-smi --query-gpu=memory.total,index,gpu_bus_id,gpu_name --format=csv,noheader,nounits\n"
    a = import_text(l40s_topo(real) + "\n" + cmd + plain + "\n", "noheader.txt")
    b = import_text(text_of(real, L40S), L40S)
    for ga, gb in zip(a.gpus, b.gpus, strict=True):
        assert (ga.index, ga.name, ga.pci_bus_id, ga.memory_total_bytes) == (
            gb.index, gb.name, gb.pci_bus_id, gb.memory_total_bytes,
        )  # fmt: skip
    # noheader without its command line: the columns cannot be told, so nothing is read as CSV
    with pytest.raises(ImportFailure):
        import_text(plain + "\n", "bare.txt")


def test_na_and_not_supported_cells_are_unknown() -> None:
    text = (
        "index, name, memory.total [MiB], pcie.link.width.current\n"
        "0, NVIDIA H100 80GB HBM3, [N/A], [Not Supported]\n"
        "1, NVIDIA H100 80GB HBM3, 81559 MiB, 16\n"
    )
    snap = import_text(text, "na.txt")
    assert snap.gpus[0].memory_total_bytes is None and snap.gpus[0].pcie is None
    assert snap.gpus[1].memory_total_bytes == 81559 * 2**20
    # the [N/A] cell is unknown: the rule falls back on the memory the model implies, and says so
    status, evidence, _ = verdicts("  - gpus: {min_count: 2, min_memory_gb: 80}\n", snap)["gpus"]
    assert status == "pass" and any(e.startswith("gpu0:") and "derived from the model" in e for e in evidence)


def test_query_gpu_of_one_gpu_does_not_count_the_host() -> None:
    text = (
        "$ nvidia-smi --query-gpu=index,name,memory.total --format=csv -i 3\n"
        "index, name, memory.total [MiB]\n3, NVIDIA H100 80GB HBM3, 81559 MiB\n"
    )
    snap = import_text(text, "one.txt")
    assert [g.index for g in snap.gpus] == [3] and not source_knows(snap, Fact.GPU_COUNT)
    assert verdicts("  - gpus: {min_count: 8}\n", snap)["gpus"][0] == "unknown"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("index, name, memory.total [MiB]\n0, A, 1 MiB\n1, B\n", "bad.txt:3: --query-gpu row has 2 cells but"),
        ("index, name, memory.total [MiB]\n0, A, lots MiB\n", "bad.txt:2: column memory.total: 'lots MiB' is not"),
        ("index, name, pci.bus_id\n0, A, nowhere\n", "bad.txt:2: column pci.bus_id: 'nowhere' is not a PCI bus id"),
        ("index, name\n0, A\n0, B\n", "bad.txt:3: column index: GPU 0 appears twice"),
        ("index, name\nGPU0, A\n", "bad.txt:2: column index: 'GPU0' is not a whole number"),
    ],
)
def test_malformed_csv_is_one_line_naming_file_line_and_column(text: str, needle: str, tmp_path: Path) -> None:
    with pytest.raises(ImportFailure) as exc:
        import_text(text, "bad.txt")
    assert str(exc.value).startswith(needle) and "\n" not in str(exc.value)
    f = tmp_path / "bad.txt"
    f.write_text(text)
    r = runner.invoke(app, ["import", str(f)])
    assert r.exit_code == 2 and f"{f}{needle.removeprefix('bad.txt')}" in r.output and "Traceback" not in r.output


def test_csv_naming_a_gpu_the_matrix_lacks_is_refused(real: Path) -> None:
    text = l40s_topo(real) + "\nindex, name\n9, NVIDIA L40S\n"
    with pytest.raises(ImportFailure, match=r"topo9.txt:\d+: column index: GPU 9 is not among the GPUs earlier"):
        import_text(text, "topo9.txt")


def test_query_gpu_after_nvlink_status_of_one_gpu_adds_the_others(real: Path) -> None:
    """`nvlink --status -i 0` lists one GPU; the query lists both: the file then counts the host."""
    text = (
        "$ nvidia-smi nvlink --status -i 0\n"
        + status_i0(real)
        + (
            "$ nvidia-smi --query-gpu=index,name,memory.total --format=csv\n"
            "index, name, memory.total [MiB]\n0, NVIDIA H100 PCIe, 81559 MiB\n1, NVIDIA H100 PCIe, 81559 MiB\n"
        )
    )
    snap = import_text(text, "i0+csv.txt")
    assert [g.index for g in snap.gpus] == [0, 1] and len(snap.gpus[0].nvlinks) == 18 and not snap.gpus[1].nvlinks
    assert source_knows(snap, Fact.GPU_COUNT) and verdicts("  - gpus: {min_count: 2}\n", snap)["gpus"][0] == "pass"
    assert verdicts("  - gpus: {min_count: 4}\n", snap)["gpus"][0] == "fail"
