"""The facts NCCL decides from, taken from a snapshot (topomap's evidence): the same :class:`PairFacts`
that :mod:`topomap.nccl.facts` builds from NCCL's own topology dump in a log."""

from __future__ import annotations

from topomap.graph import Topology, gpu_node
from topomap.graph.evidence import nearest_nic, nvlink, pcie_p2p, pcie_path_class
from topomap.model.facts import gpu_pcie_link
from topomap.model.snapshot import Gpu
from topomap.transport.decide import NicFact, PairFacts
from topomap.transport.rules import path_rank

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
        amd_pair=(vendor == "amd" if vendor else None) if len(snap.gpus) <= 2 else False,
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
