"""same_numa: the GPUs of all the listed steps, together, on one NUMA node (a second trial found
that a rule over steps a and c passed with a on NUMA 0 and c on NUMA 1, each step checked alone)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES
from tests.fakes.flows import arrow, step, write_flow
from topomap.cli import app

runner = CliRunner()


def _check(tmp_path: Path, lot: Path, gpu: str) -> tuple[int, str]:
    flow, reqs = tmp_path / "f.yaml", tmp_path / "r.yaml"
    steps = {"m": step("input", "lot:memory"), "a": step("compute", "lot:gpu0"), "c": step("compute", f"lot:{gpu}")}
    write_flow(flow, steps, [arrow("m", "a"), arrow("a", "c")])
    reqs.write_text("requirements:\n  - same_numa: {steps: [a, c]}\n")
    r = runner.invoke(app, ["check", str(reqs), "--flow", str(flow), "--probe", f"lot={lot}"])
    return r.exit_code, " ".join(r.stdout.split())


def test_steps_on_two_sockets_fail_and_on_one_pass(tmp_path: Path) -> None:
    b200 = REAL / "nvidia-smi" / "gcp-gke-a4-b200-8gpu-8nic.txt"  # GPU0-3 NUMA 0, GPU4-7 NUMA 1
    code, out = _check(tmp_path, b200, "gpu4")
    assert code == 1 and "on 2 NUMA nodes: NUMA 0, NUMA 1" in out and "c: gpu4 on NUMA 1" in out
    code, out = _check(tmp_path, b200, "gpu3")
    assert code == 0 and "PASS same_numa" in out


def test_a_source_without_numa_is_unknown_with_what_settles_it(tmp_path: Path) -> None:
    code, out = _check(tmp_path, SAMPLES / "snapshots" / "dgx1-v100.json", "gpu4")
    assert code == 3 and "NUMA node of gpu0, gpu4 not recorded by this source" in out
    assert "`nvidia-smi topo -m` of a recent driver (its NUMA Affinity column)" in out  # a command topomap reads
