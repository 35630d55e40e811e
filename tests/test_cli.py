"""The command line: exit codes, one-line errors, no half-written files, fast --version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.cli import app

runner = CliRunner()
SNAP = str(SAMPLES / "snapshots" / "hgx-h200-8gpu-10nic.json")


def run(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_version_is_fast_and_imports_nothing_heavy() -> None:
    code = (
        "import sys, time; t=time.perf_counter(); sys.argv=['topomap','--version'];\n"
        "from topomap.cli import main\n"
        "try: main()\nexcept SystemExit: pass\n"
        "heavy=[m for m in ('pynvml','cuda.bindings','networkx','rich.console','msgspec') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[0].startswith("topomap ")
    assert out.splitlines()[1] == "[]"


def test_show_and_matrix_on_every_sample() -> None:
    for f in sorted((SAMPLES / "snapshots").glob("*.json")):
        code, out, _ = run("show", str(f))
        assert code == 0 and "GPUs" in out
        code, out, _ = run("matrix", str(f))
        assert code == 0 and out.startswith("\tGPU0") and "Legend:" in out


def test_show_json_is_the_snapshot() -> None:
    code, out, _ = run("show", SNAP, "--json")
    assert code == 0 and json.loads(out)["schema"] == "topomap.snapshot/1"


def test_matrix_json_cells() -> None:
    _code, out, _ = run("matrix", SNAP, "--json")
    d = json.loads(out)
    assert d["ids"][:2] == ["gpu0", "gpu1"] and d["cells"][0][1] == "NV18" and d["cells"][0][8] == "PIX"
    assert d["nic_legend"]["nic9"] == "mlx5_9"


def test_raw_file_accepted_wherever_a_snapshot_is(real: Path) -> None:
    code, out, _ = run("matrix", str(real / "nvidia-smi" / "rtx3090-2gpu-nv4-club3090-rig-report.txt"))
    assert code == 0 and "NV4" in out


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"garbage\n", "unknown format"),
        (b'{"schema": "topomap.snapshot/9"}', "newer than this topomap reads"),
        (b"\tGPU0\tGPU1\nGPU0\t X \tNV4\n", "matrix rows stop before GPU1"),
        (b"<system><cpu", "malformed or truncated"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, content: bytes, needle: str) -> None:
    f = tmp_path / "in.txt"
    f.write_bytes(content)
    out_file = tmp_path / "out.json"
    code, _out, err = run("import", str(f), "-o", str(out_file))
    assert code == 2, err
    assert needle in err and err.count("\n") == 1 and err.startswith("topomap: error: ")
    assert "Traceback" not in err and not out_file.exists()
    assert list(tmp_path.iterdir()) == [f], "no temporary or half-written file left"


def test_missing_file_is_exit_2() -> None:
    code, _, err = run("show", "/nonexistent/lot.json")
    assert code == 2 and "cannot read" in err


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    f = tmp_path / "bad.txt"
    f.write_text("garbage\n")
    r = runner.invoke(app, ["--debug", "show", str(f)])
    assert r.exit_code != 0 and r.exception is not None


def test_import_writes_the_snapshot(tmp_path: Path, real: Path) -> None:
    out = tmp_path / "b200.json"
    code, _, err = run("import", str(real / "nvidia-smi" / "gcp-gke-a4-b200-8gpu-8nic.txt"), "-o", str(out))
    assert code == 0 and "8 GPU(s), 8 NIC(s)" in err
    assert json.loads(out.read_text())["source"]["kind"] == "nvidia-smi"


def test_probe_without_driver_exits_3_with_host_only_snapshot(tmp_path: Path) -> None:
    """The real probe on this GPU-less machine: real pynvml and cuda-bindings, no driver."""
    out = tmp_path / "host.json"
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    r = subprocess.run(
        [sys.executable, "-m", "topomap", "probe", "-o", str(out)], capture_output=True, text=True, env=env
    )
    if r.returncode == 0:
        pytest.skip("this machine has an NVIDIA driver")
    assert r.returncode == 3, r.stderr
    assert "no NVIDIA driver/GPU found" in r.stderr and "Traceback" not in r.stderr
    d = json.loads(out.read_text())
    assert d["gpus"] == [] and d["source"]["kind"] == "probe"
    assert any(p["call"] == "nvmlInit" for p in d["problems"])
