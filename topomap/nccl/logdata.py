"""What an NCCL INFO log says, as :mod:`topomap.nccl.logread` reads it: the channel lines (hops), what
is known of each rank, and the log's network and topology facts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from topomap.transport.rules import NcclEnv, Transport

#: the host of a line pasted without ``host:pid:tid`` (or ``NCCL INFO``): not known
UNNAMED = "(no host in the line)"


@dataclass(frozen=True)
class Hop:
    """One channel line: rank to rank, the transport family, and what the line said."""

    src: int
    dst: int
    src_dev: str | None  # nvmlDev (2.12+) or bus id (older), as printed
    dst_dev: str | None
    transport: Transport
    via: str
    host: str
    pid: int
    line: int
    side: str | None = None  # "send" or "receive" for network lines: the rank whose host printed it

    @property
    def local(self) -> int:
        """The rank on the host that printed the line (the receiver for ``[receive]``)."""
        return self.dst if self.side == "receive" else self.src

    @property
    def nic(self) -> tuple[int | None, int | None]:
        """(NCCL's NIC index, proxy rank for PXN) from ``NET/IB/3/GDRDMA`` or ``NET/IB/0(5)/GDRDMA``."""
        m = _NET_VIA.match(self.via)
        if m is None:
            return None, None
        proxy = m.group("proxy")
        return int(m.group("nic")), int(proxy) if proxy is not None else None


_NET_VIA = re.compile(r"^NET/[^/]+/(?P<nic>\d+)(?:\((?P<proxy>\d+)\))?")


@dataclass
class RankInfo:
    host: str | None = None
    pid: int | None = None
    cuda_dev: int | None = None
    nvml_dev: int | None = None
    bus: str | None = None  # NCCL's short bus id, e.g. "38000" → 0000:38:00.0


@dataclass
class NcclLog:
    """What a log says; ``skipped`` lists what could not be read (line number and why)."""

    path: str
    version: str | None = None
    env: NcclEnv = field(default_factory=NcclEnv)
    library: str = "nccl"  # "rccl" where the log prints "RCCL version" (AMD GPUs, issue 35)
    hops: list[Hop] = field(default_factory=list)
    ranks: dict[int, RankInfo] = field(default_factory=dict)
    comms: set[str] = field(default_factory=set)
    gpu_paths: dict[tuple[str, str], str] = field(default_factory=dict)  # (bus, bus) → NCCL path type
    path_bw: dict[tuple[str, str], float] = field(default_factory=dict)
    dump_ranks: dict[str, int] = field(default_factory=dict)  # bus → rank from the "=== System" tree
    skipped: list[str] = field(default_factory=list)
    lines: int = 0
    nccl_lines: int = 0
    p2p_refused: set[tuple[str, str]] = field(default_factory=set)
    inferred: list[str] = field(default_factory=list)  # "Could not enable P2P between dev a and b"
    # the network: NCCL's NIC index → name ("NET/IB : Using [0]mlx5_0:1/IB …"), GPUDirect support per
    # NIC ("GPU Direct RDMA Disabled for HCA 0 'mlx5_0'"), per GPU and NIC the distance NCCL weighed
    # ("GPU Direct RDMA Enabled for GPU 18000 / HCA 3 (distance 4 <= 5)") and the dump's GPU→NET paths
    # NCCL numbers NICs per host: every key starts with the host that printed the line
    hca_names: dict[tuple[str, int], str] = field(default_factory=dict)
    hca_gdr: dict[tuple[str, int], bool] = field(default_factory=dict)
    gpu_hca: dict[tuple[str, str, int], tuple[bool, int, int]] = field(default_factory=dict)  # enabled, d, level
    gpu_net_paths: dict[tuple[str, str, int], str] = field(default_factory=dict)  # (host, GPU bus, NET) → path
    # what NCCL's P2P level and GDR reads depend on: the CPU kind per host (the dump's "CPU/0 (1/2/-1)"),
    # the communicator's GPUs per host ("localRanks 4"), the GPU model per rank (nccl-tests' "#  Rank  0
    # Group  0 Pid 1 on host device  0 [0x1b] NVIDIA A100-SXM4-80GB" lines)
    cpus: dict[str, str] = field(default_factory=dict)
    local_ranks: dict[str, int] = field(default_factory=dict)
    gpu_models: dict[int, str] = field(default_factory=dict)
    # 2.24 and later name the GPU of a GDR line by its rank: (host, rank, NIC, enabled, d, level) until
    # the ranks' bus ids are known
    gdr_by_rank: list[tuple[str, int, int, bool, int, int]] = field(default_factory=list)
    gdr_by_cuda: list[tuple[str, int, int, int, bool, int, int]] = field(default_factory=list)  # 2.4: + pid
    no_gdr_module: set[str] = field(default_factory=set)  # hosts with "GPU Direct RDMA Disabled … (no module)"
    hostids: dict[tuple[str, int], str] = field(default_factory=dict)  # (host, pid) → NCCL_HOSTID it printed
    nodes: dict[int, tuple[int, int]] = field(default_factory=dict)  # rank → (nNodes, localRanks)
    ring_lines: int = 0  # "Ring 00 : 1 -> 0 -> 1" listings (no transport in them)
    # multi-node NVLink: the init line's "MNNVL 1" (None: never said); the clique's size ("cliqueSize 8")
    mnnvl: bool | None = None
    clique_size: int | None = None
    nranks: int | None = None
    network: dict[str, str] = field(default_factory=dict)  # host → "Using network IB" / "Socket" / a plugin


def transport_of(via: str) -> Transport:
    """The family a channel line's ``via`` names: P2P/..., SHM/..., NET/.../GDRDMA, COLLNET."""
    head = via.split("/")[0].upper()
    if head == "DIRECT SHARED MEMORY":  # NCCL 2.11 and older: shm.cc's name for SHM
        return "SHM"
    if head == "P2P":
        return "P2P"
    if head == "SHM":
        return "SHM"
    if head == "NET":
        return "NET+GDR" if "GDRDMA" in via.upper().split("/") else "NET"
    if head.startswith("COLLNET"):
        return "COLLNET"
    return "unknown"
