"""Between hosts: the NICs a job's GPUs send through (topomap's nearest-NIC evidence, with NCCL's spread over
equally near NICs and ``NCCL_IB_HCA``), their line rates, the network family and plugin NCCL uses
(InfiniBand, RoCE, EFA, GPUDirect-TCPX/TCPXO, Slingshot, TCP sockets; NCCL_NET names the plugin), GPUDirect
RDMA per GPU as NCCL decides
it, and each GPU's own PCIe link, which every byte it sends over the network crosses (one H100 with four
400G NICs reaches ~50 GB/s, its Gen5 x16 link: nccl-tests#232)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from topomap.collective.bound import Bound, unknown
from topomap.collective.consts import NETWORK, NO_GDR, Efficiency
from topomap.graph import Topology, gpu_node
from topomap.graph.evidence import nearest_nic
from topomap.model.facts import SETTLE, nic_family
from topomap.model.snapshot import Gpu, Nic, Snapshot
from topomap.model.source_facts import Fact, source_knows
from topomap.transport.decide import decide
from topomap.transport.facts import nccl_pci_bw, remote_facts
from topomap.transport.rules import NcclEnv

#: What NCCL_NET names (the plugin's or NCCL's own transport name, as its "Using network …" line prints
#: it) and FI_PROVIDER say of the network family.
_PLUGINS = {"fastrak": "tcpxo", "gpudirecttcpx": "tcpx", "socket": "socket", "ib": "ib"}


@dataclass(frozen=True)
class Network:
    """One host's network figures: ``node`` (every GPU's traffic together, what a ring or tree crossing the
    host's boundary gets) and ``single`` (one GPU's: sendrecv), the NICs, the family and GPUDirect RDMA."""

    node: Bound
    single: Bound
    nics: tuple[str, ...]
    family: str
    gdr: str  # yes / no / unknown / n/a (sockets and TCPX(O) move data their own way)


def family_of(nic: Nic, env: NcclEnv) -> str:
    """The network family NCCL's traffic through this NIC has: the plugin named by NCCL_NET (or forced by
    NCCL_IB_DISABLE=1: sockets), else the NIC's own family (a NIC without RDMA: sockets)."""
    plugin = (env.get("NCCL_NET") or "").replace(" ", "").lower()
    if env.flag("NCCL_IB_DISABLE") or plugin == "socket":
        return "socket"
    if nic_family(nic).family == "cassini":  # HPE Slingshot: by its PCI vendor, or a declared fabric
        return "slingshot"
    if plugin in ("awslibfabric", "ofi", "libfabric"):
        return "efa" if nic_family(nic).transport == "efa" else "slingshot"
    if plugin in _PLUGINS and _PLUGINS[plugin] != "ib":
        return _PLUGINS[plugin]
    if nic.kind in ("tcpx", "tcpxo") and not plugin:  # a declared GPUDirect-TCPX(O) fabric: Google's plugin
        return nic.kind
    transport = nic_family(nic).transport
    if transport == "ethernet":
        return "socket"
    return transport  # infiniband, roce, efa, rdma, network (not recorded)


def _hca_allowed(name: str, env: NcclEnv) -> bool:
    """NCCL_IB_HCA: a list of device names, prefixes unless it starts with '='; '^' excludes."""
    spec = env.get("NCCL_IB_HCA")
    if not spec:
        return True
    exclude = spec.startswith("^")
    body = spec.lstrip("^")
    exact = body.startswith("=")
    names = [x.split(":")[0] for x in body.lstrip("=").split(",") if x]
    hit = any(name == x if exact else name.startswith(x) for x in names)
    return not hit if exclude else hit


def _allowed(snap: Snapshot, env: NcclEnv) -> set[str]:
    """The NICs NCCL_IB_HCA lets NCCL use. Where the source does not name its NICs (a declared lot's
    NIC0 …), the names cannot be matched: a list of k devices is taken as k of them, an exclusion as none."""
    if source_knows(snap, Fact.NIC_NAMES) or not env.get("NCCL_IB_HCA"):
        return {n.name for n in snap.nics if _hca_allowed(n.name, env)}
    spec = env.get("NCCL_IB_HCA") or ""
    if spec.startswith("^"):
        return {n.name for n in snap.nics}
    k = len([x for x in spec.lstrip("=").split(",") if x])
    return {n.name for n in sorted(snap.nics, key=lambda n: n.index)[:k]}


def network(topo: Topology, gpus: list[Gpu], env: NcclEnv, version: str | None) -> Network:
    """The network figures of one host's GPUs ``gpus``."""
    snap = topo.snapshot
    by_name = {n.name: n for n in snap.nics}
    allowed = _allowed(snap, env)
    used: dict[str, Nic] = {}
    per_gpu: dict[int, list[Nic]] = {}
    for g in gpus:
        choice = nearest_nic(topo, gpu_node(g))
        names = choice.channels or ((choice.nic.name,) if choice.nic is not None else ())
        nics = [by_name[x] for x in names if x in by_name and x in allowed]
        per_gpu[g.index] = nics
        used.update({n.name: n for n in nics})
    if not used:
        why = "no usable NIC recorded" if not snap.nics else "no NIC the job's GPUs send through (NCCL_IB_HCA?)"
        gone = unknown("network", "the NICs between the hosts", (why,), (SETTLE["nic"],))
        return Network(gone, gone, (), "unknown", "unknown")
    families = {family_of(n, env) for n in used.values()}
    family = families.pop() if len(families) == 1 else "mixed"
    gdr = _gdr(topo, gpus, env, version, family)
    node = _node_bound(list(used.values()), gpus, family, gdr, env)
    single = min(
        (_node_bound(per_gpu[g.index], [g], family, gdr, env) for g in gpus if per_gpu[g.index]),
        key=lambda b: b.gbps if b.gbps is not None else -1.0,
    )
    return Network(node, single, tuple(used), family, gdr)


def _gdr(topo: Topology, gpus: list[Gpu], env: NcclEnv, version: str | None, family: str) -> str:
    """GPUDirect RDMA for every GPU's sends and receives, as NCCL decides it (yes when all do)."""
    if family in ("socket", "tcpx", "tcpxo", "slingshot"):
        return "n/a"  # sockets stage through host memory by design; the plugins move GPU memory themselves
    seen = set()
    for g in gpus:
        for side in ("send", "receive"):
            seen.add(decide(remote_facts(topo, g, side), env, version).transport)
    if "unknown" in seen:
        return "unknown"
    return "no" if "NET" in seen else "yes"


def _node_bound(nics: list[Nic], gpus: list[Gpu], family: str, gdr: str, env: NcclEnv) -> Bound:
    """The NICs' line rates × the family's efficiency (× the no-GPUDirect factor), capped by the GPUs' own
    PCIe links (NCCL's PCIe figure each)."""
    nics = sorted(nics, key=lambda n: n.index)
    rates = [n.speed_gbit_s for n in nics]
    names = ", ".join(n.name for n in nics)
    if any(r is None for r in rates):
        lacking = ", ".join(n.name for n in nics if n.speed_gbit_s is None)
        return unknown("network", f"NICs {names}", (f"the line rate of {lacking}",), (SETTLE["nic_speed"],))
    if family not in NETWORK:
        return unknown(
            "network",
            f"NICs {names}",
            ("the network they carry (InfiniBand, RoCE, EFA, or TCP sockets)",),
            (SETTLE["nic_speed"], "the NCCL INFO log's 'Using network …' line"),
        )
    eff = NETWORK[family]
    total = sum(r for r in rates if r is not None) / 8
    words = f"{len(nics)} NIC(s) {names} at {total * 8:g} Gb/s together ({_family_words(family)})"
    if gdr == "no":
        eff = Efficiency(eff.value * NO_GDR.value, eff.low * NO_GDR.low, eff.high, eff.source)
        words += ", without GPUDirect RDMA (staged through host memory)"
    figure = Bound("network", total * eff.value, total * eff.low, total * eff.high, words)
    if gdr == "unknown":
        figure = Bound(
            "network", None, total * eff.value * NO_GDR.low, total * eff.high, words, "model",
            ("whether GPUDirect RDMA is used",),
            ("`nvidia-smi topo -m` (the NICs' path to the GPUs) or the NCCL INFO log's GDRDMA lines",),
        )  # fmt: skip
    caps = [nccl_pci_bw(g) for g in gpus]
    if all(c is not None for c in caps):
        cap = sum(c for c in caps if c is not None)
        if figure.gbps is not None and cap < figure.gbps:
            capped = f"{len(gpus)} GPU PCIe link(s), {cap:g} GB/s at NCCL's PCIe figure, which the NICs' data crosses"
            low = min(cap, figure.low) if figure.low is not None else None
            return Bound("network", cap, low, cap, capped, "model")
        if figure.high is not None and cap < figure.high:
            figure = replace(figure, high=cap)
    return figure


def _family_words(family: str) -> str:
    return {
        "infiniband": "InfiniBand, GPUDirect RDMA where NCCL uses it",
        "roce": "RoCE",
        "rdma": "RDMA (InfiniBand or RoCE)",
        "efa": "AWS EFA through aws-ofi-nccl",
        "tcpxo": "GPUDirect-TCPXO",
        "tcpx": "GPUDirect-TCPX",
        "slingshot": "Slingshot through aws-ofi-nccl's CXI provider",
        "socket": "TCP sockets: NCCL's socket transport",
        "mixed": "NICs of different kinds",
    }.get(family, family)
