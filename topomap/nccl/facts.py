"""The facts NCCL decides from, taken from NCCL's own topology dump in a log; the snapshot's side
(:func:`snapshot_facts`, :func:`nic_fact`, :func:`remote_facts`) lives in :mod:`topomap.transport.facts`
so a flow can ask it too — re-exported here."""

from __future__ import annotations

from topomap.nccl.logread import NcclLog
from topomap.transport.decide import NicFact, PairFacts
from topomap.transport.facts import cpu_vendor, nccl_pci_bw, nic_fact, remote_facts, snapshot_facts
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


def dump_facts(log: NcclLog, bus_a: str | None, bus_b: str | None, same_process: bool | None) -> PairFacts:
    """PairFacts from NCCL's own path dump in the log (``GPU/4E000 :GPU/0-4f000 (4/24.0/PHB) …``).
    NCCL's path type already includes NVLink; P2P refused by the driver shows as "Could not enable P2P"."""
    path = log.gpu_paths.get((bus_a or "", bus_b or "")) or log.gpu_paths.get((bus_b or "", bus_a or ""))
    nv = None if path is None else path in ("NVL", "NVB")
    refused = (bus_a, bus_b) in log.p2p_refused or (bus_b, bus_a) in log.p2p_refused
    return PairFacts(
        same_host=True,
        same_process=same_process,
        path=path,
        nvlink=nv,
        nvml_p2p=False if refused else None,
        path_bw_gbs=log.path_bw.get((bus_a or "", bus_b or "")),
        how="from NCCL's topology dump in the log" if path else "the log has no topology dump for this pair",
    )


#: NCCL's path numbers as its GDR lines print them ("distance 7 > 4"), per release family
#: (src/graph/topo.h): PXN arrived in 2.12, C2C in 2.20, P2C in 2.28.
_NUMBERING: tuple[tuple[tuple[int, int, int], tuple[str, ...]], ...] = (
    ((2, 28, 0), ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET")),
    ((2, 20, 0), ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "PHB", "SYS", "NET")),
    ((2, 12, 0), ("LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS", "NET")),
    ((0, 0, 0), ("LOC", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS", "NET")),
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


def log_nic_fact(log: NcclLog, host: str | None, bus: str | None, nic: int | None, level_name: str) -> NicFact | None:
    """The NIC a network line names (``NET/IB/3``) on ``host``, as the log describes it for the GPU at
    ``bus``: its name, the path from the dump or the GDR line's distance, and GPUDirect support (a
    "Disabled for HCA" line says no; an "Enabled" line for the NIC or any GPU with it says yes)."""
    if nic is None or host is None:
        return None
    name = log.hca_names.get((host, nic), f"NET/{nic}")
    path = log.gpu_net_paths.get((host, bus, nic)) if bus else None
    gdr_line = log.gpu_hca.get((host, bus, nic)) if bus else None
    if path is None and gdr_line is not None:
        path = distance_path(gdr_line[1], gdr_line[2], log.version, level_name)
    capable = log.hca_gdr.get((host, nic))
    if capable is None and any(on for (h, _b, i), (on, _d, _t) in log.gpu_hca.items() if (h, i) == (host, nic)):
        capable = True
    return NicFact(name, path, capable)


def log_remote_facts(log: NcclLog, host: str | None, bus: str | None, nic: int | None, level_name: str) -> PairFacts:
    """PairFacts for a network line of a log given without a snapshot."""
    fact = log_nic_fact(log, host, bus, nic, level_name)
    return PairFacts(False, False, None, None, None, nic_src=fact, how="ranks on different hosts; NIC as the log shows")


def env_of(log: NcclLog | None, extra: NcclEnv) -> NcclEnv:
    """The log's "set by environment" values, overridden by ``--env``."""
    merged = dict(log.env.values if log else ())
    merged.update(extra.values)
    return NcclEnv(tuple(sorted(merged.items())))
