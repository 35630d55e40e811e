"""rich renderables for the terminal views. Renderers build; only the CLI prints."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from topomap.check import CheckResult
from topomap.diff import DiffResult
from topomap.graph import FABRIC, Topology, natural_key, tree_parents
from topomap.graph.evidence import SETTLE, fabric_ready, gpu_pairs_nvlink_summary, gpu_pcie_link
from topomap.model import Gpu, Snapshot
from topomap.units import fmt_gbps

GIB = 1024**3


def _dash(v: object) -> str:
    return "—" if v is None else str(v)


def _gib(n: int | None) -> str:
    return "—" if n is None else f"{n / GIB:.1f} GiB"


def _pcie(g: Gpu) -> str:
    """The GPU's PCIe link as evidence.gpu_pcie_link decides it: trained width at the best generation."""
    link = gpu_pcie_link(g)
    if link.gen is None and link.width is None:
        return "—"
    text = f"Gen{_dash(link.gen)} " + (f"x{link.width}" if link.width else "width unknown")
    if link.gbps is not None:
        text += f" ({fmt_gbps(link.gbps)} GB/s spec)"
    p = g.pcie
    if link.downtrained:
        text += f" — trained below its x{link.width_max}"
    if p is not None and p.gen_current is not None and link.gen is not None and p.gen_current < link.gen:
        text += f"; now Gen{p.gen_current} (idle GPUs lower their speed)"
    return text


def _nvlink(topo: Topology | None, g: Gpu) -> str:
    """NVLink as evidence decides it: active links and the bundle rate with its source, or unknown."""
    if topo is None:
        return "—"
    return gpu_pairs_nvlink_summary(topo, f"gpu{g.index}")


def _fabric(topo: Topology | None, g: Gpu) -> str:
    f = g.fabric
    if topo is None or f is None:
        return "—" if f is None else str(f.state)
    if f.state in (None, "not-supported"):
        return "no fabric (not-supported)"
    ready = fabric_ready(topo, f"gpu{g.index}")
    text = f"{f.state}" + (f", clique {f.clique_id}" if f.clique_id is not None else "")
    return text if ready.yes else f"NOT READY: {ready.why()}"


def _mig(g: Gpu) -> str:
    if g.mig is None:
        return "—"
    if not g.mig.enabled:
        return "off" + (" (on after reset)" if g.mig.pending else "")
    return f"on, {len(g.mig.devices)} instance(s)"


def header(snap: Snapshot) -> Text:
    s, h, sw = snap.source, snap.host, snap.software
    t = Text()
    t.append(f"{h.hostname or 'unknown host'}", style="bold")
    origin = f"{s.kind} from {s.origin}" if s.kind != "probe" else f"probed on {s.origin}"
    t.append(f" — {origin}" + (f" at {s.captured_at}" if s.captured_at else "") + "\n")
    t.append(
        f"driver {_dash(sw.driver_version)}  CUDA {_dash(sw.cuda_driver_version)}  NVML {_dash(sw.nvml_version)}\n"
    )
    bits = [f"CPU {h.cpu_model}" if h.cpu_model else None]
    bits.append(f"{h.sockets} socket(s)" if h.sockets else None)
    bits.append(f"virtualised: {h.virtualization}" if h.virtualization else None)
    bits.append(f"container: {h.container}" if h.container else None)
    bits.append(f"IOMMU {h.iommu}" if h.iommu else None)
    line = "  ".join(b for b in bits if b)
    if line:
        t.append(line + "\n")
    for k, v in sorted(h.environment.items()):
        t.append(f"{k}={v}  ")
    if h.environment:
        t.append("\n")
    if s.unknown_fields:
        t.append(f"this source cannot know: {', '.join(unknown_in_words(s.unknown_fields))}\n", style="dim")
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
    "pairs.path (PHB vs NODE)": "PHB vs NODE (recorded as PHB)",
}


def unknown_in_words(fields: list[str]) -> list[str]:
    return [_UNKNOWN_WORDS.get(f, f) for f in fields]


def gpu_tables(snap: Snapshot, topo: Topology | None = None) -> list[Table]:
    """GPU identity (NVML index ↔ CUDA ordinal ↔ UUID ↔ bus id) and GPU capabilities."""
    gpus = sorted(snap.gpus, key=lambda g: g.index)
    ident = Table(title="GPUs: identity", box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("NVML", "CUDA", "UUID", "bus id", "name"):
        ident.add_column(col, overflow="fold")
    caps = Table(title="GPUs: memory, placement and links", box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("NVML", "memory", "CC", "NUMA", "CPUs", "PCIe", "NVLink", "MIG", "fabric"):
        caps.add_column(col, overflow="fold")
    for g in gpus:
        name = _dash(g.name) + (" (derived from the PCI device id)" if "name" in g.derived else "")
        if g.lost:
            name += " — LOST during the probe"
        ident.add_row(str(g.index), _dash(g.cuda_ordinal), _dash(g.uuid), _dash(g.pci_bus_id), name)
        caps.add_row(
            str(g.index),
            _gib(g.memory_total_bytes),
            _dash(g.compute_capability),
            _dash(g.numa_node) + (f" (mem {g.gpu_numa_node})" if g.gpu_numa_node is not None else ""),
            _dash(g.cpu_affinity) if g.cpu_affinity != "" else "(none in this cpuset)",
            _pcie(g),
            _nvlink(topo, g),
            _mig(g),
            _fabric(topo, g),
        )
    return [ident, caps]


def nic_table(snap: Snapshot) -> Table:
    t = Table(title="NICs", box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("id", "name", "kind", "bus id", "NUMA", "line rate (spec)", "state", "netdevs", "GDR"):
        t.add_column(col)
    for n in sorted(snap.nics, key=lambda n: n.index):
        t.add_row(
            f"nic{n.index}",
            n.name,
            n.kind,
            _dash(n.pci_bus_id),
            _dash(n.numa_node),
            "—" if n.speed_gbit_s is None else f"{n.speed_gbit_s:g} Gb/s",
            _dash(n.state),
            ", ".join(n.netdevs) or "—",
            _dash(None if n.gdr is None else ("yes" if n.gdr else "no")),
        )
    return t


def numa_table(snap: Snapshot) -> Table:
    t = Table(title="NUMA nodes", box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("node", "CPUs", "memory", "distances"):
        t.add_column(col)
    for n in snap.host.numa_nodes:
        t.add_row(
            str(n.id),
            n.cpus if n.cpus else "(none: memory-only node)" if n.cpus == "" else "—",
            _gib(n.memory_total_bytes),
            " ".join(map(str, n.distances)) if n.distances else "—",
        )
    return t


def problem_table(snap: Snapshot) -> Table:
    t = Table(title=f"Problems ({len(snap.problems)})", box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("source", "call", "target", "error"):
        t.add_column(col, overflow="fold")
    for p in snap.problems:
        t.add_row(p.source, p.call, _dash(p.target), p.error)
    return t


def machine_tree(topo: Topology) -> Tree:
    """Socket/NUMA → host bridge → switch → GPUs/NICs, and the NVLink fabric, from the graph."""
    g = topo.graph
    root = Tree(Text(topo.snapshot.host.hostname or "host", style="bold"))
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
            "nic": f"NIC {d.get('label')} ({d.get('nic_kind')})",
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
        sub = tree.add(label(n))
        for k in kids:
            add(sub, k)

    for top in sorted(children.get("host", []), key=natural_key):
        if top != FABRIC:
            add(root, top)
    if FABRIC in g:
        fab = root.add(str(g.nodes[FABRIC].get("label")))
        for u, v, d in sorted(g.edges(FABRIC, data=True), key=lambda e: natural_key(e[1])):
            other = v if u == FABRIC else u
            fab.add(f"{other}: NV{d.get('count')} · {_edge_bw(d)}")
    direct = [(u, v, d) for u, v, d in g.edges(data=True) if d.get("kind") == "nvlink" and FABRIC not in (u, v)]
    if direct:
        nv = root.add("NVLink (direct)")
        for u, v, d in sorted(direct, key=lambda e: (natural_key(e[0]), natural_key(e[1]))):
            nv.add(f"{u} ↔ {v}: NV{d.get('count')} · {_edge_bw(d)}" + (" (inferred)" if d.get("inferred") else ""))
    return root


def _edge_bw(d: dict[str, object]) -> str:
    """An NVLink edge's bandwidth as the evidence function labelled it."""
    bw = d.get("bandwidth_gbps")
    if not isinstance(bw, (int, float)):
        return "bandwidth unknown"
    pre = "≥ " if d.get("lower_bound") else ""
    return f"{pre}{fmt_gbps(float(bw))} GB/s {d.get('bandwidth_source')}"


def show(snap: Snapshot, topo: Topology | None = None) -> RenderableType:
    parts: list[RenderableType] = [header(snap)]
    if snap.gpus:
        parts.extend(gpu_tables(snap, topo))
    else:
        parts.append(Text("No GPUs in this snapshot.", style="bold"))
    if snap.nics:
        parts.append(nic_table(snap))
    if snap.host.numa_nodes:
        parts.append(numa_table(snap))
    if topo is not None:
        parts.append(machine_tree(topo))
        for note in topo.notes:
            parts.append(Text(f"note: {note}", style="dim"))
    if snap.problems:
        parts.append(problem_table(snap))
    return Group(*parts)


MEDIUM_STYLE = {"gpu-link": "green", "host-memory": "blue", "network": "dark_orange", "local": "grey50"}


def short_node(node: str) -> str:
    """Readable route hop: inferred PCI nodes are called inferred in words."""
    host, sep, rest = node.rpartition("/")
    prefix = host + sep
    if rest.startswith("pci:inferred-hb-"):
        rest = "host bridge (inferred)"
    elif rest.startswith("pci:inferred-sw-"):
        rest = "PCIe switch (inferred)"
    elif rest.startswith("pci:inferred-port-"):
        rest = "switch port (inferred)"
    elif rest.startswith("pci:"):
        rest = rest[4:]
    return prefix + rest


def diff_view(d: DiffResult) -> RenderableType:
    """The verdict and its reasons first, then the collapsed changes, the flow arrows that change,
    and what could not be compared."""
    style = {"equivalent": "bold green", "cannot-confirm": "bold yellow"}.get(d.verdict, "bold red")
    parts: list[RenderableType] = [Text(d.summary(), style=style)]
    if d.match == "structure" and any(k != v for k, v in d.mapping.items()):
        moved = {k: v for k, v in d.mapping.items() if k != v}
        parts.append(Text("matched by structure: " + ", ".join(f"{k}→{v}" for k, v in moved.items())))
    for n in d.notes:
        parts.append(Text(f"note: {n}", style="dim"))
    lines = d.grouped()
    if lines:
        parts.append(Text(f"\nChanges from {d.a_name} to {d.b_name} ({len(d.changes)}, grouped)", style="bold"))
        for line in lines[:40]:
            parts.append(Text(f"  {line}"))
        if len(lines) > 40:
            parts.append(Text(f"  … and {len(lines) - 40} more (--json lists all)", style="dim"))
    if d.plan_lines:
        parts.append(Text("\nThe plan (a calculation from the flow's work block)", style="bold"))
        for line in d.plan_lines:
            parts.append(Text(f"  {line}"))
    changed = [r for r in d.arrows if r.direction != "neutral" or r.medium_changed]
    if d.arrows:
        parts.append(Text("\n" + d.arrow_summary(), style="bold"))
    if changed:
        groups: dict[tuple[str, str, str, str], list[str]] = {}
        for r in changed:
            flag = {"worse": "WORSE", "better": "better", "unknown": "slower: unknown"}.get(r.direction, "")
            cell_a, cell_b = _arrow_cell(r.a).plain, _arrow_cell(r.b).plain
            groups.setdefault((cell_a, cell_b, f"{flag} {r.reason}".strip(), r.direction), []).append(
                f"{r.src} → {r.dst}"
            )
        t = Table(box=box.SIMPLE_HEAD)
        for col in ("arrows", d.a_name, d.b_name, "change"):
            t.add_column(col, overflow="fold")
        for (cell_a, cell_b, flag, direction), names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            who = names[0] if len(names) == 1 else f"{len(names)} arrows ({names[0]} …)"
            t.add_row(who, cell_a, cell_b, Text(flag, style="bold red" if direction == "worse" else ""))
        parts.append(t)
    if d.unconfirmed and d.verdict == "cannot-confirm":
        parts.append(Text("\nCannot confirm: " + "; ".join(d.unconfirmed), style="yellow"))
    if d.not_compared:
        parts.append(Text("\nNot compared (a source could not know): " + "; ".join(d.not_compared), style="dim"))
    return Group(*parts)


def _arrow_cell(a: dict[str, object]) -> Text:
    bw = a.get("bandwidth_gbps")
    pre = "≥ " if a.get("lower_bound") else ""
    text = f"{a.get('medium')} {a.get('via')} {a.get('path') or ''} " + (
        f"{pre}{fmt_gbps(float(bw))} GB/s" if isinstance(bw, (int, float)) else "unknown GB/s"
    )
    return Text(text, style=MEDIUM_STYLE.get(str(a.get("medium")), ""))


def collapse(lines: list[str]) -> list[str]:
    """Evidence lines that say the same of several subjects become one:
    ``gpu0–gpu1: NV18`` … ``gpu6–gpu7: NV18`` → ``28 pairs/items (gpu0–gpu1 … gpu6–gpu7): NV18``."""
    groups: dict[str, list[str]] = {}
    order: list[str] = []
    plain: dict[str, str] = {}
    for line in lines:
        subject, sep, rest = line.partition(": ")
        if not sep or " " in subject:
            plain[line] = line
            order.append(line)
            continue
        if rest not in groups:
            groups[rest] = []
            order.append(rest)
        groups[rest].append(subject)
    out: list[str] = []
    for key in order:
        if key in plain:
            out.append(key)
            continue
        subjects = groups[key]
        if len(subjects) == 1:
            out.append(f"{subjects[0]}: {key}")
        elif len(subjects) <= 8:
            out.append(f"{', '.join(subjects)}: {key}")
        else:
            out.append(f"{len(subjects)} of them ({subjects[0]}, {subjects[1]} … {subjects[-1]}): {key}")
    return out


#: Evidence lines shown per rule in the terminal; the rest are counted, and --json has them all.
EVIDENCE_SHOWN = 10


def check_view(r: CheckResult) -> RenderableType:
    """The verdict first, then every rule with the fact that decides it and its evidence."""
    style = {"pass": "green", "fail": "bold red", "unknown": "yellow"}
    head = {"pass": "bold green", "fail": "bold red", "unknown": "bold yellow"}[r.status]
    parts: list[RenderableType] = [Text(r.verdict(), style=head)]
    for x in r.results:
        line = Text(f"{x.status.upper():8} {x.rule} [{x.lot}]: {x.description}", style=style[x.status])
        if x.summary and x.status != "pass":
            line.append(f" — {x.summary}")
        parts.append(line)
        lines = collapse([e for e in x.evidence if e != x.summary])
        shown = lines[:EVIDENCE_SHOWN]
        for e in shown:
            parts.append(Text(f"           {e}", style="dim"))
        rest = len(lines) - len(shown)
        if rest > 0:
            parts.append(Text(f"           … and {rest} more (--json lists all)", style="dim"))
        for cmd in x.settle:
            parts.append(Text(f"           to answer it: {cmd}", style="yellow"))
    return Group(*parts)


def cluster_header(snap: Snapshot) -> RenderableType:
    """A merged snapshot: one row per host."""
    t = Table(
        title=f"Cluster: {len(snap.members)} hosts ({snap.source.origin})", box=box.SIMPLE_HEAD, title_justify="left"
    )
    for col in ("host", "source", "GPUs", "NICs", "driver"):
        t.add_column(col, overflow="fold")
    for m in snap.members:
        names = sorted({g.name or "?" for g in m.gpus})
        t.add_row(
            m.host.hostname or "?",
            m.source.kind,
            f"{len(m.gpus)} × {', '.join(names)}" if m.gpus else "0",
            str(len(m.nics)),
            _dash(m.software.driver_version),
        )
    return t


def cluster_diff_view(d: dict[str, object]) -> RenderableType:
    parts: list[RenderableType] = [Text(str(d["summary"]), style="bold")]
    hosts = d.get("hosts")
    if isinstance(hosts, dict):
        for name, h in hosts.items():
            if isinstance(h, dict) and not h.get("same"):
                parts.append(Text(f"\n{name}: {h.get('summary')}", style="bold"))
                changes = h.get("changes")
                for line in (changes if isinstance(changes, list) else [])[:20]:
                    parts.append(Text(f"  {line}"))
    return Group(*parts)
