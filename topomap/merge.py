"""Join per-host snapshots into one cluster snapshot (``source.kind == "merge"``).

A cluster is probed with the scheduler people already have (``srun --ntasks-per-node=1
topomap probe -o $(hostname).json``, a Kubernetes Job, pdsh), then merged. Host names must be
unique: they are how flows, diffs and checks name the hosts.
"""

from __future__ import annotations

from topomap import __version__
from topomap.errors import TopomapError
from topomap.model import Host, Snapshot, Source, hosts_of


def host_name(snap: Snapshot) -> str | None:
    return snap.host.hostname


def merge(snaps: list[tuple[str, Snapshot]]) -> Snapshot:
    """Merged snapshot of (file, snapshot) pairs; nested merges are flattened."""
    members: list[Snapshot] = []
    origin_of: dict[str, str] = {}
    for path, snap in snaps:
        for m in hosts_of(snap):
            name = host_name(m)
            if not name:
                raise TopomapError(
                    f"{path}: the snapshot names no host",
                    hint="set host.hostname (probe snapshots always have one; imports do not)",
                )
            if name in origin_of:
                raise TopomapError(
                    f"{path}: host {name!r} is also in {origin_of[name]}",
                    hint="each host once: probe every node and merge the per-node files",
                )
            origin_of[name] = path
            members.append(m)
    if len(members) < 2:
        raise TopomapError("merge needs snapshots of at least two hosts")
    members.sort(key=lambda m: host_name(m) or "")
    return Snapshot(
        source=Source(
            kind="merge",
            origin=f"merge of {len(members)} hosts",
            tool=f"topomap {__version__}",
            notes=[f"{host_name(m)}: {m.source.kind} {m.source.origin}" for m in members],
        ),
        host=Host(),
        members=members,
    )
