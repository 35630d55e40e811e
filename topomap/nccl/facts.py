"""The facts NCCL decides from, taken from a snapshot (topomap's evidence) or from NCCL's own
topology dump in a log — one function per source, the same :class:`PairFacts` out of both."""

from __future__ import annotations

from topomap.graph import Topology, gpu_node
from topomap.graph.evidence import nearest_nic, nvlink, pcie_p2p, pcie_path_class
from topomap.model.facts import gpu_pcie_link
from topomap.model.snapshot import Gpu
from topomap.nccl.decide import NicFact, PairFacts
from topomap.nccl.logread import NcclLog
from topomap.nccl.rules import NcclEnv, path_rank, version_tuple

#: Inter-socket bandwidth NCCL assumes (src/graph/topo.h): Intel Skylake and later 10 GB/s, AMD 16.
_SYS_BW = {"intel": 10.0, "amd": 16.0}


def cpu_vendor(cpu_model: str | None) -> str | None:
    """``intel``, ``amd`` or None, from the snapshot's CPU model text."""
    text = (cpu_model or "").lower()
    if "amd" in text or "epyc" in text:
        return "amd"
    if "intel" in text or "xeon" in text:
        return "intel"
    return None


def nccl_pci_bw(g: Gpu) -> float | None:
    """NCCL's PCI bandwidth for a GPU's link: 12 GB/s for gen3 x16, doubling per generation."""
    link = gpu_pcie_link(g)
    if link.gen is None or link.width is None or link.gen < 1:
        return None
    return 12.0 * 2.0 ** (link.gen - 3) * link.width / 16


def nic_fact(topo: Topology, gid: str) -> NicFact:
    """A GPU's nearest usable NIC (topomap's evidence), as NCCL would weigh it."""
    choice = nearest_nic(topo, gid)
    if choice.nic is None:
        return NicFact(None, None, None)
    cls = choice.path
    capable = not (choice.gdr.no and cls is not None and path_rank(cls) <= path_rank("PXB"))
    bw = choice.nic.speed_gbit_s / 8 if choice.nic.speed_gbit_s else None
    return NicFact(choice.nic.name, cls, capable, bw)


def snapshot_facts(topo: Topology, a: Gpu, b: Gpu, same_process: bool | None) -> PairFacts:
    """PairFacts for two GPUs of the snapshot's host."""
    ga, gb = gpu_node(a), gpu_node(b)
    nv = nvlink(topo, ga, gb).usable
    has_nv = True if nv.yes else (False if nv.no else None)
    cls = "NVL" if has_nv else pcie_path_class(topo, ga, gb)
    p2p = pcie_p2p(topo, ga, gb)
    nvml = None if p2p.assumed or p2p.value == "unknown" else p2p.yes
    snap = topo.snapshot
    vendor = cpu_vendor(snap.host.cpu_model)
    bw: float | None = None
    if not has_nv:
        links = [x for x in (nccl_pci_bw(a), nccl_pci_bw(b)) if x is not None]
        bw = min(links) if len(links) == 2 else None
        if bw is not None and cls is not None and path_rank(cls) >= path_rank("SYS"):
            bw = min(bw, _SYS_BW[vendor]) if vendor else None
    return PairFacts(
        same_host=True,
        same_process=same_process,
        path=cls,
        nvlink=has_nv,
        nvml_p2p=nvml,
        cc=(a.compute_capability, b.compute_capability),
        amd_pair=vendor == "amd" and len(snap.gpus) <= 2,
        path_bw_gbs=bw,
        nic_src=nic_fact(topo, ga),
        nic_dst=nic_fact(topo, gb),
        how="from the snapshot",
    )


def remote_facts(topo: Topology | None, a: Gpu | None) -> PairFacts:
    """PairFacts for two ranks on different hosts: only the source's NIC matters."""
    nic = nic_fact(topo, gpu_node(a)) if topo is not None and a is not None else None
    cc = a.compute_capability if a is not None else None
    return PairFacts(False, False, None, None, None, (cc, None), nic_src=nic, how="ranks on different hosts")


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
