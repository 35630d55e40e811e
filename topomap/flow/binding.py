"""Binding a flow to machines: each flow host to a snapshot (or none), each placement to the GPUs
of its host, each arrow expanded into concrete arrows between step replicas.

The snapshots arrive loaded (the CLI reads ``[NAME=]FILE`` after the flow file or with ``--probe``,
and the flow file's own paths); here is only the rule: ``NAME=FILE`` binds one host, a bare file
binds the one host of a one-host flow, a merged cluster binds every flow host named like one of its
hosts, and no host is bound twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from topomap.base.pciaddr import parse_bus_id
from topomap.flow.expansion import check_expansion
from topomap.flow.spec import Flow, FlowArrow, FlowError, Pattern, Placement, Step, names, parse_placement
from topomap.graph import Shapes, Topology
from topomap.model.pack import collector_paused
from topomap.model.snapshot import Snapshot

#: A host's GPUs as (graph id ``gpu3``, UUID, PCI bus id); None for a host with no snapshot.
GpuRefs = list[tuple[str, str | None, str | None]]


@dataclass(frozen=True)
class SnapshotFile:
    """A loaded snapshot and the file it came from (as the user wrote it, for messages)."""

    snapshot: Snapshot
    path: str


@dataclass(frozen=True)
class GivenSnapshot:
    """A snapshot the user gave for the flow: the flow host ``NAME=`` names (None for a bare file),
    the loaded file, and how it was given (``--probe lot=a.json``), which every message quotes."""

    host: str | None
    file: SnapshotFile
    origin: str


# --- flow hosts → snapshots --------------------------------------------------------------------


def claim_hosts(flow: Flow, given: Sequence[GivenSnapshot]) -> dict[str, GivenSnapshot]:
    """The flow hosts the given snapshots bind, each once: a named one its host, a bare merged
    cluster every flow host named like one of its hosts, a bare snapshot the one host of a one-host
    flow. A binding that binds nothing and a host bound twice are refused."""
    bound: dict[str, GivenSnapshot] = {}
    for g in given:
        for host in _hosts_of(flow, g):
            if host in bound:
                raise FlowError(
                    f"{g.origin}: {host} is bound twice (also by {bound[host].origin})",
                    hint=f"bind each flow host once: {host}=FILE after the flow file",
                )
            bound[host] = g
    return bound


def _hosts_of(flow: Flow, g: GivenSnapshot) -> list[str]:
    """The flow hosts one given snapshot binds."""
    hosts = list(flow.spec.hosts)
    if g.host is not None:
        return [g.host]
    if g.file.snapshot.source.kind == "merge":
        return _cluster_hosts(flow, g)
    if len(hosts) != 1:
        raise FlowError(
            f"{g.origin}: the flow has hosts {', '.join(hosts)}; say which",
            hint=f"name the host: {hosts[0]}={g.file.path}",
        )
    return [hosts[0]]


def _cluster_hosts(flow: Flow, g: GivenSnapshot) -> list[str]:
    """A merged cluster binds every flow host named like one of its hosts; binding none is an error
    (the flow would silently run on the snapshots its file names)."""
    cluster_names = [m.host.hostname or "" for m in g.file.snapshot.members]
    named = set(cluster_names)
    found = [h for h in flow.spec.hosts if h in named]
    if found:
        return found
    shown = ", ".join(cluster_names[:8]) + (f", … ({len(cluster_names)} in all)" if len(cluster_names) > 8 else "")
    raise FlowError(
        f"{g.origin}: no host of the cluster is named like a flow host "
        f"(flow hosts: {', '.join(flow.spec.hosts)}; cluster hosts: {shown or 'none named'})",
        hint=f"NAME=FILE binds a flow host to one host's snapshot ({next(iter(flow.spec.hosts))}=SNAPSHOT), "
        "or name the flow hosts after the cluster's hosts",
    )


def bind_hosts(flow: Flow, files: Mapping[str, SnapshotFile | None]) -> dict[str, Topology | None]:
    """Bind each flow host to its snapshot (None: a host with no snapshot; in a merged file, the
    member of the host's name), build each distinct snapshot's graph once (each distinct host shape's:
    :class:`topomap.graph.Shapes`), and bind the flow's placements and arrows to those machines.
    Returns each host's topology, for :func:`map_flow`. The cycle collector is held off meanwhile
    (topomap.model.pack.collector_paused): binding makes no cycle, and a collector pass over a
    10,000-host cluster read before finds none (issue 34: bind grew 21× for 10× the hosts)."""
    with collector_paused():
        return _bind_hosts(flow, files)


def _bind_hosts(flow: Flow, files: Mapping[str, SnapshotFile | None]) -> dict[str, Topology | None]:
    topos: dict[str, Topology | None] = {}
    built: dict[int, Topology] = {}
    shapes = Shapes()
    members: dict[int, dict[str, Snapshot]] = {}
    for host, file in files.items():
        if file is None:
            topos[host] = None
            continue
        snap = _member(file, host, members)
        if id(snap) not in built:
            built[id(snap)] = shapes.build(snap)
        topos[host] = built[id(snap)]
    bind(flow, gpus_of(topos))
    return topos


def _member(file: SnapshotFile, flow_host: str, members: dict[int, dict[str, Snapshot]]) -> Snapshot:
    """The snapshot a flow host is bound to; in a merged file, the member of that name (indexed once)."""
    snap = file.snapshot
    if snap.source.kind != "merge":
        return snap
    if id(snap) not in members:
        members[id(snap)] = {m.host.hostname or "": m for m in snap.members}
    found = members[id(snap)].get(flow_host)
    if found is not None:
        return found
    shown = ", ".join(m.host.hostname or "?" for m in snap.members[:8])
    raise FlowError(
        f"{file.path}: the cluster has no host named {flow_host!r}",
        hint=f"name flow hosts after the cluster's hosts ({shown}…) or bind NAME=HOST_FILE",
    )


# --- placements → GPUs, arrows → replicas ------------------------------------------------------


def gpus_of(topos: Mapping[str, Topology | None]) -> dict[str, GpuRefs | None]:
    """Each host's GPUs as :func:`bind` takes them."""
    return {
        h: None if t is None else [(f"gpu{g.index}", g.uuid, g.pci_bus_id) for g in t.snapshot.gpus]
        for h, t in topos.items()
    }


def bind(flow: Flow, gpus: Mapping[str, GpuRefs | None]) -> None:
    """Resolve placements against the hosts' GPUs and expand arrows into concrete replicas.

    ``gpus`` maps each host to its GPUs (:func:`gpus_of`), or None for a host with no snapshot. A
    GPU the snapshot does not have is an error naming the flow line.
    """
    for st in flow.steps.values():
        st.placements = _resolve(flow, st, gpus)
    _resolve_assembly(flow, gpus)
    check_expansion(flow)  # counted before any is built: past the cap, one line naming the arrow
    flow.arrows = []
    for i, a in enumerate(flow.spec.arrows):
        for s in names(a.src):
            for d in names(a.dst):
                _connect(flow, flow.steps[s], flow.steps[d], a.pattern, flow.volumes[i], a.label, a.both_ways)
    for st in flow.steps.values():
        if st.kind == "exchange" and len(st.placements) > 1:
            ps = st.placements
            for x, pa in enumerate(ps):
                for pb in ps[x + 1 :]:
                    flow.arrows.append(FlowArrow(st.name, st.name, pa, pb, None, "exchange", both_ways=True))


def _resolve(flow: Flow, st: Step, gpus_by_host: Mapping[str, GpuRefs | None]) -> list[Placement]:
    """A step's placements with every GPU reference resolved (``gpus``: one per GPU of the host)."""
    origin, line, name = flow.path, flow.line(f"$.steps.{st.name}.on"), st.name
    resolved: list[Placement] = []
    for p in st.placements:
        gpus = gpus_by_host.get(p.host)
        if p.kind != "gpu":
            resolved.append(p)
            continue
        if gpus is None:
            raise FlowError(
                f"{origin}:{line}: step {name}: {p.host} has no snapshot, so its GPUs are unknown",
                hint=f"bind it: {p.host}=SNAPSHOT after the flow file, or place the step on {p.host} itself",
            )
        if p.gpu == "*":
            resolved += [Placement(host=p.host, kind="gpu", gpu=g[0]) for g in gpus]
            continue
        match = _match_gpu(p.gpu or "", gpus)
        if match is None:
            have = ", ".join(g[0] for g in gpus) or "none"
            raise FlowError(
                f"{origin}:{line}: step {name}: {p.host} has no GPU {p.gpu!r}", hint=f"its snapshot has: {have}"
            )
        resolved.append(Placement(host=p.host, kind="gpu", gpu=match))
    if not resolved:
        raise FlowError(f"{origin}:{line}: step {name}: {st.placements[0].label()} has no GPU")
    return resolved


def _resolve_assembly(flow: Flow, gpus_by_host: Mapping[str, GpuRefs | None]) -> None:
    """The work's assembly placed on a GPU (``assembly: {on: lot:gpu0}``) names a GPU of its host's
    snapshot, as a step's placement does; a UUID or bus id becomes the GPU's name."""
    work = flow.work
    a = work.assembly if work is not None else None
    if work is None or a is None or a.on is None or a.on in flow.spec.steps or ":" not in a.on:
        return
    where = f"{flow.path}:{flow.line('$.work.assembly.on')}: work: assembly on {a.on!r}"
    place = parse_placement(a.on, list(flow.spec.hosts), where)
    gpus = gpus_by_host.get(place.host)
    if place.kind != "gpu" or place.gpu == "*" or gpus is None:
        return  # a host with no snapshot: the GPU stays as written, as a label
    match = _match_gpu(place.gpu or "", gpus)
    if match is None:
        have = ", ".join(g[0] for g in gpus) or "none"
        raise FlowError(f"{where}: {place.host} has no GPU {place.gpu!r}", hint=f"its snapshot has: {have}")
    work.assembly = replace(a, on=f"{place.host}:{match}")


def _match_gpu(ref: str, gpus: GpuRefs) -> str | None:
    for gid, uuid, bus in gpus:
        if ref == gid or (uuid and uuid.lower().startswith(ref.lower()) and ref.upper().startswith(("GPU-", "MIG-"))):
            return gid
        pb = parse_bus_id(ref)
        if pb is not None and bus and parse_bus_id(bus) == pb:
            return gid
    return None


def _connect(
    flow: Flow, s: Step, d: Step, pattern: Pattern, vol: int | None, label: str | None, both: bool = False
) -> None:
    """Expand an arrow between two steps' replicas: fan-out, fan-in, pairwise or all-to-all."""
    ks, kd = len(s.placements), len(d.placements)
    if pattern == "auto":
        pattern = "pairwise" if ks == kd and ks > 1 else "all-to-all"
    if pattern == "pairwise":
        if ks != kd:
            raise FlowError(f"{flow.path}: arrow {s.name} → {d.name}: pairwise needs as many replicas on both sides")
        pairs = list(zip(s.placements, d.placements))
    else:
        pairs = [(a, b) for a in s.placements for b in d.placements]
    for a, b in pairs:
        flow.arrows.append(FlowArrow(s.name, d.name, a, b, vol, label, both_ways=both))
