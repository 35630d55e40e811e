"""The files named on a flow command's line: the flow file itself (anything else in its place named as
such, with the command that reads it) and the machines for its hosts, bound by the library's
:func:`topomap.api.bind_snapshots` with the CLI's loader (which names a misplaced file and applies
``--lot-type``)."""

from __future__ import annotations

from collections.abc import Sequence

from topomap.api import bind_snapshots
from topomap.cli.given import misplaced
from topomap.cli.wiring import _load
from topomap.files.kind import file_kind
from topomap.flow import Flow, read_flow
from topomap.graph import Topology


def bind_probes(flow: Flow, probes: list[str], machines: Sequence[str] = ()) -> dict[str, Topology | None]:
    """The flow's hosts bound to the machines given after it (``machines``), then ``--probe``, then the
    flow file's own paths (:func:`topomap.api.bind_snapshots`)."""
    return bind_snapshots(flow, probes, machines, loader=_load)


def read_flow_file(path: str, command: str) -> Flow:
    """The flow file ``command`` was given; a run record, a requirements file, a snapshot or a
    topology in its place is named as such, with the command that reads it."""
    kind = file_kind(path)
    if kind not in (None, "flow"):
        raise misplaced(path, kind, command)
    return read_flow(path)
