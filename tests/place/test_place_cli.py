"""`topomap place` on the command line (snapshot and flow), and the check rule gpu_groups."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from topomap.check import check, parse_requirements, snapshot_lots
from topomap.cli import app
from topomap.importers import load_any

ROOT = Path(__file__).resolve().parents[2]
SNAP = ROOT / "samples" / "snapshots"


def _run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"})


def test_place_text_has_the_lines_to_use_it() -> None:
    res = _run("place", str(SNAP / "dgx1-v100.json"), "--gpus", "4")
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "4 GPU(s) for pattern tp: gpu0, gpu1, gpu2, gpu3" in out
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0,1,2,3" in out
    assert "docker run --gpus '\"device=0,1,2,3\"' IMAGE" in out
    assert "--gpu-bind=map_gpu:0,1,2,3" in out and "taskset -c 0-19,40-59" in out
    assert "CUDA ordinal unknown" in out  # an nvidia-smi paste has no bus ids


def test_place_json_with_nics() -> None:
    res = _run("place", str(SNAP / "hgx-a100-8gpu-8nic.json"), "--gpus", "2", "--nics", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    # mlx5_0 and mlx5_1 are both PXB to gpu0 and to gpu1: the pair gets one GPUDirect NIC each
    assert doc["gpus"] == ["gpu0", "gpu1"] and doc["nics"] == ["mlx5_0", "mlx5_1"]
    assert [(r["nic_path"], r["gpudirect"]) for r in doc["ranks"]] == [("PXB", "yes"), ("PXB", "yes")]
    assert {"for": "NCCL", "line": "NCCL_IB_HCA==mlx5_0,mlx5_1"} in doc["commands"]


def test_more_gpus_than_usable_exits_2_with_the_count() -> None:
    res = _run("place", str(SNAP / "rtx5090-pair-p2p-gns.json"), "--gpus", "3")
    assert res.exit_code == 2
    assert "3 GPUs asked, 2 usable of 2" in res.stderr and "Traceback" not in res.output
    res = _run("place", str(SNAP / "dgx1-v100.json"), "--gpus", "8", "--exclude", "gpu3,5")
    assert res.exit_code == 2 and "6 usable of 8" in res.stderr and "gpu5 excluded" in res.stderr
    assert _run("place", str(SNAP / "dgx1-v100.json"), "--gpus", "2", "--exclude", "x").exit_code == 2
    assert _run("place", str(SNAP / "dgx1-v100.json"), "--gpus", "2", "--pattern", "mesh").exit_code == 2


def test_independent_pins_each_gpu_alone() -> None:
    res = _run("place", str(SNAP / "aws-p4d-24xlarge.json"), "--gpus", "2", "--pattern", "independent", "--json")
    doc = json.loads(res.stdout)
    assert doc["links"] == [] and doc["gpus"] == ["gpu0", "gpu1"]
    lines = [c["line"] for c in doc["commands"]]
    assert "CUDA_VISIBLE_DEVICES=0 taskset -c 0-23,48-71 CMD" in lines


def test_place_flow_reports_steps_on_all_gpus_before_and_after() -> None:
    flow = ROOT / "samples" / "flows" / "tensor-parallel.yaml"
    res = _run("place", str(flow), "--gpus", "4", "--probe", f"lot={SNAP / 'dgx1-v100.json'}", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [(s["step"], s["gpus"]) for s in doc["steps"]] == [
        ("shards", ["gpu0", "gpu1", "gpu2", "gpu3"]),
        ("allreduce", ["gpu0", "gpu1", "gpu2", "gpu3"]),
    ]
    before = [a for a in doc["before"] if a["from_step"] == a["to_step"] == "allreduce"]
    after = [a for a in doc["after"] if a["from_step"] == a["to_step"] == "allreduce"]
    assert len(before) == 28 and any(a["medium"] == "host-memory" for a in before)
    assert len(after) == 6 and all(a["medium"] == "gpu-link" and a["via"] == "nvlink" for a in after)


def test_place_flow_without_a_gpus_step_is_an_error() -> None:
    flow = ROOT / "samples" / "flows" / "doc-conversion.yaml"
    res = _run("place", str(flow), "--gpus", "2")
    assert res.exit_code == 2 and "HOST:gpus" in res.stderr


RULES = """requirements:
  - gpu_groups: {k: 8}
  - gpu_groups: {k: 4, groups: 2}
"""


def test_gpu_groups_rule_two_islands() -> None:
    reqs, _ = parse_requirements(RULES, "reqs.yaml")
    lots = snapshot_lots([("dgx1", load_any(SNAP / "dgx1-v100.json"))])
    statuses = [r.status for r in check(reqs, lots, None).results]
    assert statuses == ["fail", "pass"]  # 8 all on NVLink fails; 2 × 4 (the two quads) passes
    lots = snapshot_lots([("h200", load_any(SNAP / "hgx-h200-8gpu-10nic.json"))])
    assert [r.status for r in check(reqs, lots, None).results] == ["pass", "pass"]
    lots = snapshot_lots([("p4d", load_any(SNAP / "aws-p4d-24xlarge.json"))])  # NCCL file: NVLink unknown
    results = check(reqs, lots, None).results
    assert [r.status for r in results] == ["unknown", "unknown"] and results[0].settle


def test_place_flow_names_each_host_on_its_own_line_without_escapes() -> None:
    """The host heading is text, not a value: no visible ``\\x0a`` before it (issue 23 newcomer pass)."""
    from typer.testing import CliRunner

    from topomap.cli import app

    root = Path(__file__).parents[2]
    r = CliRunner().invoke(
        app,
        ["place", str(root / "samples/flows/tensor-parallel.yaml"), "--gpus", "4",
         "--probe", f"lot={root / 'samples/snapshots/dgx1-v100.json'}"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "\\x0a" not in r.stdout and "\nHost lot\n" in r.stdout


def test_per_gpu_notes_that_say_the_same_are_said_once_with_their_gpus() -> None:
    # The H200 paste (nvidia-smi topo -m of an older driver) has no CPU affinity column: the four
    # chosen GPUs' "cores unknown" is one note naming them, not four; --json keeps one per GPU.
    res = _run("place", str(SNAP / "hgx-h200-8gpu-10nic.json"), "--gpus", "4", "--nics")
    assert res.exit_code == 0, res.output
    assert res.stdout.count("cores unknown: the source records no CPU affinity") == 1
    assert "• 4 GPUs gpu0–3: cores unknown: the source records no CPU affinity" in res.stdout
    notes = json.loads(_run("place", str(SNAP / "hgx-h200-8gpu-10nic.json"), "--gpus", "4", "--json").stdout)["notes"]
    assert [n.split(":")[0] for n in notes if "cores unknown" in n] == ["gpu0", "gpu1", "gpu2", "gpu3"]
    # notes that differ (each GPU's own NIC) stay one per GPU
    res = _run("place", str(SNAP / "rtx4090-8gpu-all-sys.json"), "--gpus", "4", "--nics")
    assert "gpu0: NIC NIC0 without GPUDirect RDMA" in res.stdout
    assert "gpu1: NIC NIC1 without GPUDirect RDMA" in res.stdout
