"""Why a run falls short of its expectation: each likely cause with the evidence for it and the command that
confirms it, ranked — causes the evidence shows first, then those the numbers point at, then those nothing
recorded rules out. A cause the snapshot, its probe findings or the NCCL log rule out is not listed.

Signals as NCCL prints them (``src/transport/net_ib.cc``, ``net.cc``, ``nvls.cc``, ``init.cc``, NVIDIA/nccl
v2.30.7) and as the threads of ``reference/collective-performance.md`` show them: ``Using network Socket``,
``NET/Plugin: No plugin found``, channel lines without ``/GDRDMA``, ``GPU Direct RDMA Disabled … (no
module)``, ``NET/IB : Using [0]mlx5_0…`` (the NICs NCCL uses), ``NVLS multicast support is not available``,
``nNodes N localRanks 1``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from topomap.collective.expect import Expectation
from topomap.collective.lot import LotPlan
from topomap.graph import build, gpu_node
from topomap.graph.evidence import nearest_nic
from topomap.importers.nccl_tests import Run
from topomap.model.facts import findings_about, gpu_pcie_link
from topomap.model.snapshot import Snapshot, hosts_of
from topomap.nccl.logdata import NcclLog
from topomap.transport.rules import NcclEnv

_NO_PLUGIN = re.compile(r"NET/Plugin ?: (?:No plugin found|Could not find:? libnccl-net|Plugin load returned)")
_NVLS_OFF = re.compile(r"NVLS multicast support is not available")
_PROBE_WORDS = "topomap probe run as root on each host (it reads the bridges' ACS bits and the IOMMU mode)"


@dataclass(frozen=True)
class Cause:
    """One likely cause: its name, the evidence for it, the command that confirms it, and how strong."""

    cause: str
    evidence: str
    settle: str
    strength: int  # 3 the evidence shows it; 2 the numbers point at it; 1 nothing recorded rules it out

    def to_json(self) -> dict[str, object]:
        return {"cause": self.cause, "evidence": self.evidence, "settle": self.settle, "strength": self.strength}


@dataclass
class Signals:
    """What the NCCL log shows (None: no log, or it does not say)."""

    network: set[str] = field(default_factory=set)  # "IB", "Socket", "AWS Libfabric" …
    no_plugin: bool = False
    nvls_off: bool = False
    hops_net: int = 0
    hops_gdr: int = 0
    hops_shm: int = 0
    hops_p2p: int = 0
    no_module: bool = False
    hcas: dict[str, set[str]] = field(default_factory=dict)  # host → NIC names NCCL uses
    net_devs: dict[str, set[str]] = field(default_factory=dict)  # host → the network devices its channel lines use
    local_ranks_one: bool = False
    have_log: bool = False


def signals(log: NcclLog | None, text: str | None) -> Signals:
    s = Signals()
    if text:
        s.have_log = True
        s.no_plugin = bool(_NO_PLUGIN.search(text))
        s.nvls_off = bool(_NVLS_OFF.search(text))
    if log is None:
        return s
    s.have_log = True
    s.network = set(log.network.values())
    for h in log.hops:
        if h.via.upper().startswith("NET/") and h.via.count("/") >= 2:  # "via NET/Socket/0", "NET/IB/3/GDRDMA"
            parts = h.via.split("/")
            s.network.add(parts[1].strip())
            if parts[1].strip().lower() != "socket":  # sockets' devices are interfaces, not the lot's NICs
                s.net_devs.setdefault(h.host, set()).add(parts[2].strip())
        s.hops_net += h.transport == "NET"
        s.hops_gdr += h.transport == "NET+GDR"
        s.hops_shm += h.transport == "SHM"
        s.hops_p2p += h.transport == "P2P"
    s.no_module = bool(log.no_gdr_module)
    for (host, _), name in log.hca_names.items():
        s.hcas.setdefault(host, set()).add(name)
    s.local_ranks_one = bool(log.nodes) and all(local == 1 for _, local in log.nodes.values()) and len(log.nodes) > 1
    return s


def causes(
    lot: Snapshot, p: LotPlan, e: Expectation, run: Run, measured: float, sig: Signals, env: NcclEnv
) -> list[Cause]:
    """The likely causes of ``measured`` falling short of ``e`` on ``lot``, strongest first."""
    net = e.bottleneck_kind == "network" or e.hosts > 1
    found: list[Cause | None] = [
        _sizes(e, run),
        _fabric(e, measured) if net else None,
        _roce(p, env) if net else None,
        _ib_tuning(p, e, env) if net else None,
        _fewer_nics(lot, p, sig, env) if net else None,
        _gdr(p, sig, env) if net else None,
        _sockets(e, sig, env) if net else None,
        _far_nics(lot) if net else None,
        _nvls(lot, e, sig, env, measured),
        _p2p(e, sig, env),
        _acs(lot, e, net),
        _iommu(lot, e, net),
        _downtrained(lot),
        _virtual(lot, sig, run),
    ]
    listed = [c for c in found if c is not None]  # the order above breaks ties: the commoner cause first
    if any(c.cause == "NCCL fell back to TCP sockets" and c.strength == 3 for c in listed):
        listed = [c for c in listed if not c.cause.startswith("GPUDirect RDMA")]  # sockets never use it
    return sorted(listed, key=lambda c: -c.strength)


def _roce(p: LotPlan, env: NcclEnv) -> Cause | None:
    """RoCE needs the fabric's GID index and, on most fabrics, several QPs per connection to spread over
    ECMP paths (sjeaugey and kiskra-nvidia, nccl-tests#309; NCCL_IB_QPS_PER_CONNECTION, NCCL_IB_GID_INDEX)."""
    if not any(s.network is not None and s.network.family == "roce" for s in p.shapes):
        return None
    unset = [k for k in ("NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_GID_INDEX") if env.get(k) is None]
    if not unset:
        return None
    return Cause(
        "the RoCE fabric's tuning (QPs per connection, GID index, traffic class)",
        f"RoCE NICs, and the run sets no {' or '.join(unset)}",
        "rerun with NCCL_IB_QPS_PER_CONNECTION=4 and the fabric's NCCL_IB_GID_INDEX (ibv_devinfo -v lists the GIDs)",
        2,
    )


def _sizes(e: Expectation, run: Run) -> Cause | None:
    top = run.max_bytes
    if top is None or e.busbw_gbps is None:
        return None
    at = e.busbw_at(top)
    if at is None or at >= 0.9 * e.busbw_gbps:
        return None
    return Cause(
        "message sizes too small to reach the peak",
        f"the largest size run is {_size(top)}; at that size the model expects {at:.0f} GB/s, "
        f"{at / e.busbw_gbps:.0%} of the {e.busbw_gbps:.0f} GB/s peak (NCCL's latency and pipeline fill)",
        "rerun with larger sizes: all_reduce_perf -b 1G -e 16G -f 2 (the peak needs hundreds of MiB to GiB)",
        3,
    )


def _size(n: int) -> str:
    for unit, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= k:
            return f"{n / k:g} {unit}"
    return f"{n} B"


def _sockets(e: Expectation, sig: Signals, env: NcclEnv) -> Cause | None:
    if "Socket" in sig.network or env.flag("NCCL_IB_DISABLE"):
        why = "the log's network is Socket ('Using network Socket' or channels via NET/Socket)"
        why = why if "Socket" in sig.network else "NCCL_IB_DISABLE=1"
        return Cause("NCCL fell back to TCP sockets", why, "the NCCL INFO log's 'Using network …' line", 3)
    if sig.network:
        return None  # the log names the network NCCL used, and it is not sockets
    if sig.no_plugin:
        return Cause(
            "the network plugin is missing (EFA, Slingshot, TCPX/TCPXO need theirs)",
            "the log says NET/Plugin found no plugin",
            "the NCCL INFO log's 'NET/Plugin' and 'Using network …' lines",
            3,
        )
    return Cause(
        "NCCL fell back to sockets, or the network plugin is missing",
        "not ruled out: no NCCL log says which network NCCL used",
        "NCCL_DEBUG=INFO: its 'Using network …' line (IB, Socket, or the plugin's name)",
        1,
    )


def _gdr(p: LotPlan, sig: Signals, env: NcclEnv) -> Cause | None:
    gdr = {s.network.gdr for s in p.shapes if s.network is not None}
    settle = "the NCCL INFO log's channel lines (NET/IB/…/GDRDMA) and 'GPU Direct RDMA' lines; lsmod | grep peermem"
    if (sig.hops_net and not sig.hops_gdr) or sig.no_module:
        why = "the log's network channel lines carry no /GDRDMA" if sig.hops_net else ""
        if sig.no_module:
            why = "the log says 'GPU Direct RDMA Disabled … (no module)': the peer-memory module is missing"
        return Cause("GPUDirect RDMA not used", why, settle, 3)
    if sig.hops_gdr and not sig.hops_net:
        return None
    if "no" in gdr:
        level = env.get("NCCL_NET_GDR_LEVEL")
        why = f"NCCL_NET_GDR_LEVEL={level}" if level else "the lot's NICs are too far from the GPUs for GPUDirect RDMA"
        return Cause("GPUDirect RDMA not used", why + " (NCCL stages the network data through host memory)", settle, 3)
    if gdr == {"yes"} and not sig.have_log:
        return Cause(
            "GPUDirect RDMA not used (peermem missing, NCCL_NET_GDR_LEVEL)", "not ruled out: no NCCL log", settle, 1
        )
    return None


def _fewer_nics(lot: Snapshot, p: LotPlan, sig: Signals, env: NcclEnv) -> Cause | None:
    lot_nics = max((len(s.network.nics) for s in p.shapes if s.network is not None), default=0)
    hca = env.get("NCCL_IB_HCA")
    if sig.hcas:
        used = min(len(v) for v in sig.hcas.values())
        if lot_nics and used < lot_nics:
            return Cause(
                "fewer NICs used than the lot has",
                f"NCCL used {used} NIC(s) on a host (its 'NET/IB : Using' line); the lot's GPUs have {lot_nics}"
                + (f"; NCCL_IB_HCA={hca}" if hca else ""),
                "the NCCL INFO log's 'NET/IB : Using …' line; NCCL_IB_HCA",
                3,
            )
        return None
    if sig.net_devs:  # no 'Using' line (aws-ofi-nccl prints none): the devices its channel lines go through
        used = min(len(v) for v in sig.net_devs.values())
        if lot_nics and used < lot_nics:
            return Cause(
                "fewer NICs used than the lot has",
                f"the log's channel lines use {used} network device(s) on a host; the lot's GPUs have {lot_nics}",
                "the NCCL INFO log's channel lines (via NET/…/N); NCCL_IB_HCA or FI_EFA_IFACE",
                3,
            )
        return None
    if lot_nics <= 1:
        return None
    return Cause(
        "fewer NICs used than the lot has (NCCL_IB_HCA, one rail)",
        f"not ruled out: the lot's GPUs send through {lot_nics} NICs per host; no log says how many NCCL used"
        + (f"; NCCL_IB_HCA={hca}" if hca else ""),
        "the NCCL INFO log's 'NET/IB : Using …' line",
        1,
    )


def _far_nics(lot: Snapshot) -> Cause | None:
    far: list[str] = []
    for h in hosts_of(lot)[:1]:
        if not h.nics:
            return None
        topo = build(h)
        for g in h.gpus:
            choice = nearest_nic(topo, gpu_node(g))
            if choice.path in ("PHB", "NODE", "SYS"):
                far.append(f"gpu{g.index} {choice.path}")
    if not far:
        return None
    return Cause(
        "NICs far from the GPUs (PHB/NODE/SYS)",
        f"the nearest NIC of {', '.join(far[:4])}{' …' if len(far) > 4 else ''}",
        "`nvidia-smi topo -m` (the GPU–NIC cells)",
        3,
    )


def _nvls(lot: Snapshot, e: Expectation, sig: Signals, env: NcclEnv, measured: float) -> Cause | None:
    if e.algorithm is None or "NVLS" not in e.algorithm:
        return None
    if sig.nvls_off or env.get("NCCL_NVLS_ENABLE") == "0":
        why = "the log says NVLS multicast support is not available" if sig.nvls_off else "NCCL_NVLS_ENABLE=0"
        return Cause("NVLS not available", why, "`nvidia-smi -q` (Fabric Manager state); the NCCL INFO log", 3)
    if e.bottleneck_kind not in ("nvls", "nvlink"):
        return None  # the NICs (or PCIe) bound the figure with NVLS or without it: its absence explains nothing
    ring = e.ring_gbps
    near_ring = ring is not None and 0.85 * ring <= measured <= 1.15 * ring
    floor = ring if ring is not None else e.low_gbps  # without NVLS: the ring, the range's low end
    if floor is not None and measured < 0.85 * floor:
        return None  # below even the figure without NVLS: losing NVLS does not explain it
    vm = next((h.host.virtualization for h in hosts_of(lot) if h.host.virtualization), None)
    return Cause(
        "NVLS not available (Fabric Manager, CUDA or NCCL too old, a VM)",
        (
            f"the run ({measured:.0f} GB/s) reaches about the ring's figure ({ring:.0f} GB/s), not NVLS's"
            if near_ring and ring is not None
            else "not ruled out"
        )
        + (f"; a VM ({vm})" if vm else ""),
        "`nvidia-smi -q` (Fabric section); the NCCL INFO log's NVLS lines; NCCL_NVLS_ENABLE",
        2 if near_ring else 1,
    )


def _p2p(e: Expectation, sig: Signals, env: NcclEnv) -> Cause | None:
    if env.flag("NCCL_P2P_DISABLE"):
        return Cause(
            "P2P disabled", "NCCL_P2P_DISABLE=1", "the NCCL INFO log's channel lines (SHM where P2P was off)", 3
        )
    if e.bottleneck_kind == "shm":
        return Cause(
            "P2P not supported between the GPUs (data through host memory)",
            e.bottleneck,
            "`nvidia-smi topo -p2p rw`; the NCCL INFO log's channel lines",
            3,
        )
    if sig.hops_shm and not sig.hops_p2p and e.bottleneck_kind in ("nvlink", "nvls", "pcie-p2p"):
        return Cause("P2P disabled or not supported", "the log's channel lines are SHM", "`nvidia-smi topo -p2p rw`", 3)
    return None


def _acs(lot: Snapshot, e: Expectation, net: bool) -> Cause | None:
    found = findings_about(lot, ("acs-redirect",), "host") or [f for f in lot.findings if f.kind == "acs-redirect"]
    if found:
        return Cause(
            "ACS redirect on the bridges between GPU and NIC", found[0].text, "lspci -vvv (ACSCtl on those bridges)", 3
        )
    probed = all(h.source.kind == "probe" for h in hosts_of(lot))
    unread = any(f.kind == "acs-unknown" for h in hosts_of(lot) for f in h.findings)
    if probed and not unread:
        return None  # the probe read every bridge's ACS bits: no redirect
    if not net and e.bottleneck_kind != "pcie-p2p":
        return None
    return Cause(
        "ACS redirect on the bridges between GPU and NIC",
        "not ruled out: the snapshot does not record the bridges' ACS bits",
        "lspci -vvv (ACSCtl SrcValid+ ReqRedir+ on the bridges), or " + _PROBE_WORDS,
        1,
    )


def _iommu(lot: Snapshot, e: Expectation, net: bool) -> Cause | None:
    hosts = hosts_of(lot)
    translated = [f for h in hosts for f in h.findings if f.kind == "iommu-translated"]
    if translated:
        return Cause(
            "the IOMMU in translated mode", translated[0].text, "dmesg | grep -i iommu; the kernel command line", 3
        )
    modes = {h.host.iommu for h in hosts}
    if modes and None not in modes and "on" not in modes:
        return None  # passthrough or off on every host
    if not net and e.bottleneck_kind != "pcie-p2p":
        return None
    return Cause(
        "the IOMMU in translated mode",
        "not ruled out: the IOMMU mode is not recorded" if None in modes else "the IOMMU is on",
        "dmesg | grep -i 'Default domain type'; iommu=pt on the kernel command line; or " + _PROBE_WORDS,
        1 if None in modes else 2,
    )


def _downtrained(lot: Snapshot) -> Cause | None:
    for h in hosts_of(lot):
        for g in h.gpus:
            link = gpu_pcie_link(g)
            if link.downtrained and link.note:
                return Cause("a PCIe link trained below its width", link.note, "`nvidia-smi -q` (GPU Link Info)", 3)
        found = [f for f in h.findings if f.kind == "pcie-downtrained"]
        if found:
            return Cause("a PCIe link trained below its width", found[0].text, "`nvidia-smi -q` (GPU Link Info)", 3)
    return None


def _virtual(lot: Snapshot, sig: Signals, run: Run) -> Cause | None:
    hosts = hosts_of(lot)
    vm = next((h.host.virtualization for h in hosts if h.host.virtualization), None)
    topo_f = next((f for h in hosts for f in h.findings if f.kind in ("virtual-topology", "virtual-machine")), None)
    per_gpu = len(run.hosts) > 1 and len(run.hosts) == len(run.ranks)
    if vm or topo_f or (sig.local_ranks_one and per_gpu):
        why = topo_f.text if topo_f else f"a virtual machine ({vm})" if vm else ""
        if sig.local_ranks_one and per_gpu:
            why = "every rank on its own host name and NCCL counts one local rank per node (containers or VMs)"
        return Cause(
            "a VM or container hiding the topology", why, "topomap probe inside the VM; `nvidia-smi topo -m`", 3
        )
    return None


def _fabric(e: Expectation, measured: float) -> Cause | None:
    """Far below across hosts: a node or link, or the fabric; a run at a quarter of the figure or less is what
    a slow link or a congested path gives, not an algorithm or a variable (nccl#1453: across racks)."""
    if e.busbw_gbps is None or measured >= 0.7 * e.busbw_gbps:
        return None
    of = "what the NICs should carry" if e.bottleneck_kind == "network" else "the expected figure"
    return Cause(
        "a slow node or link, or the fabric's tuning (adaptive routing, QPs per connection, congestion)",
        f"{measured:.0f} GB/s is {measured / e.busbw_gbps:.0%} of {of}",
        "the test on pairs of nodes (-N 2) to find a slow one; ib_write_bw between two hosts; `ibstat` on each",
        2 if e.hosts > 1 and measured < 0.25 * e.busbw_gbps else 1,
    )


def _ib_tuning(p: LotPlan, e: Expectation, env: NcclEnv) -> Cause | None:
    """InfiniBand at the NICs' figure needs enough channels and QPs: on nccl-tests#309 eight 8x H100 nodes went
    from 321 to 391 GB/s with NCCL_MIN_CTAS=24 NCCL_IB_QPS_PER_CONNECTION=2 (gj-aion; kiskra-nvidia)."""
    if e.bottleneck_kind != "network" or not any(
        s.network is not None and s.network.family == "infiniband" for s in p.shapes
    ):
        return None
    unset = [k for k in ("NCCL_MIN_CTAS", "NCCL_IB_QPS_PER_CONNECTION") if env.get(k) is None]
    if not unset:
        return None
    return Cause(
        "too few channels or QPs for the NICs (NCCL_MIN_CTAS, NCCL_IB_QPS_PER_CONNECTION)",
        f"InfiniBand NICs bound the figure, and the run sets no {' or '.join(unset)}",
        "rerun with NCCL_MIN_CTAS=24 NCCL_IB_QPS_PER_CONNECTION=2 (nccl-tests#309: 321 → 391 GB/s on 8 nodes)",
        1,
    )
