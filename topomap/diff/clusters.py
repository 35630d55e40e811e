"""Two clusters (or a cluster and a host) compared host by host, matched by host name; identical
host pairs (a uniform cluster) are compared once."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import msgspec

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


class ClusterDiff(msgspec.Struct):
    """``topomap diff --json`` of two clusters."""

    same: bool
    exit_status: int
    summary: str
    only_in_a: list[str]
    only_in_b: list[str]
    hosts: dict[str, HostDiff]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


def _digest(s: Snapshot) -> bytes:
    """Content of a host snapshot apart from its name, for recognising identical hosts."""
    anon = msgspec.structs.replace(s, host=msgspec.structs.replace(s.host, hostname=None))
    return hashlib.blake2b(msgspec.json.encode(anon), digest_size=16).digest()


def _host_diff(d: DiffResult) -> HostDiff:
    return HostDiff(d.same, d.verdict, d.summary(), d.grouped(), [x.entry for x in d.not_compared])


def diff_clusters(a: Snapshot, b: Snapshot, match: Match = "index") -> ClusterDiff:
    """Host by host, matched by host name; the hosts only one side has are named."""
    ha = {h.host.hostname or f"host{k}": h for k, h in enumerate(hosts_of(a))}
    hb = {h.host.hostname or f"host{k}": h for k, h in enumerate(hosts_of(b))}
    only_a = sorted(set(ha) - set(hb))
    only_b = sorted(set(hb) - set(ha))
    per_host: dict[str, HostDiff] = {}
    differing, unconfirmed = [], []
    seen: dict[tuple[bytes, bytes], DiffResult] = {}  # identical host pairs (a uniform cluster) diffed once
    for name in sorted(set(ha) & set(hb)):
        key = (_digest(ha[name]), _digest(hb[name]))
        if key not in seen:
            seen[key] = diff_snapshots(ha[name], hb[name], match, ("A", "B"))
        d = dataclasses.replace(seen[key], a_name=f"A:{name}", b_name=f"B:{name}")
        per_host[name] = _host_diff(d)
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
    return ClusterDiff(same, exit_status, "; ".join(bits) + ".", only_a, only_b, per_host)
