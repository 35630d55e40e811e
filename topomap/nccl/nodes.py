"""Several nodes from a merged snapshot: NCCL's transport for the pairs inside each host and for the
pairs its rings join across hosts; :func:`predict` takes any snapshot, one host or several."""

from __future__ import annotations

from dataclasses import replace

from topomap.graph import Topology, build, gpu_node
from topomap.model.facts import fabric_clique
from topomap.model.snapshot import Gpu, Snapshot, hosts_of
from topomap.nccl.predict import NO_VERSION_NOTE, Entry, NcclReport, parse_ranks, predict_snapshot
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
    hosts = [(h, build(h), parse_ranks(ranks, h)[0]) for h in hosts_of(snap)]
    parts = [predict_snapshot(h, env, ranks, version, topo) for h, topo, _ in hosts]
    base = [sum(len(chosen) for _, _, chosen in hosts[:i]) for i in range(len(hosts))]
    entries: list[Entry] = []
    for (h, _, _), part, off in zip(hosts, parts, base, strict=True):
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
        j = (i + 1) % len(hosts)
        entries += _across((hosts[i], base[i]), (hosts[j], base[j]), env, version)
        entries += _across((hosts[j], base[j]), (hosts[i], base[i]), env, version)
    report = NcclReport(entries, env=env, version=version, source=snap.source.origin or "merged snapshot")
    for (h, _, _), part in zip(hosts, parts, strict=True):
        report.nics += [replace(n, gpu=f"{h.host.hostname}:{n.gpu}") for n in part.nics]
        report.features += [replace(f, gpu=f"{h.host.hostname}:{f.gpu}") for f in part.features]
    report.notes.append(
        f"{len(hosts)} hosts, ranks host by host; across hosts, the same local rank on consecutive hosts "
        "(NCCL's rings join those by default)"
    )
    if version is None:
        report.notes.append(NO_VERSION_NOTE)
    return report


_Host = tuple[Snapshot, Topology, list[Gpu]]  # a host, its graph, the GPUs its ranks run on


def _across(src: tuple[_Host, int], dst: tuple[_Host, int], env: NcclEnv, version: str | None) -> list[Entry]:
    """Network entries from each rank of one host to the same local rank of another (first rank ``base``),
    decided for the sender; P2P over multi-node NVLink where both GPUs are in one fabric clique."""
    (sa, ta, ga), base_a = src
    (sb, _, gb), base_b = dst
    out = []
    for k, (g, other) in enumerate(zip(ga, gb, strict=False)):
        clique = fabric_clique(sa, g)
        mnnvl = clique is not None and clique == fabric_clique(sb, other)
        d = decide(replace(remote_facts(ta, g), mnnvl=mnnvl), env, version)
        out.append(
            Entry(
                base_a + k, base_b + k, f"{sa.host.hostname}:{gpu_node(g)}", f"{sb.host.hostname}:{gpu_node(other)}", d
            )
        )
    return out
