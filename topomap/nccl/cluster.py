"""NCCL's transports on a merged cluster, once per group of alike hosts (issue 34).

Alike hosts (topomap.cluster.groups) predict alike: every pair inside a host is decided once per
group, on the group's first host. Across hosts, NCCL's rings join the same local rank on
consecutive hosts (topomap.nccl.nodes); each such pair is decided for its sender, by the sender's
facts and whether the two GPUs share an NVLink fabric clique, so it is decided once per rail and
pair of groups (sender's, receiver's) and said once per rail. :meth:`ClusterPrediction.report`
gives every entry of every host, as the per-host report always listed them (``--json``, ``--all``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from topomap.cluster.groups import Grouping, group_hosts, one_host
from topomap.graph import Shapes, Topology
from topomap.model.facts import fabric_clique
from topomap.model.snapshot import Gpu, Snapshot
from topomap.nccl.predict import NO_VERSION_NOTE, Entry, NcclReport, parse_ranks, predict_snapshot
from topomap.transport.decide import Decision, decide
from topomap.transport.facts import remote_facts
from topomap.transport.rules import NcclEnv

_Key = tuple[int, str, str, bool]  # rail, sender's group, receiver's group, one fabric clique


@dataclass(frozen=True)
class Across:
    """The cross-host pairs of one rail (local rank ``rail``) decided alike: from a host of group
    ``src`` to the next (or previous) host, of group ``dst``; ``pairs``: their global rank pairs."""

    rail: int
    src_gpu: str  # the local GPU of the sending host ("gpu0")
    dst_gpu: str
    src: str  # group labels
    dst: str
    decision: Decision
    pairs: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class ClusterPrediction:
    """A merged snapshot's prediction by group: each group's one-host report (its first host's, GPU
    names without the host), the cross-host lines, the rank each host's ranks start at."""

    grouping: Grouping
    parts: dict[str, NcclReport]  # group label → the report of its first host
    lines: dict[_Key, Across]  # the cross-host decisions, each with its pairs
    base: list[int]  # per host (the merged snapshot's order): its first global rank
    chosen_of: dict[str, list[Gpu]]  # per group: the GPUs its first host's ranks run on (--ranks)
    env: NcclEnv
    version: str | None
    source: str
    merged: Snapshot
    extra_notes: list[str] = field(default_factory=list)  # said after the cluster's own notes

    @property
    def hosts(self) -> list[Snapshot]:
        return self.merged.members

    @property
    def across(self) -> list[Across]:
        """The cross-host lines by rail, the most pairs first."""
        return sorted(self.lines.values(), key=lambda a: (a.rail, -len(a.pairs), a.src, a.dst))

    def report(self) -> NcclReport:
        """Every entry of every host (the report `topomap nccl` gave before it grouped hosts), in
        its order: each host's pairs, then the cross-host pairs ring step by ring step."""
        g = self.grouping
        entries: list[Entry] = []
        out = NcclReport(entries, env=self.env, version=self.version, source=self.source)
        names = [h.host.hostname or "?" for h in self.hosts]
        for i, name in enumerate(names):
            part = self.parts[g.label_of[g.names[i]]]
            off = self.base[i]
            entries += [
                replace(e, src_rank=e.src_rank + off, dst_rank=e.dst_rank + off, src_host=name, dst_host=name)
                for e in part.entries
            ]
        for s, d, k, line in _ring(self):
            entries.append(Entry(self.base[s] + k, self.base[d] + k, line.src_gpu, line.dst_gpu, line.decision,
                                 src_host=names[s], dst_host=names[d]))  # fmt: skip
        for i, name in enumerate(names):
            part = self.parts[g.label_of[g.names[i]]]
            out.nics += [replace(n, gpu=f"{name}:{n.gpu}") for n in part.nics]
            out.features += [replace(f, gpu=f"{name}:{f.gpu}") for f in part.features]
        out.notes = self.notes()
        return out

    def report_json(self) -> dict[str, object]:
        """:meth:`report`'s ``to_json()``, made from :meth:`json_parts` (every host's pairs, NICs and
        features, in the same order and keys)."""
        head, lists = self.json_parts()
        for key, chunks in lists.items():
            head[key] = [x for chunk in chunks for x in chunk]
        return head

    def json_parts(self) -> tuple[dict[str, object], dict[str, Iterator[list[dict[str, object]]]]]:
        """:meth:`report`'s ``to_json()`` in parts: the document with its lists of every host (``pairs``,
        ``nics``, ``features``) empty, and for each of them its items host by host (then ring step by
        ring step for the cross-host pairs), made from each group's entries as they are wanted —
        never an Entry or a dict per pair of the whole cluster at once (720,000 at 10,000 hosts)."""
        shell = NcclReport([], env=self.env, version=self.version, source=self.source)
        shell.notes = self.notes()
        return shell.to_json(), {
            "pairs": self._pairs(),
            "nics": self._per_gpu("nics"),
            "features": self._per_gpu("features"),
        }

    def _pairs(self) -> Iterator[list[dict[str, object]]]:
        g = self.grouping
        names = [h.host.hostname or "?" for h in self.hosts]
        templates = {label: [e.to_json() for e in part.entries] for label, part in self.parts.items()}
        for i, name in enumerate(names):
            off = self.base[i]
            yield [
                {**t, "src_rank": t["src_rank"] + off, "dst_rank": t["dst_rank"] + off,
                 "src_gpu": f"{name}:{t['src_gpu']}", "dst_gpu": f"{name}:{t['dst_gpu']}"}
                for t in templates[g.label_of[g.names[i]]]
            ]  # fmt: skip
        across: dict[int, dict[str, object]] = {}
        chunk: list[dict[str, object]] = []
        for s, d, k, line in _ring(self):
            t = across.get(id(line))
            if t is None:
                t = across[id(line)] = Entry(0, 0, None, None, line.decision).to_json()
            chunk.append(
                {**t, "src_rank": self.base[s] + k, "dst_rank": self.base[d] + k,
                 "src_gpu": f"{names[s]}:{line.src_gpu}", "dst_gpu": f"{names[d]}:{line.dst_gpu}"}
            )  # fmt: skip
            if len(chunk) >= 1024:
                yield chunk
                chunk = []
        yield chunk

    def _per_gpu(self, key: str) -> Iterator[list[dict[str, object]]]:
        """Each host's ``nics`` or ``features`` entries, named for the host."""
        g = self.grouping
        one = {
            label: NcclReport([], nics=p.nics, features=p.features).to_json()[key] for label, p in self.parts.items()
        }
        for i, h in enumerate(self.hosts):
            name = h.host.hostname or "?"
            yield [{**x, "gpu": f"{name}:{x['gpu']}"} for x in one[g.label_of[g.names[i]]]]

    def host_report(self, name: str) -> NcclReport:
        """One host's pairs (its global ranks) and its cross-host pairs to and from its ring
        neighbours, as `topomap nccl` lists them; an unknown name is an error naming the closest."""
        g = self.grouping
        if name not in g.label_of:
            one_host(self.merged, name)  # raises: the error names the closest hosts
        i = g.names.index(name)
        part = self.parts[g.label_of[name]]
        off = self.base[i]
        entries = [
            replace(e, src_rank=e.src_rank + off, dst_rank=e.dst_rank + off, src_host=name, dst_host=name)
            for e in part.entries
        ]  # fmt: skip
        names = g.names
        entries += [
            Entry(self.base[s] + k, self.base[d] + k, line.src_gpu, line.dst_gpu, line.decision,
                  src_host=names[s], dst_host=names[d])
            for s, d, k, line in _ring(self)
            if i in (s, d)
        ]  # fmt: skip
        out = NcclReport(entries, env=self.env, version=self.version, source=f"{name} of {self.source}")
        out.nics = [replace(n, gpu=f"{name}:{n.gpu}") for n in part.nics]
        out.features = [replace(f, gpu=f"{name}:{f.gpu}") for f in part.features]
        group = g.group_of(name)
        out.notes = [
            f"host {name} of {len(self.hosts)} (group {group.label}: {group.headline()}); its pairs, and the "
            "cross-host pairs to and from its neighbours on NCCL's rings (the same local rank on the hosts "
            "before and after it)",
            *self.notes()[1:],
        ]
        return out

    def grouping_json(self, host: str | None = None) -> dict[str, object]:
        """What --json adds for a cluster: ``groups`` (each group of alike hosts, as every cluster
        view names them, with ``ranks_per_host``), ``across`` (the cross-host pairs per rail and pair
        of groups: one decision each, with its pair count) and, for one host, its ``group``."""
        groups = []
        for x in self.grouping.groups:
            groups.append({**x.to_json(), "ranks_per_host": len(self.chosen_of[x.label])})
        across = [
            {
                "rail": a.rail,
                "src_gpu": a.src_gpu,
                "dst_gpu": a.dst_gpu,
                "src_group": a.src,
                "dst_group": a.dst,
                "predicted": a.decision.transport,
                "detail": a.decision.detail,
                "rule": a.decision.rule,
                "pairs": len(a.pairs),
            }
            for a in self.across
        ]
        out: dict[str, object] = {"groups": groups, "across": across}
        if host is not None:
            out["group"] = self.grouping.label_of[host]
        return out

    def notes(self) -> list[str]:
        out = [
            f"{len(self.hosts)} hosts, ranks host by host; across hosts, the same local rank on consecutive hosts "
            "(NCCL's rings join those by default)"
        ]
        if self.version is None:
            out.append(NO_VERSION_NOTE)
        return out + self.extra_notes


def _steps(n: int) -> list[tuple[int, int]]:
    """The ring's steps between hosts: host i to i+1, and the last to the first beyond two hosts."""
    return [(i, (i + 1) % n) for i in range(n - 1 if n > 2 else 1)]


def _keys(p: ClusterPrediction | _Setup) -> list[tuple[int, int, int, _Key, Gpu, Gpu]]:
    """Every cross-host pair in ring order, both ways per step: (sender, receiver, rail, key, GPUs).
    A GPU's NVLink fabric clique is its group's (the fabric is no identity field: alike hosts share it)."""
    g, hosts, chosen = p.grouping, p.hosts, p.chosen_of
    label = [g.label_of[name] for name in g.names]
    cliques = {x.label: [fabric_clique(x.first, gpu) for gpu in chosen[x.label]] for x in g.groups}
    out = []
    for i, j in _steps(len(hosts)):
        for s, d in ((i, j), (j, i)):
            gs, gd = label[s], label[d]
            cs, cd = cliques[gs], cliques[gd]
            for k, (a, b) in enumerate(zip(chosen[gs], chosen[gd], strict=False)):
                same = cs[k] is not None and cs[k] == cd[k]
                out.append((s, d, k, (k, gs, gd, same), a, b))
    return out


def _ring(p: ClusterPrediction) -> list[tuple[int, int, int, Across]]:
    return [(s, d, k, p.lines[key]) for s, d, k, key, _a, _b in _keys(p)]


@dataclass
class _Setup:
    grouping: Grouping
    hosts: list[Snapshot]
    chosen_of: dict[str, list[Gpu]]


def predict_groups(snap: Snapshot, env: NcclEnv, ranks: str | None, version: str | None) -> ClusterPrediction:
    """NCCL's transports on every node of a merged snapshot, worked out once per group of alike hosts
    (``--ranks`` applies on every host) and across hosts once per rail and pair of groups."""
    g = group_hosts(snap)
    hosts = list(snap.members)
    shapes = Shapes()
    topos: dict[str, Topology] = {}
    parts: dict[str, NcclReport] = {}
    chosen: dict[str, list[Gpu]] = {}
    for group in g.groups:
        topo = topos[group.label] = shapes.build(group.first)
        parts[group.label] = predict_snapshot(group.first, env, ranks, version, topo)
        chosen[group.label] = parse_ranks(ranks, group.first)[0]
    base = [0]
    for name in g.names[:-1]:
        base.append(base[-1] + len(chosen[g.label_of[name]]))
    lines: dict[_Key, Across] = {}
    for s, d, _k, key, a, b in _keys(_Setup(g, hosts, chosen)):
        line = lines.get(key)
        if line is None:
            k, gs, gd, same = key
            decided = decide(replace(remote_facts(topos[gs], a), mnnvl=same), env, version)
            line = lines[key] = Across(k, f"gpu{a.index}", f"gpu{b.index}", gs, gd, decided)
        line.pairs.append((base[s] + key[0], base[d] + key[0]))
    return ClusterPrediction(g, parts, lines, base, chosen, env, version, snap.source.origin or "merged snapshot", snap)
