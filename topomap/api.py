"""topomap as a library: the few calls people scripting around the tool look for, the ones the CLI and
the tests use too.

    >>> import topomap
    >>> snap = topomap.load("samples/snapshots/ibm-gx3d-h100-8gpu.json")  # a snapshot, paste or declared lot
    >>> snap.gpus[0].name
    'NVIDIA H100 80GB HBM3'
    >>> fmap = topomap.map_flow("samples/flows/two-host-pipeline.yaml")   # hosts from the flow's own paths
    >>> for a in fmap.arrows:
    ...     print(a.src, "→", a.dst, a.medium, a.bandwidth_gbps, a.bandwidth_source)
    node-a:memory → node-a:gpu7 host-memory None unknown
    node-a:gpu7 → node-b:gpu0 network 25.0 spec
    node-b:gpu0 → node-b:memory host-memory None unknown

:func:`load` reads any file a command takes as a machine (snapshot JSON, a raw ``nvidia-smi``, NCCL,
hwloc, ``lstopo``, AMD or nccl-tests output, a declared lot). :func:`load_flow` reads a flow file and binds
its hosts: ``NAME=FILE`` (or a bare FILE for a one-host flow, or a merged cluster) given after the flow,
then ``probes``, then the paths in the flow file (relative to it). :func:`map_flow` maps it. Errors are
:class:`topomap.base.errors.TopomapError` with a one-line message (``str(err)``) and a ``hint``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from topomap.flow import Flow, FlowError, FlowMap, GivenSnapshot, SnapshotFile, bind_hosts, claim_hosts, read_flow
from topomap.flow import map_flow as _map
from topomap.flow.spec import name_hint
from topomap.graph import Topology
from topomap.model.snapshot import Snapshot

Loader = Callable[[str], Snapshot]

__all__ = ["BoundFlow", "bind_snapshots", "load", "load_flow", "map_flow"]


def load(path: str | Path, *, lot_type: str | None = None) -> Snapshot:
    """A machine from any file a command takes as one; ``lot_type`` (``aws/p4de.24xlarge``) fills what the
    file does not carry from that catalogue entry, each such fact labelled ``catalogue``."""
    from topomap.importers import load_any  # the importers load on first use: `import topomap` stays light

    snap = load_any(str(path))
    if lot_type is None:
        return snap
    from topomap.model.lots import with_lot_type

    return with_lot_type(snap, lot_type)


@dataclass(frozen=True)
class BoundFlow:
    """A flow with each of its hosts bound to a machine's topology (None: a host bound to nothing)."""

    flow: Flow
    topologies: dict[str, Topology | None]


def load_flow(path: str | Path, *snapshots: str, probes: Sequence[str] = (), loader: Loader | None = None) -> BoundFlow:
    """A flow file, its hosts bound (see the module docstring); ``loader`` reads each machine file
    (default :func:`load`)."""
    flow = read_flow(path)
    return BoundFlow(flow, bind_snapshots(flow, probes, snapshots, loader=loader))


def map_flow(flow: str | Path | BoundFlow, *snapshots: str, probes: Sequence[str] = ()) -> FlowMap:
    """Every arrow of a flow with its medium, route, path class and bandwidth (what ``topomap map``
    prints): a bound flow, or a flow file bound as :func:`load_flow` binds it."""
    bound = flow if isinstance(flow, BoundFlow) else load_flow(flow, *snapshots, probes=probes)
    return _map(bound.flow, bound.topologies)


class _Files:
    """Machines loaded by path, each file once (a merged cluster binds many hosts)."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader
        self.loaded: dict[str, Snapshot] = {}

    def __call__(self, path: str) -> SnapshotFile:
        if path not in self.loaded:
            self.loaded[path] = self.loader(path)
        return SnapshotFile(self.loaded[path], path)


def bind_snapshots(
    flow: Flow, probes: Sequence[str] = (), machines: Sequence[str] = (), *, loader: Loader | None = None
) -> dict[str, Topology | None]:
    """Bind the flow's hosts to machines: ``NAME=FILE`` (or a bare FILE for a one-host flow, or a merged
    cluster file binding every flow host named like one of its hosts) — ``machines`` first, as given after
    the flow on a command line, then ``probes`` (``--probe``) — then the paths in the flow file (relative
    to it). A binding that binds nothing, a host bound twice and an empty path are refused."""
    read = _Files(loader or load)
    args = [(arg, arg) for arg in machines] + [(arg, f"--probe {arg}") for arg in probes]
    claimed = claim_hosts(flow, [_given(flow, arg, origin, read) for arg, origin in args])
    files: dict[str, SnapshotFile | None] = {}
    for host, path in flow.host_files.items():
        if host in claimed:
            files[host] = claimed[host].file
        else:
            files[host] = read(str(Path(flow.path).parent / path)) if path else None
    return bind_hosts(flow, files)


def _given(flow: Flow, arg: str, origin: str, read: _Files) -> GivenSnapshot:
    """One machine argument (``origin``: as the user gave it, ``--probe lot=a.json`` or ``lot=a.json``),
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
    return GivenSnapshot(name if sep else None, read(path if sep else arg), origin)
