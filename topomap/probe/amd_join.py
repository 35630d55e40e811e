"""AMD SMI's answers joined into the probe's snapshot (issue 35): the AMD GPUs completed from sysfs,
and each AMD pair's path read as :func:`topomap.model.amd_pairs.amd_pair` reads AMD's weights."""

from __future__ import annotations

import msgspec

from topomap.base.links import is_xgmi, pcie_class_of
from topomap.model.amd_pairs import amd_pair
from topomap.model.snapshot import Gpu, Pair
from topomap.probe.amdsmi import AmdResult, probe_amdsmi
from topomap.probe.sysfs import SysfsResult

__all__ = ["AmdResult", "_amd_gpus", "_amd_on_bus", "_amd_pair_paths", "probe_amdsmi"]

AMD_VENDOR = "0x1002"


def _amd_on_bus(sysr: SysfsResult) -> bool:
    """The PCI bus shows an AMD display or processing-accelerator function (an Instinct is class 0x12)."""
    return any(
        f.vendor == AMD_VENDOR and f.pci_class is not None and (f.pci_class >> 16) in (0x03, 0x12)
        for f in sysr.functions.values()
    )


def _amd_gpus(am: AmdResult, sysr: SysfsResult) -> list[Gpu]:
    """AMD SMI's GPUs, with the CPU affinity and PCIe link sysfs gives where AMD SMI did not."""
    out: list[Gpu] = []
    for g in am.gpus:
        fn = sysr.functions.get(g.pci_bus_id or "")
        if fn is not None:
            upd: dict[str, object] = {}
            if g.numa_node is None and fn.numa_node is not None:
                upd["numa_node"] = fn.numa_node
            if g.cpu_affinity is None and fn.local_cpulist:
                upd["cpu_affinity"] = fn.local_cpulist
            g = msgspec.structs.replace(g, **upd) if upd else g
        out.append(g)
    return out


def _amd_pair_paths(pairs: list[Pair], gpus: list[Gpu], am: AmdResult) -> list[Pair]:
    """Each AMD GPU pair as AMD SMI described it (XGMI, or PCIe through the CPUs), keeping the PCIe class
    sysfs found (under an XGMI path, or as the path where AMD SMI said PCIe)."""
    if not am.pairs:
        return pairs
    by_id = {f"gpu{g.index}": g for g in gpus}
    notes: list[str] = []
    out: list[Pair] = []
    for p in pairs:
        a, b = by_id.get(p.a), by_id.get(p.b)
        facts = am.pairs.get((a.index, b.index)) if a is not None and b is not None else None
        if facts is None or a is None or b is None:
            out.append(p)
            continue
        q = amd_pair(a, b, facts, notes)
        sys_class = p.pcie_path or pcie_class_of(p.path)
        if q.path in (None, "NODE") and sys_class is not None:
            q = msgspec.structs.replace(q, path=sys_class, pcie_path=sys_class)  # sysfs sees the switch KFD does not
        elif is_xgmi(q.path):
            q = msgspec.structs.replace(q, pcie_path=sys_class or q.pcie_path)
        out.append(q)
    return out
