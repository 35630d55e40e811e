"""diff: semantic changes between two lots, index and structure matching, under a flow."""

from __future__ import annotations

from pathlib import Path

import msgspec
from typer.testing import CliRunner

from tests.conftest import SAMPLES, run_probe
from tests.fakes import machines
from tests.fakes.flows import arrow, step, write_flow
from topomap.cli import app
from topomap.diff import NotCompared, diff_snapshots
from topomap.flow import read_flow
from topomap.flow.mapping import MappedArrow
from topomap.flow.spec import Placement
from topomap.importers import import_file, load_any
from topomap.model.codec import save_snapshot
from topomap.model.snapshot import P2P, Snapshot

runner = CliRunner()
IBM = SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"


def renumbered(s: Snapshot, perm: dict[int, int]) -> Snapshot:
    """The same machine with GPUs renumbered: gpu i → gpu perm[i]."""

    def rid(x: str) -> str:
        return f"gpu{perm[int(x[3:])]}" if x.startswith("gpu") else x

    gpus = sorted((msgspec.structs.replace(g, index=perm[g.index]) for g in s.gpus), key=lambda g: g.index)
    pairs = []
    for p in s.pairs:
        a, b = rid(p.a), rid(p.b)
        if a.startswith("gpu") and b.startswith("gpu") and int(a[3:]) > int(b[3:]):
            a, b = b, a
        pairs.append(msgspec.structs.replace(p, a=a, b=b))
    return msgspec.structs.replace(s, gpus=gpus, pairs=pairs)


def test_snapshot_against_itself_is_equivalent(tmp_path: Path) -> None:
    s = run_probe(machines.hgx_h100(), tmp_path).snapshot
    d = diff_snapshots(s, s)
    assert d.verdict == "equivalent" and d.changes == [] and "equivalent" in d.summary() and d.exit_status == 0


def test_a_source_without_models_cannot_confirm_equivalence() -> None:
    s = load_any(SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json")  # a topo -m paste names no GPU model
    d = diff_snapshots(s, s)
    assert d.changes == [] and d.verdict == "cannot-confirm" and d.exit_status == 3
    assert "does not record GPU models" in " ".join(d.reasons())


def test_renumbered_copy_equal_only_under_structure_matching(real: Path) -> None:
    s = import_file(real / "nvidia-smi" / "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt")
    perm = {0: 4, 1: 5, 2: 6, 3: 7, 4: 0, 5: 1, 6: 2, 7: 3}  # swap the two sockets' GPUs
    r = renumbered(s, perm)
    by_index = diff_snapshots(s, r, "index")
    assert by_index.verdict == "different" and "4 GPUs: NUMA node 0 → 1" in by_index.grouped()
    by_structure = diff_snapshots(s, r, "structure")
    assert by_structure.changes == [] and by_structure.verdict == "cannot-confirm"  # the paste names no model
    assert {k: v for k, v in by_structure.mapping.items() if k.startswith("gpu")} != {
        f"gpu{i}": f"gpu{i}" for i in range(8)
    }


def _fewer_links_and_no_gdr(s: Snapshot, links: int) -> Snapshot:
    """The same H100 box with only ``links`` NVLinks trained per GPU and GPUDirect off on every NIC."""
    gpus = [
        msgspec.structs.replace(g, nvlinks=[msgspec.structs.replace(x, active=x.link < links) for x in g.nvlinks])
        for g in s.gpus
    ]
    pairs = [
        msgspec.structs.replace(p, path=f"NV{links}", nvlinks=links) if p.path and p.path.startswith("NV") else p
        for p in s.pairs
    ]
    nics = [msgspec.structs.replace(n, gdr=False) for n in s.nics]
    return msgspec.structs.replace(s, gpus=gpus, pairs=pairs, nics=nics)


def test_fewer_nvlinks_and_lost_gpudirect_decide_the_verdict(tmp_path: Path) -> None:
    a = run_probe(machines.hgx_h100(), tmp_path).snapshot
    b = _fewer_links_and_no_gdr(a, 12)
    d = diff_snapshots(a, b, names=("offer-a", "offer-b"), flow=read_flow(SAMPLES / "flows" / "tensor-parallel.yaml"))
    assert d.verdict == "a-better" and d.exit_status == 1
    lines = d.grouped()
    assert lines[0] == "28 GPU pairs: NV18 → NV12 (450 GB/s → 300 GB/s)"  # identical changes collapse, ranked by figure
    assert "8 GPUs: GPUDirect RDMA → no GPUDirect" in lines
    # the flow runs on one host: its arrows decide; GPUDirect, which no arrow uses, is listed apart
    assert d.summary() == "offer-a is better for this flow: 28 of 52 arrows worse on offer-b, 0 better, 24 the same."
    assert "8 GPUs: GPUDirect RDMA → no GPUDirect" in d.not_used()
    assert not any("GPUDirect" in r for r in d.reasons())
    ex = [r for r in d.arrows if r.a.src_step == r.a.dst_step == "allreduce"]
    assert ex and all(r.direction == "worse" and r.slower is True for r in ex)  # 478 → 319 GB/s, driver rate


def test_nvlink_drop_counts_as_a_regression_without_any_gbps(real: Path) -> None:
    a = import_file(real / "nvidia-smi" / "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt")
    pairs = [msgspec.structs.replace(p, path="NV8", nvlinks=8) if p.path == "NV12" else p for p in a.pairs]
    d = diff_snapshots(a, msgspec.structs.replace(a, pairs=pairs))
    # neither lot names its GPUs: NV12 is 133–600 GB/s, NV8 133–400 (an H800 PCIe's 8 links to a B200's):
    # the ranges overlap, so the drop cannot be ranked, and the GPU model settles it (issue 30 item 1)
    assert d.verdict == "cannot-confirm" and d.exit_status == 3
    assert d.grouped()[0].startswith("28 GPU pairs: NV12 → NV8 (cannot tell: 133–600 GB/s and 133–400 GB/s overlap")
    assert "--query-gpu=index,name" in d.grouped()[0]
    named = [msgspec.structs.replace(g, name="NVIDIA A100-SXM4-80GB") for g in a.gpus]
    n = diff_snapshots(msgspec.structs.replace(a, gpus=named), msgspec.structs.replace(a, gpus=named, pairs=pairs))
    assert n.verdict == "a-better" and n.grouped()[0] == "28 GPU pairs: NV12 → NV8 (300 GB/s → 200 GB/s)"


def test_idle_and_loaded_box_are_the_same_box(tmp_path: Path) -> None:
    s = run_probe(machines.hgx_h100(), tmp_path).snapshot
    idle = [msgspec.structs.replace(g, pcie=msgspec.structs.replace(g.pcie, gen_current=1)) for g in s.gpus]
    d = diff_snapshots(s, msgspec.structs.replace(s, gpus=idle))
    assert d.verdict == "equivalent", d.grouped()


def test_a_gpu_trained_at_x8_is_a_regression(tmp_path: Path) -> None:
    s = run_probe(machines.hgx_h100(), tmp_path).snapshot
    gpus = list(s.gpus)
    gpus[3] = msgspec.structs.replace(gpus[3], pcie=msgspec.structs.replace(gpus[3].pcie, width_current=8))
    d = diff_snapshots(s, msgspec.structs.replace(s, gpus=gpus))
    assert d.verdict == "a-better" and "gpu3: PCIe link Gen5 x16 → Gen5 x8" in d.grouped()


def test_p2p_status_change(tmp_path: Path) -> None:
    s = run_probe(machines.a100_pcie(), tmp_path).snapshot
    pairs = [
        msgspec.structs.replace(p, p2p=P2P(read="CNS", write="CNS", nvlink="NS", atomics="NS"))
        if (p.a, p.b) == ("gpu0", "gpu1")
        else p
        for p in s.pairs
    ]
    d = diff_snapshots(s, msgspec.structs.replace(s, pairs=pairs))
    assert [c.text for c in d.changes] == ["gpu0–gpu1: P2P OK → no P2P"] and d.verdict == "a-better"


def test_gpu_memory_pcie_and_driver_changes(tmp_path: Path) -> None:
    s = run_probe(machines.hgx_h100(), tmp_path).snapshot
    g3 = s.gpus[3]
    gpus = list(s.gpus)
    gpus[3] = msgspec.structs.replace(
        g3, memory_total_bytes=40 * 2**30, pcie=msgspec.structs.replace(g3.pcie, gen_max=4, width_max=8)
    )
    sw = msgspec.structs.replace(s.software, driver_version="535.104.05")
    d = diff_snapshots(s, msgspec.structs.replace(s, gpus=gpus, software=sw))
    texts = {c.text for c in d.changes}
    assert texts == {
        "gpu3: memory 80 GiB → 40 GiB",  # sizes as every view writes them (units.fmt_bytes)
        "gpu3: PCIe link Gen5 x16 → Gen4 x16",
        "software: driver 550.54.15 → 535.104.05",
    }


def test_across_sources_compares_only_what_both_know(tmp_path: Path, real: Path) -> None:
    probe = run_probe(machines.hgx_h100(), tmp_path).snapshot
    paste = import_file(real / "nvidia-smi" / "gcp-gke-a4-b200-8gpu-8nic.txt")
    d = diff_snapshots(paste, probe, names=("vendor", "probe"))
    assert not any(c.kind == "gpu" and c.field == "memory" for c in d.changes)
    assert NotCompared("gpus.memory_total_bytes", "vendor") in d.not_compared
    assert NotCompared("pairs.p2p", "vendor") in d.not_compared
    # the fake HGX H100 has exactly the B200 page's matrix, but the page names no model: a B200 paste
    # against an H100 probe is not "equivalent"
    assert d.changes == [] and d.verdict == "cannot-confirm" and d.exit_status == 3
    assert "vendor does not record GPU models" in d.reasons()


def test_flow_arrows_side_by_side() -> None:
    a, b = load_any(IBM), load_any(SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json")
    d = diff_snapshots(a, b, flow=read_flow(SAMPLES / "flows" / "tensor-parallel.yaml"))
    ex = [r for r in d.arrows if r.a.src_step == r.a.dst_step == "allreduce"]
    assert len(ex) == 28 and all(r.medium_changed for r in ex)
    assert ex[0].a.medium == "gpu-link" and ex[0].b.medium == "host-memory"
    assert "28 change medium" in d.arrow_summary() and d.summary() == (
        "A is better for this flow: 28 of 52 arrows worse on B, 0 better, 16 unknown on both, 8 the same."
    )


def test_cli_exit_codes(tmp_path: Path) -> None:
    same = runner.invoke(app, ["diff", str(IBM), str(IBM)])
    assert same.exit_code == 0 and "equivalent" in same.stdout
    other = runner.invoke(app, ["diff", str(IBM), str(SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json"), "--json"])
    assert other.exit_code == 1
    import json

    d = json.loads(other.stdout)
    assert d["same"] is False and d["verdict"] == "a-better"
    assert any(c["text"] == "gpu0–gpu1: NV18 → no NVLink (SYS)" for c in d["changes"])
    assert d["grouped"][0] == "28 GPU pairs: NV18 → no NVLink (SYS)"
    bad = tmp_path / "x.txt"
    bad.write_text("nonsense")
    assert runner.invoke(app, ["diff", str(IBM), str(bad)]).exit_code == 2
    assert runner.invoke(app, ["diff", str(IBM), str(IBM), "--match", "fuzzy"]).exit_code == 2
    s = load_any(IBM)
    save_snapshot(s, tmp_path / "copy.json")
    r = runner.invoke(app, ["diff", str(IBM), str(tmp_path / "copy.json"), "--match", "structure"])
    assert r.exit_code == 0 and "matched by structure" not in r.stdout  # identity: nothing to say


def test_diff_under_a_flow_with_work_shows_how_the_plan_changes() -> None:
    a = load_any(SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json")
    b = load_any(SAMPLES / "snapshots" / "rtx5090-pair-p2p-gns.json")
    d = diff_snapshots(a, b, flow=read_flow(SAMPLES / "flows" / "eight-documents.yaml"))
    plan = [c for c in d.changes if c.kind == "plan"]
    assert plan and plan[0].direction == "worse" and plan[0].text.startswith("plan: best total 22 min → 58 min")
    assert any("B has 2 cards where A has 8" in line for line in d.plan_lines)
    assert d.reasons()[0] == plan[0].text  # the plan decides first


def test_flow_table_cells_carry_the_bandwidths_provenance() -> None:
    """`diff --flow` prints each arrow as map does: a figure always says spec / derived / measured."""
    from topomap.render.verdict_view import _arrow_cell

    def arrow(**kw: object) -> MappedArrow:
        ends = {"src_place": Placement("lot", "gpu", "gpu0"), "dst_place": Placement("lot", "gpu", "gpu1")}
        base: dict[str, object] = {"src_step": "a", "dst_step": "b", "src": "lot:gpu0", "dst": "lot:gpu1", "route": []}
        base |= ends
        return MappedArrow(**{**base, **kw})  # type: ignore[arg-type]

    cell = _arrow_cell(arrow(medium="gpu-link", via="nvswitch", path="NV18", bandwidth_gbps=253.125,
                             bandwidth_source="derived", lower_bound=True))  # fmt: skip
    assert cell.plain == "gpu-link nvswitch NV18 ≥ 253 GB/s derived"
    could = ["gpu-link over NVLink", "host-memory (staged)"]
    unknown = arrow(medium="unknown", via="unknown", path="PHB", bandwidth_gbps=None, bandwidth_source="unknown",
                    candidates=could, settle="`nvidia-smi topo -m`")  # fmt: skip
    # what is unknown said once, with why and what settles it (issue 30 item 9), never "unknown unknown PHB …"
    assert _arrow_cell(unknown).plain == (
        "medium and bandwidth unknown (PHB by PCIe): gpu-link over NVLink or host-memory (staged); "
        "`nvidia-smi topo -m` settles it"
    )
    snaps, flow = SAMPLES / "snapshots", SAMPLES / "flows" / "tensor-parallel.yaml"
    a, b = snaps / "hgx-h200-8gpu-10nic.json", snaps / "hgx-a100-8gpu-8nic.json"
    r = CliRunner().invoke(app, ["diff", str(a), str(b), "--flow", str(flow)])
    assert r.exit_code == 3  # unnamed NV18 (200–900 GB/s) against unnamed NV12 (133–600): cannot tell
    table = r.output.rsplit("change", 1)[1]  # the arrows table, after its header
    assert table.count("derived") >= 2  # each lot's cell says how its figure was obtained


def test_a_gain_beside_a_change_that_cannot_be_told_is_no_winner(real: Path, tmp_path: Path) -> None:
    """A100 node (topo -m: NV12 through the switch) against AWS p4d's static NCCL file (NVLink not
    recorded): p4d's NIC is nearer, but whether its GPU pair has NVLink cannot be told, so neither
    lot is called better (a second trial saw "aws-p4d-24xlarge is better", exit 1)."""
    flow = write_flow(
        tmp_path / "f.yaml",
        {"m": step("input", "lot:memory"), "a": step("compute", "lot:gpu0"), "b": step("compute", "lot:gpu1")},
        [arrow("m", "a"), arrow("a", "b")],
    )
    a = import_file(real / "nvidia-smi" / "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt")
    b = import_file(real / "nccl-xml" / "aws-p4d-24xlarge.xml")
    d = diff_snapshots(a, b, names=("a100", "p4d"), flow=read_flow(flow))
    assert d.verdict == "cannot-confirm" and d.exit_status == 3
    assert d.summary() == (
        "cannot tell which lot is better for this flow: 0 of 2 arrows better on p4d, 0 worse, 2 cannot be compared."
    )
    gpu_pair = next(r for r in d.arrows if r.a.dst_step == "b")
    assert gpu_pair.direction == "unknown" and gpu_pair.b.medium == "unknown"
    # the nearer NIC is a machine difference no arrow of this flow uses: never a reason
    assert "8 GPUs: nearest NIC PXB → PIX" in d.not_used() and not any("NIC" in r for r in d.reasons())


def test_what_was_not_compared_is_said_in_words_by_side() -> None:
    """The not-compared list names facts as show does, grouped by the lot that cannot know them
    (it printed internal field names: `gpus.compute_capability (unknown in both); numa.NUMA node …`)."""
    from topomap.render.verdict_view import _not_compared

    entries = [
        NotCompared("gpus.uuid", "both"),
        NotCompared("NUMA node", "dgx1", "numa"),
        NotCompared("gpus.mig", "both"),
    ]
    assert [x.entry for x in entries] == [  # as --json lists them
        "gpus.uuid (unknown in both)",
        "numa.NUMA node (unknown in dgx1)",
        "gpus.mig (unknown in both)",
    ]
    text = _not_compared(entries)
    assert text == "unknown in both: GPU UUIDs, MIG mode; unknown in dgx1: GPU NUMA nodes"  # show's words


def test_not_compared_names_each_fact_once() -> None:
    # The rtx4090 paste records no GPU model and no NIC speed: compared per GPU ("model", "compute
    # capability") and per NIC ("its NIC's line rate", "line rates"), and declared unknown by the
    # source (gpus.name, nics.speed_gbit_s); the line says each once, in show's words.
    r = runner.invoke(app, ["diff", str(IBM), str(SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json")])
    line = next(x for x in r.stdout.splitlines() if x.startswith("Not compared"))
    rtx = line.split("unknown in rtx4090-8gpu-all-sys: ")[1].split(", ")
    assert len(rtx) == len(set(rtx)), line
    assert "GPU models" in rtx and "compute capability" in rtx and "NIC speeds" in rtx
    assert "model" not in rtx and "line rates" not in rtx and "its NIC's line rate" not in rtx


def test_no_lot_is_better_when_one_side_cannot_tell_its_nvlink() -> None:
    """The trial of issue 33: an NCCL XML without NVLink against an NV12 paste read "azure-ndv4 is better
    … for work across its GPUs" on the nearest NIC alone; NVLink, unknown on one side, may outweigh it."""
    from topomap.diff.snapshots import diff_snapshots
    from topomap.importers import load_any

    real = Path(__file__).resolve().parents[2] / "tests" / "data" / "real-topologies"

    xml = load_any(str(real / "nccl-xml" / "azure-ndv4.xml"))
    smi = load_any(str(real / "nvidia-smi" / "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt"))
    d = diff_snapshots(xml, smi, "index", ("ndv4", "a100"))
    assert [c.direction for c in d.changes if c.direction != "neutral"] == ["worse"] * 8  # nearest NIC PIX → PXB
    assert d.unrankable == ["ndv4 does not record which GPU pairs NVLink joins"]
    assert d.verdict == "cannot-confirm" and d.exit_status == 3
    assert d.summary() == "cannot tell which lot is better for work across its GPUs."
