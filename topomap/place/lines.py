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
    """One GPU of the placement as the lines need it. ``nic_family``: the NIC's family
    (:func:`topomap.model.facts.nic_family`), which decides the line that chooses it."""

    gid: str
    index: int
    ordinal: int | None
    numa_node: int | None
    cpus: str | None
    nic: str | None
    nic_rdma: bool
    nic_family: str = "unknown"
    nic_channels: tuple[str, ...] = ()  # the NICs this GPU's NCCL channels use, its own first (evidence)


#: AMD GPUs (issue 35): HIP_VISIBLE_DEVICES selects what the HIP runtime shows (PyTorch, RCCL), by HIP
#: index; ROCR_VISIBLE_DEVICES filters the whole ROCm user stack below it (ROCm docs, "GPU isolation
#: techniques"). HIP numbers GPUs in KFD node order, which amd-smi's (bus-id) order follows on the real
#: outputs kept; `amd-smi list` (its HIP-ID) or `rocm-smi --showbus` confirms it on the machine.
HIP_NOTE = (
    "HIP numbers GPUs as amd-smi does (bus-id order) on the machines seen; `amd-smi list` (HIP-ID) confirms it. "
    "ROCR_VISIBLE_DEVICES hides the others from the whole ROCm stack, HIP_VISIBLE_DEVICES from HIP only"
)


def command_lines(ranks: list[Rank], nics: bool, independent: bool, amd: bool = False) -> list[tuple[str, str]]:
    """(what, line) for the placement: environment, NICs, NUMA and cores, Docker, Slurm; on AMD GPUs
    HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES instead of CUDA's (issue 35)."""
    ords = ",".join(str(r.ordinal if r.ordinal is not None else r.index) for r in ranks)
    idx = ",".join(str(r.index) for r in ranks)
    if amd:
        return _amd_lines(ranks, nics, independent, idx)
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


def _amd_lines(ranks: list[Rank], nics: bool, independent: bool, idx: str) -> list[tuple[str, str]]:
    """The same placement on AMD GPUs: HIP and ROCr variables, RCCL's NIC lines (RCCL keeps NCCL's
    variable names), NUMA and cores, Docker with /dev/kfd and /dev/dri, Slurm."""
    out = [("HIP", f"HIP_VISIBLE_DEVICES={idx}"), ("ROCr", f"ROCR_VISIBLE_DEVICES={idx}")]
    if nics:
        out += _nic_lines(ranks)
    nodes = {r.numa_node for r in ranks}
    cpus = [r.cpus for r in ranks if r.cpus]
    if len(nodes) == 1 and None not in nodes and not independent:
        node = next(iter(nodes))
        out.append(("NUMA", f"numactl --cpunodebind={node} --membind={node} CMD"))
    else:
        out += [(f"NUMA {r.gid}", f"numactl --cpunodebind={r.numa_node} --membind={r.numa_node} CMD")
                for r in ranks if r.numa_node is not None]  # fmt: skip
    if cpus and not independent:
        out.append(("cores", f"taskset -c {union_cpus(cpus)} CMD"))
    elif independent:
        out += [(f"cores {r.gid}", f"HIP_VISIBLE_DEVICES={r.index} taskset -c {r.cpus} CMD") for r in ranks if r.cpus]
    out.append(("Docker", f"docker run --device=/dev/kfd --device=/dev/dri -e HIP_VISIBLE_DEVICES={idx} IMAGE"))
    out.append(("Slurm", f"srun --exclusive --gpus={len(ranks)} --gpu-bind=map_gpu:{idx} CMD"))
    return out


#: NCCL's own transports choose NICs by name: NCCL_IB_HCA for its IB verbs transport (InfiniBand and RoCE:
#: ConnectX, Broadcom bnxt_re, Intel irdma), NCCL_SOCKET_IFNAME for its socket transport; a leading '='
#: matches whole names (mlx5_1 alone would also select mlx5_10). NCCL docs, env.rst (NCCL_IB_HCA,
#: NCCL_SOCKET_IFNAME) @v2.30.7.
_IB_FAMILIES = ("connectx", "broadcom", "intel", "rdma")


def _nic_lines(ranks: list[Rank]) -> list[tuple[str, str]]:
    """The lines that choose each NIC, by the transport its family runs (issue 30 item 3)."""
    named = [r for r in ranks if r.nic and parse_bus_id(r.nic) is None]
    nameless = list(dict.fromkeys(r.nic for r in ranks if r.nic and parse_bus_id(r.nic) is not None))
    by = {fam: list(dict.fromkeys(r.nic for r in named if r.nic and _kind(r) == fam)) for fam in _KINDS}
    out: list[tuple[str, str]] = []
    if by["ib"]:
        out.append(("NCCL", f"NCCL_IB_HCA=={','.join(by['ib'])}"))
    if by["efa"]:  # aws-ofi-nccl spreads a GPU's channels over its equally near EFAs (p5: four): keep them all
        spread = [n for r in named if _kind(r) == "efa" for n in (r.nic_channels or (r.nic,)) if n]
        out += _efa_lines(list(dict.fromkeys(spread)))
    if by["gvnic"]:
        out += _gvnic_lines(by["gvnic"])
    if by["socket"]:
        out.append(("NCCL", f"NCCL_SOCKET_IFNAME=={','.join(by['socket'])}"))
    for bus in nameless:  # an NCCL topology file names a NIC by its PCI address only
        fam = next((r.nic_family for r in ranks if r.nic == bus), "unknown")
        takes = "FI_EFA_IFACE" if fam == "efa" else "NCCL_IB_HCA"
        out.append(("NIC", f"ls /sys/bus/pci/devices/{bus}/infiniband  # the device name {takes} takes"))
    return out


_KINDS = ("ib", "efa", "gvnic", "socket")


def _kind(r: Rank) -> str:
    """Which lines choose this rank's NIC: NCCL's IB verbs, aws-ofi-nccl (EFA), Google's TCPX plugins
    (gVNIC), or NCCL's sockets (a NIC without RDMA)."""
    if r.nic_family == "efa":
        return "efa"
    if r.nic_family == "gvnic":
        return "gvnic"
    if r.nic_rdma and r.nic_family in (*_IB_FAMILIES, "unknown"):
        return "ib"
    return "socket"


def _efa_lines(names: list[str]) -> list[tuple[str, str]]:
    """EFA goes through the aws-ofi-nccl plugin and libfabric, not NCCL's IB transport: NCCL_IB_HCA does
    not choose an EFA. libfabric's FI_EFA_IFACE lists the EFA devices a process may see (man/fi_efa.7.md,
    libfabric 2.0 and later, @af8ddbe9); the plugin then gives each GPU the nearest of them (aws-ofi-nccl
    src/nccl_ofi_topo.cpp @2daf7d3). FI_PROVIDER=efa and FI_EFA_USE_DEVICE_RDMA=1 are needed only with old
    releases (aws-ofi-nccl doc/efa-env-var.md @2daf7d3: FI_PROVIDER for aws-ofi-nccl <= 1.5.0, device RDMA
    for libfabric < 1.18 or aws-ofi-nccl < 1.7 on p4 and p5)."""
    return [
        ("EFA", f"FI_EFA_IFACE={','.join(names)}  # libfabric 2.0+: the EFA NICs the job sees (not NCCL_IB_HCA)"),
        ("EFA", "FI_PROVIDER=efa  # aws-ofi-nccl <= 1.5.0 only"),
        ("EFA", "FI_EFA_USE_DEVICE_RDMA=1  # libfabric < 1.18 / aws-ofi-nccl < 1.7 only: device RDMA on p4, p5"),
    ]


def _gvnic_lines(names: list[str]) -> list[tuple[str, str]]:
    """Google Cloud's GPU NICs (gVNIC) carry GPU data through Google's NCCL plugins: GPUDirect-TCPX on A3
    High (NCCL_GPUDIRECTTCPX_SOCKET_IFNAME for the data NICs, NCCL_GPUDIRECTTCPX_CTRL_DEV for the primary
    NIC) and GPUDirect-TCPXO on A3 Mega (NCCL_FASTRAK_IFNAME, NCCL_FASTRAK_CTRL_DEV), as Google's GKE guide
    "Maximize GPU network bandwidth with GPUDirect-TCPX(O) and multi-networking" and its
    nccl-env-profile.sh set them; NCCL_SOCKET_IFNAME keeps the primary NIC for NCCL's own sockets."""
    listed = ",".join(names)
    return [
        ("TCPX", f"NCCL_GPUDIRECTTCPX_SOCKET_IFNAME={listed}  # A3 High; NCCL_GPUDIRECTTCPX_CTRL_DEV: the primary NIC"),
        ("TCPXO", f"NCCL_FASTRAK_IFNAME={listed}  # A3 Mega; NCCL_FASTRAK_CTRL_DEV: the primary NIC"),
    ]
