"""Where the ranks of an NCCL log run, from what the log implies (each inference noted in the log's
``inferred``): which ranks share a host, one process when one pid prints everything, the bus ids of
NCCL's topology dump, and the GPU of GDR lines that name it by rank (2.24+) or CUDA device (2.4)."""

from __future__ import annotations

from topomap.nccl.logdata import UNNAMED, NcclLog, RankInfo


def fill_ranks(log: NcclLog) -> None:
    """What the log implies about ranks it does not name (each step noted in ``inferred``): which
    ranks share a host (:func:`_place_hosts`), one process when one pid prints everything, the bus
    ids of NCCL's topology dump, and the GPU of 2.24+ GDR lines (named by rank)."""
    _place_hosts(log)
    _one_process(log)
    _dump_buses(log)
    for host, rank, nic, on, d, t in log.gdr_by_rank:
        bus = log.ranks.get(rank, RankInfo()).bus
        if bus is not None:
            log.gpu_hca.setdefault((host, bus, nic), (on, d, t))
    for host, pid, cuda, nic, on, d, t in log.gdr_by_cuda:
        match = [r.bus for r in log.ranks.values() if (r.host, r.pid) == (host, pid) and r.cuda_dev in (None, cuda)]
        if len(match) == 1 and match[0] is not None:
            log.gpu_hca.setdefault((host, match[0], nic), (on, d, t))
    for h in log.hops:
        index, _proxy = h.nic
        if h.host in log.no_gdr_module and index is not None:
            log.hca_gdr.setdefault((h.host, index), False)


def _all_ranks(log: NcclLog) -> set[int]:
    return {h.src for h in log.hops} | {h.dst for h in log.hops} | set(log.ranks)


def _place_hosts(log: NcclLog) -> None:
    """Hosts as NCCL counts them. A process that printed ``NCCL_HOSTID`` is on that host id (NCCL
    compares host hashes, not names); a P2P or SHM line joins its two ranks on one host (NCCL uses
    neither across hosts); "nNodes 1" puts every rank on one host; a rank whose line says
    "localRanks 1" has every peer on another host. Ranks joined to no named host get a placeholder
    name, one per group, so that two groups never count as one host."""
    for r in log.ranks.values():
        if r.host is not None and r.pid is not None and (r.host, r.pid) in log.hostids:
            r.host = f"hostid {log.hostids[(r.host, r.pid)]}"
    if log.hostids:
        log.inferred.append("NCCL_HOSTID set: ranks of those processes are on the host id they printed")
    parent: dict[int, int] = {rank: rank for rank in _all_ranks(log)}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for h in log.hops:
        if h.transport in ("P2P", "SHM"):
            parent[find(h.src)] = find(h.dst)
    if log.nodes and all(nodes == 1 for nodes, _local in log.nodes.values()):
        ranks = sorted(parent)
        for rank in ranks[1:]:
            parent[find(rank)] = find(ranks[0])
    named: dict[int, str] = {}
    for rank, info in log.ranks.items():
        if info.host is not None:
            named.setdefault(find(rank), info.host)
    groups: dict[int, list[int]] = {}
    for rank in parent:
        groups.setdefault(find(rank), []).append(rank)
    for root, members in sorted(groups.items()):
        if root not in named and len(members) > 1:  # joined by P2P/SHM lines that name no host
            named[root] = f"(unnamed host {len(named) + 1})"
            log.inferred.append(f"ranks {sorted(members)} share one host the lines do not name (P2P/SHM between them)")
    alone = {rank for rank, (_n, local) in log.nodes.items() if local == 1}
    for rank in sorted(parent):
        info = log.ranks.setdefault(rank, RankInfo())
        if info.host is None and find(rank) in named:
            info.host = named[find(rank)]
        elif info.host is None and any(h.local in alone and rank in (h.src, h.dst) for h in log.hops):
            info.host = f"(host of rank {rank}: another host)"
            log.inferred.append(f"rank {rank} is on another host than its peer (its peer's line says localRanks 1)")
        elif info.host is None and (twin := _same_gpu_peer(log, rank)) is not None:
            info.host = f"(host of rank {rank}: another host)"
            log.inferred.append(
                f"rank {rank} is on another host than rank {twin}: both use GPU {info.bus}, and NCCL refuses "
                "two ranks on one GPU"
            )


def _same_gpu_peer(log: NcclLog, rank: int) -> int | None:
    """A rank with a known host that a network line joins to ``rank`` and that has the same GPU bus id."""
    bus = log.ranks[rank].bus
    for h in log.hops:
        if rank not in (h.src, h.dst) or not h.transport.startswith("NET"):
            continue
        peer = h.dst if h.src == rank else h.src
        info = log.ranks.get(peer)
        if bus and info is not None and info.host is not None and info.bus == bus:
            return peer
    return None


def _one_process(log: NcclLog) -> None:
    """One host and one pid in every NCCL line: ranks on that host whose pid the log does not print
    are assumed to run in that process (an assumption: other processes' lines may have been cut)."""
    hosts = {(h.host, h.pid) for h in log.hops if h.host != UNNAMED}
    hosts |= {(r.host, r.pid) for r in log.ranks.values() if r.host and r.pid and not r.host.startswith("(")}
    if len(hosts) != 1:
        return
    host, pid = next(iter(hosts))
    for rank in _all_ranks(log):
        r = log.ranks.setdefault(rank, RankInfo())
        if r.host in (None, host) and not _net_only(log, rank):
            r.host, r.pid = host, r.pid or pid
    log.inferred.append(f"every NCCL line comes from {host} pid {pid}: its ranks are assumed to be one process")


def _net_only(log: NcclLog, rank: int) -> bool:
    """The rank appears only as the far end of network lines: where it runs is not in the log."""
    seen = [h for h in log.hops if rank in (h.src, h.dst)]
    return bool(seen) and all(h.transport.startswith("NET") and h.local != rank for h in seen)


def _dump_buses(log: NcclLog) -> None:
    """Ranks of NCCL's topology dump take their bus id from it; when only the dump's rank-less GPUs
    remain they go to the remaining ranks in bus order (single-process ranks follow CUDA order, which
    is bus order by default)."""
    for bus, rank in log.dump_ranks.items():
        log.ranks.setdefault(rank, RankInfo()).bus = bus
    buses = sorted({a for a, _ in log.gpu_paths} | {b for _, b in log.gpu_paths}, key=lambda b: int(b, 16))
    named = {r.bus for r in log.ranks.values() if r.bus}
    free = [b for b in buses if b not in log.dump_ranks and b not in named]
    rankless = sorted(r for r in _all_ranks(log) if not log.ranks.get(r, RankInfo()).bus)
    if free and len(free) == len(rankless):
        for rank, bus in zip(rankless, free):
            log.ranks.setdefault(rank, RankInfo()).bus = bus
        pairs = ", ".join(f"{r}→{b}" for r, b in zip(rankless, free, strict=True))
        log.inferred.append(f"ranks without a bus id matched to the dump's GPUs in bus order: {pairs}")
