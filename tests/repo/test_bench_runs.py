"""bench/run.py stays runnable: its stages run on a small synthetic cluster (the real sizes,
up to 1024 hosts, are for `python bench/run.py`, not the test suite)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import run as bench  # noqa: E402
import synth  # noqa: E402

from topomap.flow import parse_flow  # noqa: E402
from topomap.model.codec import load_snapshot  # noqa: E402
from topomap.model.merge import consistency  # noqa: E402


def test_synthetic_cluster_has_the_planted_differences(tmp_path: Path) -> None:
    files = synth.write_hosts(98, tmp_path)
    lines = consistency([load_snapshot(f) for f in files])
    assert "driver version: n0096 535.104.05; 97 of 98 hosts" in lines[0]
    assert any(line.startswith("NIC state: ") and "down on n0088" in line for line in lines)


def test_synthetic_flow_is_a_valid_acyclic_flow_of_the_wanted_size() -> None:
    flow = parse_flow(synth.flow_text(16, 10_000), "bench.yaml")
    assert len(flow.spec.arrows) == 157  # x 64 GPU pairs each = 10,048 arrows
    assert len(flow.spec.hosts) == 16


def test_every_stage_runs_and_the_table_prints(tmp_path: Path) -> None:
    results = {n: bench.stages(n, tmp_path / str(n), arrows=256) for n in (2, 4)}
    assert set(results[2]) == set(results[4])
    timed = {k: v for k, v in results[4].items() if k != "render: svg"}
    assert all(v is not None and v >= 0 for v in timed.values()), timed
    text = bench.table(results)
    assert text.splitlines()[0].split() == ["stage", "2", "hosts", "4", "hosts"]
    assert "growth: time ratio to the previous size; host ratios ×2" in text
    assert bench.verdict(results) == []  # goals are judged at 1024 hosts only
