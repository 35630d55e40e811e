"""`topomap record` running real short child processes, with the fake NVML where GPUs are needed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import run_probe
from tests.fakes import machines
from tests.fakes.machine import GIB
from tests.fakes.record_nvml import ScriptedNvml
from topomap.base.errors import TopomapError
from topomap.files.kind import is_run_file
from topomap.record import decode_run, encode_run, load_run
from topomap.record.runner import RecordOptions, record
from topomap.record.summary import cards

PY = sys.executable


def _no_gpu(**kw: object) -> RecordOptions:
    """Options for a host-only run: the fake NVML of a machine without a driver."""
    m = machines.no_driver()
    return RecordOptions(interval_s=0.05, nvml_lib=ScriptedNvml(m), snapshot=_empty_snapshot, **kw)  # type: ignore[arg-type]


def _empty_snapshot():  # type: ignore[no-untyped-def]
    from topomap.model.snapshot import Snapshot, Source

    return Snapshot(source=Source(kind="probe", origin="test", tool="topomap test"))


def test_a_failing_command_passes_its_status_through() -> None:
    run = record([PY, "-c", "import sys; sys.exit(7)"], _no_gpu())
    assert run.exit_status == 7 and run.signal is None and run.interrupted_by is None
    assert run.duration_s is not None and run.duration_s > 0
    assert not run.sampling.gpu_sampled and run.sampling.gpu_note is not None
    assert "no GPU sampled" in run.sampling.gpu_note


def test_a_command_that_cannot_start_is_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(TopomapError, match="cannot run 'no-such-command-xyz'"):
        record(["no-such-command-xyz"], _no_gpu())
    blob = tmp_path / "blob"
    blob.write_bytes(b"\x7fnot a program")
    blob.chmod(0o755)
    with pytest.raises(TopomapError, match=r"cannot run .*blob.*Exec format error"):
        record([str(blob)], _no_gpu())
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored on the way out


def test_host_counters_of_a_real_child_and_its_grandchild() -> None:
    script = (
        "import subprocess, sys, time\n"
        "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(0.5)'])\n"
        "x = bytearray(120 * 2**20)\n"
        "for i in range(0, len(x), 4096): x[i] = 1\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 0.3: pass\n"
        "g.wait()\n"
    )
    run = record([PY, "-c", script], _no_gpu())
    h = run.host
    assert run.exit_status == 0
    assert len(h.t_s) == run.sampling.samples >= 5
    assert max(v for v in h.tree_rss_bytes if v is not None) >= 120 * 2**20
    assert h.max_rss_bytes is not None and h.max_rss_bytes >= 120 * 2**20
    assert h.cpu_user_s is not None and h.cpu_system_s is not None
    assert h.cpu_user_s + h.cpu_system_s >= 0.3  # rusage: the busy loop (page faults count as system)
    assert max(v for v in h.tree_cpu_pct if v is not None) > 30  # one sample saw it busy
    assert max(n for n in h.tree_processes if n is not None) == 2  # the child and its grandchild
    assert h.tree_processes[-1] == 0  # the final sample, after exit
    s = run.sampling
    assert s.sample_cost_mean_s is not None and s.sample_cost_mean_s > 0
    assert s.overhead_pct is not None and s.recorder_cpu_s is not None


def test_children_on_several_gpus_are_attributed_to_the_command(tmp_path: Path) -> None:
    m = machines.hgx_h100()

    def pid_on(i: int) -> list[tuple[int, int | None]]:
        f = tmp_path / f"gpu{i}.pid"
        pids = [(int(f.read_text()), (i + 1) * GIB)] if f.exists() and f.read_text() else []
        return [*pids, (os.getpid(), GIB)] if i == 0 else pids  # someone else's process on gpu0

    fake = ScriptedNvml(
        m, memory={0: [GIB, 9 * GIB], 1: [GIB, 5 * GIB], 2: [GIB]}, procs={i: (lambda i=i: pid_on(i)) for i in range(3)}
    )
    worker = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(0.4)"
    script = (
        "import subprocess, sys\n"
        f"ps = [subprocess.Popen([sys.executable, '-c', {worker!r}, sys.argv[1] + f'/gpu{{i}}.pid']) for i in (0, 1)]\n"
        "[p.wait() for p in ps]\n"
    )
    opts = RecordOptions(
        interval_s=0.05,
        nvml_lib=fake,
        snapshot=lambda: run_probe(m, tmp_path / "sys").snapshot,
        on_sample=fake.advance,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "0,1"},
    )
    run = record([PY, "-c", script, str(tmp_path)], opts)
    assert run.exit_status == 0 and run.sampling.gpu_sampled
    by_id = {s.id: s for s in run.gpus}
    (p0,) = [p for p in by_id["gpu0"].processes if p.in_command_tree]
    (p1,) = [p for p in by_id["gpu1"].processes if p.in_command_tree]
    assert p0.pid != p1.pid and p0.peak_memory_bytes == GIB and p1.peak_memory_bytes == 2 * GIB
    assert [p.in_command_tree for p in by_id["gpu0"].processes if p.pid == os.getpid()] == [False]
    assert by_id["gpu2"].processes == []
    assert [s.visible_to_command for s in run.gpus] == [True, True] + [False] * 6
    assert run.environment["CUDA_VISIBLE_DEVICES"] == "0,1"
    peaks = {c.id: c.peak_memory_bytes for c in cards(run)}
    assert (peaks["gpu0"], peaks["gpu1"], peaks["gpu2"], peaks["gpu7"]) == (9 * GIB, 5 * GIB, GIB, 0)
    assert run.versions["driver"] == "550.54.15"
    again = decode_run(encode_run(run))
    assert again == run  # the record round-trips through its JSON exactly


def test_sigterm_is_forwarded_and_the_record_is_complete(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    script = (
        "import pathlib, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"  # a command that cleans up and exits 0
        "pathlib.Path(sys.argv[1]).write_text('x')\n"
        "time.sleep(10)\n"
    )

    def terminate_when_ready() -> None:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)  # to topomap (this process), which forwards it

    t = threading.Thread(target=terminate_when_ready, daemon=True)
    t.start()
    run = record([PY, "-c", script, str(ready)], _no_gpu())
    t.join()
    assert run.interrupted_by == "SIGTERM"
    assert run.exit_status == 0 and run.duration_s is not None and run.duration_s < 5
    assert run.ended_at is not None and run.host.cpu_user_s is not None
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # topomap's handler is gone again


def test_cli_interrupted_run_writes_a_complete_record_and_exits_like_the_command(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    ready = tmp_path / "ready"
    sleeper = "import pathlib, sys, time; pathlib.Path(sys.argv[1]).write_text('x'); time.sleep(20)"
    cmd = [PY, "-m", "topomap", "record", "-o", str(out), "--interval", "50ms", "--", PY, "-c", sleeper, str(ready)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not ready.exists():  # the command is past its start-up (a signal then would kill the interpreter's init)
        assert time.monotonic() < deadline and proc.poll() is None, "the recorded command never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # not a terminal: topomap forwards it
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 130, err
    assert is_run_file(out)
    run = load_run(out)
    assert run.interrupted_by == "SIGINT" and run.signal == "SIGINT" and run.exit_status == 130
    assert "wrote" in err and "no GPU sampled" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ready", "run.json"]  # no temporary file left behind


def test_cli_without_gpu_records_the_host_side(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [PY, "-m", "topomap", "record", "-o", str(out), "--", PY, "-c", "import sys; sys.exit(3)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3
    run = load_run(out)
    assert run.command[1:] == ["-c", "import sys; sys.exit(3)"]
    assert run.snapshot is not None and run.gpus == []
    assert run.sampling.gpu_note is not None and run.sampling.gpu_note.startswith("no GPU sampled")
    assert run.host.t_s and run.host.cpu_count


def test_bad_interval_is_one_line() -> None:
    proc = subprocess.run(
        [PY, "-m", "topomap", "record", "--interval", "fast", "--", "true"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--interval 'fast'" in proc.stderr


def test_live_line_only_on_a_terminal(tmp_path: Path) -> None:
    import pty

    cmd = [PY, "-m", "topomap", "record", "-o", str(tmp_path / "r.json"), "--interval", "50ms", "--"]
    cmd += [PY, "-c", "import time; time.sleep(0.4)"]
    piped = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0 and "\r" not in piped.stderr and piped.stderr.count("\n") == 1
    main, sub = pty.openpty()
    try:
        proc = subprocess.Popen(cmd, stderr=sub, stdout=subprocess.DEVNULL)
        os.close(sub)
        chunks = []
        while True:
            try:
                data = os.read(main, 4096)
            except OSError:  # EIO: the terminal's other end closed
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(main)
    text = b"".join(chunks).decode(errors="replace")
    assert "\rtopomap record: " in text and " s  no GPU sampled" in text  # elapsed time, then the cards
    assert "wrote " in text


def test_live_line_shows_elapsed_and_per_gpu_memory(capsys: pytest.CaptureFixture[str]) -> None:
    from topomap.cli.record import _live_line, parse_interval

    _live_line(12.34, [("gpu0", 2 * GIB, 80 * GIB), ("gpu1", None, 80 * GIB)])
    err = capsys.readouterr().err
    assert err.startswith("\rtopomap record:") and "12.3 s" in err
    assert "gpu0 2.0/80 GiB" in err and "gpu1 ?" in err  # unknown, not 0
    assert (parse_interval("0.2s"), parse_interval("250ms"), parse_interval("1")) == (0.2, 0.25, 1.0)
    with pytest.raises(TopomapError, match="between 10ms and 3600s"):
        parse_interval("1ms")


def test_a_sampler_that_breaks_stops_but_the_run_and_record_go_on() -> None:
    m = machines.hgx_h100()
    fake = ScriptedNvml(m, memory={0: [GIB]})
    calls = {"n": 0}

    def explode(t: float, mem: object) -> None:
        calls["n"] += 1
        raise BrokenPipeError("stderr went away")

    def bad_util(h: object) -> object:
        raise RuntimeError("driver bug")

    fake.nvmlDeviceGetUtilizationRates = bad_util  # type: ignore[method-assign,assignment]
    opts = RecordOptions(interval_s=0.05, nvml_lib=fake, snapshot=_empty_snapshot, on_sample=explode)
    run = record([PY, "-c", "import time; time.sleep(0.3)"], opts)
    assert run.exit_status == 0 and calls["n"] == 1  # the live line failed once and was not called again
    calls_ = {p.call for p in run.problems if p.source == "record"}
    assert calls_ == {"live line", "gpu sample"}
    for s in run.gpus:  # every column as long as its time axis
        assert len(s.memory_used_bytes) == len(s.util_gpu_pct) == len(s.nvlink_rx_bytes_s) == len(s.t_s)


def test_a_long_run_is_thinned_keeping_every_peak() -> None:
    from topomap.record.model import GpuSeries, HostSeries
    from topomap.record.thin import halve

    g = GpuSeries(id="gpu0", index=0, t_s=[0, 1, 2, 3, 4], memory_used_bytes=[1, 9, 2, None, 5])
    g.util_gpu_pct = [None, None, 50, 10, 0]
    halve(g)
    assert g.t_s == [0, 2, 4] and g.memory_used_bytes == [9, 2, 5] and g.util_gpu_pct == [None, 50, 0]
    h = HostSeries(t_s=[0, 1, 2], disk_read_bytes=[0, 10, 30], tree_rss_bytes=[5, 3, 4])
    halve(h)
    assert h.disk_read_bytes == [10, 30] and h.tree_rss_bytes == [5, 4]  # counters: the later value

    opts = _no_gpu(max_samples=8)
    opts.interval_s = 0.02
    run = record([PY, "-c", "import time; time.sleep(0.6)"], opts)
    assert run.sampling.thinned >= 2
    assert len(run.host.t_s) < run.sampling.samples  # fewer stored points than readings
    assert len(run.host.tree_rss_bytes) == len(run.host.disk_read_bytes) == len(run.host.t_s) <= 9
