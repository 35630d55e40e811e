"""The lines that pin a job to a placement: CUDA ordinals (``CUDA_DEVICE_ORDER=PCI_BUS_ID``), the
NICs for NCCL, the NUMA node and cores (numactl, taskset), Docker's and Slurm's forms.

CUDA numbers GPUs fastest first unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``; with it, in PCI bus order,
which is the order nvidia-smi (NVML) uses, so the ordinals are computed from the snapshot's bus ids.
A GPU lost from the bus is not enumerated by CUDA, so ordinals after it shift down.
"""

from __future__ import annotations

from dataclasses import dataclass

from topomap.base.cpus import format_cpulist, parse_cpulist
from topomap.base.pciaddr import parse_bus_id
from topomap.model.facts import SETTLE
from topomap.model.snapshot import Gpu, Snapshot


@dataclass(frozen=True)
class Ordinals:
    """CUDA ordinal of each GPU id under ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (None: unknown) and why."""

    by_gid: dict[str, int | None]
    note: str


def cuda_ordinals(snap: Snapshot) -> Ordinals:
    """Ordinals in PCI bus order from the bus ids; unknown when a visible GPU's bus id is missing."""
    visible = [g for g in snap.gpus if not g.lost]
    buses = {f"gpu{g.index}": parse_bus_id(g.pci_bus_id) if g.pci_bus_id else None for g in visible}
    if not visible or any(b is None for b in buses.values()):
        return Ordinals(
            {f"gpu{g.index}": None for g in snap.gpus},
            "CUDA ordinal unknown: the source records no PCI bus id for every GPU. With "
            "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA numbers GPUs in PCI bus order, the order nvidia-smi uses, "
            "so the lines use the nvidia-smi indices; confirm with "
            "`nvidia-smi --query-gpu=index,pci.bus_id --format=csv` or `topomap probe`",
        )
    order = sorted(buses, key=lambda gid: buses[gid] or (0, 0, 0, 0))
    by_gid: dict[str, int | None] = {gid: None for gid in (f"gpu{g.index}" for g in snap.gpus)}
    by_gid.update({gid: n for n, gid in enumerate(order)})
    lost = [f"gpu{g.index}" for g in snap.gpus if g.lost]
    note = "CUDA ordinals under CUDA_DEVICE_ORDER=PCI_BUS_ID: the visible GPUs in PCI bus order (from the bus ids)"
    if lost:
        note += f"; {', '.join(lost)} lost from the bus is not enumerated, so the ordinals after it shift down"
    return Ordinals(by_gid, note)


def gpu_cpus(snap: Snapshot, g: Gpu, numa: int | None) -> tuple[str | None, str]:
    """The cores nearest a GPU as a cpulist and where they come from: the GPU's CPU affinity, else
    its NUMA node's CPUs; (None, why) when neither is recorded."""
    if g.cpu_affinity:
        return g.cpu_affinity, "the GPU's CPU affinity"
    node = next((n for n in snap.host.numa_nodes if n.id == numa), None) if numa is not None else None
    if node is not None and node.cpus:
        return node.cpus, f"NUMA node {numa}'s CPUs"
    return None, f"cores unknown: the source records no CPU affinity (settle it with {SETTLE['numa']})"


def union_cpus(lists: list[str]) -> str:
    """Several cpulists as one."""
    cpus: set[int] = set()
    for text in lists:
        try:
            cpus.update(parse_cpulist(text))
        except ValueError:
            continue
    return format_cpulist(cpus)


@dataclass(frozen=True)
class Rank:
    """One GPU of the placement as the lines need it."""

    gid: str
    index: int
    ordinal: int | None
    numa_node: int | None
    cpus: str | None
    nic: str | None
    nic_rdma: bool


def command_lines(ranks: list[Rank], nics: bool, independent: bool) -> list[tuple[str, str]]:
    """(what, line) for the placement: environment, NICs, NUMA and cores, Docker, Slurm."""
    ords = ",".join(str(r.ordinal if r.ordinal is not None else r.index) for r in ranks)
    idx = ",".join(str(r.index) for r in ranks)
    out = [("CUDA", f"CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={ords}")]
    if nics:
        out += _nic_lines(ranks)
    nodes = {r.numa_node for r in ranks}
    cpus = [r.cpus for r in ranks if r.cpus]
    if len(nodes) == 1 and None not in nodes and not independent:
        node = nodes.pop()
        out.append(("NUMA", f"numactl --cpunodebind={node} --membind={node} CMD"))
    else:
        for r in ranks:
            if r.numa_node is not None:
                out.append((f"NUMA {r.gid}", f"numactl --cpunodebind={r.numa_node} --membind={r.numa_node} CMD"))
    if cpus and not independent:
        out.append(("cores", f"taskset -c {union_cpus(cpus)} CMD"))
    elif independent:
        for r in ranks:
            if r.cpus:
                ordinal = r.ordinal if r.ordinal is not None else r.index
                out.append((f"cores {r.gid}", f"CUDA_VISIBLE_DEVICES={ordinal} taskset -c {r.cpus} CMD"))
    docker = f"docker run --gpus '\"device={idx}\"'"
    if cpus and len(nodes) == 1 and None not in nodes and not independent:
        docker += f" --cpuset-cpus={union_cpus(cpus)} --cpuset-mems={next(iter(nodes))}"
    out.append(("Docker", docker + " IMAGE"))
    out.append(("Slurm", f"srun --exclusive --gpus={len(ranks)} --gpu-bind=map_gpu:{idx} CMD"))
    return out


def _nic_lines(ranks: list[Rank]) -> list[tuple[str, str]]:
    nameless = list(dict.fromkeys(r.nic for r in ranks if r.nic and parse_bus_id(r.nic) is not None))
    rdma = list(dict.fromkeys(r.nic for r in ranks if r.nic and r.nic_rdma and r.nic not in nameless))
    plain = list(dict.fromkeys(r.nic for r in ranks if r.nic and not r.nic_rdma and r.nic not in nameless))
    out: list[tuple[str, str]] = []
    if rdma:  # a leading '=' matches whole names: mlx5_1 alone would also select mlx5_10
        out.append(("NCCL", f"NCCL_IB_HCA=={','.join(rdma)}"))
    if plain:
        out.append(("NCCL", f"NCCL_SOCKET_IFNAME=={','.join(plain)}"))
    for bus in nameless:  # an NCCL topology file names a NIC by its PCI address only
        out.append(("NIC", f"ls /sys/bus/pci/devices/{bus}/infiniband  # the device name NCCL_IB_HCA takes"))
    return out
