"""AMD facts → snapshot: the one place that says what AMD's weights, hops and link types mean (issue 35).

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
PCIe switch the two GPUs may share, so NODE is the farthest it can be (a lower bound holds); `lspci -tv`
settles it. Across NUMA nodes: SYS.
"""

from __future__ import annotations

from topomap import __version__
from topomap.base.amd_parts import amd_part
from topomap.base.pciaddr import normalize_bus_id
from topomap.importers.amd_facts import AmdFacts, AmdGpu
from topomap.model.snapshot import P2P, Gpu, Host, Pair, PcieLink, Snapshot, Software, Source, XgmiPair

XGMI_WEIGHT = 15  # per XGMI hop (amdkfd io-link weight)
PCIE_WEIGHT = 20  # per PCIe segment, GPU to its CPU node
INTER_CPU_FALLBACK = 10  # rocm_smi.cc when the inter-CPU weight cannot be read

SAME_NODE_NOTE = (
    "PCIe GPU pairs on one NUMA node are recorded NODE: AMD's route goes through the CPU and does not show a "
    "PCIe switch the GPUs may share (`lspci -tv` settles it)"
)
HOPS_NOTE = (
    "XGMI hops are read from the link weight (15 per hop), not from the tools' hops column, which says 1 for "
    "every XGMI pair (AMD, ROCm/rocm-systems#5763)"
)


def build_amd(facts: AmdFacts, origin: str) -> Snapshot:
    """The snapshot of one AMD paste; what it lacks is listed in ``source.unknown_fields``."""
    gpus = [_gpu(facts.gpus[i]) for i in sorted(facts.gpus)]
    pairs: list[Pair] = []
    notes: list[str] = list(dict.fromkeys(facts.notes))
    for x, a in enumerate(gpus):
        for b in gpus[x + 1 :]:
            pairs.append(_pair(facts, a, b, notes))
    unknown = _unknown(facts, gpus, pairs)
    return Snapshot(
        source=Source(
            kind="amd-smi",
            origin=origin,
            tool=f"topomap {__version__}",
            formats=list(facts.formats),
            unknown_fields=unknown,
            notes=list(dict.fromkeys(notes)),
        ),
        host=Host(hostname=facts.hostname, cpu_model=facts.cpu_model),
        software=Software(driver_version=next((g.driver for g in facts.gpus.values() if g.driver), None)),
        gpus=gpus,
        pairs=pairs,
    )


def _gpu(r: AmdGpu) -> Gpu:
    part = amd_part(r.name, r.device_id)
    derived: list[str] = []
    name = r.name
    if name is None and part is not None:
        name, derived = part.name, ["name"]
    memory = r.memory_bytes
    if memory is None and part is not None and part.memory_gb is not None:
        memory = int(part.memory_gb * 1e9)
        derived.append("memory_total_bytes")
    pcie = PcieLink(gen_max=r.pcie_gen_max, width_max=r.pcie_width_max) if r.pcie_width_max or r.pcie_gen_max else None
    return Gpu(
        index=r.index,
        uuid=r.uuid,
        name=name,
        pci_bus_id=normalize_bus_id(r.bus) if r.bus else None,
        numa_node=r.numa,
        memory_total_bytes=memory,
        architecture=part.architecture if part is not None else None,
        pcie=pcie,
        pci_device_id=r.device_id,
        vendor="amd",
        derived=derived,
    )


def _cell(table: dict[tuple[int, int], object], i: int, j: int) -> object | None:
    return table.get((i, j), table.get((j, i)))


def _pair(facts: AmdFacts, a: Gpu, b: Gpu, notes: list[str]) -> Pair:
    i, j = a.index, b.index
    link = _cell(facts.link, i, j)
    weight = _cell(facts.weight, i, j)
    hops = _cell(facts.hops, i, j)
    w = weight if isinstance(weight, int) else None
    h = hops if isinstance(hops, int) else None
    if link is None and w is not None and 0 < w < 2 * PCIE_WEIGHT and w % XGMI_WEIGHT == 0:
        link = "XGMI"  # weights alone (`--showtopoweight`): below two PCIe segments only XGMI is (15, 30, 45)
    elif link is None and w is not None and w >= 2 * PCIE_WEIGHT:
        link = "PCIE"
    same_numa = a.numa_node == b.numa_node if a.numa_node is not None and b.numa_node is not None else None
    access = _cell(facts.access, i, j)
    p2p = None
    if isinstance(access, bool):
        status = "OK" if access else "NS"
        p2p = P2P(read=status, write=status)
    ids = (f"gpu{i}", f"gpu{j}")
    if link == "XGMI":
        notes.append(HOPS_NOTE)
        return Pair(a=ids[0], b=ids[1], path="XGMI", pcie_path="SYS" if same_numa is False else None,
                    p2p=p2p, xgmi=_xgmi(facts, i, j, w, h), link_weight=w or None)  # fmt: skip
    if link == "PCIE":
        far = same_numa is False or (h is not None and h >= 3) or (w is not None and w > 2 * PCIE_WEIGHT)
        path = "SYS" if far else "NODE"
        if path == "NODE":
            notes.append(SAME_NODE_NOTE)
        return Pair(a=ids[0], b=ids[1], path=path, pcie_path=path, p2p=p2p, link_weight=w or None)
    return Pair(a=ids[0], b=ids[1], path=None, p2p=p2p, link_weight=w or None)


def _xgmi(facts: AmdFacts, i: int, j: int, weight: int | None, hops: int | None) -> XgmiPair:
    xhops = weight // XGMI_WEIGHT if weight and weight % XGMI_WEIGHT == 0 else None
    bw = _cell(facts.bw, i, j)
    lo, hi = bw if isinstance(bw, tuple) else (None, None)
    links = _cell(facts.xgmi_links, i, j)
    if not isinstance(links, int):
        # the KFD's max is the link count × one link's rate, its min one link (amdgpu_amdkfd_get_xgmi_bandwidth_mbytes);
        # 0-0: an indirect peer, or a driver that does not report it
        links = hi // lo if isinstance(lo, int) and isinstance(hi, int) and lo > 0 and hi % lo == 0 else None
    return XgmiPair(hops=xhops, hops_reported=hops, weight=weight, links=links, min_mbps=lo, max_mbps=hi)


def _unknown(facts: AmdFacts, gpus: list[Gpu], pairs: list[Pair]) -> list[str]:
    out = ["nics", "gpus.nvlinks", "gpus.fabric", "gpus.mig", "pairs.cuda", "pci"]
    if any(p.path is None for p in pairs):
        out.append("pairs.path")
    if not facts.access:
        out.append("pairs.p2p")
    checks = (
        ("gpus.name", lambda g: g.name is None or "name" in g.derived),
        ("gpus.memory_total_bytes", lambda g: g.memory_total_bytes is None or "memory_total_bytes" in g.derived),
        ("gpus.pci_bus_id", lambda g: g.pci_bus_id is None),
        ("gpus.numa_node", lambda g: g.numa_node is None),
        ("gpus.uuid", lambda g: g.uuid is None),
        ("gpus.pcie", lambda g: g.pcie is None),
    )
    for field, missing in checks:
        if gpus and any(missing(g) for g in gpus):
            out.append(field)
    if not any(g.driver for g in facts.gpus.values()):
        out.append("software.driver_version")
    out.append("software.cuda_driver_version")
    return out
