"""Run a command and sample what it used until it exits (the engine of `topomap record`).

Nothing here prints: the caller gets each sample through ``on_sample`` and the finished
:class:`~topomap.record.model.Run` as the return value, and writes it (atomically).

Signals: the command runs in a process group of its own (issue 24: a signal reached only the direct
child, and grandchildren kept running after topomap exited), and SIGTERM, SIGHUP and SIGINT sent to
topomap are forwarded to that whole group; the third signal received kills the group (SIGKILL).
When topomap runs in the foreground of a terminal the command stays in topomap's own group, which
the terminal owns, so that it can read the keyboard: Ctrl-C then reaches every process of the
command from the terminal itself, and topomap forwards only SIGTERM and SIGHUP (and the third
signal's SIGKILL) to the command. Either way topomap waits for the command to exit; then every process
the command left — in its group or escaped from it with setsid or a double fork, found through a
cgroup of its own or by walking /proc (record/tree.py) — is ended (SIGTERM, SIGKILL after a grace
period; issue 36: after Ctrl-C bash's background jobs, which ignore SIGINT, lived on), or with
``leave_running`` named and left; the complete record says which.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from topomap import __version__
from topomap.base.errors import TopomapError
from topomap.model.snapshot import Problem, Snapshot
from topomap.probe import probe
from topomap.probe.nvml import nvml_module
from topomap.record.environment import mark_visibility, placement_environment, versions
from topomap.record.host import HostSampler, name_of
from topomap.record.model import Run, Sampling
from topomap.record.sampler import GpuSampler
from topomap.record.thin import halve
from topomap.record.tree import GRACE_S, Tree, TreeNote

LiveCallback = Callable[[float, list[tuple[str, int | None, int | None]]], None]
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class RecordOptions:
    interval_s: float = 0.2
    label: str | None = None
    env: dict[str, str] | None = None  # the command's environment; None: topomap's own
    nvml_lib: Any | None = None  # None: the real pynvml (topomap.probe.nvml.nvml_module)
    snapshot: Callable[[], Snapshot] | None = None  # None: topomap.probe.probe()
    on_sample: LiveCallback | None = None
    pcie_period_s: float = 1.0
    max_samples: int = 20_000  # stored points per series before they are halved (thin.py)
    notes: list[str] = field(default_factory=list)
    leave_running: bool = False  # what the command left is named, not ended (--leave-running)
    cgroup: bool = True  # the command in a cgroup of its own where one can be made (record/tree.py)
    grace_s: float = GRACE_S  # seconds between SIGTERM and SIGKILL for what the command left


def _halve_all(host: HostSampler, gpus: GpuSampler | None) -> None:
    halve(host.series)
    for card in gpus.cards if gpus is not None else []:
        halve(card.series)


def pad_columns(series: Any) -> None:
    """After a sampler stopped part-way through a sample, pad every column to the length of ``t_s``."""
    n = len(series.t_s)
    for name in series.__struct_fields__:
        col = getattr(series, name)
        if name != "t_s" and isinstance(col, list) and name != "processes":
            del col[n:]
            col.extend([None] * (n - len(col)))


def _utc(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _default_snapshot() -> Snapshot:
    return probe().snapshot


def _open_gpus(opts: RecordOptions) -> tuple[GpuSampler | None, str | None]:
    lib = opts.nvml_lib
    if lib is None:
        try:
            lib = nvml_module()
        except TopomapError as err:
            return None, f"no GPU sampled: {err}"
    sampler = GpuSampler(lib, pcie_period_s=opts.pcie_period_s, name_of=name_of)
    if not sampler.open():
        sampler.close()
        return sampler, f"no GPU sampled: {sampler.note}"
    return sampler, None


class _Signals:
    """Forward SIGINT/SIGTERM/SIGHUP to the child; the third one kills it."""

    def __init__(self) -> None:
        self.pid: int | None = None  # set once the child exists; a signal before that is sent on start
        self.group = False  # the child leads a process group of its own: signal the whole group
        self.pending: int | None = None
        self.first: str | None = None
        self.count = 0
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread (tests run the runner in others)
        for sig in _FORWARDED:
            self._old[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.first is None:
            self.first = signal_name(signum)
        send = signal.SIGKILL if self.count >= 3 else signum
        if signum == signal.SIGINT and send != signal.SIGKILL and _terminal_delivered_it():
            return
        if self.pid is None:
            self.pending = send
            return
        self._send(send)

    def _send(self, sig: int) -> None:
        assert self.pid is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self.group:
                os.killpg(self.pid, sig)
            else:
                os.kill(self.pid, sig)

    def started(self, pid: int, group: bool) -> None:
        self.pid, self.group = pid, group
        if self.pending is not None:
            self._send(self.pending)


def signal_name(signum: int) -> str:
    """A signal's name: "SIGTERM"; a real-time one (which has no name of its own) "SIGRTMIN+6";
    any other number "signal 99". Never raises: the command can be ended by any signal."""
    if signum in {s.value for s in signal.Signals}:
        return signal.Signals(signum).name
    low, high = getattr(signal, "SIGRTMIN", None), getattr(signal, "SIGRTMAX", None)
    if low is not None and high is not None and low <= signum <= high:
        return f"SIGRTMIN+{signum - low}" if signum > low else "SIGRTMIN"
    return f"signal {signum}"


def _terminal_delivered_it() -> bool:
    """True when topomap is the foreground process group of its terminal (Ctrl-C hit every member)."""
    for stream in (sys.stdin, sys.stderr):
        try:
            fd = stream.fileno()
            if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
                return True
        except (OSError, ValueError, AttributeError):
            continue
    return False


def _wait_exit(pid: int, pidfd: int | None, timeout: float) -> tuple[int, Any] | None:
    """Wait up to ``timeout`` s for the child; (status, rusage) once it has exited, else None."""
    deadline = time.monotonic() + max(0.0, timeout)
    while True:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got == pid:
            return status, usage
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        if pidfd is not None:
            select.select([pidfd], [], [], left)
        else:
            time.sleep(min(left, 0.02))


@dataclass
class _Stats:
    """Running figures of the samples taken (not lists: a run may be long)."""

    n: int = 0
    cost_sum: float = 0.0
    cost_max: float = 0.0
    first_t: float = 0.0
    last_t: float = 0.0

    def add(self, t: float, cost: float) -> None:
        if self.n == 0:
            self.first_t = t
        self.n += 1
        self.last_t = t
        self.cost_sum += cost
        self.cost_max = max(self.cost_max, cost)


@dataclass
class _Sampling:
    """The samplers of one run, sampled together; a sampler that raises is stopped (a problem on
    the record), the command runs on regardless."""

    host: HostSampler
    gpus: GpuSampler | None  # None: no GPU sampled
    start: float  # time.monotonic() when the command started
    on_sample: LiveCallback | None
    interval_s: float
    tree: Tree | None = None  # told of the command's processes each sample (record/tree.py)
    thinned: int = 1
    stats: _Stats = field(default_factory=_Stats)
    broken: list[Problem] = field(default_factory=list)

    def guarded(self, what: str, fn: Callable[[], Any]) -> Any:
        if any(p.call == what for p in self.broken):
            return None
        try:
            return fn()
        except Exception as err:  # a sampling bug must never cost the run or its record
            self.broken.append(
                Problem(source="record", call=what, error=f"stopped sampling: {type(err).__name__}: {err}")
            )
            return None

    def take(self, final: bool = False) -> None:
        t0 = time.monotonic()
        t = t0 - self.start
        pids = self.guarded("host sample", lambda: self.host.sample(t)) or set()
        tree = self.tree
        if tree is not None:
            self.guarded("process tree", lambda: tree.observe(self.host.last))
        gpus = self.gpus
        if gpus is not None:
            self.guarded("gpu sample", lambda: gpus.sample(t, pids))
        self.stats.add(t, time.monotonic() - t0)
        on_sample = self.on_sample
        if on_sample is not None and not final:
            self.guarded("live line", lambda: on_sample(t, gpus.latest_memory() if gpus is not None else []))

    def thin_when_full(self, max_samples: int) -> None:
        """A long run: half the points (every peak kept), and sample half as often from now on."""
        if len(self.host.series.t_s) >= max_samples:
            self.guarded("thin", lambda: _halve_all(self.host, self.gpus))
            self.interval_s, self.thinned = self.interval_s * 2, self.thinned * 2

    def settings(
        self, requested_s: float, recorder_cpu: float, duration: float, probe_s: float, gpu_note: str | None
    ) -> Sampling:
        """How sampling went: ``recorder_cpu`` and ``duration`` of the run and ``probe_s`` of the
        snapshot before it, in seconds; ``gpu_note``: why no GPU was sampled."""
        st = self.stats
        n = st.n
        return Sampling(
            interval_s=requested_s,
            samples=n,
            thinned=self.thinned,
            mean_interval_s=round((st.last_t - st.first_t) / (n - 1), 4) if n > 1 else None,
            sample_cost_mean_s=round(st.cost_sum / n, 6) if n else None,
            sample_cost_max_s=round(st.cost_max, 6) if n else None,
            recorder_cpu_s=round(recorder_cpu, 4),
            overhead_pct=round(recorder_cpu / duration * 100, 2) if duration > 0 else None,
            probe_s=round(probe_s, 3),
            gpu_sampled=self.gpus is not None,
            gpu_note=gpu_note,
        )


@dataclass(frozen=True)
class _Exit:
    """How and when the command ended."""

    status: int  # as os.wait4 gives it
    usage: Any  # resource.struct_rusage of the command's tree
    end: float  # time.monotonic()
    end_wall: float  # time.time()


def _start(
    command: list[str], env: dict[str, str], signals: _Signals, gpus: GpuSampler | None, tree: Tree
) -> subprocess.Popen[bytes]:
    """The command, started with the signal handlers in place (no signal in between is lost), in a
    process group of its own (unless a terminal's foreground job) and in the tree's cgroup if any."""
    signals.install()
    group = not _terminal_delivered_it()  # module docstring: a terminal's foreground job keeps its group
    join = tree.join()
    own: dict[str, Any] = {}
    if group and sys.version_info >= (3, 11):
        own["process_group"] = 0
    if join is not None or (group and sys.version_info < (3, 11)):

        def setup() -> None:  # between fork and exec: the group first, then the cgroup
            if group and sys.version_info < (3, 11):
                os.setpgrp()
            if join is not None:
                join()

        own["preexec_fn"] = setup
    try:
        child = subprocess.Popen(command, env=env, **own)
    except (OSError, subprocess.SubprocessError) as err:  # not found, not executable, not a program (ENOEXEC), …
        signals.restore()
        tree.end(keep=True)
        if gpus is not None:
            gpus.close()
        reason = err.strerror if isinstance(err, OSError) and err.strerror else err
        raise TopomapError(f"cannot run {command[0]!r}: {reason}", hint="check the command") from err
    signals.started(child.pid, group)
    tree.started(child.pid, group)
    return child


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when the process exits (Linux ≥ 5.3); None elsewhere."""
    if not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def _sample_until_exit(child: subprocess.Popen[bytes], sampling: _Sampling, max_samples: int) -> _Exit:
    """Sample every interval until the command exits, then once more; the command is reaped here."""
    pidfd = _pidfd(child.pid)
    try:
        next_tick = sampling.start
        while True:
            next_tick += sampling.interval_s
            sampling.take()
            sampling.thin_when_full(max_samples)
            waited = _wait_exit(child.pid, pidfd, next_tick - time.monotonic())
            if waited is not None:
                break
        end = _Exit(waited[0], waited[1], time.monotonic(), time.time())
        sampling.take(final=True)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    child.returncode = os.waitstatus_to_exitcode(end.status)  # wait4 reaped it; tell Popen
    return end


@dataclass(frozen=True)
class Recorded:
    """A finished record, with the notes about the command's processes as typed values (their words
    are in ``run.notes``): what it left and what was done about it, by kind."""

    run: Run
    tree_notes: list[TreeNote]


def record(command: list[str], opts: RecordOptions | None = None) -> Run:
    """Run ``command`` to its end, sampling every ``opts.interval_s`` seconds; the complete record."""
    return record_run(command, opts).run


def record_run(command: list[str], opts: RecordOptions | None = None) -> Recorded:
    """:func:`record`, with the notes about what the command left as :class:`TreeNote` values."""
    opts = opts or RecordOptions()
    if not command:
        raise TopomapError("record needs a command to run", hint="topomap record -- python train.py")
    env = dict(os.environ) if opts.env is None else opts.env
    t_probe = time.monotonic()
    snapshot = (opts.snapshot or _default_snapshot)()
    probe_s = time.monotonic() - t_probe
    gpus, gpu_note = _open_gpus(opts)
    sampled = gpus if gpus is not None and gpu_note is None else None
    if sampled is not None:
        mark_visibility([c.series for c in sampled.cards], env, snapshot)
    signals = _Signals()
    tree = Tree.make(opts.cgroup)
    child = _start(command, env, signals, gpus, tree)
    start_wall, start = time.time(), time.monotonic()
    cpu0 = time.process_time()
    sampling = _Sampling(HostSampler(child.pid), sampled, start, opts.on_sample, opts.interval_s, tree)
    try:
        end = _sample_until_exit(child, sampling, opts.max_samples)
        recorder_cpu = time.process_time() - cpu0
        ending = tree.end(keep=opts.leave_running, grace_s=opts.grace_s)  # what the command left (tree.py)
    except BaseException:
        tree.end(keep=True)  # never a cgroup left behind; its processes stay as they are
        raise
    finally:
        signals.restore()
    tree_notes = tree.notes(ending)
    notes = [*opts.notes, *(n.text for n in tree_notes)]
    if gpus is not None:
        gpus.close()
    duration = end.end - start
    code = os.waitstatus_to_exitcode(end.status)
    host = sampling.host.series
    host.cpu_user_s = round(end.usage.ru_utime, 3)
    host.cpu_system_s = round(end.usage.ru_stime, 3)
    host.max_rss_bytes = end.usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    pad_columns(host)
    for card in sampled.cards if sampled is not None else []:
        pad_columns(card.series)
    run = Run(
        tool=f"topomap {__version__}",
        label=opts.label,
        command=list(command),
        cwd=os.getcwd(),
        hostname=socket.gethostname(),
        environment=placement_environment(env),
        versions=versions(snapshot),
        started_at=_utc(start_wall),
        ended_at=_utc(end.end_wall),
        duration_s=round(duration, 4),
        exit_status=128 - code if code < 0 else code,
        signal=signal_name(-code) if code < 0 else None,
        interrupted_by=signals.first,
        sampling=sampling.settings(opts.interval_s, recorder_cpu, duration, probe_s, gpu_note),
        gpus=[c.series for c in sampled.cards] if sampled is not None else [],
        host=host,
        snapshot=snapshot,
        problems=[*sampling.host.problems, *(gpus.problems if gpus is not None else []), *sampling.broken],
        notes=notes,
    )
    return Recorded(run, tree_notes)
