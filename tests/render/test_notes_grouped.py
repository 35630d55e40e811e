"""Notes that repeat are said once, with the devices and hosts they cover (issue 23): a two-host flow
over eight NICs each made 34 notes ("node-a: speed of NIC mlx5_3 not recorded", once per NIC per
host). Notes are typed where they are made (topomap.base.notes.Note: template + subjects + host) and
grouped by one function (topomap.render.notes.group_notes) that `map` and the report both use.

Data: samples/snapshots/hgx-h200-8gpu-10nic.json (a real `nvidia-smi topo -m` of an 8x H200 node,
eight of its ten NICs PIX to a GPU, no NIC speeds) bound to two hosts; the gx3d H100 NCCL dump."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
from typer.testing import CliRunner

from tests.fakes.flows import arrow, flow_yaml, map_text, step, write_flow
from topomap.base.notes import Note
from topomap.render.notes import compress, group_notes

ROOT = Path(__file__).resolve().parents[2]
SNAPS = ROOT / "samples" / "snapshots"
runner = CliRunner()


def _two_hosts(tmp_path: Path, snap: str = "hgx-h200-8gpu-10nic.json") -> Path:
    """gpu0–7 of node-a send 1 GiB ("gradients") to gpu0–7 of node-b, both hosts on ``snap``."""
    return write_flow(
        tmp_path / "two-hosts.yaml",
        {h[-1]: step("compute", [f"{h}:gpu{i}" for i in range(8)]) for h in ("node-a", "node-b")},
        [arrow("a", "b", "1 GiB", label="gradients")],
        name="two-hosts",
        hosts={"node-a": SNAPS / snap, "node-b": SNAPS / snap},
    )


def _notes(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("  • ")]


def test_map_says_each_kind_of_note_once_with_its_devices_and_hosts(tmp_path: Path) -> None:
    from topomap.cli import app

    flow = _two_hosts(tmp_path)
    notes = _notes(runner.invoke(app, ["map", str(flow)]).stdout)
    speed = [n for n in notes if "NIC speed not recorded" in n]
    # 16 notes (8 NICs × 2 hosts) in one line: the eight NICs the GPUs use, both hosts
    assert len(speed) == 1, notes
    assert "on node-a and node-b: 8 NICs mlx5_0, mlx5_3–9" in speed[0] and "16 arrows" in speed[0]
    gdr = [n for n in notes if "GPUDirect RDMA possible" in n]
    assert len(gdr) == 1 and "node-a and node-b" in gdr[0]
    assert "mlx5_0 ↔ gpu0" in gdr[0] and "mlx5_9 ↔ gpu7" in gdr[0]  # which NIC serves which GPU is kept
    assert len(notes) <= 5
    # --json still has every arrow's own notes, whole sentences
    doc = json.loads(runner.invoke(app, ["map", "--json", str(flow)]).stdout)
    per_arrow = [n for a in doc["arrows"] for n in a["notes"]]
    assert sum("NIC speed not recorded on node-a: mlx5_3 " in n for n in per_arrow) == 1


def test_gpus_each_on_their_own_nic_are_said_once(tmp_path: Path) -> None:
    """GCP A4 B200: two NICs beside each GPU pair; NCCL's rule gives each GPU of the pair its own
    (mlx5_0 for gpu0, mlx5_1 for gpu1 …), so the sixteen notes of two hosts read as one."""
    from topomap.cli import app

    notes = _notes(runner.invoke(app, ["map", str(_two_hosts(tmp_path, "gcp-a4-b200-8gpu.json"))]).stdout)
    gdr = [n for n in notes if "GPUDirect RDMA possible" in n]
    assert len(gdr) == 1 and "node-a and node-b" in gdr[0] and "mlx5_N is PIX to gpuN, N = 0–7" in gdr[0]


def test_the_report_uses_the_same_grouping(tmp_path: Path) -> None:
    from topomap.cli import app

    out = tmp_path / "r.html"
    r = runner.invoke(app, ["report", str(_two_hosts(tmp_path)), "-o", str(out)])
    assert r.exit_code == 0, r.output
    page = out.read_text()
    assert page.count("NIC speed not recorded") == 1
    assert "8 NICs mlx5_0, mlx5_3–9" in page


def test_the_reports_requirements_collapse_identical_evidence(tmp_path: Path) -> None:
    """gx3d H100: 28 GPU pairs, each NV18; the report's evidence says it once, as `check` does."""
    from topomap.cli import app

    flow = write_flow(
        tmp_path / "tp.yaml",
        {"shards": step("compute", "lot:gpus"), "ex": step("exchange", "lot:gpus")},
        [arrow("shards", "ex", "1 GiB")],
        name="tp",
        hosts={"lot": SNAPS / "ibm-gx3d-h100-8gpu.json"},
        requirements=[{"gpu_links": {"steps": ["ex"], "min": "nvlink"}}],
    )
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["report", str(flow), "-o", str(out)])
    assert r.exit_code == 0, r.output
    page = out.read_text()
    section = page[page.index("Requirements check") : page.index("<h2>Plan")]
    assert "28 of them" in section
    assert section.count("NV18") < 5


def test_numbered_subjects_that_vary_together_read_as_n() -> None:
    """mlx5_gdr_N beside gpuN on two hosts: one line, "N = 0–7"."""
    notes = [
        (
            Note("GPUDirect RDMA possible on {host}: NIC {nic} is PIX to {gpu}", h, nic=f"mlx5_gdr_{i}", gpu=f"gpu{i}"),
            1,
        )
        for h in ("node-a", "node-b")
        for i in range(8)
    ]
    [line] = group_notes(notes)
    assert line.text == "GPUDirect RDMA possible on node-a and node-b: NIC mlx5_gdr_N is PIX to gpuN, N = 0–7"
    assert (line.arrows, line.notes, line.rows) == (16, 16, [1])


def test_a_note_is_its_text_and_plain_notes_group_only_with_equals() -> None:
    n = Note("NIC speed not recorded on {host}: {nic}", "node-a", nic="mlx5_3")
    assert (
        n == "NIC speed not recorded on node-a: mlx5_3"
        and json.dumps([str(n)]) == '["NIC speed not recorded on node-a: mlx5_3"]'
    )
    lines = group_notes([("same device", 1), ("same device", 2), ("other", 2)])
    assert [(x.text, x.rows) for x in lines] == [("same device", [1, 2]), ("other", [2])]
    assert compress(["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "eth0", "gpu07"]) == "mlx5_0, mlx5_3–5, eth0, gpu07"


def test_merge_says_a_line_rate_no_source_records_once_for_the_nics() -> None:
    """The newcomer trial: merging IBM's gx3d dump (NIC line rates recorded, 200 Gb/s) with the real
    A100 `topo -m` paste (mlx5_0–7, no line rates) printed "NIC mlx5_N line rate: unknown on c" eight
    times, once per NIC. Said once, with the NICs as a set."""
    from topomap.importers import load_any
    from topomap.model.merge import consistency

    ibm, a100 = load_any(SNAPS / "ibm-gx3d-h100-8gpu.json"), load_any(SNAPS / "hgx-a100-8gpu-8nic.json")
    hosts = [
        msgspec.structs.replace(s, host=msgspec.structs.replace(s.host, hostname=n))
        for s, n in ((ibm, "a"), (ibm, "b"), (a100, "c"))
    ]
    lines = consistency(hosts)
    rates = [line for line in lines if "line rate" in line]
    assert rates == ["NIC line rate of 8 NICs mlx5_0–7: unknown on c (not in their source)"]


def test_a_grace_gpu_note_is_typed_and_said_once_for_its_gpus(tmp_path: Path) -> None:
    """A GB200 tray (the test suite's fake NVML: 4 GPUs, each its own NUMA node 2–5) made one plain
    "Grace-class GPU (gpuN's own memory is NUMA node M)" note per GPU; typed, it groups into one."""
    from tests.conftest import run_probe
    from tests.fakes import machines
    from topomap.graph import build

    snap = run_probe(machines.gb200_tray(), tmp_path).snapshot
    text = flow_yaml({"m": step("input", "lot:memory"), "g": step("compute", "lot:gpus")}, [arrow("m", "g", "1 GiB")])
    fmap = map_text(text, {"lot": build(snap)}, str(tmp_path / "f.yaml"))
    grace = [n for a in fmap.arrows for n in a.notes if n.startswith("Grace-class")]
    assert len(grace) == 4 and all(isinstance(n, Note) for n in grace)
    lines = [x.text for x in group_notes((n, 1) for n in grace)]
    assert lines == [
        "Grace-class GPU: ‹GPU›'s own memory is ‹NUMA node›, host memory is over NVLink-C2C, not PCIe "
        "(‹GPU› ↔ ‹NUMA node›: gpu0 ↔ numa2, gpu1 ↔ numa3, gpu2 ↔ numa4, gpu3 ↔ numa5)"
    ]
