"""Topology (+ mapped flow) → Graphviz DOT; SVG/PNG/PDF through the real `dot` binary.

The layout mirrors the hardware: a cluster per host, per NUMA node, per host bridge, per PCIe
switch; GPUs and NICs inside the switch that holds them; the NVSwitch fabric drawn as one hub
(one host: render/hostdot.py). Edge colours are the same in every diagram: GPU links green, PCIe /
host memory blue, network orange. The `graphviz` package writes and quotes the DOT
(render/dotbuilder.py) and node ids are generated, so no input can break out of the DOT or the SVG.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import graphviz

from topomap.base.errors import TopomapError
from topomap.graph import Topology
from topomap.graph.nodeid import HOST, nic_node
from topomap.render.dotbuilder import DotBuilder, NodeSpec, node_key
from topomap.render.export import reproducible_pdf
from topomap.render.hostdot import HostDrawing, node_style, short_origin
from topomap.render.legend import NETWORK, graph_label, legend_rows
from topomap.render.text import visible

#: Default attributes of the machine diagram.
GRAPH = {
    "fontname": "Helvetica",
    "fontsize": "11",
    "compound": "true",
    "rankdir": "TB",
    "newrank": "true",
    "nodesep": "0.3",
    "ranksep": "0.45",
    "labelloc": "b",
    "labeljust": "l",
}
NODE = {"fontname": "Helvetica", "fontsize": "10", "margin": "0.08,0.04"}
EDGE = {"fontname": "Helvetica", "fontsize": "9", "dir": "none"}


def topology_dot(
    topos: Sequence[Topology | None],
    used: set[tuple[int, str]] | None = None,
    extra: Callable[[DotBuilder], None] | None = None,
    title: str | None = None,
    names: Sequence[str] | None = None,
    builder: DotBuilder | None = None,
    inside: dict[int, list[NodeSpec]] | None = None,
) -> str:
    """DOT text for one or more hosts (None: a host with no snapshot). ``used`` (host index,
    node) fades everything else; ``inside`` nodes (reserved in ``builder``) go into host h's box;
    ``extra`` (flow arrows) is called with the builder once every node is drawn. Each host is drawn
    below the one before it (a machine is wider than tall, so one column fits a screen best)."""
    b = builder or DotBuilder()
    b.start("topomap", GRAPH, NODE, EDGE)
    footer: list[str] = []
    spans: list[tuple[int, int]] = []
    for h, topo in enumerate(topos):
        first = len(b.declared)
        name = names[h] if names else None
        if topo is None:
            _unknown_host(b, h, name, (inside or {}).get(h, []))
            footer.append(f"{name or 'host'}: no snapshot (its inside is unknown; a probe there would settle it)")
        else:
            HostDrawing(b, h, topo, used).draw(name, (inside or {}).get(h, []))
            footer.append((f"{name}: " if name else "") + origin_line(topo))
        spans.append((first, len(b.declared)))
    for above, below in itertools.pairwise(spans):  # stack: each host below the one before
        if above[1] > above[0] and below[1] > below[0]:
            b.invisible(b.declared[above[1] - 1], b.declared[below[0]], weight="0")
    real = [(h, t) for h, t in enumerate(topos) if t is not None]
    if len(real) > 1 and used is None:
        _network(b, real)
    if extra is not None:
        extra(b)
    inferred = any(t is not None and t.inferred for t in topos)
    b.graph_label(graph_label(title, footer, legend_rows(used is not None), inferred))
    return b.source()


def _unknown_host(b: DotBuilder, h: int, name: str | None, inside: Sequence[NodeSpec]) -> None:
    """A host with no snapshot: a dashed box with one node (and the steps placed on it)."""
    label = f"{name or 'host'} (no snapshot)"
    with b.box(f"host{h}", name or "host", style="rounded,dashed", color="#9e9e9e", fontsize="13"):
        b.node(node_key(h, HOST), label, **node_style("host", True, False))
        for spec in inside:
            b.place(spec)


def _network(b: DotBuilder, hosts: list[tuple[int, Topology]]) -> None:
    """Several hosts: the network between them, one orange edge per host from its box (its RDMA NICs
    and their line rates as the label) — not one long edge per NIC."""
    b.node("network", "network", shape="ellipse", style="filled", fillcolor="#fff3e0", color=NETWORK)
    for h, topo in hosts:
        nics = [n for n in topo.snapshot.nics if n.rdma]
        if not nics:
            continue
        speeds = sorted({n.speed_gbit_s for n in nics if n.speed_gbit_s})
        rate = " / ".join(f"{x:g}" for x in speeds) + " Gb/s each" if speeds else "line rate not recorded"
        label = f"{len(nics)} RDMA NIC(s) · {rate}"
        cluster = f"cluster_{b.nid('cluster:' + f'host{h}')}"
        b.edge(
            node_key(h, nic_node(nics[0])),
            "network",
            label,
            color=NETWORK,
            penwidth="2.4",
            fontcolor=NETWORK,
            ltail=cluster,
        )


def group_identical(topos: list[Topology], limit: int = 6) -> tuple[list[Topology], list[str]]:
    """Past ``limit`` hosts, draw one host per group of identical ones, named for the group."""
    names = [t.snapshot.host.hostname or short_origin(t.snapshot.source.origin) for t in topos]
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
        "lstopo": "imported from lstopo text",
        "nccl-log": "imported from an NCCL log's topology dump",
        "merge": "merged snapshot",
        "declared": "a declared lot (every figure from it declared)",
    }
    if s.kind == "probe":
        line = f"probed on {s.origin}" + (f" at {s.captured_at}" if s.captured_at else "")
    else:
        line = f"{kinds[s.kind]}: {s.origin}"
    if topo.inferred and boxes:
        line += " (dashed boxes are inferred from path classes)"
    return line


class DotMissing(RuntimeError):
    """The Graphviz `dot` binary is not installed."""


def pipe(dot_text: str, fmt: str) -> bytes:
    """Run the real `dot` on DOT text and return the output bytes."""
    try:
        out: bytes = graphviz.Source(dot_text).pipe(format=fmt, engine="dot")
    except graphviz.ExecutableNotFound as err:
        raise DotMissing(str(err)) from err
    except graphviz.CalledProcessError as err:  # dot itself failed: say what it said, never blame the disk
        said = err.stderr.decode("utf-8", "replace") if isinstance(err.stderr, bytes) else str(err.stderr or "")
        first = next((line.strip() for line in said.splitlines() if line.strip()), "no message")
        raise TopomapError(
            f"Graphviz `dot` failed (exit {err.returncode}) on a diagram of {len(dot_text):,} characters: "
            f"{visible(first)[:200]}",
            hint="a very long name or label, or a very large diagram: shorten or split it",
        ) from err
    except BrokenPipeError as err:  # dot exited before reading the whole diagram (issue 24)
        raise TopomapError(
            f"Graphviz `dot` stopped reading a diagram of {len(dot_text):,} characters",
            hint="a very long name or label, or a very large diagram: shorten or split it",
        ) from err
    return reproducible_pdf(out) if fmt == "pdf" else out  # cairo stamps the clock's date
