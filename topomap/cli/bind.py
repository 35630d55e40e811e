"""The files named on a flow command's line: the flow file itself (anything else in its place named as
such) and the snapshots for its hosts, given after it (``[NAME=]FILE``) or with ``--probe``: the
arguments parsed, the files loaded (each once), the flow's own snapshot paths (relative to the flow
file) loaded for the hosts no argument binds, then :func:`topomap.flow.bind_hosts` binds the flow."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from topomap.cli.given import misplaced
from topomap.cli.wiring import _load
from topomap.files.kind import file_kind
from topomap.flow import Flow, FlowError, GivenSnapshot, SnapshotFile, bind_hosts, claim_hosts, read_flow
from topomap.flow.spec import name_hint
from topomap.graph import Topology
from topomap.model.snapshot import Snapshot


class _Files:
    """Snapshots loaded by path, each file once (a merged cluster binds many hosts)."""

    def __init__(self) -> None:
        self.loaded: dict[str, Snapshot] = {}

    def __call__(self, path: str) -> SnapshotFile:
        if path not in self.loaded:
            self.loaded[path] = _load(path)
        return SnapshotFile(self.loaded[path], path)


def bind_probes(flow: Flow, probes: list[str], machines: Sequence[str] = ()) -> dict[str, Topology | None]:
    """Bind the flow's hosts to snapshots: ``NAME=FILE`` (or a bare FILE for a one-host flow, or a
    merged cluster file binding every flow host named like one of its hosts) from the command line
    first — ``machines`` given after the flow, then ``--probe`` — then the paths in the flow file
    (relative to it). A binding that binds nothing, a host bound twice and an empty path are refused."""
    load = _Files()
    args = [(arg, arg) for arg in machines] + [(arg, f"--probe {arg}") for arg in probes]
    claimed = claim_hosts(flow, [_given(flow, arg, origin, load) for arg, origin in args])
    files: dict[str, SnapshotFile | None] = {}
    for host, path in flow.host_files.items():
        if host in claimed:
            files[host] = claimed[host].file
        else:
            files[host] = load(str(Path(flow.path).parent / path)) if path else None
    return bind_hosts(flow, files)


def _given(flow: Flow, arg: str, origin: str, load: _Files) -> GivenSnapshot:
    """One snapshot argument (``origin``: as the user gave it, ``--probe lot=a.json`` or ``lot=a.json``),
    checked, its file loaded."""
    hosts = list(flow.spec.hosts)
    name, sep, path = arg.partition("=")
    if sep and not path.strip():
        raise FlowError(f"{origin}: no file given", hint=f"{name or hosts[0]}=SNAPSHOT")
    if sep and not name:
        raise FlowError(f"{origin}: no host name before '='", hint=f"{hosts[0]}={path}")
    if sep and name not in flow.spec.hosts:
        raise FlowError(
            f"{origin}: the flow {flow.path} has no host {name!r}", hint=name_hint(name, hosts, "its hosts")
        )
    return GivenSnapshot(name if sep else None, load(path if sep else arg), origin)


def read_flow_file(path: str, command: str) -> Flow:
    """The flow file ``command`` was given; a run record, a requirements file, a snapshot or a
    topology in its place is named as such, with the command that reads it."""
    kind = file_kind(path)
    if kind not in (None, "flow"):
        raise misplaced(path, kind, command)
    return read_flow(path)
