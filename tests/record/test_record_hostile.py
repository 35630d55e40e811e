"""Hostile inputs to `record`, `show RUN`, `diff RUN RUN` and `plan --observed` (a trial's findings).

Each test names the finding it covers; each failed before its fix.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import tempfile
import xml.dom.minidom
from pathlib import Path
from typing import Any

import msgspec
import pytest
from typer.testing import CliRunner

from topomap.cli import app
from topomap.record import encode_run, load_run, observed_for_plan
from topomap.record.compare import diff_runs
from topomap.record.outputs import check_outputs
from topomap.record.runner import RecordOptions, record, signal_name

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
RECORDS = SAMPLES / "records"
ONE, TWO = RECORDS / "one-card.json", RECORDS / "two-cards.json"
OUTS = [str(RECORDS / "out" / "one-card"), str(RECORDS / "out" / "two-cards")]
PY = sys.executable
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
runner = CliRunner()
HAS_RT = hasattr(signal, "SIGRTMIN") and hasattr(signal, "SIGRTMAX")


def _host_only() -> RecordOptions:
    from tests.fakes import machines
    from tests.fakes.record_nvml import ScriptedNvml
    from topomap.model.snapshot import Snapshot, Source

    snap = Snapshot(source=Source(kind="probe", origin="test", tool="topomap test"))
    return RecordOptions(interval_s=0.05, nvml_lib=ScriptedNvml(machines.no_driver()), snapshot=lambda: snap)


# 1. a command ended by a real-time signal -------------------------------------------------------


def test_every_signal_number_has_a_name() -> None:
    assert signal_name(int(signal.SIGTERM)) == "SIGTERM"
    assert signal_name(200) == "signal 200"
    if HAS_RT:
        low = int(signal.SIGRTMIN)
        assert signal_name(low + 6) == "SIGRTMIN+6"
        assert signal_name(int(signal.SIGRTMAX)) in ("SIGRTMAX", f"SIGRTMIN+{int(signal.SIGRTMAX) - low}")


@pytest.mark.skipif(not HAS_RT, reason="no real-time signals on this platform")
def test_a_command_killed_by_a_realtime_signal_is_recorded_with_128_plus_n(tmp_path: Path) -> None:
    sig = int(signal.SIGRTMIN) + 6
    script = tmp_path / "script.py"
    script.write_text(f"import os\nos.kill(os.getpid(), {sig})\n")
    run = record([PY, str(script)], _host_only())
    assert run.exit_status == 128 + sig and run.signal == "SIGRTMIN+6"
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [PY, "-m", "topomap", "record", "-o", str(out), "--", PY, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 128 + sig, proc.stderr
    assert "internal error" not in proc.stderr
    saved = load_run(out)
    assert saved.signal == "SIGRTMIN+6" and saved.exit_status == 128 + sig
    shown = runner.invoke(app, ["show", str(out)])
    assert shown.exit_code == 0 and f"exit {128 + sig} (SIGRTMIN+6)" in shown.output


# 2. the output path is checked before the command runs ------------------------------------------


def _refused(args: list[str], marker: Path) -> str:
    """Run `record ARGS -- python -c 'create MARKER'`; assert it exits 2 without running the command."""
    cmd = [PY, "-c", f"open({str(marker)!r}, 'w').close()"]
    r = runner.invoke(app, ["record", *args, "--", *cmd])
    assert r.exit_code == 2, r.output
    assert not marker.exists(), "the command ran although its record could not be written"
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topomap: error: -o ")
    return lines[0]


def test_an_output_folder_or_file_parent_is_refused_before_the_command_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    folder = tmp_path / "folder"
    folder.mkdir()
    assert "is a folder" in _refused(["-o", str(folder)], marker)
    assert "names a folder" in _refused(["-o", str(tmp_path / "new") + os.sep], marker)
    regular = tmp_path / "x.py"
    regular.write_text("")
    line = _refused(["-o", str(regular / "r.json")], marker)
    assert "a part of the path above the file is not a folder" in line
    assert "folder" in _refused(["-o", str(tmp_path / "missing" / "r.json")], marker)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "is a FIFO" in _refused(["-o", str(fifo)], marker)
    if os.path.exists("/dev/full"):
        assert "/dev/full: cannot write (No space left on device)" in _refused(["-o", "/dev/full"], marker)


def test_a_refused_output_under_json_is_one_json_object(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    r = runner.invoke(app, ["record", "--json", "-o", str(tmp_path), "--", PY, "-c", f"open({str(marker)!r}, 'w')"])
    assert r.exit_code == 2 and not marker.exists()
    doc = json.loads(r.stdout)
    assert doc["exit"] == 2 and doc["error"] == f"-o {tmp_path}: is a folder"


def test_a_folder_that_takes_no_new_file_is_refused_up_front(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check creates (and removes) a file for real; refused the way a read-only mount refuses."""

    def refuse(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    line = _refused(["-o", str(tmp_path / "r.json")], tmp_path / "ran")
    assert line == (
        f"topomap: error: -o {tmp_path / 'r.json'}: cannot create a file in folder {tmp_path} "
        "(read-only file system) (hint: choose a folder you can write to)"
    )


def test_a_read_only_folder_is_refused_up_front(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """chmod 555 stops everyone but root; run as root (CI), the kernel's answer to a non-root
    user is injected instead, so the test runs (and can fail) everywhere."""
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    if ROOT:
        real = tempfile.mkstemp

        def denied(*args: Any, **kwargs: Any) -> tuple[int, str]:
            if Path(str(kwargs.get("dir", ""))) == ro:
                raise PermissionError(errno.EACCES, "Permission denied")
            return real(*args, **kwargs)

        monkeypatch.setattr(tempfile, "mkstemp", denied)
    try:
        assert "cannot create a file in folder" in _refused(["-o", str(ro / "r.json")], tmp_path / "ran")
    finally:
        ro.chmod(0o755)


def test_a_writable_output_leaves_no_trace_of_the_check(tmp_path: Path) -> None:
    from topomap.cli.record import check_output

    check_output(str(tmp_path / "r.json"))
    check_output(os.devnull)
    assert list(tmp_path.iterdir()) == []


# 3. strings from the record are escaped in every view --------------------------------------------


def _hostile_run(tmp_path: Path, name: str = "evil.json") -> Path:
    run = load_run(ONE)
    gpus = [msgspec.structs.replace(run.gpus[0], id="gpu0[bold]\x1b[5m"), *run.gpus[1:]]
    evil = msgspec.structs.replace(
        run,
        label="fast\x1b[31mRED\nforged line",
        command=["echo", "$a$", "\x1b[2J"],
        hostname="h\x1b]0;title\x07",
        notes=["note\r\x1b[K"],
        environment={**run.environment, "CUDA_VISIBLE_DEVICES": "0\x1b[31m"},
        gpus=gpus,
    )
    path = tmp_path / name
    path.write_bytes(encode_run(evil))
    return path


def test_show_and_diff_escape_label_command_and_every_record_string(tmp_path: Path) -> None:
    path = _hostile_run(tmp_path)
    shown = runner.invoke(app, ["show", str(path)])
    assert shown.exit_code == 0, shown.output
    assert not any(c in shown.output for c in "\x1b\r\x07")
    assert "[fast\\x1b[31mRED\\x0aforged line]" in shown.output
    assert "\\x1b[2J" in shown.output and "h\\x1b]0;title\\x07" in shown.output
    assert "gpu0[bold]\\x1b[5m" in shown.output  # not rich markup either
    other = tmp_path / "b\x1b[31m.json"
    other.write_bytes(TWO.read_bytes())
    diffed = runner.invoke(app, ["diff", str(path), str(other)])
    assert diffed.exit_code == 1, diffed.output  # its command differs from the other's: not comparable
    assert "\x1b" not in diffed.output
    assert "CUDA_VISIBLE_DEVICES=0\\x1b[31m vs 0,1" in diffed.output and "b\\x1b[31m" in diffed.output


def test_the_timeline_image_keeps_record_strings_as_text(tmp_path: Path) -> None:
    from topomap.render.timeline import timeline_image

    svg = timeline_image(load_run(_hostile_run(tmp_path)), "svg")
    xml.dom.minidom.parseString(svg)  # an SVG cannot hold ESC: it would not parse
    assert b"$a$" in svg  # shown as typed, not typeset as mathematics


# 4. diff --outputs reads regular files only, and a read error is a read error ---------------------


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "result.txt").write_text("loss 0.5\n")
    return a, b


def test_links_and_special_files_are_skipped_and_counted_not_followed(tmp_path: Path) -> None:
    a, b = _folders(tmp_path)
    for d in (a, b):
        (d / "mem").symlink_to("/proc/self/mem")
        os.mkfifo(d / "pipe")
    (a / "escape").symlink_to("/etc")
    (a / "same-name").symlink_to(a / "result.txt")
    (b / "same-name").write_text("loss 0.5\n")
    check = check_outputs(str(a), str(b))
    assert check.skipped_a == {
        "escape": "symbolic link (not followed)",
        "mem": "symbolic link (not followed)",
        "pipe": "FIFO",
        "same-name": "symbolic link (not followed)",
    }
    assert check.identical == 1 and check.missing_in_a == [] and check.missing_in_b == []
    assert [(d.name, d.reason) for d in check.different] == [
        ("same-name", "a symbolic link (not followed) in A, a regular file in B")
    ]
    r = runner.invoke(app, ["diff", str(ONE), str(TWO), "--outputs", str(a), str(b), "--json"])
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)["outputs"]
    assert doc["skipped_b"] == {"mem": "symbolic link (not followed)", "pipe": "FIFO"}
    assert doc["summary"].endswith(
        "; not compared: 4 in A, 2 in B (2× FIFO, 4× symbolic link (not followed); only regular files are)"
    )


def test_an_unreadable_output_is_one_line_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _folders(tmp_path)
    bad = b / "result.txt"
    real_open = os.open

    def failing(path: object, flags: int, *args: object) -> int:
        if Path(str(path)) == bad:
            raise OSError(errno.EIO, "Input/output error", str(path))
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", failing)
    r = runner.invoke(app, ["diff", str(ONE), str(TWO), "--outputs", str(a), str(b)])
    assert r.exit_code == 2
    assert r.output.strip() == (
        f"topomap: error: --outputs B: cannot read {bad} (Input/output error) "
        "(hint: check its permissions, or leave it out of the output folder)"
    )


def test_a_chmod_000_output_file_or_folder_is_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As above: run as root, the permission errors a user would get are injected."""
    a, b = _folders(tmp_path)
    (a / "result.txt").chmod(0)
    (b / "sub").mkdir()
    (b / "sub").chmod(0)
    if ROOT:
        real_open, real_scandir = os.open, os.scandir

        def open_denied(path: Any, *args: Any, **kwargs: Any) -> int:
            if Path(path) == a / "result.txt":
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        def scandir_denied(path: Any = ".") -> Any:
            if Path(path) == b / "sub" and (b / "sub").stat().st_mode & 0o777 == 0:
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real_scandir(path)

        monkeypatch.setattr(os, "open", open_denied)
        monkeypatch.setattr(os, "scandir", scandir_denied)
    try:
        r = runner.invoke(app, ["diff", str(ONE), str(TWO), "--outputs", str(a), str(b)])
        assert r.exit_code == 2 and "cannot read folder" in r.output and str(b / "sub") in r.output
        (b / "sub").chmod(0o755)
        r = runner.invoke(app, ["diff", str(ONE), str(TWO), "--outputs", str(a), str(b)])
        assert r.exit_code == 2 and f"cannot read {a / 'result.txt'} (Permission denied)" in r.output
    finally:
        (a / "result.txt").chmod(0o644)
        (b / "sub").chmod(0o755)


def test_the_same_folder_twice_is_refused_before_it_is_walked() -> None:
    r = runner.invoke(app, ["diff", str(ONE), str(TWO), "--outputs", "/", "/"])
    assert r.exit_code == 2 and "--outputs / /: the same folder twice" in r.output


# 5. options that make no sense for two runs --------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--outputs", *OUTS, "--tolerance", "nan"], "--tolerance nan: must be a finite number, 0 or more"),
        (["--outputs", *OUTS, "--tolerance", "inf"], "--tolerance inf: must be a finite number, 0 or more"),
        (["--outputs", *OUTS, "--tolerance", "-1"], "--tolerance -1: must be a finite number, 0 or more"),
        (["--tolerance", "1e-6"], "--tolerance applies to --outputs only"),
        (["--flow", str(SAMPLES / "flows" / "eight-documents.yaml")], "--flow applies to two snapshots"),
        (["--match", "structure"], "--match applies to two snapshots"),
    ],
)
def test_run_diff_refuses_what_makes_no_sense(extra: list[str], message: str) -> None:
    r = runner.invoke(app, ["diff", str(ONE), str(TWO), *extra])
    assert r.exit_code == 2, r.output
    assert r.output.startswith(f"topomap: error: {message}") and r.output.count("\n") == 1


# 6. one verdict, every line and field following it ----------------------------------------------


def test_different_outputs_rank_no_run_anywhere() -> None:
    r = runner.invoke(app, ["diff", str(ONE), str(TWO), "--outputs", *OUTS, "--json"])
    assert r.exit_code == 1
    doc = json.loads(r.output)
    assert doc["better"] is None and doc["verdict"] == "results differ"
    assert doc["headline"][0].startswith("Not the same result, so neither did better: outputs differ: 1 different")
    assert doc["headline"][1].startswith(
        "Wall time, not a verdict since the results differ: one-card [one-card.json] 7.32 s"
    )
    assert not any(" did better" in line and "neither" not in line for line in doc["headline"])
    assert all(row["better"] is None for row in doc["rows"])
    text = runner.invoke(app, ["diff", str(ONE), str(TWO), "--outputs", *OUTS]).output
    assert "two-cards did better" not in text and "none marked better: results differ" in text


def test_the_wall_time_row_follows_the_verdict() -> None:
    a, b = load_run(ONE), load_run(TWO)
    same = check_outputs(*OUTS, tolerance=1e-6)
    d = diff_runs(a, b, ("one-card", "two-cards"), same)
    assert d.better == "B" and d.verdict == "faster" and d.headline[0].startswith("two-cards did better")
    assert d.rows[0].metric == "wall time" and d.rows[0].better == "B"
    failed = diff_runs(a, msgspec.structs.replace(b, exit_status=1), ("A", "B"))
    assert failed.better == "A" and failed.headline[0].startswith("A did better: B failed (exit 1)")
    assert all(row.better is None for row in failed.rows)  # B used less time, but it failed


# 7. a per-unit time below 0.1 ms is still a time ----------------------------------------------------


def test_observed_unit_time_keeps_full_precision() -> None:
    two = load_run(TWO)
    assert two.duration_s is not None
    obs = observed_for_plan(two, units=200_000)
    assert obs["unit_duration_s"] == two.duration_s * 2 / 200_000 and obs["unit_duration_s"] > 0
    flow = str(SAMPLES / "flows" / "eight-documents.yaml")
    r = runner.invoke(app, ["plan", flow, "--observed", str(TWO), "--observed-units", "200000", "--json"])
    assert r.exit_code == 0, r.output
    assert "no wall time" not in r.output
