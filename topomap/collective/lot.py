"""The hosts a collective runs on and what each gives it: one host, a merged cluster (every member), a
declared lot (a Snapshot like any other), or ``hosts=N`` identical copies of one host. Hosts alike but for
their name are analysed once (a 1,024-host cluster is a few shapes), so the cost follows the shapes."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from topomap.base.errors import TopomapError
from topomap.collective.host import Intra, intra
from topomap.collective.network import Network, network
from topomap.graph import Topology, build
from topomap.model.facts import fabric_clique
from topomap.model.snapshot import Gpu, Snapshot, hosts_of
from topomap.model.source_facts import is_amd_source
from topomap.transport.rules import NcclEnv


@dataclass(frozen=True)
class HostShape:
    """One kind of host in the job: how many hosts are like it, its GPUs used, its figures."""

    name: str  # the first host of this shape
    count: int
    gpus: tuple[str, ...]
    intra: Intra
    network: Network | None  # None: the job stays on one host
    cliques: tuple[tuple[str, int] | None, ...]  # each GPU's multi-node NVLink clique (None: none)


@dataclass(frozen=True)
class LotPlan:
    """The job's hosts, shape by shape, and how its ranks run."""

    shapes: tuple[HostShape, ...]
    mode: str
    version: str | None
    env: NcclEnv
    notes: tuple[str, ...] = ()
    library: str = "NCCL"  # "RCCL" on AMD GPUs (issue 35): the library whose rules the figures follow

    @property
    def hosts(self) -> int:
        return sum(s.count for s in self.shapes)

    @property
    def gpus_per_host(self) -> int:
        return min(s.intra.k for s in self.shapes) if self.shapes else 0

    @property
    def ranks(self) -> int:
        return sum(s.count * s.intra.k for s in self.shapes)


def _key(h: Snapshot) -> bytes:
    """What makes two hosts alike for the model: everything but their names and where they came from."""
    host = msgspec.structs.replace(h.host, hostname=None)
    gpus = [msgspec.structs.replace(g, uuid=None) for g in h.gpus]
    source = msgspec.structs.replace(h.source, origin="", captured_at=None)
    return msgspec.json.encode(msgspec.structs.replace(h, host=host, gpus=gpus, source=source))


def plan(
    snap: Snapshot,
    *,
    hosts: int | None = None,
    gpu_indexes: list[int] | None = None,
    mode: str = "per-gpu",
    version: str | None = None,
    env: NcclEnv | None = None,
) -> LotPlan:
    """The job on ``snap``: every host of a merged snapshot, or ``hosts`` copies of a one-host snapshot;
    on each host the GPUs ``gpu_indexes`` (default: all that are not lost)."""
    env = env or NcclEnv()
    members = hosts_of(snap)
    notes: list[str] = []
    if hosts is not None:
        if hosts < 1:
            raise TopomapError(f"--hosts {hosts}: at least one host", hint="--hosts 2")
        if len(members) > 1:
            raise TopomapError(
                f"--hosts {hosts}: the snapshot already holds {len(members)} hosts",
                hint="drop --hosts for a merged one",
            )
        notes.append(f"{hosts} identical hosts of {members[0].host.hostname or 'this snapshot'} (--hosts {hosts})")
    groups: dict[bytes, list[Snapshot]] = {}
    for h in members:
        groups.setdefault(_key(h), []).append(h)
    multi = (hosts or len(members)) > 1
    shapes = []
    for same in groups.values():
        first = same[0]
        count = hosts if hosts is not None else len(same)
        shapes.append(_shape(first, count, gpu_indexes, mode, version, env, multi))
    library = "RCCL" if any(is_amd_source(h) for h in members) else "NCCL"
    return LotPlan(tuple(shapes), mode, version, env, tuple(notes), library)


def plan_parts(
    parts: list[tuple[Snapshot, list[int]]],
    *,
    mode: str = "per-gpu",
    version: str | None = None,
    env: NcclEnv | None = None,
) -> LotPlan:
    """The job over given hosts, each with its own GPUs (a flow step's placements: one host's snapshot and
    the GPU indexes the step uses on it); hosts alike with the same GPUs are analysed once."""
    env = env or NcclEnv()
    groups: dict[bytes, list[tuple[Snapshot, list[int]]]] = {}
    for h, indexes in parts:
        groups.setdefault(_key(h) + repr(sorted(indexes)).encode(), []).append((h, indexes))
    multi = len(parts) > 1
    shapes = [_shape(same[0][0], len(same), same[0][1], mode, version, env, multi) for same in groups.values()]
    return LotPlan(tuple(shapes), mode, version, env)


def chosen(snap: Snapshot, gpu_indexes: list[int] | None) -> list[Gpu]:
    """The GPUs a job uses on one host: the indexes given (those the host has), else every GPU not lost."""
    gpus = sorted((g for g in snap.gpus if not g.lost), key=lambda g: g.index)
    if gpu_indexes is None:
        return gpus
    by = {g.index: g for g in gpus}
    return [by[i] for i in gpu_indexes if i in by]


def _shape(
    h: Snapshot,
    count: int,
    gpu_indexes: list[int] | None,
    mode: str,
    version: str | None,
    env: NcclEnv,
    multi: bool,
) -> HostShape:
    topo: Topology = build(h)
    gpus = chosen(h, gpu_indexes)
    inside = intra(topo, gpus, mode, env, version)
    net = network(topo, gpus, env, version) if multi and gpus else None
    cliques = tuple(fabric_clique(h, g) for g in gpus)
    return HostShape(
        h.host.hostname or h.source.origin or "host", count, tuple(f"gpu{g.index}" for g in gpus), inside, net, cliques
    )


def one_clique(p: LotPlan) -> bool:
    """Every GPU of every host in one multi-node NVLink clique (same cluster UUID and clique id)."""
    keys = {c for s in p.shapes for c in s.cliques}
    return p.hosts > 1 and len(keys) == 1 and None not in keys
