"""The command line: exit codes, one-line errors, no half-written files, fast --version."""

from __future__ import annotations

import json
import os
import re
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
        "heavy=[m for m in ('typer','pynvml','cuda.bindings','networkx','rich','msgspec') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[0].startswith("topomap ")
    assert out.splitlines()[1] == "[]"


def test_the_command_table_is_what_the_modules_register() -> None:
    """`topomap CMD` loads only COMMANDS[CMD]: the table names every command, its module, and the
    order `--help` lists them in."""
    from topomap.cli.entry import COMMANDS

    registered = [
        (info.name or info.callback.__name__.replace("_", "-"), info.callback.__module__.rpartition(".")[2])
        for info in app.registered_commands
        if info.callback is not None
    ]
    assert registered == list(COMMANDS.items())


def test_a_command_runs_with_only_its_own_module_loaded() -> None:
    code = (
        "import sys; sys.argv=['topomap','schema'];\n"
        "from topomap.cli import main\n"
        "try: main()\nexcept SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('topomap.cli.')), file=sys.stderr)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(r.stdout)["title"] == "topomap.snapshot/1"
    loaded = r.stderr.strip()
    assert loaded == str(["topomap.cli.entry", "topomap.cli.output", "topomap.cli.snapshots", "topomap.cli.wiring"])


def test_show_and_matrix_on_every_sample() -> None:
    for f in sorted((SAMPLES / "snapshots").glob("*.json")):
        code, out, _ = run("show", str(f))
        assert code == 0 and "GPUs" in out
        code, out, _ = run("matrix", str(f))
        assert code == 0 and out.startswith("\tGPU0") and "Legend:" in out


def test_show_json_is_the_snapshot() -> None:
    """`show --json` prints the snapshot as topomap writes it: the same bytes as `import` and the file."""
    from topomap.importers import load_any
    from topomap.model.codec import encode_snapshot

    code, out, _ = run("show", SNAP, "--json")
    assert code == 0 and json.loads(out)["schema"] == "topomap.snapshot/1"
    assert out.encode() == encode_snapshot(load_any(SNAP)) == Path(SNAP).read_bytes()
    assert run("import", SNAP)[1] == out


def test_matrix_json_cells() -> None:
    _code, out, _ = run("matrix", SNAP, "--json")
    d = json.loads(out)
    assert d["ids"][:2] == ["gpu0", "gpu1"] and d["cells"][0][1] == "NV18" and d["cells"][0][8] == "PIX"
    assert d["nic_legend"]["nic9"] == "mlx5_9"


def test_raw_file_accepted_wherever_a_snapshot_is(real: Path) -> None:
    code, out, _ = run("matrix", str(real / "nvidia-smi" / "rtx3090-2gpu-nv4-club3090-rig-report.txt"), "--json")
    d = json.loads(out)
    assert code == 0 and d["ids"] == ["gpu0", "gpu1"] and d["cells"][0][1] == d["cells"][1][0] == "NV4"


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


FLOWS = SAMPLES / "flows"


def test_map_json_contract() -> None:
    code, out, _ = run("map", str(FLOWS / "two-host-pipeline.yaml"), "--json")
    assert code == 0
    d = json.loads(out)
    a = d["arrows"][1]
    assert set(a) >= {"from", "to", "medium", "via", "path", "route", "bandwidth_gbps", "bandwidth_source", "notes"}
    assert (a["from"], a["to"], a["medium"], a["path"]) == ("node-a:gpu7", "node-b:gpu0", "network", "NET")
    assert a["bandwidth_gbps"] == 25.0 and a["bandwidth_source"] == "spec"
    assert [s["medium"] for s in d["summary"]] == ["host-memory", "network"]


def test_map_table_and_probe_override() -> None:
    snap = SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json"
    code, out, _ = run("map", str(FLOWS / "tensor-parallel.yaml"), "--probe", f"lot={snap}")
    assert code == 0 and "host-memory: 44 arrow(s)" in out and "assumed NCCL's rule" in out


def test_map_flow_error_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text((FLOWS / "doc-conversion.yaml").read_text().replace("to: report", "to: reprot"))
    f.parent.joinpath("../snapshots").resolve()
    code, _, err = run("map", str(f))
    assert code == 2 and "unknown step 'reprot'" in err and "did you mean 'report'?" in err and err.count("\n") == 1


@pytest.mark.skipif(__import__("shutil").which("dot") is None, reason="no dot")
def test_render_flow_on_machine_and_pipeline(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    m, p = tmp_path / "m.svg", tmp_path / "p.svg"
    assert runner.invoke(app, ["render", "--flow", str(FLOWS / "two-host-pipeline.yaml"), "-o", str(m)]).exit_code == 0
    svg = m.read_text()
    ET.fromstring(svg)
    assert "25.0 GB/s spec · 512 MiB in 21.5 ms" in svg and "activations" in svg and "stage1" in svg
    r = runner.invoke(app, ["render", "--flow", str(FLOWS / "doc-conversion.yaml"), "--view", "pipeline", "-o", str(p)])
    assert r.exit_code == 0
    text = p.read_text()
    assert "host&#45;memory" in text or "host-memory" in text
    assert "network" in text and "convert&#45;a" in text


def test_show_on_a_probed_snapshot_with_problems(tmp_path: Path) -> None:
    import dataclasses

    from tests.conftest import run_probe
    from tests.fakes import machines
    from topomap.model.codec import save_snapshot

    m = dataclasses.replace(machines.a100_pcie(), cuda_order=[1, 0, 2, 3, 4, 5, 6, 7], lost_after={7: 4})
    snap = run_probe(m, tmp_path / "root").snapshot
    f = tmp_path / "lot.json"
    save_snapshot(snap, f)
    r = runner.invoke(app, ["show", str(f)], env={"COLUMNS": "200"})
    assert r.exit_code == 0
    out = r.stdout
    row0 = next(line for line in out.splitlines() if snap.gpus[0].uuid and snap.gpus[0].uuid in line)
    assert row0.split()[:2] == ["0", "1"]  # NVML index 0 is CUDA ordinal 1
    assert "0000:1b:00.0" in row0 and "NVIDIA A100 80GB PCIe" in row0
    assert "GpuIsLost" in out and "Problems (1)" in out
    assert "Gen4 x16 (31.5 GB/s spec); now Gen1 (idle GPUs lower their speed)" in out
    assert "PCIe switch" in out and "NUMA 1" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["show"], r"missing argument '?snapshot'?\. \(hint: python -m topomap show --help\)"),
        (["show", "--bogus", "x"], r"no such option:? '?--bogus'?"),
    ],
)
def test_usage_mistakes_are_one_line(args: list[str], needle: str) -> None:
    """click words these a little differently from version to version ('a' or 'A', a colon or
    quotes); what must hold is one line, the mistake named, the help hinted, exit 2."""
    r = subprocess.run([sys.executable, "-m", "topomap", *args], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert re.search(needle, r.stderr, re.IGNORECASE), r.stderr
