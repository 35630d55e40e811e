"""Arrows within one host: two GPUs (NVLink, PCIe peer-to-peer, or staged through host memory), a
GPU and host memory (PCIe, or NVLink-C2C on Grace-class parts), two memory or storage places.

Every fact comes from the graph: :func:`topomap.graph.evidence.gpu_link` decides how two GPUs
exchange data, :func:`topomap.graph.routes.route` gives their PCIe route and class,
:func:`topomap.graph.query.pcie_leg` the leg between a GPU and a memory node.
"""

from __future__ import annotations

from topomap.base.notes import Note
from topomap.flow.decision import Decision, on_host, on_host_all, pcie_bandwidth
from topomap.flow.memory import as_memory, host_path_class, placement_node
from topomap.flow.spec import FlowArrow
from topomap.graph import Topology
from topomap.graph.evidence import GPU_LINK_VIAS, gpu_link, memory_node
from topomap.graph.nodeid import numa_id
from topomap.graph.query import pcie_leg
from topomap.graph.routes import route
from topomap.model.facts import SETTLE, UNKNOWN_BW, c2c_bandwidth
from topomap.model.measured import with_measurement


def same_host(a: FlowArrow, topo: Topology) -> Decision:
    """An arrow between two places of one host with a snapshot."""
    s, d = a.src, a.dst
    if s.kind == "gpu" and d.kind == "gpu":
        return gpu_pair(a, topo)
    if s.kind == "gpu" or d.kind == "gpu":
        return _gpu_and_memory(a, topo)
    notes: list[str] = []  # memory/storage ↔ memory/storage on one host
    ms = placement_node(topo, as_memory(s), None, notes)
    md = placement_node(topo, as_memory(d), None, notes)
    if s.kind != d.kind and "storage" in (s.kind, d.kind):  # host memory ↔ storage: where the storage is
        return storage_leg(s.host, (ms, md), notes)
    if ms == md:
        return Decision("local", "local", None, (on_host(s.host, ms),), reasons=(*notes, "same NUMA node"))
    nodes, _, _, leg = pcie_leg(topo, ms, md)
    return Decision("host-memory", "smp", "SYS", on_host_all(s.host, nodes), reasons=(*notes, *leg))


#: Where "storage" can be, and what on the machine tells which (no snapshot source records storage).
STORAGE_CANDIDATES = ("host-memory over PCIe (a local NVMe or SATA drive)", "network (a network file system)")
STORAGE_SETTLE = "`findmnt -T PATH` (with `lsblk -o NAME,TRAN,MODEL`) on the machine"


def storage_leg(host: str, nodes: tuple[str, str], notes: list[str]) -> Decision:
    """Host memory ↔ storage on one host: the medium is unknown, since no snapshot records where the
    storage is (a drive on the host's PCIe, or a file system over the network); never "local"."""
    rt = on_host_all(host, list(dict.fromkeys(nodes)))
    return Decision(
        "unknown", "storage", None, rt, reasons=tuple(notes), candidates=STORAGE_CANDIDATES, settle=STORAGE_SETTLE
    )


def _gpu_and_memory(a: FlowArrow, topo: Topology) -> Decision:
    """A GPU and a memory or storage place of its host: over its PCIe path, or C2C on Grace."""
    s, d, host = a.src, a.dst, a.src.host
    gp, other = (s, d) if s.kind == "gpu" else (d, s)
    gid = gp.gpu or ""
    notes: list[str] = []
    mem = placement_node(topo, as_memory(other), gid, notes)
    kind, ends = ("d2h", (gid, "host")) if s.kind == "gpu" else ("h2d", ("host", gid))
    gpu = topo.gpu(gid)
    if gpu is not None and gpu.gpu_numa_node is not None:  # Grace: the CPU's memory is over C2C, not PCIe
        rt = on_host_all(host, [gid, mem] if s.kind == "gpu" else [mem, gid])
        said = "Grace-class GPU: {gpu}'s own memory is {numa}, host memory is over NVLink-C2C, not PCIe"
        notes.append(Note(said, host, gpu=gid, numa=numa_id(gpu.gpu_numa_node)))
        figure, warning = with_measurement(topo.snapshot, *ends, kind, c2c_bandwidth(gpu))
        return Decision("host-memory", "c2c", None, rt, figure, (*notes, *([warning] if warning else [])))
    nodes, bw, _, leg_notes = pcie_leg(topo, gid, mem)
    notes += leg_notes
    rt = on_host_all(host, nodes if s.kind == "gpu" else nodes[::-1])
    path = host_path_class(topo, gid, mem)
    if path is None:
        settle = SETTLE["path"].replace("{", "{{").replace("}", "}}")
        notes.append(
            Note(
                f"path class between {{gpu}} and host memory not recorded by this source: {settle} settles it",
                host,
                gpu=gid,
            )
        )
    figure, warning = with_measurement(topo.snapshot, *ends, kind, pcie_bandwidth(bw, topo.snapshot))
    return Decision("host-memory", "pcie", path, rt, figure, (*notes, *([warning] if warning else [])))


def gpu_pair(a: FlowArrow, topo: Topology) -> Decision:
    """Two GPUs of one host: NVLink, else PCIe peer-to-peer, else staged through host memory, else
    unknown with the candidates (all as :func:`gpu_link` decides)."""
    host = a.src.host
    ga, gb = a.src.gpu or "", a.dst.gpu or ""
    link = gpu_link(topo, ga, gb)
    assumed = tuple(r for r in link.p2p.reasons if link.p2p.assumed) if link.via != "nvlink" else ()
    reasons = tuple(r for r in link.reasons if r not in assumed)
    if link.medium == "gpu-link" and link.via in GPU_LINK_VIAS:
        nv = link.nvlink
        figure, warning = with_measurement(topo.snapshot, ga, gb, "d2d", nv.bandwidth)
        notes = (*reasons, *([warning] if warning else []))
        return Decision("gpu-link", nv.via, nv.path, on_host_all(host, nv.nodes), figure, notes)
    pcie = route(topo, ga, gb)  # NVLink is not usable here: the PCIe route, its class and narrowest link
    nodes, cls, leg_notes = pcie.nodes, pcie.path, pcie.notes
    if link.medium == "gpu-link":  # PCIe peer-to-peer
        nominal = pcie_bandwidth(pcie.bandwidth_gbps, topo.snapshot)
        figure, warning = with_measurement(topo.snapshot, ga, gb, "d2d", nominal)
        notes = (*reasons, *leg_notes, *([warning] if warning else []))
        return Decision("gpu-link", "pcie-p2p", cls, on_host_all(host, nodes), figure, notes, assumed)
    if link.medium == "unknown":
        return Decision(
            "unknown",
            "unknown",
            cls,
            on_host_all(host, nodes),
            UNKNOWN_BW,
            (*reasons, *leg_notes),
            assumed,
            link.candidates,
            link.settle,
        )
    return _staged(host, topo, ga, gb, cls, reasons, assumed)


def _staged(
    host: str, topo: Topology, ga: str, gb: str, cls: str | None, reasons: tuple[str, ...], assumed: tuple[str, ...]
) -> Decision:
    """GPU A → the memory node serving it → GPU B, at the narrower of the two PCIe legs."""
    mem = memory_node(topo, ga) or "host"
    n1, bw1, _, l1 = pcie_leg(topo, ga, mem)
    n2, bw2, _, l2 = pcie_leg(topo, mem, gb)
    bws = [b for b in (bw1, bw2) if b is not None]
    why = tuple(f"staged through host memory: {r}" for r in reasons if r not in assumed) or ()
    if assumed:
        why = (*why, "staged through host memory (by the assumed rule)")
    return Decision(
        "host-memory",
        "pcie",
        cls,
        on_host_all(host, n1 + n2[1:]),
        pcie_bandwidth(min(bws) if len(bws) == 2 else None, topo.snapshot),
        (*why, *l1, *l2),
        assumed,
    )
