"""AMD GPU pairs: the one function that says what AMD's weights, hops and link types mean (issue 35);
the importers (rocm-smi, amd-smi) and the probe (AMD SMI) both ask it.

Weights as AMD computes them (ROCm/rocm_smi_lib ``src/rocm_smi.cc`` @a129571, ``rsmi_topo_get_link_weight``;
amd-smi calls the same code, and AMD's docs say so: ROCm/rocm-systems PR 7372, "Explain hops and
weights"):
- an XGMI pair's weight is the KFD io-link weight, 15 per XGMI hop (amdkfd; hwloc#775: "15 for direct
  and more for non-direct"), so weight / 15 is its XGMI hop count;
- a PCIe pair's weight is each GPU's PCIe segment to its CPU node (20 each) plus, on different NUMA
  nodes, the inter-CPU io-link weight (the NUMA distance: 12 within a socket, 32 across, on the real
  outputs kept), or 10 where that weight cannot be read ("More than one CPU hops, hard coded 10").
The tools' own "hops" are not XGMI hops: ``rsmi_topo_get_link_type`` answers 1 for every XGMI pair,
directly linked or not (AMD's maintainer in ROCm/rocm-systems#5763); they are kept as ``hops_reported``
and read only for PCIe pairs (2: one CPU node, 3: two, 4: further).

A PCIe pair on one NUMA node is recorded NODE: KFD's route goes through the CPU and does not show a
PCIe switch the two GPUs may share, so NODE is the farthest it can be (a lower bound holds); `topomap probe`
settles it (it reads the PCI tree). Across NUMA nodes: SYS.
"""

from __future__ import annotations

from dataclasses import dataclass

from topomap.base.links import XGMI_PATH, P2PStatus, PathClass
from topomap.model.snapshot import P2P, Gpu, Pair, XgmiPair

XGMI_WEIGHT = 15  # per XGMI hop (amdkfd io-link weight)
PCIE_WEIGHT = 20  # per PCIe segment, GPU to its CPU node
INTER_CPU_FALLBACK = 10  # rocm_smi.cc when the inter-CPU weight cannot be read

SAME_NODE_NOTE = (
    "PCIe GPU pairs on one NUMA node are recorded NODE: AMD's route goes through the CPU and does not show a "
    "PCIe switch the GPUs may share (`topomap probe` on the machine reads the PCI tree and settles it)"
)
HOPS_NOTE = (
    "XGMI hops are read from the link weight (15 per hop), not from the tools' hops column, which says 1 for "
    "every XGMI pair (AMD, ROCm/rocm-systems#5763)"
)


@dataclass(frozen=True)
class AmdPairFacts:
    """What a tool or AMD SMI said about one GPU pair (None: not said). ``link``: "XGMI" or "PCIE";
    ``bw``: the KFD min/max bandwidth in MB/s; ``links``: an XGMI link count where the source gives one."""

    link: str | None = None
    weight: int | None = None
    hops: int | None = None
    bw: tuple[int, int] | None = None
    links: int | None = None
    access: bool | None = None


def amd_pair(a: Gpu, b: Gpu, f: AmdPairFacts, notes: list[str]) -> Pair:
    """The snapshot pair of two AMD GPUs from what was said about them; ``notes`` gets what to say once."""
    link, w, h = f.link, f.weight, f.hops
    if link is None and w is not None and 0 < w < 2 * PCIE_WEIGHT and w % XGMI_WEIGHT == 0:
        link = "XGMI"  # weights alone (`--showtopoweight`): below two PCIe segments only XGMI is (15, 30, 45)
    elif link is None and w is not None and w >= 2 * PCIE_WEIGHT:
        link = "PCIE"
    same_numa = a.numa_node == b.numa_node if a.numa_node is not None and b.numa_node is not None else None
    p2p = None
    if f.access is not None:
        status: P2PStatus = "OK" if f.access else "NS"
        p2p = P2P(read=status, write=status)
    ids = (f"gpu{a.index}", f"gpu{b.index}")
    if link == "XGMI":
        notes.append(HOPS_NOTE)
        return Pair(a=ids[0], b=ids[1], path=XGMI_PATH, pcie_path="SYS" if same_numa is False else None,
                    p2p=p2p, xgmi=_xgmi(f), link_weight=w or None)  # fmt: skip
    if link == "PCIE":
        far = same_numa is False or (h is not None and h >= 3) or (w is not None and w > 2 * PCIE_WEIGHT)
        path: PathClass = "SYS" if far else "NODE"
        if path == "NODE":
            notes.append(SAME_NODE_NOTE)
        return Pair(a=ids[0], b=ids[1], path=path, pcie_path=path, p2p=p2p, link_weight=w or None)
    return Pair(a=ids[0], b=ids[1], path=None, p2p=p2p, link_weight=w or None)


def _xgmi(f: AmdPairFacts) -> XgmiPair:
    w = f.weight
    xhops = w // XGMI_WEIGHT if w and w % XGMI_WEIGHT == 0 else None
    lo, hi = f.bw if f.bw is not None else (None, None)
    links = f.links
    if links is None:
        # the KFD's max is the link count × one link's rate, its min one link (amdgpu_amdkfd_get_xgmi_bandwidth_mbytes);
        # 0-0: an indirect peer, or a driver that does not report it
        links = hi // lo if lo is not None and hi is not None and lo > 0 and hi % lo == 0 else None
    return XgmiPair(hops=xhops, hops_reported=f.hops, weight=w, links=links, min_mbps=lo, max_mbps=hi)
