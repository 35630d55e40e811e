"""The facts NCCL decides from, taken from NCCL's own topology dump in a log; the snapshot's side
(:func:`snapshot_facts`, :func:`nic_fact`, :func:`remote_facts`) lives in :mod:`topomap.transport.facts`
so a flow can ask it too — re-exported here."""

from __future__ import annotations

from typing import Literal

from topomap.base.part_names import model_from_name
from topomap.nccl.logread import NcclLog
from topomap.transport.decide import NicFact, PairFacts
from topomap.transport.facts import cpu_vendor, nccl_pci_bw, nic_fact, one_end_facts, remote_facts, snapshot_facts
from topomap.transport.rules import NcclEnv, version_tuple

__all__ = [
    "cpu_vendor",
    "distance_path",
    "dump_facts",
    "env_of",
    "log_nic_fact",
    "log_remote_facts",
    "nccl_pci_bw",
    "nic_fact",
    "remote_facts",
    "snapshot_facts",
]


def dump_facts(
    log: NcclLog,
    ranks: tuple[int, int],
    buses: tuple[str | None, str | None],
    same_process: bool | None,
    host: str | None = None,
) -> PairFacts:
    """PairFacts from NCCL's own path dump in the log (``GPU/4E000 :GPU/0-4f000 (4/24.0/PHB) …``), the
    dump's CPU line, the communicator's local rank count and the ranks' GPU models. NCCL's path type
    already includes NVLink; P2P refused by the driver shows as "Could not enable P2P"."""
    bus_a, bus_b = buses
    path = log.gpu_paths.get((bus_a or "", bus_b or "")) or log.gpu_paths.get((bus_b or "", bus_a or ""))
    nv = None if path is None else path in ("NVL", "NVB")
    refused = (bus_a, bus_b) in log.p2p_refused or (bus_b, bus_a) in log.p2p_refused
    return PairFacts(
        same_host=True,
        same_process=same_process,
        path=path,
        nvlink=nv,
        nvml_p2p=False if refused else None,
        cc=(log_cc(log, ranks[0]), log_cc(log, ranks[1])),
        cpu=log.cpus.get(host or "") if host else (next(iter(log.cpus.values())) if len(log.cpus) == 1 else None),
        local_gpus=local_gpus(log, host),
        path_bw_gbs=log.path_bw.get((bus_a or "", bus_b or "")),
        how="from NCCL's topology dump in the log" if path else "the log has no topology dump for this pair",
    )


def log_cc(log: NcclLog, rank: int) -> str | None:
    """A rank's compute capability from the GPU model nccl-tests printed for it (the parts table), or None."""
    name = log.gpu_models.get(rank)
    model = model_from_name(name) if name else None
    return model.cc if model is not None else None


def local_gpus(log: NcclLog, host: str | None) -> int | None:
    """The communicator's GPUs on ``host`` (what NCCL's topology holds): the init line's localRanks,
    else the GPUs of the dump when the log is one host's, else None."""
    if host and host in log.local_ranks:
        return log.local_ranks[host]
    hosts = {r.host for r in log.ranks.values() if r.host}
    if len(hosts) <= 1 and log.gpu_paths:
        return len({a for a, _ in log.gpu_paths} | {b for _, b in log.gpu_paths})
    return None


def log_nvlink_peer(log: NcclLog, bus: str | None) -> bool | None:
    """Whether the GPU at ``bus`` has an NVLink peer in the dump (or is its only GPU); None without it."""
    if not bus:
        return None
    rows = {b: t for (a, b), t in log.gpu_paths.items() if a == bus}
    if not rows:  # its dump row names no other GPU: alone in NCCL's topology (NCCL counts that as a peer)
        in_dump = bus in log.dump_ranks or any(b == bus for _h, b, _n in log.gpu_net_paths)
        return True if in_dump and set(log.dump_ranks) <= {bus} else None
    return any(t in ("NVL", "NVB") for t in rows.values())


#: NCCL's path numbers as its GDR lines print them ("distance 7 > 4"), per release family
#: (src/graph/topo.h; 2.4: src/include/topo.h ncclPathDist): PXN arrived in 2.12, C2C in 2.20, P2C in 2.28.
_NUMBERING: tuple[tuple[tuple[int, int, int], tuple[str, ...]], ...] = (
    ((2, 28, 0), ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET")),
    ((2, 20, 0), ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "PHB", "SYS", "NET")),
    ((2, 12, 0), ("LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS", "NET")),
    ((2, 5, 0), ("LOC", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS", "NET")),
    ((0, 0, 0), ("PIX", "PXB", "PHB", "PHB", "SYS")),  # 2.4: PIX PXB PHB NODE SYS (NODE is PHB here)
)


def distance_path(distance: int, level: int, version: str | None, level_name: str) -> str | None:
    """The path type behind a GDR line's ``distance d <= t``: by the log's NCCL version, else by the
    release families whose number for ``level_name`` (the GDR level in force) is ``t`` — when they
    all name ``d`` the same."""
    v = version_tuple(version)
    if v is not None:
        names = next(n for since, n in _NUMBERING if v >= since)
        return names[distance] if distance < len(names) else None
    found = {
        n[distance]
        for _since, n in _NUMBERING
        if level_name in n and n.index(level_name) == level and distance < len(n)
    }
    return found.pop() if len(found) == 1 else None


def log_nic_fact(
    log: NcclLog, host: str | None, bus: str | None, nic: int | None, level_name: str, pid: int | None = None
) -> NicFact | None:
    """The NIC a network line names (``NET/IB/3``) on ``host``, as the log describes it for the GPU at
    ``bus``: its name, the path from the dump or the GDR line's distance, and GPUDirect support (a
    "Disabled for HCA" line says no; an "Enabled" line for the NIC or any GPU with it says yes)."""
    if nic is None or host is None:
        return None
    name = log.hca_names.get((host, nic), f"NET/{nic}")
    path = log.gpu_net_paths.get((host, bus, nic)) if bus else None
    gdr_line = log.gpu_hca.get((host, bus, nic)) if bus else None
    if gdr_line is None and pid is not None:  # NCCL 2.4 names the GPU by CUDA device: the printing process's line
        said = {(on, d, t) for h, p, _c, n, on, d, t in log.gdr_by_cuda if (h, p, n) == (host, pid, nic)}
        gdr_line = said.pop() if len(said) == 1 else None
    # the NIC is the prediction's where a line before the channel lines ties it to the GPU (the dump's
    # path row, a GDR line) or it is the host's only NIC; else only the observed line names it
    only = {i for (h, i) in log.hca_names if h == host} == {nic}
    from_line = path is None and gdr_line is None and not only
    if log.network.get(host, "").lower() == "socket":
        why = "NCCL uses its Socket transport (TCP): no GPUDirect RDMA"
        return NicFact(name, None, False, no_gdr_why=why, from_line=from_line)
    if path is None and gdr_line is not None:
        path = distance_path(gdr_line[1], gdr_line[2], log.version, level_name)
        if path is None and not gdr_line[0]:  # NCCL said so itself: the NIC is beyond its GDR level
            why = (
                f"the log: GPU Direct RDMA Disabled for this GPU / HCA {nic} (distance {gdr_line[1]} vs {gdr_line[2]})"
            )
            return NicFact(name, None, False, no_gdr_why=why, from_line=from_line)
        if path is None:  # enabled: within the level in force, whatever its name
            path = level_name
    capable = log.hca_gdr.get((host, nic))
    if capable is None and any(on for (h, _b, i), (on, _d, _t) in log.gpu_hca.items() if (h, i) == (host, nic)):
        capable = True
    return NicFact(name, path, capable, from_line=from_line)


def log_remote_facts(
    log: NcclLog,
    where: tuple[str | None, str | None, int | None],
    level_name: str,
    side: Literal["send", "receive"] = "send",
    rank: int | None = None,
    pid: int | None = None,
) -> PairFacts:
    """PairFacts for a network line of a log given without a snapshot, seen from the GPU at ``bus`` on
    ``host`` (``where`` = host, bus, NCCL's NIC index) that sends (``side="send"``) or receives."""
    host, bus, nic = where
    fact = log_nic_fact(log, host, bus, nic, level_name, pid)
    cc = log_cc(log, rank) if rank is not None else None
    return one_end_facts((fact, cc, log_nvlink_peer(log, bus)), side, "ranks on different hosts; NIC as the log shows")


def env_of(log: NcclLog | None, extra: NcclEnv) -> NcclEnv:
    """The log's "set by environment" values, overridden by ``--env``."""
    merged = dict(log.env.values if log else ())
    merged.update(extra.values)
    return NcclEnv(tuple(sorted(merged.items())))
