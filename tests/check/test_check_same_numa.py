"""same_numa: the GPUs of all the listed steps, together, on one NUMA node (a second trial found
that a rule over steps a and c passed with a on NUMA 0 and c on NUMA 1, each step checked alone)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES
from tests.fakes.flows import arrow, step, write_flow
from topomap.cli import app

runner = CliRunner()


def _check(tmp_path: Path, lot: Path, gpu: str) -> tuple[int, dict[str, Any]]:
    """The exit status and the same_numa rule's result (`check --json`) for steps a on gpu0 and c on ``gpu``."""
    flow, reqs = tmp_path / "f.yaml", tmp_path / "r.yaml"
    steps = {"m": step("input", "lot:memory"), "a": step("compute", "lot:gpu0"), "c": step("compute", f"lot:{gpu}")}
    write_flow(flow, steps, [arrow("m", "a"), arrow("a", "c")])
    reqs.write_text("requirements:\n  - same_numa: {steps: [a, c]}\n")
    r = runner.invoke(app, ["check", str(reqs), "--flow", str(flow), "--probe", f"lot={lot}", "--json"])
    (rule,) = json.loads(r.stdout)["rules"]
    return r.exit_code, rule


def test_steps_on_two_sockets_fail_and_on_one_pass(tmp_path: Path) -> None:
    b200 = REAL / "nvidia-smi" / "gcp-gke-a4-b200-8gpu-8nic.txt"  # GPU0-3 NUMA 0, GPU4-7 NUMA 1
    code, rule = _check(tmp_path, b200, "gpu4")
    assert (code, rule["rule"], rule["status"]) == (1, "same_numa", "fail")
    assert rule["evidence"] == ["on 2 NUMA nodes: NUMA 0, NUMA 1", "a: gpu0 on NUMA 0", "c: gpu4 on NUMA 1"]
    code, rule = _check(tmp_path, b200, "gpu3")
    assert (code, rule["rule"], rule["status"]) == (0, "same_numa", "pass")


def test_a_source_without_numa_is_unknown_with_what_settles_it(tmp_path: Path) -> None:
    code, rule = _check(tmp_path, SAMPLES / "snapshots" / "dgx1-v100.json", "gpu4")
    assert (code, rule["status"]) == (3, "unknown") and "NUMA node of gpu0, gpu4 not recorded" in rule["summary"]
    # a command topomap reads settles it
    assert any("`nvidia-smi topo -m` of a recent driver (its NUMA Affinity column)" in s for s in rule["settle"])
