"""One merged snapshot → the cluster's shapes, where hosts differ, the rails, the NVLink cliques and the
outliers with their reasons.

Fast at thousands of hosts: the shape facts (GPUs, NVLink matrix, rails, PCIe tree) are computed
once per distinct host build (cluster/shape.py), then only the per-host facts (cluster/hostfacts.py)
are read per host. A fact is compared against the value most hosts have; a host whose source does
not carry a fact is listed as unknown for it, never as an outlier.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import partial

from topomap.base.errors import TopomapError
from topomap.cluster.differs import differs_text
from topomap.cluster.groups import group_hosts, group_label
from topomap.cluster.hostfacts import FACT_NAME, HOST_FACTS, Clique, cliques
from topomap.cluster.report import (
    CLUSTER_SCHEMA,
    CliqueReport,
    ClusterReport,
    FabricReport,
    FactReport,
    Outlier,
    RailReport,
    RailsReport,
    ShapeReport,
    ValueHosts,
)
from topomap.cluster.shape import PART_NAME, PARTS, Shape, part_text, raw_key, shape_of
from topomap.model.snapshot import Snapshot

Show = Callable[[object], str]


def analyse(merged: Snapshot) -> ClusterReport:
    """The cluster report of a merged snapshot (``topomap merge``)."""
    if merged.source.kind != "merge" or not merged.members:
        raise TopomapError(
            f"{merged.source.origin}: not a merged cluster snapshot",
            hint="merge the per-host snapshots first: topomap merge a.json b.json -o cluster.json",
        )
    named = [(h.host.hostname or f"host{i}", h) for i, h in enumerate(merged.members)]
    grouping = group_hosts(merged)
    return analyse_hosts(named, merged.source.origin, [grouping.label_of[n] for n, _h in named])


def analyse_hosts(named: list[tuple[str, Snapshot]], origin: str, alike: list[Hashable] | None = None) -> ClusterReport:
    """The cluster report of hosts by name (the hosts of a merged snapshot, or check's lots).
    ``alike``: per host, its group of alike hosts (topomap.cluster.groups): the facts are read once
    per group, from its first host, and hold for every host of it."""
    names = [n for n, _h in named]
    hosts = [h for _n, h in named]
    first: dict[Hashable, int] = {}
    for i, k in enumerate(alike if alike is not None else names):
        first.setdefault(k, i)
    of = [first[k] for k in (alike if alike is not None else names)]  # per host: its group's first host
    shapes = _shapes([hosts[i] for i in of])
    outliers: dict[str, list[str]] = {}
    facts: list[FactReport] = []
    for part in PARTS:
        values = {n: shapes[i].part(part) for i, n in enumerate(names)}
        facts.append(_fact(part, PART_NAME[part], True, values, partial(part_text, part), outliers))
    read: dict[str, dict[str, object]] = {}
    for hf in HOST_FACTS:
        once = {i: hf.read(hosts[i]) for i in first.values()}
        read[hf.name] = {n: once[i] for n, i in zip(names, of)}
        facts.append(_fact(hf.name, FACT_NAME[hf.name], False, read[hf.name], hf.text, outliers))
    return ClusterReport(
        schema=CLUSTER_SCHEMA,
        origin=origin,
        hosts=len(hosts),
        shapes=_shape_reports(names, shapes),
        facts=facts,
        rails=_rails({n: shapes[i].rails for i, n in enumerate(names)}),
        fabric=_fabric(names, [hosts[i] for i in of], read["fabric"]),
        outliers=[Outlier(n, outliers[n]) for n in sorted(outliers)],
    )


def _shapes(hosts: list[Snapshot]) -> list[Shape]:
    """Each host's shape, computed once per distinct raw key (and one object per distinct shape);
    the same host object given again is not keyed again."""
    by_raw: dict[bytes, Shape] = {}
    by_id: dict[int, Shape] = {}
    canon: dict[Shape, Shape] = {}
    out = []
    for h in hosts:
        s = by_id.get(id(h))
        if s is None:
            k = raw_key(h)
            s = by_raw.get(k)
            if s is None:
                s = canon.setdefault(shape_of(h), shape_of(h))
                by_raw[k] = s
            by_id[id(h)] = s
        out.append(s)
    return out


def _shape_reports(names: list[str], shapes: list[Shape]) -> list[ShapeReport]:
    members: dict[int, list[str]] = {}
    first: dict[int, Shape] = {}
    for n, s in zip(names, shapes):
        members.setdefault(id(s), []).append(n)
        first.setdefault(id(s), s)
    order = sorted(members, key=lambda k: (-len(members[k]), first[k].key))
    out = []
    for i, k in enumerate(order):
        s = first[k]
        out.append(
            ShapeReport(
                id=s.key,
                label=group_label(i),
                hosts=sorted(members[k]),
                **{p: part_text(p, s.part(p)) for p in PARTS},
            )
        )
    return out


def _fact(
    fact: str, name: str, shape: bool, values: dict[str, object], show: Show, outliers: dict[str, list[str]]
) -> FactReport:
    """Compare one fact across hosts: the most common known value, the others with their hosts (each
    such host an outlier, with the reason), the hosts that cannot tell."""
    groups: dict[Hashable, list[str]] = {}
    unknown: list[str] = []
    for host, v in values.items():
        if v is None:
            unknown.append(host)
        else:
            groups.setdefault(v, []).append(host)
    known = sum(len(g) for g in groups.values())
    if not groups:
        return FactReport(fact, name, shape, None, 0, 0, [], sorted(unknown))
    common = min(groups, key=lambda v: (-len(groups[v]), min(groups[v])))  # ties: the first host's value
    if 2 * len(groups[common]) <= known:  # no value held by most hosts: nobody is the odd one out
        each = sorted(groups, key=lambda v: (-len(groups[v]), show(v)))
        spread = [ValueHosts(show(v), sorted(groups[v]), show(v)) for v in each]
        return FactReport(fact, name, shape, None, 0, known, spread, sorted(unknown))
    others = []
    for v in sorted((v for v in groups if v != common), key=lambda v: (-len(groups[v]), show(v))):
        differs = differs_text(v, common, show)
        for host in groups[v]:
            outliers.setdefault(host, []).append(f"{name}: {differs}")
        others.append(ValueHosts(show(v), sorted(groups[v]), differs))
    return FactReport(fact, name, shape, show(common), len(groups[common]), known, others, sorted(unknown))


def _rails(values: dict[str, object]) -> RailsReport:
    """Rail i is GPU i's nearest RDMA NICs; consistent when every host's rails are the same."""
    unknown = sorted(h for h, v in values.items() if v is None)
    known = {h: v for h, v in values.items() if v is not None}
    per_gpu: dict[str, dict[str, list[str]]] = {}
    for host, layout in known.items():
        assert isinstance(layout, tuple)
        for gpu, (cls, *nics) in layout:
            per_gpu.setdefault(gpu, {}).setdefault(f"{'/'.join(nics)} {cls}", []).append(host)
    rails = []
    for gpu in sorted(per_gpu, key=lambda g: int("".join(c for c in g if c.isdigit()) or -1)):
        pos = per_gpu[gpu]
        every = len(pos) == 1 and len(next(iter(pos.values()))) == len(known)
        positions = [ValueHosts(v, sorted(h)) for v, h in sorted(pos.items(), key=lambda kv: -len(kv[1]))]
        rails.append(RailReport(gpu, positions, every))
    distinct = len(set(known.values()))
    consistent: bool | None = False if distinct > 1 else (None if unknown or not known else True)
    return RailsReport(consistent, unknown, rails)


def _fabric(names: list[str], hosts: list[Snapshot], states: dict[str, object]) -> FabricReport:
    """The NVLink domains (cluster UUID, clique id) and their hosts; one clique for the whole cluster?"""
    members: dict[Clique, list[str]] = {}
    seen: dict[int, frozenset[Clique]] = {}  # per host object (alike hosts: their group's first)
    for n, h in zip(names, hosts):
        if id(h) not in seen:
            seen[id(h)] = cliques(h)
        for c in seen[id(h)]:
            members.setdefault(c, []).append(n)
    unknown = sorted(h for h, v in states.items() if v is None)
    not_ready = sorted(
        h for h, v in states.items() if isinstance(v, tuple) and any(state != "ready" for _g, state in v)
    )
    listed = [CliqueReport(u, q, sorted(m)) for (u, q), m in sorted(members.items())]
    one: bool | None
    if len(members) > 1:
        one, why = False, f"{len(members)} NVLink cliques"
    elif not_ready:
        one, why = False, f"fabric not ready or not supported on {len(not_ready)} host(s)"
    elif unknown:
        one, why = None, f"fabric not recorded by the source of {len(unknown)} host(s)"
    elif not members:
        one, why = False, "no host has a ready NVLink fabric"
    else:
        one, why = True, f"all {len(names)} hosts in clique {listed[0].cluster_uuid}/{listed[0].clique_id}"
    return FabricReport(one, why, listed, not_ready, unknown)
