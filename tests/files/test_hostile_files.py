"""Outputs and runs under careless or hostile conditions (issue 24): overwriting keeps mode, owner and
links; a writer killed with SIGKILL leaves a temporary file the next write removes; two writers never
mix; `record` signals the command's whole process group and keeps a partial record on a full disk."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.cli import app
from topomap.files.atomic import TMP_MARK, atomic_write, sweep_leftovers

ROOT = Path(__file__).resolve().parents[2]
DGX1 = str(SAMPLES / "snapshots" / "dgx1-v100.json")
runner = CliRunner()


def test_overwriting_keeps_mode_and_owner_and_writes_through_a_link(tmp_path: Path) -> None:
    out = tmp_path / "m.dot"
    out.write_text("old")
    os.chmod(out, 0o600)
    if os.geteuid() == 0:
        os.chown(out, 1234, 5678)
    r = runner.invoke(app, ["render", DGX1, "-o", str(out)])
    assert r.exit_code == 0, r.output
    st = out.stat()
    assert oct(st.st_mode & 0o777) == "0o600" and out.read_text().startswith("digraph")
    if os.geteuid() == 0:
        assert (st.st_uid, st.st_gid) == (1234, 5678)
    target = tmp_path / "real.dot"
    target.write_text("old")
    link = tmp_path / "link.dot"
    link.symlink_to(target.name)
    assert runner.invoke(app, ["render", DGX1, "-o", str(link)]).exit_code == 0
    assert link.is_symlink() and target.read_text().startswith("digraph")
    assert sorted(os.listdir(tmp_path)) == ["link.dot", "m.dot", "real.dot"]


_KILLED_WRITER = """
import os, sys, time
import topomap.files.atomic as a
def stuck(src, dst):
    print("in rename", flush=True)
    time.sleep(60)
a.os.replace = stuck
a.atomic_write(sys.argv[1], b"x" * 1_000_000)
"""


def test_a_write_killed_with_sigkill_leaves_a_named_leftover_the_next_write_removes(tmp_path: Path) -> None:
    out = tmp_path / "cluster.json"
    p = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(out)], stdout=subprocess.PIPE, cwd=ROOT)
    assert p.stdout is not None and p.stdout.readline() == b"in rename\n"
    p.kill()
    p.wait()
    left = [n for n in os.listdir(tmp_path) if TMP_MARK in n]
    assert len(left) == 1 and left[0].startswith(".cluster.json.topomap-tmp-") and f"-{p.pid}-" in left[0]
    r = runner.invoke(app, ["merge", f"a={DGX1}", f"b={SAMPLES / 'snapshots' / 'azure-ndv4.json'}", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert os.listdir(tmp_path) == ["cluster.json"]  # the dead writer's leftover is gone
    # a live writer's temporary file, and a file merely named alike, are left alone
    mine = tmp_path / f".x{TMP_MARK}00000000-{os.getpid()}-0123abcd"
    mine.write_text("live")
    (tmp_path / "notes.topomap-tmp-txt").write_text("mine")
    assert sweep_leftovers(tmp_path) == []
    assert mine.exists() and (tmp_path / "notes.topomap-tmp-txt").exists()


_WRITER = """
import sys
from topomap.files.atomic import atomic_write
for _ in range(int(sys.argv[3])):
    atomic_write(sys.argv[1], sys.argv[2].encode() * 200_000)
"""


def test_two_writers_of_one_output_never_mix_and_the_last_rename_wins(tmp_path: Path) -> None:
    out = tmp_path / "same.json"
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(out), ch, "30"], cwd=ROOT) for ch in ("a", "b")]
    seen = set()
    while any(p.poll() is None for p in procs):
        if out.exists():
            data = out.read_bytes()
            assert data in (b"a" * 200_000, b"b" * 200_000), (len(data), set(data))
            seen.add(data[:1])
    assert all(p.wait() == 0 for p in procs)
    assert out.read_bytes() in (b"a" * 200_000, b"b" * 200_000)
    assert os.listdir(tmp_path) == ["same.json"]


def test_atomic_write_flushes_file_and_folder_before_and_after_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import topomap.files.atomic as atomic

    order: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: (order.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(atomic.os, "replace", lambda a, b: (order.append("rename"), real_replace(a, b))[1])
    atomic_write(tmp_path / "f", b"data")
    assert order == ["fsync", "rename", "fsync"]  # the data, the rename, the folder entry


# a grandchild in the foreground of the command's shell (one started with `&` ignores SIGINT, as
# POSIX has it for a shell without job control, wherever the SIGINT comes from)
_GRANDCHILD = "sh -c 'echo $$ > {pid}; exec sleep 300'; echo not reached"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_record_signals_the_whole_process_group_no_grandchild_survives(tmp_path: Path, sig: int) -> None:
    pid_file, out = tmp_path / "pid", tmp_path / "run.json"
    cmd = [
        sys.executable,
        "-m",
        "topomap",
        "record",
        "-o",
        str(out),
        "--",
        "sh",
        "-c",
        _GRANDCHILD.format(pid=pid_file),
    ]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(pid_file.read_text())
    time.sleep(0.3)
    p.send_signal(sig)
    assert p.wait(timeout=30) == 128 + sig
    time.sleep(0.3)
    try:
        status = psutil.Process(grandchild).status()
    except psutil.NoSuchProcess:
        status = "gone"
    if status not in ("gone", psutil.STATUS_ZOMBIE):
        os.kill(grandchild, signal.SIGKILL)
    assert status in ("gone", psutil.STATUS_ZOMBIE)  # a zombie is dead, waiting for init to reap it
    run = json.loads(out.read_text())
    assert run["interrupted_by"] == signal.Signals(sig).name


def test_record_names_what_the_command_left_running(tmp_path: Path) -> None:
    from topomap.record.runner import RecordOptions, record

    pid_file = tmp_path / "pid"
    opts = RecordOptions(interval_s=0.05, nvml_lib=None, snapshot=lambda: None)  # type: ignore[arg-type,return-value]
    run = record(["sh", "-c", f"sleep 30 & echo $! > {pid_file}"], opts)
    left = int(pid_file.read_text())
    try:
        assert any(f"pid {left} (sleep)" in n and "still running when the command ended" in n for n in run.notes)
    finally:
        os.kill(left, signal.SIGKILL)


def _tmpfs(path: Path) -> bool:
    path.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)], capture_output=True)
    return r.returncode == 0


def test_record_on_a_disk_that_fills_keeps_a_partial_record(tmp_path: Path) -> None:
    disk = tmp_path / "small"
    if os.geteuid() != 0 or not _tmpfs(disk):
        pytest.skip("mounting a small tmpfs needs root")
    try:
        out = disk / "run.json"
        fill = f"sleep 0.3; head -c 57344 /dev/zero > {disk / 'fill'}; sleep 1.5; exit 3"
        r = subprocess.run(
            [sys.executable, "-m", "topomap", "record", "--interval", "10ms", "-o", str(out), "--", "sh", "-c", fill],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert r.returncode == 3, r.stderr  # the command's own status
        assert "the disk is full: wrote a partial record" in r.stderr
        run = json.loads(out.read_text())
        assert run["exit_status"] == 3 and run["duration_s"] > 1.5
        assert any(n.startswith("partial record: the disk filled") for n in run["notes"])
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_a_full_disk_thins_the_record_before_it_drops_the_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import topomap.cli.output as output
    import topomap.cli.wiring as wiring
    from topomap.record import load_run

    real = wiring._write
    sizes: list[int] = []

    def small_disk(path: str, data: bytes) -> None:  # a disk with room for less than the full record
        sizes.append(len(data))
        if len(data) >= sizes[0]:
            full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            raise output._unwritable(path, full) from full
        real(path, data)

    import topomap.cli.record as rec

    monkeypatch.setattr(rec, "_write", small_disk)
    out = tmp_path / "run.json"
    r = runner.invoke(app, ["record", "--interval", "10ms", "-o", str(out), "--", "sleep", "6"])
    assert r.exit_code == 0, r.output
    run = load_run(out)
    assert len(sizes) == 2 and sizes[1] < sizes[0]  # the full record, then the thinned one
    assert 0 < len(run.host.t_s) <= 256 and run.sampling.thinned >= 2
    assert "at most 256 points per series" in run.notes[-1]
