"""A measurement worker: a child process that owns the CUDA state and runs jobs sent to it.

The parent never touches CUDA during a measurement, so a job that hangs (a broken peer path
can block forever) is ended by killing this process, and a sticky CUDA error dies with it.
Results come back as plain data over a pipe.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from topomap.measure.copies import CudaFail, Session
from topomap.measure.jobs import HostSpec, PairSpec, Settings, run_host, run_pair


def worker_main(conn: Connection, factory: Callable[[], Any]) -> None:
    """Serve jobs until told to stop: ``("host"|"pair"|"uuid", spec, settings)`` → reply."""
    try:
        cu = factory()
        s = Session(cu)
    except CudaFail as err:
        conn.send(("fatal", (err.call, err.ordinal, err.code, err.name)))
        return
    except ImportError as err:
        conn.send(("fatal", ("import cuda.bindings", None, -1, str(err))))
        return
    conn.send(("ready", None))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            break
        if msg is None:
            break
        kind, spec, settings = msg
        try:
            if kind == "uuid":
                conn.send(("ok", {k: (s.uuid(k), s.bus_id(k)) for k in spec}))
            elif kind == "host":
                assert isinstance(spec, HostSpec) and isinstance(settings, Settings)
                conn.send(("ok", run_host(cu, s, spec, settings)))
            else:
                assert isinstance(spec, PairSpec) and isinstance(settings, Settings)
                conn.send(("ok", run_pair(cu, s, spec, settings)))
        except CudaFail as err:
            conn.send(("fail", (err.call, err.ordinal, err.code, err.name)))
            break  # a failed context may be poisoned: the parent starts a fresh worker
    s.close()


class Worker:
    """A worker process seen from the parent: start, run one job under a time limit, kill."""

    def __init__(self, factory: Callable[[], Any], method: str) -> None:
        self.factory, self.method = factory, method
        self.proc: Any = None
        self.conn: Any = None

    def start(self, timeout: float) -> tuple[str, Any]:
        ctx: Any = mp.get_context(self.method)
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(child, self.factory), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        return self._reply(timeout)

    def _reply(self, timeout: float) -> tuple[str, Any]:
        try:
            if not self.conn.poll(timeout):
                self.kill()
                return "timeout", None
            reply: tuple[str, Any] = self.conn.recv()
            return reply
        except (EOFError, OSError):
            self.kill()
            return "died", None

    def run(self, msg: tuple[str, Any, Any], timeout: float) -> tuple[str, Any]:
        try:
            self.conn.send(msg)
        except (BrokenPipeError, OSError):
            self.kill()
            return "died", None
        reply = self._reply(timeout)
        if reply[0] == "fail":
            self.kill()
        return reply

    def alive(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    def kill(self) -> None:
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(5)
        self.proc = None

    def stop(self) -> None:
        if self.alive():
            with contextlib.suppress(OSError):
                self.conn.send(None)
            self.proc.join(5)
        self.kill()
