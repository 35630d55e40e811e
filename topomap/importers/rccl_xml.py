"""RCCL's topology files (``NCCL_TOPO_FILE`` for RCCL, ROCm/rccl ``tools/topo_expl/models``): NCCL's XML
with AMD GPUs and ``<xgmi target count tclass>`` under each ``<gpu>`` (issue 35). The NCCL XML reader
places the devices; this names the AMD GPUs (from their PCI device id) and turns each ``<xgmi>`` into
an XGMI pair with its link count (RCCL's own count: ``topo_8p_940.xml`` gives each MI300X seven
``count="1"`` links, ``topo_8p_90a.xml`` each MI250X GCD three)."""

from __future__ import annotations

import msgspec

from topomap.base.amd_parts import amd_part
from topomap.model.snapshot import Gpu, Pair, XgmiPair

RCCL_NOTE = (
    "an RCCL topology file: XGMI links as RCCL's <xgmi> elements give them; GPU pairs without one are reached "
    "over PCIe or over XGMI through other GPUs (RCCL reads XGMI from the driver at run time)"
)


def rccl_xgmi(
    gpus: list[Gpu], pairs: list[Pair], amd: dict[str, tuple[str | None, list[tuple[str, int]]]]
) -> tuple[list[Gpu], list[Pair]]:
    """``gpus`` with the AMD ones named, ``pairs`` with XGMI where an ``<xgmi>`` joins two GPUs."""
    rep = msgspec.structs.replace
    out: list[Gpu] = []
    for g in gpus:
        if g.pci_bus_id not in amd:
            out.append(g)
            continue
        dev, _ = amd[g.pci_bus_id]
        part = amd_part(None, dev)
        out.append(
            rep(
                g,
                vendor="amd",
                name=part.name if part else None,
                architecture=part.architecture if part else None,
                compute_capability=None,
                derived=["name", "architecture"] if part else [],
                nvlinks=[],
            )
        )
    by_bus = {g.pci_bus_id: f"gpu{g.index}" for g in out}
    links: dict[frozenset[str], int] = {}
    for bus, (_, xs) in amd.items():
        for target, count in xs:
            a, b = by_bus.get(bus), by_bus.get(target)
            if a and b and a != b and count > 0:
                links[frozenset((a, b))] = max(links.get(frozenset((a, b)), 0), count)
    new_pairs = []
    for p in pairs:
        n = links.get(frozenset((p.a, p.b)))
        if n:
            p = rep(p, path="XGMI", nvlinks=0, pcie_path=p.pcie_path or p.path, xgmi=XgmiPair(hops=1, links=n))
        new_pairs.append(p)
    return out, new_pairs
