"""The files named on a flow command's line: the flow file itself (a run record or requirements file in
its place named as such) and `--probe [NAME=]FILE`: the arguments parsed, the files loaded (each once),
the flow's own snapshot paths (relative to the flow file) loaded for the hosts no argument binds,
then :func:`topomap.flow.bind_hosts` binds the flow to them."""

from __future__ import annotations

from pathlib import Path

from topomap.base.errors import TopomapError
from topomap.files.kind import file_kind, is_run_file
from topomap.flow import Flow, FlowError, GivenSnapshot, SnapshotFile, bind_hosts, claim_hosts, read_flow
from topomap.flow.spec import name_hint
from topomap.graph import Topology
from topomap.importers import load_any
from topomap.model.snapshot import Snapshot


class _Files:
    """Snapshots loaded by path, each file once (a merged cluster binds many hosts)."""

    def __init__(self) -> None:
        self.loaded: dict[str, Snapshot] = {}

    def __call__(self, path: str) -> SnapshotFile:
        if path not in self.loaded:
            self.loaded[path] = load_any(path)
        return SnapshotFile(self.loaded[path], path)


def bind_probes(flow: Flow, probes: list[str]) -> dict[str, Topology | None]:
    """Bind the flow's hosts to snapshots: ``NAME=FILE`` (or a bare FILE for a one-host flow, or a
    merged cluster file binding every flow host named like one of its hosts) from the command line
    first, then the paths in the flow file (relative to it). A binding that binds nothing, a host
    bound twice and an empty path are refused."""
    load = _Files()
    claimed = claim_hosts(flow, [_given(flow, arg, load) for arg in probes])
    files: dict[str, SnapshotFile | None] = {}
    for host, path in flow.host_files.items():
        if host in claimed:
            files[host] = claimed[host].file
        else:
            files[host] = load(str(Path(flow.path).parent / path)) if path else None
    return bind_hosts(flow, files)


def _given(flow: Flow, arg: str, load: _Files) -> GivenSnapshot:
    """One ``--probe`` argument, checked, its file loaded."""
    hosts = list(flow.spec.hosts)
    name, sep, path = arg.partition("=")
    if sep and not path.strip():
        raise FlowError(f"--probe {arg}: no file given", hint=f"--probe {name or hosts[0]}=SNAPSHOT")
    if sep and not name:
        raise FlowError(f"--probe {arg}: no host name before '='", hint=f"--probe {hosts[0]}={path}")
    if sep and name not in flow.spec.hosts:
        raise FlowError(
            f"--probe {arg}: the flow {flow.path} has no host {name!r}", hint=name_hint(name, hosts, "its hosts")
        )
    return GivenSnapshot(name if sep else None, load(path if sep else arg), f"--probe {arg}")


def read_flow_file(path: str, command: str) -> Flow:
    """The flow file ``command`` was given; a run record or a requirements file in its place is named as such."""
    if is_run_file(path):
        raise TopomapError(
            f"{path}: this is a run record (topomap record), not a flow file",
            hint=f"{command} takes a flow file (YAML: flow, hosts, steps, arrows); "
            "show, diff and render take run records",
        )
    try:
        return read_flow(path)
    except TopomapError as err:
        if file_kind(path) == "requirements":
            raise TopomapError(
                f"{path}: this is a requirements file; {command} takes a flow file",
                hint=f"give the flow file (flow, hosts, steps, arrows) to {command}; "
                f"check it with `topomap check {path} --probe SNAP`",
            ) from err
        raise
