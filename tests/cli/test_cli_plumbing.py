"""CLI plumbing found by new-user and hostile-input trials: argument probing that must not crash,
--help/--version on a full disk or closed pipe, output names near NAME_MAX, --json only for topomap's
own arguments, --debug keeping exit 4, --json honoured everywhere, render without Graphviz."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES
from topomap.cli import app
from topomap.files.atomic import atomic_write

runner = CliRunner()
SNAPS = SAMPLES / "snapshots"
DGX1, AZURE = str(SNAPS / "dgx1-v100.json"), str(SNAPS / "azure-ndv4.json")
A100 = str(SNAPS / "hgx-a100-8gpu-8nic.json")
ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}


def topomap(
    *args: str, stdout: object = subprocess.PIPE, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real entry point (main()), as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "topomap", *args],
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        text=True,
        env=env or ENV,
        timeout=120,
        check=False,
    )


# 1. an argument too long to be a file name is a NAME=FILE, not an OSError (exit 4)


def test_merge_name_longer_than_name_max_is_a_host_name_within_dns_bounds(tmp_path: Path) -> None:
    long_name = "n" * 300
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["merge", f"{long_name}={DGX1}", f"zz={AZURE}", "-o", str(out)])
    # issue 24: a writer reads back what it writes; a 300-character host name is past what every reader
    # accepts (253, DNS), so merge refuses it in one line instead of writing a cluster no command reads
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.output
    assert "members[0]: host.hostname: 300 characters (at most 253)" in r.stderr
    assert not out.exists()
    ok = runner.invoke(app, ["merge", f"{'n' * 253}={DGX1}", f"zz={AZURE}", "-o", str(out)])
    assert ok.exit_code == 0, ok.output
    hosts = sorted(m["host"]["hostname"] for m in json.loads(out.read_text())["members"])
    assert hosts == ["n" * 253, "zz"]


def test_merge_empty_name_points_at_the_name(tmp_path: Path) -> None:
    r = runner.invoke(app, ["merge", f"={DGX1}", f"zz={AZURE}", "-o", str(tmp_path / "m.json")])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"topomap: error: ={DGX1}: empty NAME before `=` (hint: write NAME=FILE")
    assert not (tmp_path / "m.json").exists()


# 2. --help and --version on a full disk: one line, exit 2; on a closed pipe: quiet


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [("--version",), ("--help",), ("plan", "--help")])
def test_help_and_version_onto_a_full_disk(args: tuple[str, ...]) -> None:
    with open("/dev/full", "w") as full:
        r = topomap(*args, stdout=full)
    assert r.returncode == 2
    assert r.stderr == "topomap: error: cannot write output (No space left on device)\n"


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("plan", "--help")])
def test_help_and_version_into_a_closed_pipe_exit_quietly(args: tuple[str, ...]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has left (`| true`)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "topomap", *args], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120
        )
    finally:
        os.close(write_end)
    assert (r.returncode, r.stderr) == (0, "")


# 3. an output name near NAME_MAX: the temporary name must fit too


def test_output_name_of_255_bytes_is_written(tmp_path: Path) -> None:
    name = "x" * 251 + ".dot"
    r = runner.invoke(app, ["render", DGX1, "-o", str(tmp_path / name)])
    assert r.exit_code == 0, r.output
    assert (tmp_path / name).read_text().startswith("digraph topomap {")
    assert os.listdir(tmp_path) == [name]  # no temporary file left behind


def test_atomic_write_temp_name_stays_within_name_max_for_multibyte_names(tmp_path: Path) -> None:
    name = "é" * 125 + ".svg"  # 254 bytes
    atomic_write(tmp_path / name, b"<svg/>")
    assert (tmp_path / name).read_bytes() == b"<svg/>" and os.listdir(tmp_path) == [name]


# 4. --json after a bare `--` belongs to the recorded command


def test_json_after_double_dash_is_the_recorded_commands(tmp_path: Path) -> None:
    out = str(tmp_path / "no-such-folder" / "r.json")
    r = topomap("record", "-o", out, "--", "true", "--json")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"topomap: error: -o {out}: folder ")
    r = topomap("record", "--json", "-o", out, "--", "true")
    assert r.returncode == 2 and json.loads(r.stdout)["exit"] == 2


# 5. --debug shows the traceback and keeps exit 4


def test_debug_internal_error_keeps_exit_4(monkeypatch: pytest.MonkeyPatch) -> None:
    import topomap.cli.snapshots as snapshots

    def boom(path: str) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(snapshots, "_load", boom)
    r = runner.invoke(app, ["--debug", "show", DGX1])
    try:
        assert r.exit_code == 4
        assert "Traceback (most recent call last)" in r.stderr and "RuntimeError: boom" in r.stderr
        assert r.stderr.rstrip().endswith(
            "topomap: error: internal error: RuntimeError: boom (hint: rerun with --debug for the traceback)"
        )
    finally:
        runner.invoke(app, ["show", "--json", DGX1])  # --debug is a process-wide switch: reset it


def test_debug_bad_input_keeps_exit_2() -> None:
    r = runner.invoke(app, ["--debug", "schema", "nosuch"])
    runner.invoke(app, ["schema"])  # reset --debug
    assert r.exit_code == 2 and "Traceback" in r.stderr and "topomap: error: unknown schema 'nosuch'" in r.stderr


# 6. --json honoured: matrix --bandwidth, measure without a GPU


def test_matrix_bandwidth_json_gives_measured_figures_with_units_and_provenance(tmp_path: Path) -> None:
    p2p = REAL / "bandwidth" / "a100-sxm4-80gb-8gpu-p2pBandwidthLatencyTest-distserve3.txt"
    measured = tmp_path / "measured.json"
    assert runner.invoke(app, ["attach", A100, str(p2p), "-o", str(measured)]).exit_code == 0
    r = runner.invoke(app, ["matrix", "--bandwidth", "--json", str(measured)])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["unit"].startswith("GB/s") and d["measured"] is True
    first = d["gpu_to_gpu"][0]
    assert (first["from"], first["to"], first["status"], first["source"]) == ("gpu0", "gpu1", "measured", "measured")
    assert first["origin"] == "p2pBandwidthLatencyTest" and first["gbps"] > 100
    assert (first["route"], first["verified"]) == ("peer", None)  # the imported tool does not check the data
    assert first["nominal_gbps"] is None and first["nominal_basis"].startswith("unknown: ")  # an import: no rate
    assert len(d["gpu_to_gpu"]) == 8 * 7


def test_matrix_bandwidth_json_without_figures_says_how_to_settle() -> None:
    r = runner.invoke(app, ["matrix", "--bandwidth", "--json", A100])
    d = json.loads(r.stdout)
    assert r.exit_code == 0 and d["measured"] is False and "topomap measure" in d["settle"]
    assert {(x["gbps"], x["source"], x["status"]) for x in d["gpu_to_gpu"]} == {(None, "unknown", "not measured")}


def test_measure_json_without_a_gpu_prints_why(tmp_path: Path) -> None:
    r = runner.invoke(app, ["measure", A100, "--json", "-o", str(tmp_path / "m.json")])
    assert r.exit_code == 3
    d = json.loads(r.stdout)
    assert d["exit"] == 3 and "has a CUDA ordinal" in d["error"] and d["hint"]
    assert not (tmp_path / "m.json").exists()


# 7. render without Graphviz replaces nothing


def test_render_without_dot_leaves_an_existing_dot_file(tmp_path: Path) -> None:
    (tmp_path / "m.dot").write_text("mine\n")
    r = topomap("render", DGX1, "-o", str(tmp_path / "m.svg"), env={**ENV, "PATH": str(tmp_path / "empty")})
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "Graphviz `dot` not found: cannot write" in r.stderr and "was left as it was" in r.stderr
    assert "(hint: install Graphviz" in r.stderr
    assert (tmp_path / "m.dot").read_text() == "mine\n" and not (tmp_path / "m.svg").exists()
