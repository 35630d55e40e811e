"""The GPU/NIC matrix in exactly `nvidia-smi topo -m` layout: tab-separated, same codes, same legends.

Pure text so users can diff it against what nvidia-smi printed on the machine.
"""

from __future__ import annotations

from topomap.base.links import is_xgmi
from topomap.model.origins import filled_summary
from topomap.model.snapshot import Gpu, Snapshot
from topomap.model.source_facts import source_knows
from topomap.render.text import visible

LEGEND = """Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks"""


#: topomap's own code for two AMD GPUs joined by XGMI (issue 35); nvidia-smi never prints it.
XGMI_LEGEND = "\n  XGMI = Connection traversing AMD Infinity Fabric (XGMI) links (topomap's code; rocm-smi's Link Type)"


def matrix_ids(snap: Snapshot) -> list[str]:
    """Row/column ids in nvidia-smi order: GPUs by index, then RDMA NICs by index."""
    return [f"gpu{g.index}" for g in sorted(snap.gpus, key=lambda g: g.index)] + [
        f"nic{n.index}" for n in sorted(snap.nics, key=lambda n: n.index) if n.rdma
    ]


def pair_lookup(snap: Snapshot) -> dict[frozenset[str], str | None]:
    return {frozenset((p.a, p.b)): p.path for p in snap.pairs}


def _label(node_id: str) -> str:
    return node_id.upper()


def _gpu_cols(g: Gpu, snap: Snapshot) -> list[str]:
    """The trailing cells as nvidia-smi prints them: N/A where it would print N/A, `?` where the
    source did not have the column (an older driver's matrix has no NUMA columns)."""

    def cell(value: object, fact: str) -> str:
        if value is None:
            return "N/A" if source_knows(snap, fact) else "?"
        return visible(str(value))

    cpu, numa = cell(g.cpu_affinity, "gpus.cpu_affinity"), cell(g.numa_node, "gpus.numa_node")
    # nvidia-smi pads the NUMA Affinity cell with an extra tab (seen in go-gpuallocator#17).
    return [cpu, numa, "", cell(g.gpu_numa_node, "gpus.gpu_numa_node")]


def render_matrix(snap: Snapshot) -> str:
    """`nvidia-smi topo -m` for a snapshot; unknown cells print as `?`."""
    ids = matrix_ids(snap)
    lookup = pair_lookup(snap)
    gpus = {f"gpu{g.index}": g for g in snap.gpus}
    lines = ["\t" + "\t".join(_label(i) for i in ids) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]
    for row in ids:
        cells = []
        for col in ids:
            if row == col:
                cells.append(" X ")
            else:
                cells.append(visible(lookup.get(frozenset((row, col))) or "?"))
        extra = _gpu_cols(gpus[row], snap) if row in gpus else []
        lines.append("\t".join([_label(row), *cells, *extra]))
    legend = LEGEND + (XGMI_LEGEND if any(is_xgmi(p.path) for p in snap.pairs) else "")
    out = "\n".join(lines) + "\n\n" + legend + "\n"
    nics = [n for n in sorted(snap.nics, key=lambda n: n.index) if n.rdma]
    if nics and source_knows(snap, "nics.name"):  # a source without a legend gets none made up
        out += "\nNIC Legend:\n\n" + "".join(f"  NIC{n.index}: {visible(n.name)}\n" for n in nics)
    if len(snap.gpus) > 1 and not source_knows(snap, "nvlink") and not any(g.vendor == "amd" for g in snap.gpus):
        out += NVLINK_UNKNOWN
    said = filled_summary(snap)  # cells a declared lot or the catalogue gave (model.origins)
    if said is not None:
        out += f"\nNote: {visible(said)}.\n"
    return out


#: Under a matrix whose source does not record NVLink (a static NCCL file): its GPU cells are PCIe
#: paths, and nvidia-smi would print NV# instead wherever NVLink joins a pair.
NVLINK_UNKNOWN = (
    "\nNote: this source does not record which GPU pairs NVLink joins: GPU-GPU cells show the PCIe\n"
    "path; where NVLink joins a pair, nvidia-smi prints NV# instead (`nvidia-smi topo -m` on the\n"
    "machine settles it).\n"
)


#: The legend `nvidia-smi topo -p2p` prints under its matrix (driver 570, club3090#1229).
P2P_LEGEND = """Legend:

  X    = Self
  OK   = Status Ok
  CNS  = Chipset not supported
  GNS  = GPU not supported
  TNS  = Topology not supported
  NS   = Not supported
  DR   = Disabled by regkey
  U    = Unknown"""


def render_p2p_matrix(snap: Snapshot, cap: str) -> str | None:
    """`nvidia-smi topo -p2p <r|w|n|a>` for one capability, legend included, or None when no pair
    recorded it."""
    field = {"r": "read", "w": "write", "n": "nvlink", "a": "atomics"}[cap]
    ids = [f"gpu{g.index}" for g in sorted(snap.gpus, key=lambda g: g.index)]
    status = {frozenset((p.a, p.b)): getattr(p.p2p, field) for p in snap.pairs if p.p2p is not None}
    if not any(v is not None for v in status.values()):
        return None
    lines = [" \t" + "\t".join(_label(i) for i in ids) + "\t"]
    for row in ids:
        cells = ["X" if row == col else (status.get(frozenset((row, col))) or "U") for col in ids]
        lines.append(" " + _label(row) + "\t" + "\t".join(cells) + "\t")
    return "\n".join(lines) + "\n\n" + P2P_LEGEND + "\n"
