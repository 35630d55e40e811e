"""Host-side sampling with psutil: the command's process tree, and whole-host disk and network.

CPU is the sum over the tree of user+system time gained since the previous sample, divided by
the wall time between samples (100 % = one logical CPU busy). A process born and gone between
two samples is missed here; the kernel's rusage at exit (taken by the runner) has the exact total.
Disk and network counters are the whole host's (psutil cannot split them per process tree for
network, and per-process disk counters vanish with the process), counted from the command's start.
"""

from __future__ import annotations

from typing import Any

import psutil

from topomap.model.snapshot import Problem
from topomap.record.model import HostSeries


class HostSampler:
    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self.series = HostSeries(cpu_count=psutil.cpu_count(), memory_total_bytes=psutil.virtual_memory().total)
        self.problems: list[Problem] = []
        self._cpu: dict[int, float] = {}
        self.last: list[psutil.Process] = []  # the tree as the last sample saw it (record/tree.py)
        self._prev_t: float | None = None
        self._disk0 = _disk()
        self._net0 = _net()
        try:
            self._root: psutil.Process | None = psutil.Process(root_pid)
        except psutil.Error:
            self._root = None
        if self._disk0 is None:
            self.problems.append(
                Problem(source="psutil", call="disk_io_counters", error="no disk counters here (container?)")
            )
        if self._net0 is None:
            self.problems.append(Problem(source="psutil", call="net_io_counters", error="no network counters here"))

    def tree(self) -> list[psutil.Process]:
        """The command and all its living descendants."""
        if self._root is None:
            return []
        try:
            return [self._root, *self._root.children(recursive=True)]
        except psutil.Error:
            return []

    def sample(self, t: float) -> set[int]:
        """One sample at ``t`` seconds since start; returns the pids of the tree (for NVML attribution)."""
        s = self.series
        procs = self.tree()
        self.last = procs
        cpu_now: dict[int, float] = {}
        rss = 0
        for p in procs:
            try:
                with p.oneshot():
                    ct = p.cpu_times()
                    cpu_now[p.pid] = ct.user + ct.system
                    rss += p.memory_info().rss
            except psutil.Error:  # gone or a zombie between listing and reading
                continue
        gained = sum(max(0.0, v - self._cpu.get(pid, 0.0)) for pid, v in cpu_now.items())
        dt = t - self._prev_t if self._prev_t is not None else t
        s.t_s.append(round(t, 4))
        s.tree_cpu_pct.append(round(gained / dt * 100, 1) if dt > 0 and cpu_now else None)
        s.tree_rss_bytes.append(rss if cpu_now else None)
        s.tree_processes.append(len(cpu_now))
        # keep the CPU of processes that ended, so a reused pid does not count twice
        self._cpu.update(cpu_now)
        self._prev_t = t
        disk, net = _disk(), _net()
        s.disk_read_bytes.append(_since(disk, self._disk0, 0))
        s.disk_write_bytes.append(_since(disk, self._disk0, 1))
        s.net_rx_bytes.append(_since(net, self._net0, 0))
        s.net_tx_bytes.append(_since(net, self._net0, 1))
        return set(cpu_now)


def name_of(pid: int) -> str | None:
    """A process's name, or None when it is gone or hidden (another container's pid namespace)."""
    try:
        return str(psutil.Process(pid).name())
    except psutil.Error:
        return None


def _disk() -> tuple[int, int] | None:
    try:
        d: Any = psutil.disk_io_counters()
    except (OSError, RuntimeError):
        return None
    return (int(d.read_bytes), int(d.write_bytes)) if d is not None else None


def _net() -> tuple[int, int] | None:
    try:
        n: Any = psutil.net_io_counters()
    except (OSError, RuntimeError):
        return None
    return (int(n.bytes_recv), int(n.bytes_sent)) if n is not None else None


def _since(now: tuple[int, int] | None, base: tuple[int, int] | None, k: int) -> int | None:
    if now is None or base is None:
        return None
    return max(0, now[k] - base[k])
