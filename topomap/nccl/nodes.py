"""Several nodes from a merged snapshot: NCCL's transport for the pairs inside each host and for the
pairs its rings join across hosts; :func:`predict` takes any snapshot, one host or several."""

from __future__ import annotations

from dataclasses import replace

from topomap.graph import build, gpu_node
from topomap.model.facts import fabric_clique
from topomap.model.snapshot import Snapshot, hosts_of
from topomap.nccl.predict import Entry, NcclReport, predict_snapshot
from topomap.transport.decide import decide
from topomap.transport.facts import remote_facts
from topomap.transport.rules import NcclEnv


def predict(snap: Snapshot, env: NcclEnv, ranks: str | None = None, version: str | None = None) -> NcclReport:
    """NCCL's transports on one host's snapshot, or on every node of a merged one."""
    if snap.source.kind == "merge":
        return predict_cluster(snap, env, ranks, version)
    return predict_snapshot(snap, env, ranks, version)


def predict_cluster(snap: Snapshot, env: NcclEnv, ranks: str | None, version: str | None) -> NcclReport:
    """Several nodes from a merged snapshot: ranks host by host (``--ranks`` applies on every host), every
    pair inside a host, and across hosts the pairs NCCL's rings join by default — the same local rank on
    consecutive hosts, both ways, each decided for the sender's side."""
    hosts = hosts_of(snap)
    parts = [predict_snapshot(h, env, ranks, version) for h in hosts]
    counts = [len({e.src_rank for e in p.entries}) or 1 for p in parts]
    base = [sum(counts[:i]) for i in range(len(hosts))]
    entries: list[Entry] = []
    for h, part, off in zip(hosts, parts, base, strict=True):
        name = h.host.hostname or "?"
        entries += [
            replace(
                e,
                src_rank=e.src_rank + off,
                dst_rank=e.dst_rank + off,
                src_gpu=f"{name}:{e.src_gpu}",
                dst_gpu=f"{name}:{e.dst_gpu}",
            )
            for e in part.entries
        ]
    for i in range(len(hosts) - 1 if len(hosts) > 2 else 1):
        entries += _across(hosts, (i, (i + 1) % len(hosts)), (base, counts), env, version)
    report = NcclReport(entries, env=env, version=version, source=snap.source.origin or "merged snapshot")
    for h, part in zip(hosts, parts, strict=True):
        report.nics += [replace(n, gpu=f"{h.host.hostname}:{n.gpu}") for n in part.nics]
        report.features += [replace(f, gpu=f"{h.host.hostname}:{f.gpu}") for f in part.features]
    report.notes.append(
        f"{len(hosts)} hosts, ranks host by host; across hosts, the same local rank on consecutive hosts "
        "(NCCL's rings join those by default)"
    )
    report.notes += [n for n in parts[0].notes if not n.startswith("ranks:")][:1] if parts else []
    return report


def _across(
    hosts: list[Snapshot],
    pair: tuple[int, int],
    layout: tuple[list[int], list[int]],
    env: NcclEnv,
    version: str | None,
) -> list[Entry]:
    """Network entries between the same local ranks of two hosts, both directions."""
    base, counts = layout
    out = []
    for a, b in (pair, pair[::-1]):
        ta = build(hosts[a])
        gpus = sorted(hosts[a].gpus, key=lambda g: g.index)
        others = sorted(hosts[b].gpus, key=lambda g: g.index)
        for k in range(min(counts[a], counts[b], len(gpus), len(others))):
            ca, cb = fabric_clique(hosts[a], gpus[k]), fabric_clique(hosts[b], others[k])
            mnnvl = ca is not None and ca == cb
            d = decide(replace(remote_facts(ta, gpus[k]), mnnvl=mnnvl), env, version)
            out.append(
                Entry(
                    base[a] + k,
                    base[b] + k,
                    f"{hosts[a].host.hostname}:{gpu_node(gpus[k])}",
                    f"{hosts[b].host.hostname}:{gpu_node(others[k])}",
                    d,
                )
            )
    return out
