"""CLI fitting in (issue 14): --json everywhere with JSON errors, outputs onto devices, FIFOs,
inputs and full disks, and `probe -o -` for pipelines."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from tests.fakes import machines
from tests.fakes.sysfs import write_sysfs
from topomap.cli import app

runner = CliRunner()
IBM = str(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json")
P4D = str(SAMPLES / "snapshots" / "aws-p4d-24xlarge.json")
ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, timeout: float = 60, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    """The real entry point in a subprocess (what a shell pipeline sees)."""
    return subprocess.run(
        [sys.executable, "-m", "topomap", *args],
        cwd=ROOT,
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=timeout,
        check=False,
    )


def test_every_snapshot_command_takes_json() -> None:
    for command in ("probe", "import", "show", "matrix", "merge", "map", "check", "diff"):
        r = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
        assert r.exit_code == 0 and "--json" in r.stdout, command


def test_errors_under_json_are_json_on_stdout_and_exit_2(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.json")
    for args in (["show", missing, "--json"], ["import", missing, "--json"], ["matrix", missing, "--json"]):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, args
        err = json.loads(r.stdout)
        assert set(err) == {"error", "hint", "exit"} and err["exit"] == 2
        assert "nope.json" in err["error"]
        assert r.stderr.startswith("topomap: error: ") and r.stderr.count("\n") == 1
    r = runner.invoke(app, ["show", missing])  # without --json: nothing on stdout
    assert r.exit_code == 2 and r.stdout == ""


def test_usage_error_under_json_is_json_too() -> None:
    r = cli("matrix", "--json", "--no-such-option")
    assert r.returncode == 2
    err = json.loads(r.stdout)
    assert err["exit"] == 2 and "no-such-option" in err["error"] and err["hint"].endswith("--help")


def test_import_and_merge_json(tmp_path: Path) -> None:
    out = tmp_path / "ibm.json"
    r = runner.invoke(app, ["import", IBM, "-o", str(out), "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == {"output": str(out), "gpus": 8, "nics": 8}
    cluster = tmp_path / "cluster.json"
    r = runner.invoke(app, ["merge", f"a={IBM}", f"b={IBM}", f"c={P4D}", "-o", str(cluster), "--json"])
    assert r.exit_code == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["output"] == str(cluster) and report["hosts"] == 3
    assert any(line.startswith("GPU↔NIC rail layout: c differs from 2 of 3 hosts") for line in report["consistency"])
    assert "topomap: merge: GPU↔NIC rail layout: c differs" in r.stderr
    notes = json.loads(cluster.read_text())["source"]["notes"]
    assert [n for n in notes if n.startswith("consistency: ")] == ["consistency: " + x for x in report["consistency"]]


def test_output_onto_dev_null_and_a_link_to_it_keeps_the_device(tmp_path: Path) -> None:
    link = tmp_path / "out.json"
    link.symlink_to("/dev/null")
    for target in ("/dev/null", str(link)):
        r = runner.invoke(app, ["import", IBM, "-o", target])
        assert r.exit_code == 0, r.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert link.is_symlink() and os.readlink(link) == "/dev/null"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temp file left beside it


def test_output_onto_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    r = cli("import", IBM, "-o", str(fifo), timeout=30)
    assert r.returncode == 2
    assert r.stderr.decode().strip() == (
        f"topomap: error: {fifo}: is a FIFO (named pipe), not a file (hint: write to stdout with -o - instead)"
    )
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_output_path_equal_to_an_input_is_refused(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    a.write_bytes(Path(IBM).read_bytes())
    before = a.read_bytes()
    for args in (
        ["merge", f"x={a}", f"y={IBM}", "-o", str(a)],
        ["import", str(a), "-o", str(a)],
        ["merge", f"x={tmp_path / '.' / 'a.json'}", f"y={IBM}", "-o", str(a)],
    ):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, args
        assert "is also an input of this command" in r.stderr
    assert a.read_bytes() == before


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_stdout_on_a_full_disk_is_one_line_and_exit_2() -> None:
    for args in (["show", IBM, "--json"], ["import", IBM], ["matrix", IBM]):
        with open("/dev/full", "wb") as full:
            r = cli(*args, stdout=full.fileno())
        err = r.stderr.decode()
        assert r.returncode == 2, (args, err)
        assert err.count("\n") == 1 and err.startswith("topomap: error: cannot write output (No space left on device)")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_file_onto_dev_full_is_one_line_and_exit_2() -> None:
    r = runner.invoke(app, ["import", IBM, "-o", "/dev/full"])
    assert r.exit_code == 2
    assert r.stderr.strip() == "topomap: error: /dev/full: cannot write (No space left on device)"


def test_probe_to_stdout_for_pipelines(tmp_path: Path) -> None:
    """No driver here: the host-only snapshot still goes to stdout, exit 3 says nothing answered."""
    write_sysfs(machines.a100_pcie(), tmp_path)
    r = cli("probe", "-o", "-", "--root", str(tmp_path))
    assert r.returncode == 3, r.stderr
    snap = json.loads(r.stdout)
    assert snap["schema"].startswith("topomap.snapshot/") and snap["source"]["kind"] == "probe"
    assert len(snap["gpus"]) == 8  # from sysfs
    assert "topomap probe: 8 GPU(s), " in r.stderr.decode() and "wrote stdout" not in r.stderr.decode()


def test_probe_time_limits_are_options_and_checked(tmp_path: Path) -> None:
    r0 = cli("probe", "--budget", "0", "--json")  # bounded where the option is declared (issue 36 item 8)
    assert r0.returncode == 2
    assert json.loads(r0.stdout) == {
        "error": "Invalid value for '--budget': 0 is outside the range: above 0 s up to 86,400 s",
        "hint": "python -m topomap probe --help",
        "exit": 2,
    }
    write_sysfs(machines.consumer_pair(), tmp_path)
    r = cli("probe", "-o", "-", "--root", str(tmp_path), "--call-timeout", "5", "--budget", "30")
    assert r.returncode == 3 and json.loads(r.stdout)["source"]["kind"] == "probe"


def test_every_command_takes_json() -> None:
    """The README says every command takes --json: ask typer for each registered command."""
    from topomap.cli import app

    missing = []
    for cmd in app.registered_commands:
        name = cmd.name or (cmd.callback.__name__ if cmd.callback else "?")
        r = runner.invoke(app, [name.rstrip("_"), "--help"], terminal_width=200)
        if "--json" not in r.stdout:
            missing.append(name)
    assert missing == []


def test_a_reason_made_a_note_is_its_words_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Reasons are Notes where they are made (a str with a template and subjects, issue 33 item 1);
    msgspec refuses a str subclass, so a result holding one raw failed as an internal error."""
    from topomap.base.notes import Note
    from topomap.cli.wiring import _print_json

    _print_json({"reasons": [Note("{gpu} reaches {nic} at {path}", "h1", gpu="gpu3", nic="mlx5_0", path="PIX")]})
    assert json.loads(capsys.readouterr().out) == {"reasons": ["gpu3 reaches mlx5_0 at PIX"]}
    with pytest.raises(TypeError, match="no JSON for object"):
        _print_json({"x": object()})
