"""Two clusters (or a cluster and a host) compared host by host, matched by host name. Each side's
hosts are in groups of alike hosts (topomap.cluster.groups): the hosts whose A side is of one group
and whose B side is of one group compare alike, so each such pair of groups is compared once, on its
first host, and said once (issue 34); every host's comparison is still listed in ``hosts``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import msgspec

from topomap.cluster.groups import Grouping, group_hosts
from topomap.diff.changes import NotCompared
from topomap.diff.results import DiffResult, Match, Verdict
from topomap.diff.snapshots import diff_snapshots
from topomap.model.snapshot import Snapshot, hosts_of


class HostDiff(msgspec.Struct):
    """One host in both clusters (field order is the JSON's)."""

    same: bool
    verdict: Verdict
    summary: str
    changes: list[str]  # grouped
    not_compared: list[str]


class DiffGroup(msgspec.Struct):
    """Hosts compared alike: their A side of one group of alike hosts, their B side of one; the
    comparison of the first of them, in words for every one ("B" and "A" for its two sides)."""

    a_group: str
    b_group: str
    hosts: list[str]
    same: bool
    verdict: Verdict
    summary: str
    changes: list[str]
    #: What the comparison could not compare, a side not knowing it ("A", "B" or "both"); --json lists
    #: each as its host's ``not_compared`` does (``gpus.uuid (unknown in B)``).
    not_compared: list[NotCompared] = []


class ClusterDiff(msgspec.Struct):
    """``topomap diff --json`` of two clusters (``groups``: the hosts by comparison, every host in one;
    ``a_groups`` and ``b_groups``: each side's groups of alike hosts)."""

    same: bool
    exit_status: int
    summary: str
    only_in_a: list[str]
    only_in_b: list[str]
    hosts: dict[str, HostDiff]
    groups: list[DiffGroup] = []
    a_groups: list[dict[str, Any]] = []
    b_groups: list[dict[str, Any]] = []

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self)
        for group, typed in zip(out["groups"], self.groups, strict=True):
            group["not_compared"] = [x.entry for x in typed.not_compared]
        return out

    def not_compared_of(self, host: str) -> list[NotCompared]:
        """What the comparison of ``host``'s group could not compare."""
        return next((g.not_compared for g in self.groups if host in g.hosts), [])


@dataclass(frozen=True)
class _Compared:
    result: DiffResult
    changes: list[str]


def diff_clusters(a: Snapshot, b: Snapshot, match: Match = "index") -> ClusterDiff:
    """Host by host, matched by host name; the hosts only one side has are named."""
    ga, gb = group_hosts(a), group_hosts(b)
    ha = {n: h for n, h in zip(ga.names, hosts_of(a))}
    hb = {n: h for n, h in zip(gb.names, hosts_of(b))}
    only_a = sorted(set(ha) - set(hb))
    only_b = sorted(set(hb) - set(ha))
    per_host: dict[str, HostDiff] = {}
    differing, unconfirmed = [], []
    seen: dict[tuple[str, str], _Compared] = {}  # per (A's group, B's group): compared once
    members: dict[tuple[str, str], list[str]] = {}
    for name in sorted(set(ha) & set(hb)):
        key = (ga.label_of[name], gb.label_of[name])
        c = seen.get(key)
        if c is None:
            d = diff_snapshots(ha[name], hb[name], match, ("A", "B"))
            c = seen[key] = _Compared(d, d.grouped())
        members.setdefault(key, []).append(name)
        d = dataclasses.replace(c.result, a_name=f"A:{name}", b_name=f"B:{name}")
        per_host[name] = HostDiff(d.same, d.verdict, d.summary(), c.changes, [x.entry for x in d.not_compared])
        if d.verdict == "cannot-confirm":
            unconfirmed.append(name)
        elif not d.same:
            differing.append(name)
    same = not differing and not only_a and not only_b and not unconfirmed
    bits = [f"{len(per_host)} host(s) in both"]
    bits.append(
        f"{len(differing)} differ"
        + (f" ({', '.join(differing[:6])}{' …' if len(differing) > 6 else ''})" if differing else "")
    )
    if unconfirmed:
        bits.append(f"{len(unconfirmed)} cannot be confirmed equal")
    if only_a:
        bits.append(f"only in A: {', '.join(only_a)}")
    if only_b:
        bits.append(f"only in B: {', '.join(only_b)}")
    exit_status = 0 if same else 1 if differing or only_a or only_b else 3
    groups = [_group(key, members[key], seen[key]) for key in sorted(members, key=lambda k: (-len(members[k]), k))]
    return ClusterDiff(
        same, exit_status, "; ".join(bits) + ".", only_a, only_b, per_host, groups, _sides(ga), _sides(gb)
    )


def _group(key: tuple[str, str], hosts: list[str], c: _Compared) -> DiffGroup:
    d = c.result
    return DiffGroup(key[0], key[1], hosts, d.same, d.verdict, d.summary(), c.changes, list(d.not_compared))


def _sides(g: Grouping) -> list[dict[str, Any]]:
    return [x.to_json() for x in g.groups]
