"""Snapshot → graph: the PCI tree (read, or inferred from path classes), NUMA nodes and the
inter-socket link, NVLink bundles and the NVSwitch hub.

Nodes: ``host``, ``numa<N>``, PCI nodes ``pci:<bus id>`` (inferred ones ``pci:inferred-…``),
``gpu<N>``, ``nic:<name>``, ``nvswitch:fabric``. Edges carry ``kind`` (``pcie``, ``nvlink``,
``smp``, ``attach``), the link facts and ``bandwidth_gbps`` with ``bandwidth_source``.
"""

from __future__ import annotations

from topomap.base.errors import TopomapError
from topomap.graph.edges import nvlink_edge, pcie_edge
from topomap.graph.infer import infer_tree, numa_node, nvlinks_from_pairs
from topomap.graph.light import Light
from topomap.graph.nodeid import HOST, node_kind, numa_direct, pci_node
from topomap.graph.topology import FABRIC, Indexes, Topology, gpu_node, natural_key, nic_node
from topomap.graph.xgmi_edges import add_xgmi_edges
from topomap.model.alike import AlikeKeys
from topomap.model.facts import gpu_pcie_link
from topomap.model.nvlinks import gpu_buses, link_peer
from topomap.model.origins import fact_origin
from topomap.model.snapshot import Gpu, Snapshot

#: Fields of a host snapshot that name the host rather than describe its shape (topomap.model.alike,
#: the one notion of alike hosts). ``build`` reads none of them except the host node's label
#: (``hostname``, else ``source.origin``), which :class:`Shapes` sets per host.


def build(snap: Snapshot) -> Topology:
    """The graph of one host's snapshot (a merged snapshot: build each of ``hosts_of``)."""
    if snap.source.kind == "merge":
        raise TopomapError(
            f"{snap.source.origin}: a merged snapshot holds {len(snap.members)} hosts; this view takes one",
            hint="name one host, or use a command that reads clusters (show, matrix, render, map, diff, check)",
        )
    g = Light()
    g.add_node(HOST, kind="host", label=snap.host.hostname or snap.source.origin, inferred=False)
    topo = Topology(snapshot=snap, light=g)
    for gpu in snap.gpus:
        g.add_node(gpu_node(gpu), kind="gpu", label=f"GPU{gpu.index}", name=gpu.name or "", inferred=False)
    for nic in snap.nics:
        g.add_node(nic_node(nic), kind="nic", label=nic.name, nic_kind=nic.kind, inferred=False)
    if snap.pci:
        _tree_from_pci(topo)
    else:
        infer_tree(topo)
    _numa_links(topo)
    _nvlinks(topo)
    add_xgmi_edges(topo)  # AMD GPUs (issue 35)
    return topo


def _tree_from_pci(topo: Topology) -> None:
    snap, g = topo.snapshot, topo.light
    dev_of: dict[str, str] = {}
    gpu_of_bus: dict[str, Gpu] = {}
    for gpu in snap.gpus:
        if gpu.pci_bus_id:
            dev_of[gpu.pci_bus_id] = gpu_node(gpu)
            gpu_of_bus[gpu.pci_bus_id] = gpu
    for nic in snap.nics:
        if nic.pci_bus_id and nic.pci_bus_id not in dev_of:
            dev_of[nic.pci_bus_id] = nic_node(nic)
    by_id = {d.id: d for d in snap.pci}

    def node(pid: str) -> str:
        return dev_of.get(pid, pci_node(pid))

    for d in snap.pci:
        n = node(d.id)
        if n not in g:
            g.add_node(n, kind=d.kind, label=d.id, inferred=d.inferred)
        if d.parent is None:
            g.add_edge(numa_node(topo, d.numa_node), n, kind="attach")
            continue
        parent = node(d.parent)
        if parent not in g:
            pd = by_id.get(d.parent)
            g.add_node(parent, kind=pd.kind if pd else "bridge", label=d.parent, inferred=False)
        gen, width, placeholder = d.link_gen, d.link_width, d.link_placeholder
        leaf = gpu_of_bus.get(d.id)
        if leaf is not None:
            # a GPU's own link: the trained width at the highest generation (idle GPUs drop their speed)
            link = gpu_pcie_link(leaf)
            gen = link.gen if link.gen is not None else gen
            width = link.width if link.width is not None else width
            placeholder = placeholder or link.placeholder
        pcie_edge(topo, parent, n, gen, width, placeholder)
        if leaf is not None and gpu_pcie_link(leaf).downtrained:
            g.edges[parent, n]["note"] = gpu_pcie_link(leaf).note

    def chain(pid: str) -> list[str]:
        out: list[str] = []
        cur: str | None = pid
        seen: set[str] = set()
        while cur is not None and cur not in seen:
            seen.add(cur)
            out.append(node(cur))
            cur = by_id[cur].parent if cur in by_id else None
        return out[::-1]

    for gpu in snap.gpus:
        if gpu.pci_bus_id in by_id:
            topo.chains[gpu_node(gpu)] = chain(gpu.pci_bus_id)
            topo.locality[gpu_node(gpu)] = gpu.numa_node
    for nic in snap.nics:
        nn = nic_node(nic)
        if nic.pci_bus_id in by_id:
            topo.chains[nn] = chain(nic.pci_bus_id)
        elif nic.numa_node is not None:
            g.add_edge(numa_node(topo, nic.numa_node), nn, kind="attach")
            topo.chains[nn] = [numa_direct(nic.numa_node), nn]
        topo.locality[nn] = nic.numa_node
    for dev in list(topo.chains):
        if dev not in g or g.degree(dev) == 0:
            g.add_edge(numa_node(topo, topo.locality.get(dev)), dev, kind="attach")


def _numa_links(topo: Topology) -> None:
    """Inter-socket (SMP) links between NUMA nodes; bandwidth unknown (no source measures it)."""
    numas = sorted(n for n, d in topo.light.nodes(data=True) if d.get("kind") == "numa")
    for i, a in enumerate(numas):
        for b in numas[i + 1 :]:
            topo.light.add_edge(a, b, kind="smp", bandwidth_gbps=None, bandwidth_source="unknown")


def _nvlinks(topo: Topology) -> None:
    """NVLink bundles from the links the source lists (a switch's links summed into one hub), or from
    the pairs' NV# counts when the source lists no links or cannot say what a link reaches."""
    snap, g = topo.snapshot, topo.light
    buses = gpu_buses(snap.gpus)
    by_id = {gpu_node(x): x for x in snap.gpus}
    listed = [x for x in snap.gpus if x.nvlinks and not x.lost]
    # a link that names neither a peer bus nor a peer type (nvidia-smi nvlink -s) does not say
    # switch; nor does a peer bus when no GPU's own bus is known (nvlink -R alone): it may be a GPU
    blind = any(
        link.active and link.remote_type is None and (link.remote_pci_bus_id is None or not buses)
        for x in listed
        for link in x.nvlinks
    )
    if not listed and _declared_switches(topo, by_id):
        return
    if not listed or blind:
        nvlinks_from_pairs(topo, by_id)
        if blind and not any(d.get("kind") == "nvlink" for _, _, d in g.edges(data=True)):
            _blind_links(topo, listed)
        return
    for gpu in listed:
        counts: dict[str, int] = {}
        for link in gpu.nvlinks:
            if not link.active:
                continue
            peer = link_peer(link, buses)
            if peer == gpu_node(gpu):  # a link to itself (Azure NC A100 v4's NCCL file): a bridge
                topo.nvlink_unresolved.add(peer)  # to a partner the source does not name
                continue
            if peer is None:
                continue  # a CPU link (IBM NPU)
            if peer == "switch":
                peer = FABRIC  # the switches act as one crossbar: one hub, links summed
            elif by_id.get(peer) is not None and by_id[peer].lost:
                continue
            counts[peer] = counts.get(peer, 0) + 1
        if gpu_node(gpu) in topo.nvlink_unresolved:
            counts.pop(FABRIC, None)  # its links were not to a switch
        for peer, n in counts.items():
            if peer == FABRIC and peer not in g:
                n_sw = len(snap.nvswitches)
                label = f"NVSwitch ×{n_sw}" if n_sw > 1 else "NVSwitch"
                if snap.nvswitches and all(sw.pci_bus_id is None for sw in snap.nvswitches):
                    label = "NVSwitch fabric (switches not visible to this host)"
                g.add_node(peer, kind="nvswitch", label=label, switches=n_sw, inferred=False)
            if node_kind(peer) == "gpu" and g.has_edge(gpu_node(gpu), peer):
                continue
            nvlink_edge(topo, gpu_node(gpu), peer, n, gpu)
    if topo.nvlink_unresolved:
        named = ", ".join(sorted(topo.nvlink_unresolved, key=natural_key))
        topo.notes.append(
            f"{named}: active NVLinks to a partner the source does not name (an NVLink bridge): "
            "which GPU pairs they join is unknown (`nvidia-smi topo -m` settles it)"
        )


def _declared_switches(topo: Topology, by_id: dict[str, Gpu]) -> bool:
    """NVSwitches a declared lot or the catalogue gives (``Source.filled``), with each GPU's link count:
    one hub, labelled with its origin (a switch no tool saw is neither read nor inferred)."""
    origin = fact_origin(topo.snapshot, "nvswitches")
    links = {gid: n for sw in topo.snapshot.nvswitches for gid, n in sw.links.items() if gid in by_id and n > 0}
    if origin is None or not links:
        return False
    label = f"NVSwitch fabric ({origin.inner()})"
    topo.light.add_node(FABRIC, kind="nvswitch", label=label, switches=len(topo.snapshot.nvswitches), inferred=False)
    for gid in sorted(links, key=natural_key):
        if not by_id[gid].lost:
            nvlink_edge(topo, gid, FABRIC, links[gid], by_id[gid])
    return True


def _blind_links(topo: Topology, listed: list[Gpu]) -> None:
    """Active links whose peer the source does not name (`nvidia-smi nvlink -s` alone). Two GPUs with
    such links and nothing else to reach are joined by a bridge (inferred); with more GPUs the peers
    stay unknown."""
    with_links = [x for x in listed if any(link.active for link in x.nvlinks)]
    if len(topo.snapshot.gpus) == 2 and len(with_links) == 2 and not topo.snapshot.nvswitches:
        a, b = with_links
        count = min(sum(x.active for x in a.nvlinks), sum(x.active for x in b.nvlinks))
        nvlink_edge(topo, gpu_node(a), gpu_node(b), count, a)
        topo.light.edges[gpu_node(a), gpu_node(b)]["inferred"] = True
        topo.notes.append(
            f"both GPUs have {count} active NVLinks and there is no other GPU or NVSwitch to reach: "
            "an NVLink bridge between them (inferred; the source does not name link peers)"
        )
        return
    topo.nvlink_unresolved = {gpu_node(x) for x in with_links}
    if with_links:
        topo.notes.append(
            "active NVLinks whose peers the source does not name: which GPU pairs they join is unknown "
            "(`nvidia-smi topo -m` settles it)"
        )


class Shapes:
    """Graphs of many hosts, each distinct host *shape* built once (a cluster of thousands of hosts is
    a few builds repeated). The shape is every field of the snapshot except
    :data:`topomap.model.alike.IDENTITY` (hosts alike); hosts of one shape share the graph's nodes,
    edges and their attribute dicts (graphs are not changed after :func:`build`), each with its own
    host node (its label names the host) and its own :class:`Topology`: its own snapshot, notes and
    index caches (but the PCIe legs, which only the shared nodes and edges decide)."""

    def __init__(self) -> None:
        self._built: dict[bytes, Topology] = {}
        self._keys = AlikeKeys()

    def __len__(self) -> int:
        return len(self._built)

    def build(self, snap: Snapshot) -> Topology:
        """The graph of one host's snapshot, shared with an earlier host of the same shape."""
        key = self.key(snap)
        first = self._built.get(key)
        if first is None:
            self._built[key] = topo = build(snap)
            return topo
        return alike_topology(first, snap)

    def key(self, snap: Snapshot) -> bytes:
        """The shape of a host: :meth:`topomap.model.alike.AlikeKeys.key` (every field but
        :data:`~topomap.model.alike.IDENTITY`)."""
        return self._keys.key(snap)


def alike_topology(first: Topology, snap: Snapshot) -> Topology:
    """The graph of ``snap``, a host alike to ``first``'s (topomap.model.alike: known alike, say by
    topomap.cluster.groups): ``first``'s nodes, edges, PCI chains and PCIe legs, its own host node,
    snapshot, notes and other indexes (as :class:`Shapes` gives it)."""
    label = snap.host.hostname or snap.source.origin
    return Topology(
        snapshot=snap,
        light=first.light if first.light.nodes[HOST]["label"] == label else first.light.relabelled(label),
        # the PCI chains, NUMA localities and GPUs with unnamed NVLink peers are filled while the graph
        # is built and never changed after (graph/build.py, graph/infer.py): shared, as the graph is
        chains=first.chains,
        locality=first.locality,
        inferred=first.inferred,
        notes=list(first.notes),
        nvlink_unresolved=first.nvlink_unresolved,
        # PCIe legs are a function of the graph's nodes and edges alone (query.py): hosts of one
        # shape share them; every other index (NICs, GPUs, pairs) is the host's own
        index=Indexes(legs=first.index.legs),
    )
