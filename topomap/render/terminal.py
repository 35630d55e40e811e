"""rich renderables for the terminal views. Renderers build; only the CLI prints."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from rich.tree import Tree

from topomap.base.links import PathClass
from topomap.base.units import fmt_bytes
from topomap.graph import FABRIC, Topology, natural_key
from topomap.graph.edges import edge_bandwidth
from topomap.graph.link_summary import gpu_link_summary
from topomap.graph.nodeid import hop_words
from topomap.graph.query import tree_parents
from topomap.model.facts import SETTLE, fabric_ready, gpu_memory, gpu_pcie_link, nic_family, nic_gdr
from topomap.model.filled_facts import named, nic_speed
from topomap.model.origins import fact_origin, origin_note, relabel
from topomap.model.snapshot import Gpu, Snapshot
from topomap.model.source_facts import cannot_know, what
from topomap.render.tables import UNKNOWN, Cell, Column, cell, esc, fit_table, known
from topomap.render.text import bandwidth_text, memory_text, nic_words


def _dash(v: object) -> str:
    return "—" if v is None else str(v)


def _gib(n: int | None) -> Cell:
    return UNKNOWN if n is None else esc(fmt_bytes(n))


def _given(snap: Snapshot, field: str) -> bool:
    """A declared lot or the catalogue gave ``field`` (its origin is said beside even an unknown value)."""
    return fact_origin(snap, field) is not None


def _pcie(g: Gpu, snap: Snapshot | None = None) -> Cell:
    """The GPU's PCIe link as evidence.gpu_pcie_link decides it: trained width at the best generation
    (declared or from the catalogue where a lot gave it: model.origins)."""
    link = gpu_pcie_link(g)
    if link.gen is None and link.width is None:
        return UNKNOWN
    text = f"Gen{_dash(link.gen)} " + (f"x{link.width}" if link.width else "width unknown")
    origin = fact_origin(snap, "gpus.pcie")
    if link.gbps is not None:
        text += f" ({relabel(link.bandwidth(), origin, 'PCIe').text()})"
    elif origin is not None:
        text += origin.note()
    p = g.pcie
    if link.downtrained:
        text += f" — trained below its x{link.width_max}"
    if p is not None and p.gen_current is not None and link.gen is not None and p.gen_current < link.gen:
        text += f"; now Gen{p.gen_current} (idle GPUs lower their speed)"
    return esc(text)


def _nvlink(topo: Topology | None, g: Gpu) -> Cell:
    """NVLink as evidence decides it: active links and the bundle rate with its source, or unknown; an
    AMD GPU's XGMI (issue 35)."""
    if topo is None:
        return UNKNOWN
    summary = gpu_link_summary(topo, f"gpu{g.index}")
    return known(summary.text, summary.known)


def _fabric(topo: Topology | None, g: Gpu) -> Cell:
    f = g.fabric
    if topo is None or f is None:
        return UNKNOWN if f is None else esc(str(f.state))
    if f.state in (None, "not-supported"):
        return esc("no fabric (not-supported)")
    ready = fabric_ready(topo.snapshot, g)
    text = f"{f.state}" + (f", clique {f.clique_id}" if f.clique_id is not None else "")
    return esc(text + origin_note(topo.snapshot, "gpus.fabric") if ready.yes else f"NOT READY: {ready.why()}")


def _mig(g: Gpu) -> Cell:
    if g.mig is None:
        return UNKNOWN
    if not g.mig.enabled:
        return esc("off" + (" (on after reset)" if g.mig.pending else ""))
    return esc(f"on, {len(g.mig.devices)} instance(s)")


def header(snap: Snapshot, settle: bool = True) -> Text:
    """Host, source, versions, what the source cannot know and (``settle``) what records it."""
    s, h, sw = snap.source, snap.host, snap.software
    t = Text()
    t.append_text(esc(h.hostname or "unknown host", style="bold"))
    origin = f"{s.kind} from {s.origin}" if s.kind != "probe" else f"probed on {s.origin}"
    t.append_text(esc(f" — {origin}" + (f" at {s.captured_at}" if s.captured_at else "")))
    t.append("\n")
    cuda = _dash(sw.cuda_driver_version) + (
        origin_note(snap, "software.cuda_driver_version") if sw.cuda_driver_version else ""
    )
    versions = f"driver {_dash(sw.driver_version)}  CUDA {cuda}  NVML {_dash(sw.nvml_version)}"
    if snap.gpus and all(g.vendor == "amd" for g in snap.gpus):  # issue 35: no CUDA or NVML on AMD GPUs
        versions = f"driver {_dash(sw.driver_version)}  (AMD GPUs: ROCm; no CUDA, no NVML)"
    t.append_text(esc(versions))
    t.append("\n")
    bits = [named(snap, "host.cpu_model", f"CPU {h.cpu_model}") if h.cpu_model else None]
    bits.append(named(snap, "host.sockets", f"{h.sockets} socket(s)") if h.sockets else None)
    bits.append(f"virtualised: {h.virtualization}" if h.virtualization else None)
    bits.append(f"container: {h.container}" if h.container else None)
    bits.append(f"IOMMU {h.iommu}" if h.iommu else None)
    line = "  ".join(b for b in bits if b)
    if line:
        t.append_text(esc(line))
        t.append("\n")
    if h.environment:
        t.append_text(esc("  ".join(f"{k}={v}" for k, v in sorted(h.environment.items()))))
        t.append("\n")
    t.append_text(cannot_know_text(snap, settle))
    return t


def cannot_know_text(snap: Snapshot, settle: bool = True) -> Text:
    """What the source cannot know (model.source_facts.cannot_know), and the command that records
    each of it (its SETTLE_BY, grouped by command); empty when it knows everything."""
    gaps = cannot_know(snap)
    words = [what(f, gaps.amd) for f in gaps.facts] + unknown_in_words(list(gaps.fields))
    words += [recorded_as_words(told, recorded) for told, recorded in gaps.recorded_as]
    t = Text()
    if not words:
        return t
    t.append_text(esc(f"this source cannot know: {', '.join(words)}", style="dim"))
    t.append("\n")
    if snap.source.kind == "probe" or not settle:  # a probe's gaps: its problems say which call failed
        return t
    ways = [f"`{cmd}` ({', '.join(what(f, gaps.amd) for f in facts)})" for cmd, facts in gaps.settled_by().items()]
    ways.append("`topomap probe` on the machine (all of it)")
    t.append_text(esc(f"recorded by: {'; '.join(ways)}", style="dim"))
    t.append("\n")
    return t


#: What each unknown field means to a user, and what settles it.
_UNKNOWN_WORDS: dict[str, str] = {
    "pairs.nvlink": f"which GPU pairs NVLink joins (settle it with {SETTLE['nvlink']})",
    "gpus.nvlinks": "per-link NVLink state and rate",
    "pairs.p2p": "P2P status",
    "pairs.cuda": "CUDA peer access",
    "gpus.name": "GPU models",
    "gpus.memory_total_bytes": "GPU memory",
    "gpus.fabric": "NVLink fabric state",
    "gpus.mig": "MIG mode",
    "gpus.uuid": "GPU UUIDs",
    "gpus.cuda_ordinal": "CUDA ordinals",
    "gpus.pci_bus_id": "GPU bus ids",
    "gpus.compute_capability": "compute capability",
    "gpus.pcie": "GPU PCIe link width and generation",
    "nics.pci_bus_id": "NIC bus ids",
    "nics.kind": "NIC link layer",
    "nics.speed_gbit_s": "NIC speeds",
    "pci": "the PCI tree (structure inferred from path classes)",
    "software": "driver and CUDA versions",
    "pairs.path": "PCIe path classes (PIX, PXB, PHB, NODE, SYS)",
    "gpus.cpu_affinity": "CPU affinity",
    "gpus.numa_node": "GPU NUMA nodes",
    "gpus.gpu_numa_node": "GPU memory NUMA nodes (Grace)",
    "nics.name": "NIC names (no NIC Legend)",
    "nics": "the NICs",
    "gpus.count": "every GPU of the host (it lists only some)",
    "software.cuda_driver_version": "the CUDA version",
    "software.driver_version": "the driver version",
    "nics.gdr": "GPUDirect RDMA",
    "gpus": "the GPUs (the source describes NICs only)",
    "host.numa_nodes": "NUMA nodes",
    "host.sockets": "CPU packages",
    "host.cpu_model": "CPU model",
}


def unknown_in_words(fields: list[str]) -> list[str]:
    return [_UNKNOWN_WORDS.get(f, f) for f in fields]


def recorded_as_words(told: PathClass, recorded: PathClass) -> str:
    """A path class the source cannot tell apart (``Source.path_recorded_as``), in words:
    ``PHB vs NODE (recorded as PHB)``."""
    return f"{recorded} vs {told} (recorded as {recorded})"


def gpu_tables(snap: Snapshot, topo: Topology | None = None) -> list[RenderableType]:
    """GPU identity (NVML index ↔ CUDA ordinal ↔ UUID ↔ bus id) and GPU capabilities."""
    gpus = sorted(snap.gpus, key=lambda g: g.index)
    ident_cols = [Column("NVML"), Column("CUDA"), Column("UUID"), Column("bus id"), Column("name", text=True)]
    caps_cols = [Column(c) for c in ("NVML", "memory", "CC", "NUMA", "CPUs")]
    link = "XGMI" if any(g.vendor == "amd" for g in gpus) else "NVLink"  # AMD's GPU link (issue 35)
    caps_cols += [Column(c, text=True) for c in ("PCIe", link, "MIG", "fabric")]
    ident: list[list[Cell]] = []
    caps: list[list[Cell]] = []
    for g in gpus:
        name = named(snap, "gpus.name", _dash(g.name))
        name += " (derived from the PCI device id)" if "name" in g.derived else ""
        if g.lost:
            name += " — LOST during the probe"
        named_at_all = g.name is not None or g.lost or fact_origin(snap, "gpus.name") is not None
        ident.append([esc(g.index), cell(g.cuda_ordinal), cell(g.uuid), cell(g.pci_bus_id), known(name, named_at_all)])
        cpus = cell(g.cpu_affinity) if g.cpu_affinity != "" else esc("(none in this cpuset)")
        numa = _dash(g.numa_node) + (f" (mem {g.gpu_numa_node})" if g.gpu_numa_node is not None else "")
        memory = gpu_memory(g, snap)
        numa_known = g.numa_node is not None or g.gpu_numa_node is not None
        values = [esc(g.index), known(memory_text(memory), memory.total_bytes is not None)]
        values += [cell(g.compute_capability), known(numa, numa_known), cpus]
        caps.append([*values, _pcie(g, snap), _nvlink(topo, g), _mig(g), _fabric(topo, g)])
    return [
        fit_table("GPUs: identity", ident_cols, ident),
        fit_table("GPUs: memory, placement and links", caps_cols, caps),
    ]


def nic_table(snap: Snapshot) -> RenderableType:
    """The NICs. The line rate's header names its kind only where every rate shown has it (a tool's
    reading: ``spec``); a declared or catalogue rate says its origin in its cell, under a plain header."""
    nics = sorted(snap.nics, key=lambda n: n.index)
    speeds = {n.index: nic_speed(n, snap) for n in nics}  # with its origin where a lot gave it (model.filled_facts)
    kinds = {s.source for s in speeds.values() if s.gbit_s is not None}
    spec_header = kinds == {"spec"}
    rate = "line rate\n(spec)" if spec_header else "line rate"
    cols = [Column(c) for c in ("id", "name", "family", "bus id", "NUMA", rate, "state")]
    cols += [Column("netdevs", text=True), Column("GDR")]
    rows: list[list[Cell]] = []
    for n in nics:
        speed = speeds[n.index]
        shown = speed.text() + (" spec" if speed.source == "spec" and not spec_header else "")
        answer = nic_gdr(n)  # the NIC's own answer every view asks (model.facts.nic_gdr)
        gdr = named(snap, "nics.gdr", answer.value)
        kind = nic_family(n)  # one decision (model.facts.nic_family), issue 19
        family = named(snap, "nics.kind", kind.short)
        values = [
            esc(f"nic{n.index}"),
            cell(n.name),
            known(family, kind.family != "unknown" or _given(snap, "nics.kind")),
        ]
        values += [cell(n.pci_bus_id), cell(n.numa_node), known(shown, speed.gbit_s is not None), cell(n.state)]
        netdevs = esc(", ".join(n.netdevs)) if n.netdevs else UNKNOWN
        rows.append([*values, netdevs, known(gdr, answer.value != "unknown" or _given(snap, "nics.gdr"))])
    return fit_table("NICs", cols, rows)


def numa_table(snap: Snapshot) -> RenderableType:
    cols = [Column("node"), Column("CPUs"), Column("memory"), Column("distances", text=True)]
    rows: list[list[Cell]] = []
    for n in snap.host.numa_nodes:
        cpus = cell(n.cpus) if n.cpus != "" else esc("(none: memory-only node)")
        distances = cell(" ".join(map(str, n.distances))) if n.distances else UNKNOWN
        rows.append([esc(n.id), cpus, _gib(n.memory_total_bytes), distances])
    return fit_table("NUMA nodes", cols, rows)


def findings_table(snap: Snapshot) -> RenderableType:
    """The probe's health and truth checks and the measurement's findings, worst first."""
    order = {"error": 0, "warning": 1, "info": 2}
    cols = [Column("severity"), Column("about"), Column("finding", text=True), Column("evidence", text=True)]
    rows: list[list[Cell]] = []
    for f in sorted(snap.findings, key=lambda f: (order.get(f.severity, 3), f.kind, f.subject)):
        style = {"error": "bold red", "warning": "yellow"}.get(f.severity, "")
        rows.append([esc(f.severity, style), cell(f.subject), cell(f.text), cell("; ".join(f.evidence))])
    return fit_table(f"Findings ({len(snap.findings)})", cols, rows)


def problem_table(snap: Snapshot) -> RenderableType:
    cols = [Column("source"), Column("call"), Column("target"), Column("error", text=True)]
    rows = [[cell(v) for v in (p.source, p.call, p.target, p.error)] for p in snap.problems]
    return fit_table(f"Problems ({len(snap.problems)})", cols, rows)


def machine_tree(topo: Topology) -> Tree:
    """Socket/NUMA → host bridge → switch → GPUs/NICs, and the NVLink fabric, from the graph."""
    g = topo.light
    root = Tree(esc(topo.snapshot.host.hostname or "host", style="bold"))
    parents = tree_parents(topo)
    children: dict[str, list[str]] = {}
    for child, par in parents.items():
        children.setdefault(par, []).append(child)

    def label(n: str) -> str:
        d = g.nodes[n]
        kind = str(d.get("kind"))
        text = {
            "numa": f"{d.get('label')}" + (f" (CPUs {d.get('cpus')})" if d.get("cpus") else ""),
            "gpu": f"{d.get('label')} {d.get('name') or ''}".strip(),
            "nic": f"{nic_words(str(d.get('label')))} ({_link_layer(d.get('nic_kind'))})",
            "host-bridge": f"host bridge {'' if d.get('inferred') else d.get('label')}".strip(),
        }.get(
            kind,
            f"{'PCIe switch' if kind in ('switch', 'switch-upstream', 'bridge') else kind} "
            f"{'' if d.get('inferred') else d.get('label')}".strip(),
        )
        if d.get("inferred"):
            text += " (inferred)"
        return text

    def add(tree: Tree, n: str) -> None:
        kids = sorted(children.get(n, []), key=natural_key)
        kind = g.nodes[n].get("kind")
        # fold pass-through ports so the tree shows sockets, switches and devices
        if kind in ("switch-downstream", "port") or (kind == "bridge" and len(kids) == 1):
            for k in kids:
                add(tree, k)
            return
        sub = tree.add(esc(label(n)))
        for k in kids:
            add(sub, k)

    for top in sorted(children.get("host", []), key=natural_key):
        if top != FABRIC:
            add(root, top)
    if FABRIC in g:
        fab = root.add(esc(g.nodes[FABRIC].get("label")))
        for u, v, d in sorted(g.edges(FABRIC, data=True), key=lambda e: natural_key(e[1])):
            other = v if u == FABRIC else u
            fab.add(esc(f"{other}: NV{d.get('count')} · {_edge_bw(d)}"))
    direct = [(u, v, d) for u, v, d in g.edges(data=True) if d.get("kind") == "nvlink" and FABRIC not in (u, v)]
    if direct:
        nv = root.add("NVLink (direct)")
        for u, v, d in sorted(direct, key=lambda e: (natural_key(e[0]), natural_key(e[1]))):
            inferred = " (inferred)" if d.get("inferred") else ""
            nv.add(esc(f"{u} ↔ {v}: NV{d.get('count')} · {_edge_bw(d)}{inferred}"))
    xgmi = [(u, v, d) for u, v, d in g.edges(data=True) if d.get("kind") == "xgmi"]
    if xgmi:  # AMD Infinity Fabric: a mesh of GPU pairs (issue 35)
        xg = root.add("XGMI (Infinity Fabric)")
        for u, v, d in sorted(xgmi, key=lambda e: (natural_key(e[0]), natural_key(e[1]))):
            links = f"{d.get('count')} link(s)" if d.get("count") else "links not recorded"
            hops = f", {d.get('hops')} hops" if (d.get("hops") or 1) > 1 else ""
            xg.add(esc(f"{u} ↔ {v}: XGMI {links}{hops} · {_edge_bw(d)}"))
    return root


def _link_layer(kind: object) -> str:
    return "link layer unknown" if kind in (None, "unknown") else str(kind)


def _edge_bw(d: dict[str, Any]) -> str:
    """An NVLink edge's bandwidth as the evidence function labelled it."""
    return bandwidth_text(edge_bandwidth(d))


def show(snap: Snapshot, topo: Topology | None = None, brief: bool = False) -> RenderableType:
    """Everything `topomap show` prints for one host, its tables in full (the CLI fits them to a terminal).
    ``brief``: without the NUMA table, the machine tree and the commands that record what the source
    cannot know (a cluster's alike hosts in a screen; `show --host NAME` has them)."""
    tree = not brief
    parts: list[RenderableType] = [header(snap, settle=tree)]
    if snap.gpus:
        parts.extend(gpu_tables(snap, topo))
    elif "gpus" in snap.source.unknown_fields:
        parts.append(Text("GPUs: not described by this source (unknown, not absent).", style="bold"))
    else:
        parts.append(Text("No GPUs in this snapshot.", style="bold"))
    if snap.nics:
        parts.append(nic_table(snap))
    if snap.host.numa_nodes and tree:
        parts.append(numa_table(snap))
    if topo is not None and tree:
        parts.append(machine_tree(topo))
    # what the importer said about the file (an appended output that joined only in part, a `-q -i`,
    # a cut dump), then what building the machine inferred: each once
    for note in dict.fromkeys([*snap.source.notes, *(topo.notes if topo is not None else [])]):
        parts.append(esc(f"note: {note}", style="dim"))
    if snap.measurements:
        # start-up: only a snapshot with measurements needs these (about 5 ms of every other `show`,
        # python -X importtime, and `show` is over its start-up budget)
        from topomap.model.measured import degraded_links
        from topomap.render.bandwidth_matrix import render_bandwidth_matrix

        parts.append(Text("Measured bandwidth (GB/s; topomap matrix --bandwidth)", style="bold"))
        parts.append(Text(render_bandwidth_matrix(snap), no_wrap=True, overflow="ignore"))
        for line in degraded_links(snap):
            parts.append(esc(f"slow link: {line}", style="yellow"))
    if snap.lot is not None or snap.source.filled:
        from topomap.render.lot_view import lot_tables  # start-up: only a declared or filled lot has these

        parts.extend(lot_tables(snap))
    if snap.findings:
        parts.append(findings_table(snap))
    if snap.problems:
        parts.append(problem_table(snap))
    return Group(*parts)


MEDIUM_STYLE = {
    "gpu-link": "green",
    "host-memory": "blue",
    "network": "dark_orange",
    "local": "grey50",
    "unknown": "magenta",
}


def short_node(node: str) -> str:
    """Readable route hop: inferred PCI nodes are called inferred in words (the graph's own words)."""
    return hop_words(node)


def cluster_header(snap: Snapshot) -> RenderableType:
    """A merged snapshot: one row per host."""
    cols = [Column("host"), Column("source"), Column("GPUs", text=True), Column("NICs"), Column("driver")]
    rows: list[list[Cell]] = []
    for m in snap.members:
        names = sorted({g.name or "?" for g in m.gpus})
        gpus = f"{len(m.gpus)} × {', '.join(names)}" if m.gpus else "0"
        values = (m.host.hostname or "?", m.source.kind, gpus, len(m.nics), m.software.driver_version)
        rows.append([cell(v) for v in values])
    return fit_table(f"Cluster: {len(snap.members)} hosts ({snap.source.origin})", cols, rows)
