"""A mapped flow drawn two ways: on the machine (steps on their hardware, arrows along their
real route, unused hardware faded) and as a left-to-right pipeline of steps."""

from __future__ import annotations

import itertools

from topomap.graph import Topology
from topomap.mapping import FlowMap, MappedArrow
from topomap.render.dot import MEDIUM_COLOURS, DotBuilder, fmt_gbps, node_key, q, topology_dot
from topomap.units import fmt_bytes, fmt_seconds


def arrow_label(a: MappedArrow) -> str:
    bits: list[str] = [a.medium]
    bits.append(fmt_gbps(a.bandwidth_gbps) + ("" if a.bandwidth_source == "unknown" else f" {a.bandwidth_source}"))
    if a.volume_bytes is not None:
        bits.append(fmt_bytes(a.volume_bytes) + (f" in {fmt_seconds(a.seconds)}" if a.seconds is not None else ""))
    return " · ".join(bits)


def flow_on_machine_dot(fmap: FlowMap, topos: dict[str, Topology | None]) -> str:
    """Steps placed on their hardware; each arrow drawn hop by hop along its route."""
    hosts = list(fmap.flow.spec.hosts)
    index = {h: k for k, h in enumerate(hosts)}
    b = DotBuilder()
    annotations: dict[tuple[int, str], list[str]] = {}
    for st in fmap.flow.steps.values():
        for p in st.placements:
            topo = topos.get(p.host)
            node = "host"
            if topo is not None:
                node = p.gpu or "host"
                if p.kind in ("memory", "storage"):
                    node = _memory_node(fmap, st.name, p.host) or _first_numa(topo)
            text = f"{st.name}" + (" (storage)" if p.kind == "storage" else "")
            annotations.setdefault((index[p.host], node), [])
            if text not in annotations[(index[p.host], node)]:
                annotations[(index[p.host], node)].append(text)
    used: set[tuple[int, str]] = {key for key in annotations}
    segments: dict[tuple[str, str, str], list[MappedArrow]] = {}
    finals: dict[tuple[str, str, str], list[MappedArrow]] = {}
    for a in fmap.arrows:
        if a.medium == "local":
            continue
        keys = []
        for hop in a.route:
            host, _, node = hop.partition("/")
            if host in index:
                keys.append(node_key(index[host], node or "host"))
                used.add((index[host], node or "host"))
            elif hop == "nvlink-fabric":
                continue
        for x, (u, v) in enumerate(itertools.pairwise(keys)):
            if u == v:
                continue
            seg = (u, v, a.medium)
            (finals if x == len(keys) - 2 else segments).setdefault(seg, []).append(a)
    extra: list[str] = []
    for u, v, medium in sorted(segments):
        if (u, v, medium) in finals:
            continue
        colour = MEDIUM_COLOURS[medium]
        extra.append(f"{b.nid(u)} -> {b.nid(v)} [dir=forward, arrowhead=none, color={q(colour)}, penwidth=2.2];")
    for (u, v, medium), arrows in sorted(finals.items()):
        colour = MEDIUM_COLOURS[medium]
        label = arrow_label(min(arrows, key=lambda a: a.bandwidth_gbps or 0.0))
        if len(arrows) > 1:
            label = f"{len(arrows)}× " + label
        tip = "\n".join(f"{a.src} → {a.dst}: {' → '.join(a.route)}" for a in arrows[:8])
        extra.append(
            f"{b.nid(u)} -> {b.nid(v)} [dir=forward, color={q(colour)}, penwidth=2.2, "
            f"label={q(label)}, fontcolor={q(colour)}, tooltip={q(tip)}];"
        )
    return topology_dot(
        [topos.get(h) for h in hosts],
        used=used,
        extra=extra,
        title=f"flow {fmap.flow.name}",
        names=hosts,
        annotations=annotations,
        builder=b,
    )


def _memory_node(fmap: FlowMap, step: str, host: str) -> str | None:
    for a in fmap.arrows:
        for st, hop in ((a.src_step, a.route[0]), (a.dst_step, a.route[-1])):
            h, _, node = hop.partition("/")
            if st == step and h == host and node.startswith("numa"):
                return node
    return None


def _first_numa(topo: Topology) -> str:
    numas = sorted(n for n, d in topo.graph.nodes(data=True) if d.get("kind") == "numa")
    return numas[0] if numas else "host"


def flow_pipeline_dot(fmap: FlowMap) -> str:
    """Steps left to right, one edge per step pair and medium, labelled with the slowest arrow."""
    b = DotBuilder()
    b.lines.append("digraph flow {")
    b.add('graph [rankdir=LR, fontname="Helvetica", fontsize=11, nodesep=0.4, ranksep=0.9, labelloc=t];')
    b.add('node [fontname="Helvetica", fontsize=10, shape=box, style="rounded,filled", fillcolor="#f5f5f5"];')
    b.add('edge [fontname="Helvetica", fontsize=9];')
    shapes = {"input": "folder", "output": "note", "exchange": "doubleoctagon", "aggregate": "invhouse"}
    for st in fmap.flow.steps.values():
        where = ", ".join(p.label() for p in st.placements[:4]) + (" …" if len(st.placements) > 4 else "")
        label = f"{st.name}\n[{st.kind}]" + (f"\n{st.label}" if st.label else "") + f"\non {where}"
        b.add(f"{b.nid('step:' + st.name)} [label={q(label)}, shape={shapes.get(st.kind, 'box')}];")
    groups: dict[tuple[str, str, str], list[MappedArrow]] = {}
    for a in fmap.arrows:
        groups.setdefault((a.src_step, a.dst_step, a.medium), []).append(a)
    for (s, d, medium), arrows in sorted(groups.items()):
        colour = MEDIUM_COLOURS[medium]
        label = arrow_label(min(arrows, key=lambda a: a.bandwidth_gbps or 0.0))
        if len(arrows) > 1:
            label = f"{len(arrows)}× " + label
        extra = ", dir=both" if arrows[0].both_ways else ""
        b.add(
            f"{b.nid('step:' + s)} -> {b.nid('step:' + d)} [color={q(colour)}, fontcolor={q(colour)}, "
            f"penwidth=2, label={q(label)}{extra}];"
        )
    b.add(f"label={q(f'flow {fmap.flow.name}: green GPU link, blue host memory, orange network')};")
    b.lines.append("}")
    return "\n".join(b.lines) + "\n"
