"""A measurement worker: a child process that owns the CUDA state and runs jobs sent to it.

The parent never touches CUDA during a measurement, so a job that hangs (a broken peer path
can block forever) is ended by killing this process, and a sticky CUDA error dies with it.
Results come back as plain data over a pipe.
"""

from __future__ import annotations

from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from topomap.probe.measure_copy import CudaFail, Session
from topomap.probe.measure_jobs import HostSpec, PairSpec, Settings, run_host, run_pair


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
                conn.send(("ok", {k: s.uuid(k) for k in spec}))
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
