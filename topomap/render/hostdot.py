"""One host of the machine diagram: boxes per NUMA node, host bridge and PCIe switch, the GPUs and NICs
inside the switch that holds them, the NVSwitch fabric as one hub, and the links between them.

Pass-through ports are folded away (:class:`DrawnTree`); each NVLink bundle carries the evidence's
answer whether data can use it (:class:`NvlinkBundle`); layout hints (invisible edges) keep a big
machine about as tall as wide.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from topomap.base.units import fmt_gbit
from topomap.flow.decision import pcie_bandwidth
from topomap.graph import FABRIC, Topology, natural_key
from topomap.graph.edges import edge_bandwidth
from topomap.graph.evidence import nvlink_edge_usable
from topomap.graph.nodeid import HOST, gpu_node, nic_node, node_kind
from topomap.graph.query import pcie_edge_bandwidth, tree_parents
from topomap.model.facts import Answer, Bandwidth, gpu_memory
from topomap.model.snapshot import Nic, Snapshot
from topomap.render.dotbuilder import DotBuilder, NodeSpec, node_key
from topomap.render.legend import FADED, GPU_LINK, HOST_MEMORY
from topomap.render.text import bandwidth_text, memory_text, nic_words

GRID_COLUMNS = 4  # PCIe boxes side by side under one parent before the next row starts
BOX_KINDS = ("numa", "host-bridge", "switch", "switch-upstream", "bridge")  # drawn as a box around children
_SWITCHES = ("switch", "switch-upstream", "bridge")
_FOLDED = {"switch-downstream", "port"}
_BUS_ID = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_SHAPES = {
    "gpu": ("box3d", "#e8f5e9"),
    "nic": ("cds", "#fff3e0"),
    "nvswitch": ("hexagon", "#c8e6c9"),
    "numa": ("box", "#eceff1"),
    "host-bridge": ("box", "#e3f2fd"),
    "switch": ("box", "#e3f2fd"),
    "switch-upstream": ("box", "#e3f2fd"),
    "bridge": ("box", "#e3f2fd"),
}


def gpu_model(name: str) -> str:
    """A GPU model without the vendor prefix every one of them carries (`NVIDIA H100 80GB HBM3` → `H100 80GB HBM3`)."""
    return name[7:] if name.startswith("NVIDIA ") and len(name) > 7 else name


def nic_name(nic: Nic) -> str:
    """A NIC by its device name (mlx5_0); a NIC known only by bus id gets its netdev name first when known."""
    if _BUS_ID.match(nic.name) and nic.netdevs:
        return f"{nic.netdevs[0]} ({nic.name})"
    return nic.name


def short_origin(origin: str) -> str:
    """A snapshot's origin (a path) short enough to name a host box."""
    stem = origin.rsplit("/", 1)[-1]
    return stem if len(stem) <= 48 else stem[:45] + "…"


def node_style(kind: str, inferred: bool, faded: bool) -> dict[str, str]:
    """Shape and colours of a device or box node; dashed when inferred, pale when the flow does not use it."""
    shape, fill = _SHAPES.get(kind, ("box", "#f5f5f5"))
    return {
        "shape": shape,
        "style": "filled,dashed" if inferred else "filled",
        "fillcolor": "#fafafa" if faded else fill,
        "color": FADED if faded else "#424242",
    }


@dataclass(frozen=True)
class DrawnTree:
    """The host → NUMA → PCI tree as drawn: host bridges, switches and devices; a bridge with one child
    (a root port) and switch ports folded into their parent. ``parents`` is the whole tree's,
    ``drawn_parent`` the nearest drawn ancestor (none for a top box and the fabric)."""

    topo: Topology
    parents: dict[str, str]
    drawn_parent: dict[str, str]
    kept: list[str]
    children: dict[str | None, list[str]]

    @classmethod
    def of(cls, topo: Topology) -> DrawnTree:
        parents = tree_parents(topo)
        n_children: dict[str, int] = {}
        for par in parents.values():
            n_children[par] = n_children.get(par, 0) + 1

        def kept(node: str) -> bool:
            kind = topo.graph.nodes[node].get("kind")
            if kind in ("gpu", "nic", "nvswitch", "numa", "host-bridge"):
                return True
            return kind not in _FOLDED and n_children.get(node, 0) > 1

        drawn = [n for n in topo.graph.nodes if n != HOST and kept(n)]
        above: dict[str, str] = {}
        for n in drawn:
            p = parents.get(n)
            while p is not None and p != HOST and not kept(p):
                p = parents.get(p)
            if p not in (None, HOST) and n != FABRIC:
                above[n] = str(p)
        children: dict[str | None, list[str]] = {}
        for n in drawn:
            children.setdefault(above.get(n), []).append(n)
        return cls(topo, parents, above, drawn, children)

    def kids(self, n: str | None) -> list[str]:
        return sorted(self.children.get(n, []), key=natural_key)

    def kind(self, n: str) -> str | None:
        kind = self.topo.graph.nodes[n].get("kind")
        return None if kind is None else str(kind)


@dataclass(frozen=True)
class NvlinkBundle:
    """An NVLink bundle as drawn (``a`` before ``c``; ``c`` is the fabric for a GPU's bundle to it), with
    its bandwidth and the evidence's answer whether data can use it."""

    a: str
    c: str
    count: object
    bandwidth: Bandwidth
    usable: Answer

    def label(self) -> str:
        text = f"NV{self.count} · {bandwidth_text(self.bandwidth)}"
        if self.usable.no:
            text += f"\nNOT USABLE: {self.usable.reasons[0] if self.usable.reasons else ''}"
        return text


def nvlink_bundles(topo: Topology) -> list[NvlinkBundle]:
    """Every NVLink edge of the graph, in a stable order."""
    out = []
    for u, v, d in sorted(topo.graph.edges(data=True), key=lambda e: (natural_key(e[0]), natural_key(e[1]))):
        if d.get("kind") == "nvlink":
            a, c = (u, v) if v == FABRIC or natural_key(u) <= natural_key(v) else (v, u)
            out.append(NvlinkBundle(a, c, d.get("count"), edge_bandwidth(d), nvlink_edge_usable(topo, a, c)))
    return out


def node_label(topo: Topology, n: str) -> str:
    """A node's own label: GPU number, model and memory; NIC name and line rate; a NUMA node's CPUs."""
    d = topo.graph.nodes[n]
    kind = d.get("kind")
    snap = topo.snapshot
    if kind == "gpu":
        gpu = next(x for x in snap.gpus if gpu_node(x) == n)
        extra = f"\n{gpu_model(gpu.name)}" if gpu.name else ""
        memory = gpu_memory(gpu)
        mem = f"\n{memory_text(memory)}" if memory.total_bytes else ""
        return f"GPU{gpu.index}{extra}{mem}"
    if kind == "nic":
        nic = next(x for x in snap.nics if nic_node(x) == n)
        speed = f"\n{fmt_gbit(nic.speed_gbit_s)}" if nic.speed_gbit_s else ""
        return f"{nic_words(nic_name(nic))}{speed}"
    if kind == "numa":
        cpus = d.get("cpus")
        return str(d.get("label")) + (f"\nCPUs {cpus}" if cpus else "")
    if kind in _SWITCHES:
        return "PCIe switch" + ("" if d.get("inferred") else f"\n{d.get('label')}")
    if kind == "host-bridge":
        return "host bridge" + ("" if d.get("inferred") else f"\n{d.get('label')}")
    return str(d.get("label") or n)


def segment_link(topo: Topology, parents: dict[str, str], top: str, node: str) -> tuple[int, int, float | None] | None:
    """Narrowest known PCIe link between a drawn node and its drawn parent: (gen, width, GB/s spec).
    Where only a virtual bridge's Gen1 x1 is declared, that, with the rate unknown (None)."""
    best: tuple[float, int, int] | None = None
    declared: tuple[int, int] | None = None
    cur = node
    while cur != top and cur in parents:
        p = parents[cur]
        d = topo.graph.edges[p, cur]
        gen, width = d.get("gen"), d.get("width")
        bw = pcie_edge_bandwidth(topo.graph, (p, cur))
        if bw is not None and gen and width and (best is None or bw < best[0]):
            best = (bw, gen, width)
        elif bw is None and gen and width and declared is None:
            declared = (gen, width)
        cur = p
    if best is not None:
        return best[1], best[2], best[0]
    return (*declared, None) if declared else None


def _pcie_tip(link: tuple[int, int, float | None] | None, snap: Snapshot) -> str:
    """A PCIe edge's tooltip, its figure labelled by the one function a route's PCIe figure asks (spec, or a
    static topology file's placeholder: "15.8 GB/s, from the topology file; not the machine's")."""
    if link is None:
        return "PCIe (speed not recorded)"
    gen, width, bw = link
    if bw is None:
        return f"PCIe Gen{gen} x{width} declared: a VM's virtual bridge, not the real link (rate unknown)"
    return f"PCIe Gen{gen} x{width} · {pcie_bandwidth(bw, snap).text()}"


@dataclass
class HostDrawing:
    """Draws host ``h`` into ``b``: ``used`` (host index, node) fades everything else."""

    b: DotBuilder
    h: int
    topo: Topology
    used: set[tuple[int, str]] | None

    def __post_init__(self) -> None:
        self.tree = DrawnTree.of(self.topo)

    def draw(self, name: str | None, inside: Sequence[NodeSpec]) -> None:
        """The host's box and everything in it, then the links between what it holds."""
        snap = self.topo.snapshot
        bundles = nvlink_bundles(self.topo)
        labels = {x.label() for x in bundles}
        hub_only = bool(bundles) and all(x.c == FABRIC for x in bundles) and len(labels) == 1
        spans: list[tuple[int, int]] = []
        host_label = name or snap.host.hostname or short_origin(snap.source.origin)
        with self.b.box(f"host{self.h}", host_label, style="rounded", color="#9e9e9e", fontsize="13"):
            for top in self.tree.kids(None):
                if top != FABRIC:
                    first = len(self.b.declared)
                    self._emit(top)
                    spans.append((first, len(self.b.declared)))
            if FABRIC in self.topo.graph:
                hub = node_label(self.topo, FABRIC)
                if hub_only:  # the same bundle from every GPU: said once here, no spokes (the picture stays narrow)
                    hub += f"\nevery GPU{'' if len(bundles) == 1 else f' ({len(bundles)})'}: {labels.pop()} to it"
                with self.b.box(f"{self.h}:fabric", "NVLink fabric", style="rounded", color="#a5d6a7"):
                    self.b.node(self._key(FABRIC), hub, **node_style("nvswitch", False, self._faded(FABRIC)))
            for spec in inside:
                self.b.place(spec)
        self._rows(spans, hub_only)
        self._tree_edges()
        self._socket_edges()
        if not hub_only:
            self._nvlink_edges(bundles)
        self._nics_below_gpus()

    def _key(self, n: str) -> str:
        return node_key(self.h, n)

    def _faded(self, n: str) -> bool:
        return self.used is not None and (self.h, n) not in self.used

    def _emit(self, n: str) -> None:
        """A device node, or a box node with its children inside its box (in rows of GRID_COLUMNS boxes)."""
        kind = self.tree.kind(n)
        kids = self.tree.kids(n)
        inferred = bool(self.topo.graph.nodes[n].get("inferred"))
        if kind not in BOX_KINDS or not kids:
            self.b.node(self._key(n), node_label(self.topo, n), **node_style(str(kind), inferred, self._faded(n)))
            return
        title = node_label(self.topo, n).replace("\n", " · ") if kind == "numa" else ""
        style = "rounded,dashed" if inferred else "rounded"
        # a NUMA box says which node; its own node stands for the CPUs and memory
        own = "CPU + host memory" if kind == "numa" else node_label(self.topo, n)
        with self.b.box(f"{self.h}:{n}", title, style=style, color="#90a4ae"):
            self.b.node(self._key(n), own, **node_style(kind, inferred, self._faded(n)))
            boxes: list[tuple[int, int]] = []
            for k in kids:
                first = len(self.b.declared)
                self._emit(k)
                if self.tree.children.get(k):
                    boxes.append((first, len(self.b.declared)))
            for up, down in zip(boxes, boxes[GRID_COLUMNS:], strict=False):  # many boxes: rows of GRID_COLUMNS
                self.b.invisible(self.b.declared[up[1] - 1], self.b.declared[down[0]])

    def _rows(self, spans: list[tuple[int, int]], hub_only: bool) -> None:
        """NUMA nodes in rows: one per row when each holds a row of GPUs, more per row when they are
        small; the fabric hub, without spokes, below the rest."""
        declared = self.b.declared
        widest = max((sum(node_kind(k.split(":", 1)[1]) == "gpu" for k in declared[a:z]) for a, z in spans), default=1)
        columns = 1 if widest >= 2 else 2
        for above, below in zip(spans, spans[columns:], strict=False):
            if above[1] > above[0] and below[1] > below[0]:
                self.b.invisible(declared[above[1] - 1], declared[below[0]])
        if hub_only and spans:
            for key in declared[spans[-1][0] : spans[-1][1]]:
                if node_kind(key.split(":", 1)[1]) in ("gpu", "nic"):
                    self.b.invisible(key, self._key(FABRIC))

    def _tree_edges(self) -> None:
        """PCIe links between drawn nodes, labelled with the narrowest generation and width on the way."""
        for n in sorted(self.tree.kept, key=natural_key):
            p = self.tree.drawn_parent.get(n)
            if p is None:
                continue
            link = segment_link(self.topo, self.tree.parents, p, n)
            label = f"Gen{link[0]} x{link[1]}" if link else ""
            colour = FADED if self._faded(n) or self._faded(p) else HOST_MEMORY
            self.b.edge(
                self._key(p),
                self._key(n),
                label,
                color=colour,
                penwidth="1.2",
                tooltip=_pcie_tip(link, self.topo.snapshot),
            )

    def _socket_edges(self) -> None:
        numas = sorted(n for n in self.tree.kept if self.tree.kind(n) == "numa")
        if len(numas) > 2:
            return  # a full mesh of inter-socket edges is noise; routes still cross them
        for i, a in enumerate(numas):
            for c in numas[i + 1 :]:
                self.b.edge(self._key(a), self._key(c), "inter-socket", color=FADED, style="dashed")

    def _nvlink_edges(self, bundles: list[NvlinkBundle]) -> None:
        """Each bundle labelled; one data cannot use dashed red with the reason."""
        for x in bundles:
            colour = "#c62828" if x.usable.no else FADED if self._faded(x.a) or self._faded(x.c) else GPU_LINK
            style = "dashed" if x.usable.no else "solid"
            self.b.edge(
                self._key(x.a), self._key(x.c), x.label(), color=colour, penwidth="2.4", style=style, fontcolor=colour
            )

    def _nics_below_gpus(self) -> None:
        """A NIC beside a GPU under one switch sits below it: the picture stays narrower."""
        for n in sorted(self.tree.kept, key=natural_key):
            kids = self.tree.kids(n)
            gpus = [k for k in kids if self.tree.kind(k) == "gpu"]
            if gpus and self.tree.kind(n) in (*_SWITCHES, "host-bridge"):
                for k in kids:
                    if self.tree.kind(k) == "nic":
                        self.b.invisible(self._key(gpus[0]), self._key(k))
