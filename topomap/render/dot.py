"""Topology (+ mapped flow) → Graphviz DOT; SVG/PNG/PDF through the real `dot` binary.

The layout mirrors the hardware: a cluster per host, per NUMA node, per host bridge, per PCIe
switch; GPUs and NICs inside the switch that holds them; the NVSwitch fabric drawn as one hub.
Edge colours are the same in every diagram: GPU links green, PCIe / host memory blue, network
orange. Every user-supplied string is escaped, and node ids are generated, so no input can
break out of the DOT or the SVG.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from topomap.base.units import fmt_bandwidth
from topomap.graph import FABRIC, Topology, natural_key
from topomap.graph.evidence import nvlink_edge_usable
from topomap.graph.query import pcie_edge_bandwidth, tree_parents
from topomap.model.snapshot import Nic
from topomap.render.legend import FADED, GPU_LINK, HOST_MEMORY, NETWORK, graph_label, legend_rows

_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BUS_ID = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
GRID_COLUMNS = 4  # PCIe boxes side by side under one parent before the next row starts
_SKIP = {"switch-downstream", "port"}


def q(text: str) -> str:
    """A DOT double-quoted string: no input can end the string or inject escapes."""
    text = _CTRL.sub("?", text)
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def fmt_gbps(bw: float | None, source: str | None = None, lower_bound: bool = False) -> str:
    """A link's bandwidth on a diagram: "450 GB/s", "≥ 253 GB/s", "GB/s unknown"."""
    return "GB/s unknown" if bw is None else fmt_bandwidth(bw, source, lower_bound)


@dataclass
class DotBuilder:
    """Accumulates DOT lines with generated ids."""

    lines: list[str] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)
    indent: int = 1
    declared: list[str] = field(default_factory=list)  # keys of nodes declared, in order

    def nid(self, key: str) -> str:
        if key not in self.ids:
            self.ids[key] = f"n{len(self.ids)}"
        return self.ids[key]

    def add(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    def node(self, key: str, attrs: str) -> str:
        """Declare a node (so every edge refers to a declared node); returns its id."""
        self.declared.append(key)
        self.add(f"{self.nid(key)} [{attrs}];")
        return self.nid(key)

    def open(self, key: str, label: str, style: str) -> None:
        self.add(f"subgraph cluster_{self.nid('cluster:' + key)} {{")
        self.indent += 1
        self.add(f"label={q(label)}; {style}")

    def close(self) -> None:
        self.indent -= 1
        self.add("}")


def _node_attrs(kind: str, label: str, inferred: bool, faded: bool) -> str:
    shapes = {
        "gpu": ("box3d", "#e8f5e9"),
        "nic": ("cds", "#fff3e0"),
        "nvswitch": ("hexagon", "#c8e6c9"),
        "numa": ("box", "#eceff1"),
        "host-bridge": ("box", "#e3f2fd"),
        "switch": ("box", "#e3f2fd"),
        "switch-upstream": ("box", "#e3f2fd"),
        "bridge": ("box", "#e3f2fd"),
    }
    shape, fill = shapes.get(kind, ("box", "#f5f5f5"))
    style = "filled,dashed" if inferred else "filled"
    colour = FADED if faded else "#424242"
    if faded:
        fill = "#fafafa"
    return f"label={q(label)}, shape={shape}, style={q(style)}, fillcolor={q(fill)}, color={q(colour)}"


def _kept(topo: Topology, node: str, n_children: dict[str, int]) -> bool:
    """PCI nodes drawn: host bridges and switches; pass-through ports are folded away."""
    kind = topo.graph.nodes[node].get("kind")
    if kind in ("gpu", "nic", "nvswitch", "numa", "host-bridge"):
        return True
    if kind in _SKIP:
        return False
    return n_children.get(node, 0) > 1  # a bridge with one child is a pass-through (a root port)


Extra = Iterable[str] | Callable[[DotBuilder], Iterable[str]]


def topology_dot(
    topos: Sequence[Topology | None],
    used: set[tuple[int, str]] | None = None,
    extra: Extra = (),
    title: str | None = None,
    names: Sequence[str] | None = None,
    annotations: dict[tuple[int, str], list[str]] | None = None,
    builder: DotBuilder | None = None,
    inside: dict[int, list[str]] | None = None,
    columns: int = 1,
) -> str:
    """DOT text for one or more hosts (None: a host with no snapshot). ``used`` (host index,
    node) fades everything else; ``annotations`` add step names to nodes; ``inside`` lines go
    into host h's box; ``extra`` lines (flow arrows, built with the same ``builder``, or a
    function of it called once every node is declared) are appended inside the graph. Hosts are
    laid out in ``columns`` columns, each below the one ``columns`` places before it (a machine
    is wider than tall, so one column fits a screen best), never in one long row."""
    b = builder or DotBuilder()
    b.lines.append("digraph topomap {")
    b.add(
        'graph [fontname="Helvetica", fontsize=11, compound=true, rankdir=TB, newrank=true, nodesep=0.3, '
        "ranksep=0.45, labelloc=b, labeljust=l];"
    )
    b.add('node [fontname="Helvetica", fontsize=10, margin="0.08,0.04"];')
    b.add('edge [fontname="Helvetica", fontsize=9, dir=none];')
    footer: list[str] = []
    spans: list[tuple[int, int]] = []
    for h, topo in enumerate(topos):
        first = len(b.declared)
        name = names[h] if names else None
        notes = {n: v for (hh, n), v in (annotations or {}).items() if hh == h}
        if topo is None:
            label = f"{name or 'host'} (no snapshot)" + "".join(f"\n▸ {x}" for x in notes.get("host", []))
            b.open(f"host{h}", name or "host", 'style="rounded,dashed"; color="#9e9e9e"; fontsize=13;')
            b.node(node_key(h, "host"), _node_attrs("host", label, True, False))
            for line in (inside or {}).get(h, []):
                b.add(line)
            b.close()
            footer.append(f"{name or 'host'}: no snapshot (its inside is unknown; a probe there would settle it)")
        else:
            _host(b, h, topo, used, name, notes, (inside or {}).get(h, []))
            footer.append((f"{name}: " if name else "") + origin_line(topo))
        spans.append((first, len(b.declared)))
    for k in range(columns, len(spans)):  # stack: host k below host k - columns
        above, below = spans[k - columns], spans[k]
        if above[1] > above[0] and below[1] > below[0]:
            b.add(f"{b.nid(b.declared[above[1] - 1])} -> {b.nid(b.declared[below[0]])} [style=invis, weight=0];")
    real = [(h, t) for h, t in enumerate(topos) if t is not None]
    if len(real) > 1 and used is None:
        _network(b, real)
    for line in extra(b) if callable(extra) else extra:
        b.add(line)
    inferred = any(t is not None and t.inferred for t in topos)
    b.add(f"label={graph_label(title, footer, legend_rows(used is not None), inferred)};")
    b.lines.append("}")
    return "\n".join(b.lines) + "\n"


def _network(b: DotBuilder, hosts: list[tuple[int, Topology]]) -> None:
    """Several hosts: the network between them, one orange edge per host from its box (its RDMA NICs
    and their line rates as the label) — not one long edge per NIC."""
    net = b.node("network", f'label="network", shape=ellipse, style=filled, fillcolor="#fff3e0", color={q(NETWORK)}')
    for h, topo in hosts:
        nics = [n for n in topo.snapshot.nics if n.rdma]
        if not nics:
            continue
        speeds = sorted({n.speed_gbit_s for n in nics if n.speed_gbit_s})
        rate = " / ".join(f"{x:g}" for x in speeds) + " Gb/s each" if speeds else "line rate not recorded"
        label = f"{len(nics)} RDMA NIC(s) · {rate}"
        cluster = f"cluster_{b.nid('cluster:' + f'host{h}')}"
        b.add(
            f"{b.nid(node_key(h, 'nic:' + nics[0].name))} -> {net} [color={q(NETWORK)}, penwidth=2.4, "
            f"label={q(label)}, fontcolor={q(NETWORK)}, ltail={cluster}];"
        )


def group_identical(topos: list[Topology], limit: int = 6) -> tuple[list[Topology], list[str]]:
    """Past ``limit`` hosts, draw one host per group of identical ones, named for the group."""
    names = [t.snapshot.host.hostname or _short(t.snapshot.source.origin) for t in topos]
    if len(topos) <= limit:
        return topos, names
    groups: dict[tuple[object, ...], list[int]] = {}
    for k, t in enumerate(topos):
        s = t.snapshot
        sig = (
            tuple(sorted((p.a, p.b, p.path) for p in s.pairs)),
            tuple(g.name for g in s.gpus),
            tuple((n.name, n.speed_gbit_s) for n in s.nics),
        )
        groups.setdefault(sig, []).append(k)
    out, labels = [], []
    for members in groups.values():
        out.append(topos[members[0]])
        first, last = names[members[0]], names[members[-1]]
        labels.append(first if len(members) == 1 else f"{first} … {last} ({len(members)} identical hosts)")
    return out, labels


def origin_line(topo: Topology, boxes: bool = True) -> str:
    s = topo.snapshot.source
    kinds = {
        "nvidia-smi": "imported from nvidia-smi topo -m",
        "nccl-xml": "imported from an NCCL topology XML",
        "hwloc-xml": "imported from an hwloc XML",
        "merge": "merged snapshot",
    }
    if s.kind == "probe":
        line = f"probed on {s.origin}" + (f" at {s.captured_at}" if s.captured_at else "")
    else:
        line = f"{kinds[s.kind]}: {s.origin}"
    if topo.inferred and boxes:
        line += " (dashed boxes are inferred from path classes)"
    return line


def node_key(h: int, node: str) -> str:
    return f"{h}:{node}"


def _host(
    b: DotBuilder,
    h: int,
    topo: Topology,
    used: set[tuple[int, str]] | None,
    name: str | None = None,
    notes: dict[str, list[str]] | None = None,
    inside: Sequence[str] = (),
) -> None:
    g = topo.graph
    snap = topo.snapshot
    parents = tree_parents(topo)
    n_children: dict[str, int] = {}
    for par in parents.values():
        n_children[par] = n_children.get(par, 0) + 1

    def faded(n: str) -> bool:
        return used is not None and (h, n) not in used

    def drawn_parent(n: str) -> str | None:
        p = parents.get(n)
        while p is not None and p != "host" and not _kept(topo, p, n_children):
            p = parents.get(p)
        return None if p in (None, "host") else p

    kept = [n for n in g.nodes if n != "host" and _kept(topo, n, n_children)]
    children: dict[str | None, list[str]] = {}
    for n in kept:
        children.setdefault(drawn_parent(n) if n != FABRIC else None, []).append(n)
    host_label = name or snap.host.hostname or _short(snap.source.origin)
    steps = notes or {}
    b.open(f"host{h}", f"{host_label}", 'style="rounded"; color="#9e9e9e"; fontsize=13;')

    def label_of(n: str) -> str:
        return _base_label(n) + "".join(f"\n▸ {x}" for x in steps.get(n, []))

    def _base_label(n: str) -> str:
        d = g.nodes[n]
        kind = d.get("kind")
        if kind == "gpu":
            gpu = next(x for x in snap.gpus if f"gpu{x.index}" == n)
            extra = f"\n{gpu_model(gpu.name)}" if gpu.name else ""
            mem = f"\n{gpu.memory_total_bytes / 2**30:.0f} GiB" if gpu.memory_total_bytes else ""
            return f"GPU{gpu.index}{extra}{mem}"
        if kind == "nic":
            nic = next(x for x in snap.nics if f"nic:{x.name}" == n)
            speed = f"\n{nic.speed_gbit_s:g} Gb/s" if nic.speed_gbit_s else ""
            return f"NIC {nic_name(nic)}{speed}"
        if kind == "numa":
            cpus = d.get("cpus")
            return str(d.get("label")) + (f"\nCPUs {cpus}" if cpus else "")
        if kind in ("switch", "switch-upstream", "bridge"):
            return "PCIe switch" + ("" if d.get("inferred") else f"\n{d.get('label')}")
        if kind == "host-bridge":
            return "host bridge" + ("" if d.get("inferred") else f"\n{d.get('label')}")
        return str(d.get("label") or n)

    def emit(n: str) -> None:
        kind = g.nodes[n].get("kind")
        kids = sorted(children.get(n, []), key=natural_key)
        inferred = bool(g.nodes[n].get("inferred"))
        if kind in ("numa", "host-bridge", "switch", "switch-upstream", "bridge") and kids:
            style = 'style="rounded,dashed"; color="#90a4ae";' if inferred else 'style="rounded"; color="#90a4ae";'
            title = _base_label(n).replace("\n", " · ") if kind == "numa" else ""
            b.open(f"{h}:{n}", title, style)
            own = "CPU + host memory" + "".join(f"\n▸ {x}" for x in steps.get(n, [])) if kind == "numa" else label_of(n)
            b.node(node_key(h, n), _node_attrs(kind, own, inferred, faded(n)))
            boxes: list[tuple[int, int]] = []
            for k in kids:
                first = len(b.declared)
                emit(k)
                if children.get(k):
                    boxes.append((first, len(b.declared)))
            for up, down in zip(boxes, boxes[GRID_COLUMNS:], strict=False):  # many boxes: rows of GRID_COLUMNS
                b.add(f"{b.nid(b.declared[up[1] - 1])} -> {b.nid(b.declared[down[0]])} [style=invis];")
            b.close()
        else:
            b.node(node_key(h, n), _node_attrs(str(kind), label_of(n), inferred, faded(n)))

    tops = [t for t in sorted(children.get(None, []), key=natural_key) if t != FABRIC]
    spans: list[tuple[int, int]] = []
    for top in tops:
        first = len(b.declared)
        emit(top)
        spans.append((first, len(b.declared)))
    nvlinks = []
    for u, v, d in sorted(g.edges(data=True), key=lambda e: (natural_key(e[0]), natural_key(e[1]))):
        if d.get("kind") == "nvlink":
            a, c = (u, v) if v == FABRIC or natural_key(u) <= natural_key(v) else (v, u)
            bw_text = fmt_gbps(d.get("bandwidth_gbps"), d.get("bandwidth_source"), bool(d.get("lower_bound")))
            usable = nvlink_edge_usable(topo, a, c)
            not_usable = "" if not usable.no else f"\nNOT USABLE: {usable.reasons[0] if usable.reasons else ''}"
            nvlinks.append((a, c, f"NV{d.get('count')} · {bw_text}{not_usable}"))
    labels = {lab for _, _, lab in nvlinks}
    broken = {(a, c) for a, c, lab in nvlinks if "NOT USABLE" in lab}
    hub_only = bool(nvlinks) and all(c == FABRIC for _, c, _ in nvlinks) and len(labels) == 1
    if FABRIC in g:
        hub = label_of(FABRIC)
        if hub_only:  # the same bundle from every GPU: said once here, no spokes (the picture stays narrow)
            hub += f"\nevery GPU{'' if len(nvlinks) == 1 else f' ({len(nvlinks)})'}: {labels.pop()} to it"
        b.open(f"{h}:fabric", "NVLink fabric", 'style="rounded"; color="#a5d6a7";')
        b.node(node_key(h, FABRIC), _node_attrs("nvswitch", hub, False, faded(FABRIC)))
        b.close()
    for line in inside:
        b.add(line)
    b.close()
    # NUMA nodes in rows: one per row when each holds a row of GPUs, more per row when they are small
    widest = max((sum(k.split(":", 1)[1].startswith("gpu") for k in b.declared[a:z]) for a, z in spans), default=1)
    columns = 1 if widest >= 2 else 2
    for above, below in zip(spans, spans[columns:], strict=False):
        if above[1] > above[0] and below[1] > below[0]:
            b.add(f"{b.nid(b.declared[above[1] - 1])} -> {b.nid(b.declared[below[0]])} [style=invis];")
    if hub_only and spans:  # the fabric, without spokes, below the rest
        for key in b.declared[spans[-1][0] : spans[-1][1]]:
            if key.split(":", 1)[1].startswith(("gpu", "nic:")):
                b.add(f"{b.nid(key)} -> {b.nid(node_key(h, FABRIC))} [style=invis];")
    # tree edges between drawn nodes
    for n in sorted(kept, key=natural_key):
        p = drawn_parent(n) if n != FABRIC else None
        if p is None:
            continue
        gen, width, bw = _segment_link(topo, parents, p, n)
        label = f"Gen{gen} x{width}" if gen and width else ""
        colour = FADED if faded(n) or faded(p) else HOST_MEMORY
        if not label:
            tip = "PCIe (speed not recorded)"
        elif bw is None:
            tip = f"PCIe {label} declared: a VM's virtual bridge, not the real link (rate unknown)"
        else:
            tip = f"PCIe {label} · {fmt_gbps(bw)} spec"
        b.add(
            f"{b.nid(node_key(h, p))} -> {b.nid(node_key(h, n))} [color={q(colour)}, penwidth=1.2, "
            f"label={q(label)}, tooltip={q(tip)}];"
        )
    numas = sorted(n for n in kept if g.nodes[n].get("kind") == "numa")
    if len(numas) > 2:
        numas = []  # a full mesh of inter-socket edges is noise; routes still cross them
    for i, a in enumerate(numas):
        for c in numas[i + 1 :]:
            b.add(
                f"{b.nid(node_key(h, a))} -> {b.nid(node_key(h, c))} [color={q(FADED)}, style=dashed, "
                f'label="inter-socket"];'
            )
    for a, c, label in [] if hub_only else nvlinks:
        colour = FADED if faded(a) or faded(c) else GPU_LINK
        style = "dashed" if (a, c) in broken else "solid"
        colour = "#c62828" if (a, c) in broken else colour
        b.add(
            f"{b.nid(node_key(h, a))} -> {b.nid(node_key(h, c))} [color={q(colour)}, penwidth=2.4, "
            f"style={style}, label={q('' if hub_only else label)}, fontcolor={q(colour)}];"
        )
    for n in sorted(kept, key=natural_key):  # a NIC beside a GPU under one switch sits below it: narrower
        kids = children.get(n, [])
        gpus = sorted((k for k in kids if g.nodes[k].get("kind") == "gpu"), key=natural_key)
        if gpus and g.nodes[n].get("kind") in ("switch", "switch-upstream", "bridge", "host-bridge"):
            for k in sorted(kids, key=natural_key):
                if g.nodes[k].get("kind") == "nic":
                    b.add(f"{b.nid(node_key(h, gpus[0]))} -> {b.nid(node_key(h, k))} [style=invis];")


def gpu_model(name: str) -> str:
    """A GPU model without the vendor prefix every one of them carries (`NVIDIA H100 80GB HBM3` → `H100 80GB HBM3`)."""
    return name[7:] if name.startswith("NVIDIA ") and len(name) > 7 else name


def nic_name(nic: Nic) -> str:
    """A NIC by its device name (mlx5_0); a NIC known only by bus id gets its netdev name first when known."""
    if _BUS_ID.match(nic.name) and nic.netdevs:
        return f"{nic.netdevs[0]} ({nic.name})"
    return nic.name


def _short(origin: str) -> str:
    stem = origin.rsplit("/", 1)[-1]
    return stem if len(stem) <= 48 else stem[:45] + "…"


def _segment_link(
    topo: Topology, parents: dict[str, str], top: str, node: str
) -> tuple[int | None, int | None, float | None]:
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
    return (*declared, None) if declared else (None, None, None)


class DotMissing(RuntimeError):
    """The Graphviz `dot` binary is not installed."""


def pipe(dot_text: str, fmt: str) -> bytes:
    """Run the real `dot` on DOT text and return the output bytes."""
    import graphviz

    try:
        out: bytes = graphviz.Source(dot_text).pipe(format=fmt, engine="dot")
    except graphviz.ExecutableNotFound as err:
        raise DotMissing(str(err)) from err
    return out


def render_svg(topos: list[Topology]) -> str:
    return pipe(topology_dot(topos), "svg").decode()
