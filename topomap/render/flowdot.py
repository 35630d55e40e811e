"""A mapped flow drawn two ways: on the machines (flow first, hardware second) and as a pipeline.

On the machines, each step is a node inside the box of the host it runs on, naming the hardware
it sits on; each flow arrow is drawn once between its steps, coloured by medium and labelled with
its own label, bandwidth (with provenance) and time. Replicas and pairwise arrows are one
bundle ("28× gpu-link · nvswitch NV18 · 450 GB/s spec"). Hardware the flow does not touch is
folded into one line per host unless ``hardware="all"``, which draws each machine's full tree
with the steps tied to their devices. The pipeline view is the steps alone; a deep flow wraps into
columns (a grid, not a strip).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable

from topomap.flow.mapping import FlowMap
from topomap.graph import FABRIC, Topology, nodeid
from topomap.graph.nodeid import gpu_node, node_kind, split_hop
from topomap.render.bundles import Bundle, bundles, compress_places
from topomap.render.dot import GRAPH, origin_line, topology_dot
from topomap.render.dotbuilder import DotBuilder, NodeSpec, node_key
from topomap.render.hostdot import gpu_model, nic_name
from topomap.render.legend import FADED, MEDIUM_COLOURS, flow_legend_rows, graph_label

SHAPES = {"input": "folder", "output": "note", "exchange": "doubleoctagon", "aggregate": "invhouse"}
FILLS = {"input": "#fffde7", "output": "#fffde7", "compute": "#ffffff", "exchange": "#f1f8e9", "aggregate": "#ede7f6"}
PIPELINE_ROWS = 4  # levels per column of the pipeline view before it wraps into the next column
_NODE = {"fontname": "Helvetica", "fontsize": "11", "margin": "0.12,0.06"}
_EDGE = {"fontname": "Helvetica", "fontsize": "10"}
_PIPELINE = {"rankdir": "TB", "newrank": "true", "fontname": "Helvetica", "fontsize": "11", "nodesep": "0.6"}
_PIPELINE |= {"ranksep": "0.8", "labelloc": "b", "labeljust": "l", "pad": "0.2"}


def bundle_label(b: Bundle, nic_names: dict[str, str] | None = None) -> str:
    """Edge label: the flow's own label, then count · medium · via, bandwidth · volume/time, NICs
    (by device name, ``nic_names`` mapping a snapshot's NIC name to the name to show)."""
    lines = [b.label] if b.label else []
    lines.append(
        (f"{b.count}× " if b.count > 1 else "") + b.medium + ("" if b.medium == "local" else f" · {b.via_text()}")
    )
    second = [x for x in (b.bandwidth_text() if b.medium != "local" else "", b.volume_text()) if x]
    if second:
        lines.append(" · ".join(second))
    nics = b.nic_text(nic_names)
    if nics:
        lines.append(nics)
    nccl = nccl_text(b)
    if nccl:
        lines.append(("⚠ " if nccl_stands_out(b) else "") + nccl)
    return "\n".join(lines)


def nccl_text(b: Bundle) -> str:
    """NCCL's transport over a bundle's arrows (``NCCL SHM (host memory)``, ``NCCL P2P ×20, SHM ×8``);
    empty where NCCL sends none of them."""
    transports = nccl_transports(b)
    return f"NCCL {transports}" if transports else ""


def nccl_transports(b: Bundle) -> str:
    """:func:`nccl_text` without its ``NCCL`` (a column headed NCCL): ``P2P ×20, SHM ×8``."""
    counts = Counter(t for t in (a.nccl_text() for a in b.arrows) if t)
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{t} ×{n}" for t, n in counts.items())


def nccl_stands_out(b: Bundle) -> bool:
    """A bundle with an NCCL hop through host memory (SHM) or over the network without GPUDirect RDMA."""
    return any(a.nccl_stands_out() for a in b.arrows)


def _edge(bld: DotBuilder, src: str, dst: str, b: Bundle, nic_names: dict[str, str] | None = None) -> None:
    """One bundle as an edge between two step nodes, coloured by medium; its arrows' routes as the tooltip."""
    colour = MEDIUM_COLOURS.get(b.medium, FADED)
    width = 1.4 if b.medium == "local" else (3.2 if b.count > 1 else 2.2)
    tip = "\n".join(f"{a.src} → {a.dst}: {' → '.join(a.route)}" for a in b.arrows[:8])
    if b.count > 8:
        tip += f"\n… and {b.count - 8} more"
    bld.edge(
        src,
        dst,
        bundle_label(b, nic_names),
        dir="both" if b.both_ways else "forward",
        color=colour,
        style="dashed" if b.medium == "local" else ("bold,dotted" if nccl_stands_out(b) else "solid"),
        penwidth=f"{width}",
        fontcolor=colour,
        tooltip=tip,
    )


def _step_key(step: str, host: str) -> str:
    return f"step:{host}:{step}"


def _where(fmap: FlowMap, step: str, host: str, topo: Topology | None) -> str:
    """What the step sits on, on this host: `GPU0–7 · 8× NVIDIA H100`, `host memory (numa1)`, `storage`."""
    places = [p for p in fmap.flow.steps[step].placements if p.host == host]
    out: list[str] = []
    gpus = [p.gpu for p in places if p.kind == "gpu" and p.gpu]
    if gpus:
        text = compress_places([p for p in places if p.kind == "gpu" and p.gpu], with_host=False)
        text = text.replace("gpu", "GPU", 1)
        models = []
        if topo is not None:
            by_id = {gpu_node(g): g for g in topo.snapshot.gpus}
            models = list(dict.fromkeys(gpu_model(by_id[g].name or "") for g in gpus if g in by_id and by_id[g].name))
        if models:
            text += " · " + (f"{len(gpus)}× " if len(gpus) > 1 else "") + "/".join(str(m) for m in models)
        out.append(text)
    for kind, word in (("memory", "host memory"), ("storage", "storage")):
        if any(p.kind == kind for p in places):
            numas = _numa_ends(fmap, step, host)
            out.append(word + (f" ({', '.join(numas)})" if numas and kind == "memory" else ""))
    if any(p.kind == "host" for p in places):
        out.append("the host (no snapshot)")
    return "; ".join(out)


def _numa_ends(fmap: FlowMap, step: str, host: str) -> list[str]:
    """NUMA nodes the mapping used for a memory step's arrows on this host."""
    found: list[str] = []
    for a in fmap.arrows:
        for st, hop in ((a.src_step, a.route[0] if a.route else ""), (a.dst_step, a.route[-1] if a.route else "")):
            h, node = split_hop(hop)
            if st == step and h == host and node_kind(node) == "numa" and node not in found:
                found.append(node)
    return found


def _step_node(fmap: FlowMap, step: str, host: str, topo: Topology | None) -> NodeSpec:
    """A step inside its host's box: name, kind, label and what it sits on there."""
    st = fmap.flow.steps[step]
    lines = [st.name, f"[{st.kind}]"]
    if st.label:
        lines.append(st.label)
    where = _where(fmap, step, host, topo)
    if where:
        lines.append("on " + where)
    attrs = _step_style(st.kind) | {"color": "#424242", "fontsize": "11"}
    return NodeSpec(_step_key(step, host), "\n".join(lines), attrs)


def _step_style(kind: str) -> dict[str, str]:
    return {"shape": SHAPES.get(kind, "box"), "style": "rounded,filled", "fillcolor": FILLS.get(kind, "#ffffff")}


def steps_first(fmap: FlowMap, host: str) -> list[str]:
    """Steps on ``host`` that no other step on ``host`` feeds (the top of its box)."""
    on = [st.name for st in fmap.flow.steps.values() if any(p.host == host for p in st.placements)]
    fed = {a.dst_step for a in fmap.arrows if a.src_step != a.dst_step and a.src_step in on and a.dst_step in on}
    return [st for st in on if st not in fed]


def _host_summary(topo: Topology | None, touched_gpus: set[str], touched_nics: set[str]) -> str:
    """The host box's second line: its hardware, and what is folded away."""
    if topo is None:
        return "no snapshot: inside unknown"
    s = topo.snapshot
    models = list(dict.fromkeys(gpu_model(g.name) for g in s.gpus if g.name))
    bits = [f"{len(s.gpus)}× " + ("/".join(models) if models else "GPU") if s.gpus else "no GPU"]
    if FABRIC in topo.graph:
        bits.append("NVLink fabric")
    if s.nics:
        speeds = sorted({n.speed_gbit_s for n in s.nics if n.speed_gbit_s})
        bits.append(f"{len(s.nics)} NIC(s)" + (f" {'/'.join(f'{x:g}' for x in speeds)} Gb/s" if speeds else ""))
    folded = []
    if len(s.gpus) - len(touched_gpus) > 0:
        folded.append(f"{len(s.gpus) - len(touched_gpus)} GPU(s)")
    if len(s.nics) - len(touched_nics) > 0:
        folded.append(f"{len(s.nics) - len(touched_nics)} NIC(s)")
    text = " · ".join(bits)
    used_nics = [nic_name(n) for n in s.nics if n.name in touched_nics]
    if used_nics:
        text += "\nNICs used: " + ", ".join(used_nics)
    if folded:
        text += "\nnot used by the flow: " + ", ".join(folded)
    return text


def flow_on_machine_dot(fmap: FlowMap, topos: dict[str, Topology | None], hardware: str = "used") -> str:
    """The flow on its machines: step nodes in host boxes, one labelled edge per bundle.

    ``hardware="all"`` also draws each machine's tree, the steps tied to their devices by dotted
    lines and the hardware the flow does not use faded."""
    hosts = list(fmap.flow.spec.hosts)
    index = {h: k for k, h in enumerate(hosts)}
    groups = bundles(fmap)
    bld = DotBuilder()
    steps_on: dict[str, list[str]] = {h: [] for h in hosts}
    for st in fmap.flow.steps.values():
        for p in st.placements:
            if st.name not in steps_on[p.host]:
                steps_on[p.host].append(st.name)
    touched: set[tuple[int, str]] = set()
    for a in fmap.arrows:
        for hop in a.route:
            host, node = split_hop(hop)
            if host in index and node:
                touched.add((index[host], node))
    for st in fmap.flow.steps.values():
        for p in st.placements:
            if p.gpu:
                touched.add((index[p.host], p.gpu))
    inside: dict[int, list[NodeSpec]] = {}
    for h in hosts:
        inside[index[h]] = [_step_node(fmap, s, h, topos.get(h)) for s in steps_on[h]]
        for spec in inside[index[h]]:
            bld.reserve(spec.key)

    names = {n.name: nic_name(n) for t in topos.values() if t is not None for n in t.snapshot.nics}

    def edges(b: DotBuilder) -> None:
        if hardware == "all":
            _ties(fmap, topos, index, b)
        for g in groups:
            src, dst = _step_key(g.src_step, g.src_host), _step_key(g.dst_step, g.dst_host)
            if src in b.ids and dst in b.ids:
                _edge(b, src, dst, g, names)

    if hardware == "all":
        return topology_dot(
            [topos.get(h) for h in hosts],
            used=touched,
            extra=edges,
            title=f"flow {fmap.flow.name}",
            names=hosts,
            builder=bld,
            inside=inside,
        )
    return _flow_only(fmap, topos, hosts, inside, touched, bld, edges)


def _ties(fmap: FlowMap, topos: dict[str, Topology | None], index: dict[str, int], b: DotBuilder) -> None:
    """Dotted grey lines from each step to the devices it runs on (full-hardware view)."""
    declared = set(b.declared)
    for st in fmap.flow.steps.values():
        for p in st.placements:
            topo = topos.get(p.host)
            k = index[p.host]
            if topo is None:
                node = "host"
            elif p.gpu:
                node = p.gpu
            else:
                numas = _numa_ends(fmap, st.name, p.host) or sorted(
                    n for n, d in topo.graph.nodes(data=True) if d.get("kind") == "numa"
                )
                node = numas[0] if numas else "host"
            key = node_key(k, node)
            if key in declared:
                b.edge(_step_key(st.name, p.host), key, style="dotted", color=FADED, arrowhead="none", weight="0")


def _flow_only(
    fmap: FlowMap,
    topos: dict[str, Topology | None],
    hosts: list[str],
    inside: dict[int, list[NodeSpec]],
    touched: set[tuple[int, str]],
    b: DotBuilder,
    edges: Callable[[DotBuilder], None],
) -> str:
    """Host boxes holding only their steps (and a line on their hardware), two columns at most."""
    b.start("flow", {**GRAPH, "nodesep": "0.5", "ranksep": "0.7", "pad": "0.2"}, {**_NODE, "fontsize": "10"}, _EDGE)
    footer: list[str] = []
    spans: list[tuple[str, str]] = []
    for k, h in enumerate(hosts):
        topo = topos.get(h)
        gpus = {n for (hh, n) in touched if hh == k and node_kind(n) == "gpu"}
        nics = {name for (hh, n) in touched if hh == k and (name := nodeid.nic_name(n)) is not None}
        with b.box(f"host{k}", h, style="rounded", color="#9e9e9e", fontsize="13", labeljust="l", labelloc="t"):
            # the host's hardware as a text node at the top of its box: arrows route around a node, not a label
            summary = _host_summary(topo, gpus, nics)
            b.node(f"header:{k}", summary, shape="plain", fontsize="10", fontcolor="#616161")
            for st in steps_first(fmap, h):
                b.invisible(f"header:{k}", _step_key(st, h))
            if not inside[k]:
                b.node(f"host-empty:{k}", "no step runs here", shape="plaintext")
            for spec in inside[k]:
                b.place(spec)
        keys = [x for x in b.declared if x.startswith(f"step:{h}:") or x == f"host-empty:{k}"]
        spans.append((keys[0], keys[-1]))
        if topo is None:
            footer.append(f"{h}: no snapshot (its inside is unknown; a probe there would settle it)")
        else:
            footer.append(f"{h}: {origin_line(topo, boxes=False)}")  # no hardware boxes drawn here
    busy = [h for k, h in enumerate(hosts) if inside[k]]
    if len(busy) == 1:  # one host holds every step: a deep flow wraps into columns inside its box
        order = [st for st in _topological(fmap) if any(p.host == busy[0] for p in fmap.flow.steps[st].placements)]
        levels = _levels(fmap)
        if order and max(levels[st] for st in order) >= 2 * PIPELINE_ROWS:
            _snake(b, order, levels, lambda st: _step_key(st, busy[0]))
    for k in range(2, len(spans)):  # past two hosts: host k below host k-2
        b.invisible(spans[k - 2][1], spans[k][0], weight="0")
    edges(b)
    media: set[str] = {a.medium for a in fmap.arrows}
    if any(a.nccl_stands_out() for a in fmap.arrows):  # the dotted style needs its key, as colours have theirs
        footer.insert(0, "dotted arrow (⚠): NCCL goes through host memory (SHM) or without GPUDirect RDMA there")
    b.graph_label(graph_label(f"flow {fmap.flow.name}", footer, flow_legend_rows(media)))
    return b.source()


def flow_pipeline_dot(fmap: FlowMap) -> str:
    """The steps alone, top to bottom by depth (parallel steps side by side), wrapped into columns of
    PIPELINE_ROWS levels when deeper; one edge per step pair and medium."""
    b = DotBuilder()
    b.start("flow", _PIPELINE, _NODE, _EDGE)
    order = _topological(fmap)
    for st in order:
        step = fmap.flow.steps[st]
        where = ", ".join(p.label() for p in step.placements[:1])
        if len(step.placements) > 1:
            where = compress_places(step.placements)
        lines = [st, f"[{step.kind}]"] + ([step.label] if step.label else []) + [f"on {where}"]
        b.node("step:" + st, "\n".join(lines), **_step_style(step.kind))
    levels = _levels(fmap)
    if max(levels.values(), default=0) >= PIPELINE_ROWS:  # deep: a snake of columns, PIPELINE_ROWS levels each
        _snake(b, order, levels, lambda st: "step:" + st)
    merged: dict[tuple[str, str, str], Bundle] = {}
    for g in bundles(fmap):  # one edge per step pair and medium, whatever the hosts
        key = (g.src_step, g.dst_step, g.medium)
        if key in merged:
            merged[key].arrows.extend(g.arrows)
        else:
            merged[key] = Bundle(g.src_step, g.dst_step, g.src_host, g.dst_host, g.medium, list(g.arrows))
    for g in merged.values():
        _edge(b, "step:" + g.src_step, "step:" + g.dst_step, g)
    media: set[str] = {a.medium for a in fmap.arrows}
    b.graph_label(graph_label(f"flow {fmap.flow.name} (pipeline)", [], flow_legend_rows(media)))
    return b.source()


def _snake(b: DotBuilder, order: list[str], levels: dict[str, int], key: Callable[[str], str]) -> None:
    """Wrap a deep flow into columns of PIPELINE_ROWS levels: level L on row L % PIPELINE_ROWS of column
    L // PIPELINE_ROWS (rank=same across columns, invisible edges keep the columns left to right)."""
    deepest = max(levels[s] for s in order)
    for r in range(PIPELINE_ROWS):
        row = [s for s in order if levels[s] % PIPELINE_ROWS == r]
        if not row:
            continue
        b.same_rank([key(s) for s in row])
        heads = [
            next(s for s in order if levels[s] == c * PIPELINE_ROWS + r)
            for c in range(deepest // PIPELINE_ROWS + 1)
            if any(levels[s] == c * PIPELINE_ROWS + r for s in order)
        ]
        for x, y in itertools.pairwise(heads):  # column c left of column c+1
            b.invisible(key(x), key(y))


def _levels(fmap: FlowMap) -> dict[str, int]:
    """Each step's depth from the inputs (longest path; flows have no cycles, self-arrows ignored)."""
    names = list(fmap.flow.steps)
    preds: dict[str, set[str]] = {n: set() for n in names}
    for a in fmap.arrows:
        if a.src_step != a.dst_step:
            preds[a.dst_step].add(a.src_step)
    depth: dict[str, int] = {}
    for _ in names:  # relax |steps| times: no recursion on deep flows
        for n in names:
            depth[n] = max((depth.get(p, 0) + 1 for p in preds[n]), default=0)
    return depth


def _topological(fmap: FlowMap) -> list[str]:
    """Steps by depth, then in file order."""
    names = list(fmap.flow.steps)
    levels = _levels(fmap)
    return sorted(names, key=lambda n: (levels[n], names.index(n)))
