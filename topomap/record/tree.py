"""Every process a recorded command started, and ending them when it ends (issue 36 item 7: after
Ctrl-C, `record -- bash -c 'sleep 300 & sleep 300 & wait'` exited leaving both sleeps running, since
bash's background jobs ignore SIGINT; a daemon started with `setsid` or a double fork was not even
named).

Where a cgroup (v2) can be made — the cgroup2 hierarchy mounted and writable, as for root in most
containers — the command joins a new one before it runs: every process it starts stays in it, whatever
its process group or session, so none can escape. Elsewhere the processes are found by walking
``/proc``: each seen in the command's tree while it was sampled, those still in its process group,
those in a session one of them started (``setsid``), and the descendants of all these; a process that
started and left the tree between two samples (a fast double fork) is not seen, and the record says so.

When the command has ended, what is left of it is ended as `timeout` and `systemd` end a job: SIGTERM,
then SIGKILL after :data:`GRACE_S`. ``keep`` (``--leave-running``) leaves them running and names them.
Either way the record says which processes were left, which of them had escaped the command's process
group, and how they were found. Only the command's own processes are ever signalled: each is checked
against the start time it had when it was found, so a reused pid is left alone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import psutil

#: Seconds between SIGTERM and SIGKILL for what the command left.
GRACE_S = 2.0
#: Seconds to wait for a cgroup to empty (its last processes reaped) before it is removed.
_EMPTY_S = 5.0


def _sweep(folder: Path) -> None:
    """Remove the empty cgroups earlier records left in ``folder`` (their recorder gone): one is left
    when its last process was not reaped in time."""
    with contextlib.suppress(OSError):
        for d in folder.glob("topomap-record-*-*"):
            pid = d.name.split("-")[2]
            if pid.isdigit() and not psutil.pid_exists(int(pid)):
                with contextlib.suppress(OSError):
                    d.rmdir()


@dataclass(frozen=True)
class Proc:
    """One process of the command: pid, name, start time (psutil's, to tell a reused pid) and group."""

    pid: int
    name: str
    started: float
    pgid: int | None

    def text(self) -> str:
        return f"pid {self.pid} ({self.name})"


#: What a note of the record says: processes the command left ``left-running`` (``--leave-running``),
#: ``ended`` (SIGTERM), ``killed`` (SIGKILL), or ``escaped`` its process group; ``found``: how they were found.
TreeNoteKind = Literal["left-running", "ended", "killed", "escaped", "found"]


@dataclass(frozen=True)
class TreeNote:
    """One note of the record about the command's processes: its kind and its words (what the record
    file keeps, in :attr:`topomap.record.model.Run.notes`)."""

    kind: TreeNoteKind
    text: str


@dataclass
class Ending:
    """What was left when the command ended: ``ended`` by SIGTERM, ``killed`` after the grace period,
    ``left`` running (``--leave-running``), and which of them had ``escaped`` the process group."""

    ended: list[Proc] = field(default_factory=list)
    killed: list[Proc] = field(default_factory=list)
    left: list[Proc] = field(default_factory=list)
    escaped: list[Proc] = field(default_factory=list)


def _cgroup2_root() -> Path | None:
    """Where the cgroup2 hierarchy is mounted (``/sys/fs/cgroup``, or ``…/unified`` beside v1), or None."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            return Path(left.split(" ")[4].replace("\\040", " "))
    return None


def _own_cgroup() -> str | None:
    """This process's cgroup2 path (``0::/path`` in /proc/self/cgroup)."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:]
    except OSError:
        pass
    return None


class Tree:
    """The command's processes: its cgroup where one could be made (:meth:`make`), else what was seen."""

    def __init__(self, cgroup: Path | None, why: str | None) -> None:
        self.cgroup = cgroup
        self.why = why  # why no cgroup is used (for the record's note)
        self.seen: dict[int, Proc] = {}
        self.pid: int | None = None
        self.pgid: int | None = None  # the command's process group (its own, or topomap's in a terminal)

    @classmethod
    def make(cls, use_cgroup: bool = True) -> Tree:
        """A tree with a new cgroup beside topomap's own, or without one and the reason."""
        if not use_cgroup:
            return cls(None, "not asked for")
        root, own = _cgroup2_root(), _own_cgroup()
        if root is None or own is None:
            return cls(None, "no cgroup v2 hierarchy here")
        here = root / own.lstrip("/")
        _sweep(here)
        path = here / f"topomap-record-{os.getpid()}-{secrets.token_hex(3)}"
        try:
            path.mkdir()
        except OSError as err:
            return cls(None, f"cannot make a cgroup ({err.strerror or err})")
        return cls(path, None)

    def join(self) -> Callable[[], None] | None:
        """For the child, between fork and exec: move itself into the cgroup (None without one). A
        failure is left to :meth:`started` to find: nothing may raise there."""
        if self.cgroup is None:
            return None
        procs = os.fsencode(self.cgroup / "cgroup.procs")

        def join() -> None:
            try:
                fd = os.open(procs, os.O_WRONLY)
                try:
                    os.write(fd, str(os.getpid()).encode())
                finally:
                    os.close(fd)
            except OSError:
                pass

        return join

    def started(self, pid: int, group: bool) -> None:
        """The command runs as ``pid`` (leading a process group of its own when ``group``)."""
        self.pid = pid
        self.pgid = pid if group else os.getpgrp()
        if self.cgroup is not None and pid not in self._members():
            self.why = "the command could not join its cgroup"
            self._remove()

    def observe(self, procs: list[psutil.Process]) -> None:
        """The command's tree as one sample saw it: remembered, for a /proc walk at the end."""
        for p in procs:
            if p.pid not in self.seen:
                found = _proc(p)
                if found is not None:
                    self.seen[p.pid] = found

    # --- what is left -----------------------------------------------------------------------------

    def _members(self) -> set[int]:
        """The pids in the cgroup and any cgroup below it."""
        out: set[int] = set()
        if self.cgroup is None:
            return out
        for folder, _dirs, files in os.walk(self.cgroup):
            if "cgroup.procs" in files:
                with contextlib.suppress(OSError, ValueError):
                    out.update(int(x) for x in Path(folder, "cgroup.procs").read_text().split())
        return out

    def remaining(self) -> list[Proc]:
        """The command's processes still running (zombies are ended already), topomap itself excepted."""
        me = os.getpid()
        found: dict[int, Proc] = {}
        if self.cgroup is not None:
            for pid in self._members():
                p = _process(pid)
                info = _proc(p) if p is not None else None
                if info is not None:
                    found[pid] = info
        else:
            found = self._walked()
        return sorted((p for p in found.values() if p.pid != me and _running(p)), key=lambda p: p.pid)

    def _walked(self) -> dict[int, Proc]:
        """Without a cgroup: the processes seen while sampling, still running as themselves; those of the
        command's process group and of sessions a seen process leads (setsid); their descendants."""
        found = {pid: p for pid, p in self.seen.items() if _running(p)}
        leaders = {p.pid for p in self.seen.values()}
        own_group = self.pgid is not None and self.pgid != os.getpgrp()  # topomap's own: not the command's
        for q in psutil.process_iter(["pid"]):
            with contextlib.suppress(psutil.Error, OSError):
                if q.pid in found:
                    continue
                pgid, sid = os.getpgid(q.pid), os.getsid(q.pid)
                if (own_group and pgid == self.pgid) or sid in leaders:
                    info = _proc(q)
                    if info is not None:
                        found[q.pid] = info
        for pid in list(found):
            p = _process(pid)
            with contextlib.suppress(psutil.Error):
                for child in p.children(recursive=True) if p is not None else []:
                    info = _proc(child)
                    if info is not None:
                        found.setdefault(child.pid, info)
        return found

    # --- ending them ------------------------------------------------------------------------------

    def end(self, keep: bool = False, grace_s: float = GRACE_S) -> Ending:
        """End what the command left: SIGTERM, then SIGKILL after ``grace_s``; with ``keep``, only name
        them. Then the cgroup goes (its processes moved back to topomap's own when kept)."""
        left = self.remaining()
        out = Ending(escaped=[p for p in left if p.pgid != self.pgid])
        if keep:
            out.left = left
            self._release(left)
            return out
        for p in left:
            _signal(p, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(_running(p) for p in left):
            time.sleep(0.02)
        survivors = [p for p in left if _running(p)]
        out.ended = [p for p in left if p not in survivors]
        if survivors:
            self._kill(survivors)
            out.killed = survivors
        self._remove()
        return out

    def _kill(self, procs: list[Proc]) -> None:
        if self.cgroup is not None:
            with contextlib.suppress(OSError):  # the kernel ends every member at once (Linux 5.14)
                (self.cgroup / "cgroup.kill").write_text("1")
        for p in procs:
            _signal(p, signal.SIGKILL)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and any(_running(p) for p in procs):
            time.sleep(0.02)

    def _release(self, procs: list[Proc]) -> None:
        """Leave ``procs`` (and every other member) running where topomap runs, out of the command's
        cgroup, then remove it."""
        if self.cgroup is not None:
            parent = self.cgroup.parent / "cgroup.procs"
            for pid in {p.pid for p in procs} | self._members():
                with contextlib.suppress(OSError):
                    parent.write_text(str(pid))
        self._remove()

    def _remove(self) -> None:
        """Remove the cgroup once it is empty: an ended process stays in it until its parent (init, for an
        orphan) has reaped it, so up to :data:`_EMPTY_S` are waited for; a cgroup still populated then is
        left, and removed by the next record (:func:`_sweep`)."""
        if self.cgroup is None:
            return
        deadline = time.monotonic() + _EMPTY_S
        while True:
            try:
                self.cgroup.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)
        self.cgroup = None

    def notes(self, ending: Ending) -> list[TreeNote]:
        """The record's notes: what was left, what was done about it, how it was found."""
        if not (ending.ended or ending.killed or ending.left):
            return []
        how = (
            "found through the command's cgroup"
            if self.why is None
            else f"found by walking /proc ({self.why}: a process that started and left between two samples is not seen)"
        )
        out: list[TreeNote] = []
        if ending.left:
            words = f"still running when the command ended, left running (--leave-running): {_names(ending.left)}"
            out.append(TreeNote("left-running", words))
        if ending.ended:
            out.append(
                TreeNote("ended", f"still running when the command ended, ended (SIGTERM): {_names(ending.ended)}")
            )
        if ending.killed:
            words = f"still running {GRACE_S:g} s after SIGTERM, killed (SIGKILL): {_names(ending.killed)}"
            out.append(TreeNote("killed", words))
        if ending.escaped:
            words = f"escaped the command's process group (setsid or a double fork): {_names(ending.escaped)}"
            out.append(TreeNote("escaped", words))
        out.append(TreeNote("found", f"processes of the command {how}"))
        return out


def _names(procs: list[Proc]) -> str:
    shown = ", ".join(p.text() for p in procs[:10])
    return shown + (f" and {len(procs) - 10} more" if len(procs) > 10 else "")


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def _proc(p: psutil.Process) -> Proc | None:
    try:
        with p.oneshot():
            pgid: int | None
            try:
                pgid = os.getpgid(p.pid)
            except OSError:
                pgid = None
            return Proc(p.pid, p.name(), p.create_time(), pgid)
    except psutil.Error:
        return None


def _running(p: Proc) -> bool:
    """The process is alive, not a zombie, and the same one (its start time)."""
    q = _process(p.pid)
    try:
        return q is not None and q.create_time() == p.started and q.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _signal(p: Proc, sig: int) -> None:
    if _running(p):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p.pid, sig)
