"""`record` ends the whole tree of the command it ran (issue 36 item 7: after Ctrl-C, `record -- bash -c
'sleep 300 & sleep 300 & wait'` exited with both sleeps still running — bash's background jobs ignore
SIGINT; a daemon started with `setsid` or a double fork was not named at all; SIGINT in the first half
second printed a KeyboardInterrupt traceback and exited 1).

Real processes throughout. Each test's sleeps carry a duration of their own (``300.36N``), by which the
test finds them afterwards and kills, by pid, the ones it started that are still running: no other
process is touched."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from topomap.record.runner import RecordOptions, record, record_run
from topomap.record.tree import Tree

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="process groups, sessions and /proc: Linux")


def _mine(tag: str) -> list[psutil.Process]:
    """The sleeps of one test: ``sleep TAG`` exactly."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if (p.info["cmdline"] or []) == ["sleep", tag]:
            out.append(p)
    return out


@pytest.fixture
def tag(request: pytest.FixtureRequest) -> Iterator[str]:
    """A sleep duration no other test uses; whatever of it is still running afterwards is killed."""
    value = f"300.36{abs(hash(request.node.nodeid)) % 10**6:06d}"
    yield value
    for p in _mine(value):
        with contextlib.suppress(psutil.Error):
            p.kill()


def _cli_record(tmp_path: Path, shell: str, sig: int | None, after_s: float, *extra: str) -> tuple[int, str, dict]:  # type: ignore[type-arg]
    """`topomap record` in a subprocess (no terminal: the command leads a group of its own), the signal
    ``sig`` sent to topomap after ``after_s``; (exit status, stderr, the record)."""
    out = tmp_path / "run.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    err_path = tmp_path / "err.txt"
    with open(err_path, "wb") as err:
        p = subprocess.Popen(
            [sys.executable, "-m", "topomap", "record", *extra, "--interval", "50ms", "-o", str(out), "--", "bash",
             "-c", shell],
            env=env, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(after_s)
        if sig is not None:
            p.send_signal(sig)
        code = p.wait(timeout=60)
    return code, err_path.read_text(), json.loads(out.read_text()) if out.exists() else {}


def _settle(tag: str, want: int, timeout_s: float = 3.0) -> list[psutil.Process]:
    """The test's sleeps still running, once they have had time to end (or to be ``want`` of them)."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = [p for p in _mine(tag) if p.status() != psutil.STATUS_ZOMBIE]
        if len(alive) == want or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_ends_the_jobs_bash_left_ignoring_it(tmp_path: Path, tag: str, sig: int, code: int) -> None:
    got, err, run = _cli_record(tmp_path, f"sleep {tag} & sleep {tag} & wait", sig, 1.5)
    assert got == code and "Traceback" not in err, err
    assert _settle(tag, 0) == []
    notes = " ".join(run["notes"])
    if sig == signal.SIGINT:  # bash's background jobs ignore SIGINT: left by it, then ended by record
        assert "still running when the command ended, ended (SIGTERM): pid" in notes and notes.count("(sleep)") == 2
        assert "topomap record: still running when the command ended, ended (SIGTERM)" in err
    assert run["interrupted_by"] == signal.Signals(sig).name


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "proc-walk"])
def test_a_setsid_daemon_and_a_double_fork_are_found_named_and_ended(tag: str, cgroup: bool) -> None:
    """The command exits 0 at once, leaving a `setsid` daemon and a double-forked one (whose middle
    process lives long enough to be sampled: without a cgroup that is how it is found)."""
    shell = f"setsid sleep {tag} & (setsid sleep {tag} & sleep 0.3) & sleep 0.4; exit 0"
    run = record(["bash", "-c", shell], RecordOptions(interval_s=0.05, cgroup=cgroup, grace_s=1.0,
                                                    snapshot=_empty_snapshot, nvml_lib=_no_nvml()))  # fmt: skip
    assert run.exit_status == 0
    assert _settle(tag, 0) == []
    notes = " ".join(run.notes)
    assert "still running when the command ended, ended (SIGTERM):" in notes and notes.count("(sleep)") >= 4
    assert "escaped the command's process group (setsid or a double fork): pid" in notes
    how = "found through the command's cgroup" if cgroup else "found by walking /proc (not asked for"
    assert how in notes, notes


def test_the_notes_of_what_was_left_carry_their_kind(tag: str) -> None:
    """Each note about the command's processes is typed where it is made (record/tree.py TreeNote): the
    CLI says the ones about what was left by their kind, never by the words they start with."""
    shell = f"setsid sleep {tag} & sleep 0.3; exit 0"
    got = record_run(["bash", "-c", shell], RecordOptions(interval_s=0.05, cgroup=False, grace_s=1.0,
                                                          snapshot=_empty_snapshot, nvml_lib=_no_nvml()))  # fmt: skip
    assert _settle(tag, 0) == []
    kinds = [n.kind for n in got.tree_notes]
    assert kinds == ["ended", "escaped", "found"], got.tree_notes
    escaped = got.tree_notes[1]
    assert escaped.text.startswith("escaped the command's process group") and "(sleep)" in escaped.text
    assert got.run.notes == [n.text for n in got.tree_notes]  # the record keeps their words


def _cgroup_possible() -> bool:
    tree = Tree.make()
    made = tree.cgroup is not None
    tree.end()  # removes it
    return made


def test_a_quick_double_fork_is_found_through_the_cgroup(tag: str) -> None:
    if not _cgroup_possible():
        pytest.skip("no cgroup v2 can be made here")
    # (the short wait lets setsid leave the group before the command ends: on a loaded machine the child can
    # still be `setsid` in bash's group then, which the group's own signal takes, not the cgroup)
    run = record(["bash", "-c", f"(setsid sleep {tag} &); sleep 0.3; exit 0"], RecordOptions(
        interval_s=0.5, grace_s=1.0, snapshot=_empty_snapshot, nvml_lib=_no_nvml()))  # fmt: skip
    assert _settle(tag, 0) == [] and "escaped the command's process group" in " ".join(run.notes)


def test_leave_running_keeps_them_and_names_them(tmp_path: Path, tag: str) -> None:
    # (the wait lets setsid leave the group before the command ends, as in the double-fork test above)
    got, _, run = _cli_record(
        tmp_path, f"setsid sleep {tag} & sleep {tag} & sleep 0.3; exit 0", None, 0.0, "--leave-running"
    )
    assert got == 0
    alive = _settle(tag, 2)
    assert len(alive) == 2  # the fixture ends them after the test
    notes = " ".join(run["notes"])
    assert "left running (--leave-running): pid" in notes and "SIGTERM" not in notes and "SIGKILL" not in notes
    assert "escaped the command's process group (setsid or a double fork)" in notes
    assert all(Path(f"/proc/{p.pid}").exists() for p in alive)


def test_a_command_that_ends_alone_leaves_nothing_and_says_nothing(tmp_path: Path, tag: str) -> None:
    got, err, run = _cli_record(tmp_path, "sleep 0.2; exit 3", None, 0.0)
    assert got == 3 and run["notes"] == [] and "still running" not in err


def _python_start_s() -> float:
    """How long the interpreter takes to start here, before any topomap line runs (the slowest of three)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    took = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        took.append(time.perf_counter() - t)
    return max(took)


@pytest.mark.parametrize("after_s", [0.02, 0.1, 0.2, 0.35])
def test_ctrl_c_in_the_first_half_second_is_exit_130_without_a_traceback(tmp_path: Path, after_s: float) -> None:
    """Ctrl-C while topomap loads, starts the command or runs it: one line (or none), exit 130. Timed
    from when topomap's first line can run: before it, during the interpreter's own start (some 30 ms
    on an idle machine), Python itself answers, and such a run is tried again later."""
    start = _python_start_s()
    for extra in (0.0, 0.1, 0.2):
        got, err, _ = _cli_record(tmp_path, "sleep 0.4", signal.SIGINT, start + after_s + extra)
        if "Traceback" in err and "topomap" not in err.split("Traceback", 1)[1]:
            continue  # the interpreter's own start, before topomap
        break
    assert got == 130 and "Traceback" not in err and "KeyboardInterrupt" not in err, err
    last = err.strip().splitlines()[-1] if err.strip() else "topomap: error: interrupted"
    assert last.startswith(("topomap: error: interrupted", "topomap record: wrote")), err


def test_the_cgroup_is_removed_after_the_run() -> None:
    tree = Tree.make()
    if tree.cgroup is None:
        pytest.skip("no cgroup v2 can be made here")
    parent, made = tree.cgroup.parent, tree.cgroup
    # (an earlier test of this process may have left one whose last process was not reaped in time;
    # the next record's sweep takes those once this process is gone: only what this test made counts)
    before = {d for d in parent.iterdir() if d.name.startswith("topomap-record-")} - {made}
    tree.end()
    assert not made.exists()
    record(["true"], RecordOptions(interval_s=0.05, snapshot=_empty_snapshot, nvml_lib=_no_nvml()))
    assert {d for d in parent.iterdir() if d.name.startswith("topomap-record-")} <= before


def _empty_snapshot():  # type: ignore[no-untyped-def]
    from topomap.model.snapshot import Snapshot, Source

    return Snapshot(source=Source(kind="probe", origin="test", tool="topomap test"))


def _no_nvml():  # type: ignore[no-untyped-def]
    from tests.fakes import machines
    from tests.fakes.record_nvml import ScriptedNvml

    return ScriptedNvml(machines.no_driver())
