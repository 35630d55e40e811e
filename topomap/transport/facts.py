"""The facts NCCL decides from, taken from a snapshot (topomap's evidence): the same :class:`PairFacts`
that :mod:`topomap.nccl.facts` builds from NCCL's own topology dump in a log."""

from __future__ import annotations

import re
from typing import Literal

from topomap.graph import Topology, gpu_node
from topomap.graph.evidence import nearest_nic, nvlink, pcie_p2p, pcie_path_class
from topomap.model.facts import gpu_pcie_link, nic_gdr
from topomap.model.origins import fact_origin
from topomap.model.snapshot import Gpu
from topomap.transport.decide import NicFact, PairFacts
from topomap.transport.rules import path_rank

#: Inter-socket bandwidth NCCL assumes (src/graph/topo.h): Intel Skylake and later 10 GB/s, AMD 16.
_SYS_BW = {"intel": 10.0, "amd": 16.0}


#: Broadwell server parts: "Xeon E5-2698 v4", or /proc/cpuinfo's "GenuineIntel family 6 model 79" (86: Xeon D)
_BROADWELL = re.compile(r"\be[57]-\d{4}\w* v4\b|\bfamily 6 model (?:79|86)\b")


def cpu_vendor(cpu_model: str | None) -> str | None:
    """``intel``, ``amd`` or None, from the snapshot's CPU model text."""
    kind = cpu_kind(cpu_model)
    return "intel" if kind == "intel-bdw" else (kind if kind in ("intel", "amd") else None)


def cpu_kind(cpu_model: str | None) -> str | None:
    """NCCL's CPU kind (``rules.CPU_KINDS``) from the snapshot's CPU model text, or None."""
    text = (cpu_model or "").lower()
    if "amd" in text or "epyc" in text or "ryzen" in text or "threadripper" in text:
        return "amd"
    if "intel" in text or "xeon" in text:
        return "intel-bdw" if _BROADWELL.search(text) else "intel"
    if "zhaoxin" in text:
        return "zhaoxin"
    if any(k in text for k in ("neoverse", "grace", "aarch64", "arm", "ampere altra")):
        return "arm"
    if "power" in text:
        return "power"
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
    # within PXB the evidence's answer is the NIC's; beyond it the path says no, and the NIC's own ability
    # (nic_gdr) is what NCCL_NET_GDR_LEVEL=SYS would meet. Unknown stays unknown (issue 30: EFA).
    within = cls is not None and path_rank(cls) <= path_rank("PXB")
    able = choice.gdr if within else nic_gdr(choice.nic)
    capable = None if able.value == "unknown" else not able.no
    bw = choice.nic.speed_gbit_s / 8 if choice.nic.speed_gbit_s else None
    declared = cls is None and fact_origin(topo.snapshot, "nics.gdr") is not None
    if declared:  # no path given: the declaration's answer (lot_gdr's), not the family's
        capable = None if choice.gdr.value == "unknown" else not choice.gdr.no
    return NicFact(choice.nic.name, cls, capable, bw, able.why() if able.no else None, declared=declared)


def has_nvlink_peer(topo: Topology, g: Gpu, gpus: list[Gpu] | None = None) -> bool | None:
    """Whether ``g`` has an NVLink peer among ``gpus`` (default: the host's GPUs), or is alone there —
    what NCCL asks before GPUDirect RDMA reads; None when NVLink is not recorded for some pair."""
    others = [o for o in (gpus if gpus is not None else topo.snapshot.gpus) if o.index != g.index]
    if not others:
        return True
    answers = [nvlink(topo, gpu_node(g), gpu_node(o)).usable for o in others]
    if any(a.yes for a in answers):
        return True
    return False if all(a.no for a in answers) else None


def snapshot_facts(
    topo: Topology, a: Gpu, b: Gpu, same_process: bool | None, local_gpus: int | None = None
) -> PairFacts:
    """PairFacts for two GPUs of the snapshot's host; ``local_gpus``: the GPUs the job uses there
    (default: all of the host's)."""
    ga, gb = gpu_node(a), gpu_node(b)
    nv = nvlink(topo, ga, gb).usable
    has_nv = True if nv.yes else (False if nv.no else None)
    cls = "NVL" if has_nv else pcie_path_class(topo, ga, gb)
    p2p = pcie_p2p(topo, ga, gb)
    nvml = None if p2p.assumed or p2p.value == "unknown" else p2p.yes
    snap = topo.snapshot
    kind = cpu_kind(snap.host.cpu_model)
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
        cpu=kind,
        local_gpus=local_gpus if local_gpus is not None else len(snap.gpus),
        path_bw_gbs=bw,
        nic_src=nic_fact(topo, ga),
        nic_dst=nic_fact(topo, gb),
        how="from the snapshot",
        nvlink_peer=(has_nvlink_peer(topo, a), has_nvlink_peer(topo, b)),
        p2p_declared=cls is None and fact_origin(snap, "pairs.p2p") is not None,
    )


def remote_facts(topo: Topology | None, a: Gpu | None, side: Literal["send", "receive"] = "send") -> PairFacts:
    """PairFacts for two ranks on different hosts, seen from ``a``: the sender's GPU (``side="send"``) or
    the receiver's; only that GPU's NIC matters."""
    nic = nic_fact(topo, gpu_node(a)) if topo is not None and a is not None else None
    cc = a.compute_capability if a is not None else None
    peer = has_nvlink_peer(topo, a) if topo is not None and a is not None else None
    return one_end_facts((nic, cc, peer), side, "ranks on different hosts")


def one_end_facts(
    end: tuple[NicFact | None, str | None, bool | None], side: Literal["send", "receive"], how: str
) -> PairFacts:
    """PairFacts for a network hop between hosts from what one end knows (its NIC, compute capability
    and whether it has an NVLink peer), put at the sender's place or the receiver's."""
    nic, cc, peer = end
    if side == "receive":
        return PairFacts(
            False, False, None, None, None, (None, cc), nic_dst=nic, nvlink_peer=(None, peer), side="receive", how=how
        )
    return PairFacts(False, False, None, None, None, (cc, None), nic_src=nic, nvlink_peer=(peer, None), how=how)
