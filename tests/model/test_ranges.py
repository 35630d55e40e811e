"""Issue 30 items 1, 5, 6, 8 (GPU half) and 9 (diff): figures are ranges, ranked only where the
ranges do not overlap; one NVLink "spec" (the data rate per direction); a static topology file's
PCIe placeholders are not the machine's; one parts table; a diff headline counts every arrow.

Real outputs: the 8x H200 `topo -m` (no GPU names; an HGX H800 board prints the same NV18 matrix,
issues 19 and 30) stands for the H800 box, the 8x A100-SXM4 `topo -m` (DeepEP#13, no names) for the
A100 one; "the models appended" is what `nvidia-smi --query-gpu=index,name --format=csv` prints.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES, run_probe
from tests.fakes import machines
from tests.fakes.flows import arrow, flow_yaml, map_text, one_arrow, step
from topomap.base.errors import ImportFailure
from topomap.base.parts import GPU_PARTS, max_nvlinks, nvlink_parts
from topomap.check import Lot, check, parse_requirements
from topomap.cli import app
from topomap.diff import diff_snapshots
from topomap.flow import read_flow
from topomap.graph import build
from topomap.graph.evidence import nvlink
from topomap.importers import import_file
from topomap.importers.nccl_xml import import_nccl_xml
from topomap.model.facts import Bandwidth, gpu_memory, gpu_pcie_link
from topomap.model.nvlink_rate import nvlink_bundle_bandwidth
from topomap.model.ranking import compare_bandwidth
from topomap.model.snapshot import Gpu

SMI = REAL / "nvidia-smi"
H800_NV18 = SMI / "hgx-h200-8gpu-10nic-nchc-nano4.txt"
A100_NV12 = SMI / "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt"
TP = SAMPLES / "flows" / "tensor-parallel.yaml"
XML = REAL / "nccl-xml"
runner = CliRunner()


def _named(src: Path, name: str, out: Path) -> Path:
    """The paste with `nvidia-smi --query-gpu=index,name --format=csv` appended, as a renter adds it."""
    rows = "".join(f"{k}, {name}\n" for k in range(8))
    out.write_text(src.read_text() + "\nindex, name\n" + rows)
    return out


# 1. ranges, never overlapping ranks ---------------------------------------------------------------------


def test_h800_nv18_against_a100_nv12_cannot_be_told_without_the_models(tmp_path: Path) -> None:
    """Before: "h800 is better … NV18 → NV12", with and without the tensor-parallel flow. An H800's NV18
    carries 200 GB/s a direction and an A100's NV12 300: without the models the ranges (200–900 and
    133–600) overlap, and the answer is "cannot tell" with the command that settles it."""
    h800, a100 = import_file(H800_NV18), import_file(A100_NV12)
    d = diff_snapshots(h800, a100, names=("h800", "a100"))
    assert d.verdict == "cannot-confirm" and d.exit_status == 3
    assert d.summary() == "cannot tell which lot is better for work across its GPUs."
    nv = [c for c in d.changes if c.kind == "nvlink"]
    assert len(nv) == 28 and {c.direction for c in nv} == {"unknown"}
    line = d.reasons()[0]
    assert line.startswith("28 GPU pairs: NV18 → NV12 (cannot tell: 200–900 GB/s and 133–600 GB/s overlap")
    assert "`nvidia-smi -L`" in line and "--query-gpu=index,name" in line
    f = diff_snapshots(h800, a100, names=("h800", "a100"), flow=read_flow(TP))
    assert f.verdict == "cannot-confirm" and f.summary().startswith("cannot tell which lot is better for this flow")
    pairs = [r for r in f.arrows if r.a.path == "NV18"]
    assert len(pairs) == 28 and {r.direction for r in pairs} == {"unknown"}
    assert all("overlap" in r.reason and "--query-gpu=index,name" in r.reason for r in pairs)
    cli = runner.invoke(app, ["diff", str(H800_NV18), str(A100_NV12), "--flow", str(TP)])
    assert cli.exit_code == 3 and "h800 is better" not in cli.output


def test_with_the_models_appended_the_a100_is_better(tmp_path: Path) -> None:
    """The same two pastes with the models appended: the H800's NV18 is 200 GB/s, the A100's NV12 300,
    both exact: the A100 is better for the flow, 200 → 300 GB/s."""
    h800 = import_file(_named(H800_NV18, "NVIDIA H800 80GB HBM3", tmp_path / "h800.txt"))
    a100 = import_file(_named(A100_NV12, "NVIDIA A100-SXM4-80GB", tmp_path / "a100.txt"))
    f = diff_snapshots(h800, a100, names=("h800", "a100"), flow=read_flow(TP))
    assert f.verdict == "b-better" and f.exit_status == 1
    assert f.reasons()[0] == "28 arrows (lot:gpu0 → lot:gpu1 …) better on a100: 200 GB/s → 300 GB/s"
    d = diff_snapshots(h800, a100, names=("h800", "a100"))
    nv = [c for c in d.changes if c.kind == "nvlink"]
    assert {(c.direction, c.why) for c in nv} == {("better", "200 GB/s → 300 GB/s")}


def test_an_h800_shows_nv8_on_some_boxes() -> None:
    """vllm#40755's 8x H800 box: every GPU pair the excerpt holds is NV8 (the parts table lists the
    H800 with NV8 and NV18); the excerpt is cut inside GPU5's row, and is refused in one line."""
    path = SMI / "h800-8gpu-nv8-vllm40755.partial"
    rows = [ln.split("\t") for ln in path.read_text().splitlines() if ln.startswith("GPU") and "\t" in ln]
    cells = {c.strip() for r in rows[:5] for c in r[1:9]} - {"X"}
    assert len(rows) == 6 and cells == {"NV8"}
    h800 = next(p for p in GPU_PARTS if p.name == "NVIDIA H800 80GB HBM3")
    assert h800.links == (8, 18) and "vllm#40755" in h800.source_of("links")
    with pytest.raises(ImportFailure, match="row GPU5 has 4 cells"):
        import_file(path)


def _figures() -> list[tuple[str, Bandwidth]]:
    """Every figure the parts table can give: each part at each link count it can report, and a GPU of
    unknown model at each count, knowing nothing, its compute capability, or its NVLink generation."""
    out: list[tuple[str, Bandwidth]] = []
    for p in nvlink_parts():
        for n in range(1, p.full_links + 1):
            out.append((f"{p.name} NV{n}", nvlink_bundle_bandwidth(Gpu(index=0, name=p.name), n)))
    ccs = sorted({p.cc for p in nvlink_parts() if p.cc})
    for n in range(1, max_nvlinks() + 1):
        out.append((f"unknown NV{n}", nvlink_bundle_bandwidth(Gpu(index=0), n)))
        out += [(f"cc {cc} NV{n}", nvlink_bundle_bandwidth(Gpu(index=0, compute_capability=cc), n)) for cc in ccs]
    return [(k, bw) for k, bw in out if bw.gbps is not None]


def test_no_answer_ranks_two_overlapping_ranges() -> None:
    """Property over every pair of parts (and unknown parts) at every link count: a comparison ranks
    two figures only where their ranges do not overlap, and ranks every pair whose ranges are apart."""
    figures = _figures()
    assert len(figures) > 400
    ranked = 0
    for (ka, a), (kb, b) in itertools.product(figures, repeat=2):
        cmp = compare_bandwidth(a, b)
        lo_a, hi_a, lo_b, hi_b = a.gbps or 0.0, a.high or float("inf"), b.gbps or 0.0, b.high or float("inf")
        apart_b_better = hi_a < lo_b * 0.999
        apart_a_better = hi_b < lo_a * 0.999
        assert (cmp.verdict == "better-b") == apart_b_better, (ka, kb, cmp)
        assert (cmp.verdict == "better-a") == apart_a_better, (ka, kb, cmp)
        if cmp.verdict == "cannot-tell":  # two exact figures are ranked or the same: one is a range
            assert cmp.reason and not (a.exact and b.exact) and cmp.settle is not None, (ka, kb, cmp)
        ranked += cmp.ranked
    assert ranked > 0


def test_one_machine_ranks_by_link_count_only_on_one_per_link_range() -> None:
    """On one machine, bundles resting on one per-link range (an unnamed box's NV12 and NV6) rank by
    their link counts; across lots the same two figures overlap and do not rank."""
    nv12, nv6 = nvlink_bundle_bandwidth(Gpu(index=0), 12), nvlink_bundle_bandwidth(Gpu(index=0), 6)
    assert compare_bandwidth(nv6, nv12).verdict == "cannot-tell"
    assert compare_bandwidth(nv6, nv12, one_machine=True).verdict == "better-b"
    other = nvlink_bundle_bandwidth(Gpu(index=0, compute_capability="9.0"), 6)  # another per-link range
    assert compare_bandwidth(other, nv12, one_machine=True).verdict == "cannot-tell"


def test_check_passes_or_fails_a_range_only_where_all_of_it_does() -> None:
    """`arrow_bandwidth` over an unnamed NV18 (200–900 GB/s): ≥ 150 passes, ≥ 1000 fails, ≥ 400 is
    UNKNOWN with the command that settles it (before: FAIL was never said of a bound, but ≥ 1000
    stayed UNKNOWN though no part reaches it)."""

    t = build(import_file(H800_NV18))
    fmap = map_text(one_arrow("lot:gpu0", "lot:gpu1", kinds=("compute", "compute"), name="p"), {"lot": t})
    for need, status in ((150, "pass"), (1000, "fail"), (400, "unknown")):
        reqs, _ = parse_requirements(f"requirements:\n  - arrow_bandwidth: {{min_gbps: {need}}}\n", "r.yaml")
        r = check(reqs, [Lot("lot", t)], fmap).results[0]
        assert r.status == status, (need, r)
        if status == "unknown":
            assert any("--query-gpu=index,name" in s for s in r.settle)


# 5. one NVLink "spec" -------------------------------------------------------------------------------------


def test_nvlink_s_and_topo_m_with_the_model_give_one_spec_figure(tmp_path: Path) -> None:
    """The HPE DL380a's two H100 PCIe: `nvlink -s` prints 12 links at 26.562 GB/s (the signalling
    rate); its `topo -m` with the model appended shows NV12. Both are 300 GB/s spec, the data rate per
    direction (before: 319 GB/s spec against 300 derived), and the text says which rate was printed."""
    links = build(import_file(SMI / "hpe-dl380a-gen11-2x-h100-pcie-nvlink-s.txt"))
    paste = SMI / "hpe-dl380a-gen11-2x-h100-pcie-nvlink-bridge.txt"
    named = tmp_path / "bridge.txt"
    named.write_text(paste.read_text() + "\nindex, name\n0, NVIDIA H100 PCIe\n1, NVIDIA H100 PCIe\n")
    matrix = build(import_file(named))
    a, b = nvlink(links, "gpu0", "gpu1").bandwidth, nvlink(matrix, "gpu0", "gpu1").bandwidth
    assert (a.gbps, a.source, a.exact) == (b.gbps, b.source, b.exact) == (300.0, "spec", True)
    assert compare_bandwidth(a, b).verdict == "same"
    assert "prints 26.562 GB/s per link, NVLink 4's signalling rate" in a.basis
    assert "25 GB/s per link per direction" in a.basis
    nvlink_s = SMI / "hpe-dl380a-gen11-2x-h100-pcie-nvlink-s.txt"
    shown = runner.invoke(app, ["show", str(nvlink_s)], env={"COLUMNS": "200"})
    assert "12/18 active, 300 GB/s spec (data rate; 26.562 printed is the signalling rate)" in shown.output


# 6. a static topology file's placeholders ----------------------------------------------------------------


def test_static_files_are_told_apart_by_evidence_and_dumps_read_as_they_are() -> None:
    p4d = import_file(XML / "aws-p4d-24xlarge.xml")
    assert all(g.pcie is not None and g.pcie.placeholder for g in p4d.gpus)
    note = next(n for n in p4d.source.notes if n.startswith("a static topology file"))
    assert "the same PCIe figures on every link (8 GT/s, width 16)" in note and "ffff:ff:01.0" in note
    assert "LnkSta in lspci -vv" in note and "nvidia-smi -q -d PCIE" in note
    link = gpu_pcie_link(p4d.gpus[0]).bandwidth()
    assert link.source == "topology-file" and link.text() == "15.8 GB/s, from the topology file; not the machine's"
    ndv4, p5 = import_file(XML / "azure-ndv4.xml"), import_file(XML / "aws-p5-48xlarge.xml")
    assert all(g.pcie is not None and g.pcie.placeholder for g in (*ndv4.gpus, *p5.gpus))
    ibm = import_file(XML / "ibm-cloud-gx3d-h100-8gpu-vsi.xml")  # a real machine's NCCL_TOPO_DUMP_FILE
    assert not any(g.pcie is not None and g.pcie.placeholder for g in ibm.gpus)
    assert not any(n.startswith("a static topology file") for n in ibm.source.notes)


def test_a_placeholder_never_ranks_in_diff(tmp_path: Path) -> None:
    """Before: an H100 probe (Gen5 x16) against the p4d file said "8 GPUs: PCIe link Gen5 x16 → Gen3
    x16", though a p4d is Gen4 and the file's 8 GT/s is a placeholder."""
    probe = run_probe(machines.hgx_h100(), tmp_path).snapshot
    p4d = import_file(XML / "aws-p4d-24xlarge.xml")
    d = diff_snapshots(probe, p4d, names=("h100", "p4d"))
    assert not any(c.field == "PCIe link" for c in d.changes)
    assert any(x.field == "PCIe link" and x.side == "p4d" for x in d.not_compared)
    assert any("placeholders" in n and "nvidia-smi -q -d PCIE" in n for n in d.notes)
    assert not any("Gen3" in r for r in d.reasons())


def test_a_placeholder_never_passes_or_fails_a_bandwidth_rule() -> None:
    """Host-memory arrows over the p4d file's PCIe: the figure is the file's, so `arrow_bandwidth`
    says UNKNOWN and names what settles it, never PASS or FAIL on 15.8 GB/s."""

    t = build(import_file(XML / "aws-p4d-24xlarge.xml"))
    text = flow_yaml({"m": step("input", "lot:memory"), "a": step("compute", "lot:gpu0")}, [arrow("m", "a")], name="p")
    fmap = map_text(text, {"lot": t})
    assert fmap.arrows[0].bandwidth_source == "topology-file"
    for need in (1, 100):
        reqs, _ = parse_requirements(f"requirements:\n  - arrow_bandwidth: {{min_gbps: {need}}}\n", "r.yaml")
        r = check(reqs, [Lot("lot", t)], fmap).results[0]
        assert r.status == "unknown" and any("nvidia-smi -q -d PCIE" in s for s in r.settle), need


# 8. one parts table ------------------------------------------------------------------------------------


def test_an_h800_known_by_its_device_id_gets_every_fact_of_the_h800(tmp_path: Path) -> None:
    """Before: a GPU with `pci_device_id 0x2324` got the H800's NVLink figure but model None and memory
    unknown (the id was in one table only). The real IBM gx3d dump with the H800's device id (the
    board and dump are alike): name, memory and NVLink all the H800's, each labelled derived."""
    text = (XML / "ibm-cloud-gx3d-h100-8gpu-vsi.xml").read_text().replace('device="0x2330"', 'device="0x2324"')
    s = import_nccl_xml(text, "h800-dump.xml")
    g = s.gpus[0]
    assert g.name == "NVIDIA H800 80GB HBM3" and "name" in g.derived
    mem = gpu_memory(g)
    assert mem.total_bytes == 80 * 2**30 and mem.derived
    bw = nvlink(build(s), "gpu0", "gpu1").bandwidth
    assert bw.gbps == pytest.approx(200.0) and bw.exact and bw.source == "derived"
    bare = Gpu(index=0, pci_device_id="0x2324")
    assert gpu_memory(bare).total_bytes == 80 * 2**30 and nvlink_bundle_bandwidth(bare, 18).gbps == 200.0


# 9. a diff headline counts every arrow -------------------------------------------------------------------


def test_a_flow_headline_counts_every_arrow_and_says_unknowns_once() -> None:
    """Before: two NCCL XMLs under the tensor-parallel flow headlined "0 better, 0 worse, 4 cannot be
    compared" and said nothing of the arrows unknown on both; a row read "unknown unknown PHB
    bandwidth unknown"."""
    a, b = import_file(XML / "azure-ndv4.xml"), import_file(XML / "aws-p4d-24xlarge.xml")
    d = diff_snapshots(a, b, names=("ndv4", "p4d"), flow=read_flow(TP))
    counts: dict[str, int] = {}
    for r in d.arrows:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    assert sum(counts.values()) == len(d.arrows) == 52 and counts.get("unknown on both", 0) > 0
    head = d.summary()
    for outcome, n in counts.items():
        assert f"{n} {outcome}" in head and f"{n} {outcome}" in d.arrow_summary(), (outcome, head)
    args = ["diff", str(XML / "azure-ndv4.xml"), str(XML / "aws-p4d-24xlarge.xml"), "--flow", str(TP)]
    out = runner.invoke(app, args)
    assert "unknown unknown" not in out.output and "medium and bandwidth unknown (PHB by PCIe)" in out.output


def test_an_h800s_expected_collectives_stay_under_its_own_nvlink(tmp_path: Path) -> None:
    """NCCL models every SM90 part at 20.6 GB/s a link (18 links: 371 GB/s); an H800's 18 links carry 200
    GB/s, so the expected all-gather on a named H800 box is NCCL's figure scaled to the part's, never the
    H100's (the expectation and the arrows ask the same NVLink figure, model.nvlink_rate)."""
    from topomap.collective.expect import expect
    from topomap.collective.lot import plan

    h800 = import_file(_named(H800_NV18, "NVIDIA H800 80GB HBM3", tmp_path / "h800.txt"))
    h100 = import_file(_named(H800_NV18, "NVIDIA H100 80GB HBM3", tmp_path / "h100.txt"))
    slow, fast = expect(plan(h800), "all_gather"), expect(plan(h100), "all_gather")
    assert fast.busbw_gbps is not None and fast.busbw_gbps == pytest.approx(18 * 20.6 * 0.97)
    assert slow.busbw_gbps is not None and slow.busbw_gbps == pytest.approx(18 * 20.6 * 0.97 * 200 / (18 * 25))
    assert "the part carries 200 GB/s on 18 links" in slow.bottleneck


NCCL_LOG = REAL.parent / "real-nccl-logs" / "h200-vm-fulldump-gdrdma-nccltests256.log"


def test_an_nccl_logs_nvlink_figure_is_never_spec_and_its_own_is_nccls_model() -> None:
    """An NCCL INFO log's dump prints NVL[370.8]: 18 × NCCL's 20.6 GB/s per link for SM90, its topology
    model's figure, not NVLink 4's 25 GB/s data rate. The bundle is the parts' of that generation (derived:
    200–450 GB/s, H800 to H100/H200), NCCL's figure said beside it; every view asks the one function."""
    snap = import_file(NCCL_LOG)
    g = snap.gpus[0]
    bw = nvlink_bundle_bandwidth(g, len(g.nvlinks), snap)
    assert bw.source == "derived" and bw.lower_bound and (bw.gbps, bw.high) == (200.0, 450.0)
    assert "NCCL's model 371 GB/s" in bw.tag and "NCCL's topology model puts it at 370.8 GB/s" in bw.basis
    topo = build(snap)
    assert nvlink(topo, "gpu0", "gpu1").bandwidth == bw  # map, render, diff, check read the graph's edge
    shown = CliRunner().invoke(app, ["show", str(NCCL_LOG)]).output
    assert "≥ 200 GB/s derived (lower bound, NVLink 4; NCCL's model 371 GB/s)" in shown
    assert "GB/s spec" not in shown
    # an NCCL XML of the same part carries no per-link rate: the part's own figure, derived from its device id
    xml = import_nccl_xml((XML / "ibm-cloud-gx3d-h100-8gpu-vsi.xml").read_text(), "ibm.xml")
    x = xml.gpus[0]
    assert nvlink_bundle_bandwidth(x, len(x.nvlinks), xml).text() == "450 GB/s derived"
