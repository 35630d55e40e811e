"""Time budgets for driver calls: every NVML and CUDA call runs in a worker thread and is cut
when it runs past its per-call limit or past the probe's overall budget.

A call into ``libnvidia-ml`` or ``libcuda`` can block for minutes on a wedged GPU (an Xid storm,
a GPU falling off the bus, Fabric Manager hanging during NVSwitch training). A Python thread
cannot be killed, so a call that runs past its limit is abandoned: its daemon worker is left
behind (it ends when the call returns, or with the process) and the next call gets a fresh
worker. The probe records the call as "timed out after N s" and carries on.

One worker runs the calls one after another, so a CUDA context made current by one call is
current for the next (contexts are per thread), until a timeout replaces the worker.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

# Defaults, in seconds. nvmlInit on a machine without persistence mode wakes every GPU and
# takes about a second per GPU (nvml-cuda.md §3.1), so initialisation gets a longer limit.
CALL_TIMEOUT_S = 15.0
INIT_TIMEOUT_S = 60.0
TOTAL_BUDGET_S = 180.0


class CallTimedOut(Exception):
    """A driver call ran past its limit (seconds in ``limit_s``); its thread was abandoned."""

    def __init__(self, limit_s: float) -> None:
        super().__init__(f"timed out after {_fmt_s(limit_s)} s")
        self.limit_s = limit_s


class BudgetSpent(Exception):
    """The probe's overall time budget is used up; the call was not made."""

    def __init__(self, total_s: float) -> None:
        super().__init__(f"not called: the probe's time budget of {_fmt_s(total_s)} s is spent")
        self.total_s = total_s


def _fmt_s(seconds: float) -> str:
    return f"{seconds:g}"


@dataclass
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    done: threading.Event = field(default_factory=threading.Event)
    value: Any = None
    error: BaseException | None = None


class _Worker:
    """One daemon thread that runs jobs in order; told to stop by a ``None`` job."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name="topomap-driver-call", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            try:
                job.value = job.fn(*job.args)
            except BaseException as err:  # handed to the caller, who decides
                job.error = err
            job.done.set()

    def stop(self) -> None:
        self.jobs.put(None)


@dataclass
class CallRunner:
    """Runs driver calls under a per-call limit and an overall budget (seconds; None: no limit)."""

    call_s: float = CALL_TIMEOUT_S
    total_s: float | None = TOTAL_BUDGET_S
    started: float = field(default_factory=time.monotonic)
    timed_out: int = 0  # calls cut so far
    _worker: _Worker | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def left_s(self) -> float | None:
        """Seconds left in the overall budget (None: unlimited)."""
        if self.total_s is None:
            return None
        return self.total_s - (time.monotonic() - self.started)

    def spent(self) -> bool:
        left = self.left_s()
        return left is not None and left <= 0

    def run(self, fn: Callable[..., Any], *args: Any, limit_s: float | None = None) -> Any:
        """``fn(*args)`` in the worker; its exception is re-raised here.

        Raises :class:`CallTimedOut` past ``limit_s`` (default: the per-call limit) and
        :class:`BudgetSpent` when no budget is left, before or during the call.
        """
        limit = self.call_s if limit_s is None else limit_s
        left = self.left_s()
        by_budget = False
        if left is not None and self.total_s is not None:
            if left <= 0:
                raise BudgetSpent(self.total_s)
            by_budget = left < limit
            limit = min(limit, left)
        with self._lock:
            if self._worker is None:
                self._worker = _Worker()
            worker = self._worker
            job = _Job(fn, args)
            worker.jobs.put(job)
            if not job.done.wait(limit):
                self._worker = None  # abandoned: it may return some day, then it stops
                worker.stop()
                self.timed_out += 1
                if by_budget and self.total_s is not None:
                    raise BudgetSpent(self.total_s)
                raise CallTimedOut(limit)
        if job.error is not None:
            raise job.error
        return job.value

    def close(self) -> None:
        """Let the worker end (an abandoned one ends when its call returns)."""
        with self._lock:
            if self._worker is not None:
                self._worker.stop()
                self._worker = None


_ACTIVE: contextvars.ContextVar[CallRunner | None] = contextvars.ContextVar("topomap_call_runner", default=None)
_FALLBACK = CallRunner(total_s=None)


def active_runner() -> CallRunner:
    """The runner of the probe in progress; outside a probe, one with per-call limits only."""
    return _ACTIVE.get() or _FALLBACK


@contextlib.contextmanager
def using(runner: CallRunner) -> Iterator[CallRunner]:
    """Make ``runner`` the active one for the calls made inside the block, then close it."""
    token = _ACTIVE.set(runner)
    try:
        yield runner
    finally:
        _ACTIVE.reset(token)
        runner.close()
