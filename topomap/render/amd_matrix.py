"""AMD GPUs' topology in the shape ``rocm-smi --showtopo`` prints it (issue 35): Weight, Hops, Link Type
and Numa Nodes, each a ``GPU0 GPU1 …`` table with ``%-12s`` cells, as ROCm/rocm_smi_lib
``python_smi_tools/rocm_smi.py`` @a129571 lays them out, so a user can diff it against the machine's.

Cells come from the snapshot: a pair's own weight and the tools' hops where the source gave them;
otherwise what AMD's code would print for the path topomap recorded (XGMI: 15 per hop and hops 1;
PCIe on one NUMA node: 40 and 2; across NUMA nodes the weight depends on the NUMA distance: N/A, hops
3). ``N/A`` where neither is known, as rocm-smi prints a cell it could not read.
"""

from __future__ import annotations

from topomap.base.links import is_xgmi
from topomap.model.amd_pairs import PCIE_WEIGHT, XGMI_WEIGHT
from topomap.model.snapshot import Pair, Snapshot

_SPACER_WIDTH = 90


def _spacer(title: str) -> str:
    body = f" {title} "
    left = (_SPACER_WIDTH - len(body)) // 2
    return "=" * left + body + "=" * (_SPACER_WIDTH - len(body) - left)


def _cells(p: Pair | None) -> tuple[str, str, str]:
    """(weight, hops, link type) of a pair as rocm-smi would print them."""
    if p is None or p.path is None:
        return (str(p.link_weight) if p is not None and p.link_weight else "N/A"), "N/A", "XXXX"
    if p.link_weight and not is_xgmi(p.path):
        return str(p.link_weight), "2" if p.path != "SYS" else "3", "PCIE"
    if is_xgmi(p.path):
        x = p.xgmi
        weight = (
            x.weight if x is not None and x.weight else (XGMI_WEIGHT * x.hops if x is not None and x.hops else None)
        )
        return (str(weight) if weight else "N/A"), "1", "XGMI"
    if p.path in ("PIX", "PXB", "PHB", "NODE"):
        return str(2 * PCIE_WEIGHT), "2", "PCIE"
    return "N/A", "3", "PCIE"


def render_rocm_smi_topo(snap: Snapshot) -> str:
    """``rocm-smi --showtopo`` of an AMD snapshot."""
    gpus = sorted(snap.gpus, key=lambda g: g.index)
    pairs = {frozenset((p.a, p.b)): p for p in snap.pairs}
    head = "      " + "".join(f"GPU{g.index}".ljust(12) for g in gpus)
    blocks: list[str] = []
    for k, title in enumerate(("Weight between two GPUs", "Hops between two GPUs", "Link Type between two GPUs")):
        rows = [_spacer(title), head]
        for a in gpus:
            cells = []
            for b in gpus:
                cells.append(
                    "0" if a.index == b.index else _cells(pairs.get(frozenset((f"gpu{a.index}", f"gpu{b.index}"))))[k]
                )
            rows.append(f"GPU{a.index}".ljust(6) + "".join(c.ljust(12) for c in cells))
        blocks.append("\n".join(rows))
    numa = [_spacer("Numa Nodes")]
    for g in gpus:
        node = "N/A" if g.numa_node is None else str(g.numa_node)
        numa.append(f"GPU[{g.index}]\t\t: (Topology) Numa Node: {node}")
    blocks.append("\n".join(numa))
    return (
        _spacer("ROCm System Management Interface")
        + "\n"
        + "\n\n".join(blocks)
        + "\n"
        + _spacer("End of ROCm SMI Log")
        + "\n"
    )
