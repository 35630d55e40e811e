"""One self-contained HTML page for a mapped flow: diagram, arrows, machines, verdict, plan, provenance.

No script, no style sheet, font or image from anywhere else: the page opens offline, attached to a
ticket. The page is a Jinja2 template (templates/report.html.j2) with autoescaping on, so every
value from an input (hosts, steps, NICs, GPUs, labels, file names) is text by default: markup
characters as entities, control characters written visibly (\\x1b) by render/text.py's one rule, so
no input can add markup or reach a terminal. Pure: builds a string, prints nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jinja2

from topomap import __version__
from topomap.base.units import fmt_seconds
from topomap.flow.mapping import FlowMap, medium_summary
from topomap.graph import FABRIC, Topology
from topomap.model.facts import gpu_memory
from topomap.model.filled_facts import nic_speed
from topomap.model.snapshot import Nic, Snapshot
from topomap.render.attached_view import report_collectives
from topomap.render.bundles import bundles, grouped_notes
from topomap.render.dot import origin_line
from topomap.render.flowdot import nccl_stands_out, nccl_transports
from topomap.render.hostdot import nic_name
from topomap.render.legend import MEDIUM_COLOURS
from topomap.render.text import bandwidth_text, visible
from topomap.render.verdict_view import evidence_lines

if TYPE_CHECKING:
    from topomap.check import CheckResult
    from topomap.cluster import ClusterReport
    from topomap.cluster.groups import Grouping


def shown(value: object) -> object:
    """What the page shows for a value: markup the template made as is; None as —; anything else as
    text with its control characters visible (tab and newline are plain whitespace in HTML). Jinja2
    then escapes the text."""
    if hasattr(value, "__html__"):  # a macro's output, or the diagram marked safe in the template
        return value
    return "—" if value is None else visible(str(value), keep="\t\n")


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("topomap.render", "templates"),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
    finalize=shown,
)


@dataclass
class ReportInputs:
    """What the page shows; None where the flow has no such part (the page says so)."""

    fmap: FlowMap
    topos: dict[str, Topology | None]
    svg: str | None  # the flow diagram, or None when Graphviz is absent
    svg_missing: str | None = None  # why there is no diagram
    check: CheckResult | None = None  # the flow's own requirements on its lots
    plan: dict[str, Any] | None = None  # PlanResult.to_json()
    plan_missing: str | None = None
    sources: list[str] = field(default_factory=list)  # input files, for provenance
    cluster: ClusterReport | None = None  # two or more hosts: topomap cluster's report of them
    groups: Grouping | None = None  # the hosts with snapshots in groups of alike hosts: one machine row each


def duration(sec: object) -> str:
    """Seconds for people: 21.5 ms, 48 s, 160 min, 5.3 h; None → —."""
    if not isinstance(sec, (int, float)):
        return "—"
    if sec < 120:
        return fmt_seconds(float(sec))
    if sec < 3 * 3600:
        return f"{sec / 60:.0f} min"
    return f"{sec / 3600:.1f} h"


def _svg_body(svg: str) -> str:
    """Graphviz SVG without its XML prolog and DOCTYPE, ready to sit inside HTML."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else ""


def _arrows(inp: ReportInputs) -> dict[str, Any]:
    """The arrows section: one row per bundle, the slowest per medium, the notes, every arrow."""
    groups = bundles(inp.fmap)
    rows = [
        {
            "ends": f"{g.src_step} {'↔' if g.both_ways else '→'} {g.dst_step}",
            "label": g.label or "",
            "count": g.count,
            "medium": g.medium,
            "via": g.via_text(),
            "bandwidth": "—" if g.medium == "local" else g.bandwidth_text(),
            "volume": g.volume_text(),
            "places": g.places(),
            "nccl": nccl_transports(g) or "—",
            "nccl_out": nccl_stands_out(g),
        }
        for g in groups
    ]
    notes = [
        {
            "text": ng.text,
            "more": "",
            "rows": ", ".join(f"#{r}" for r in ng.rows),
        }
        for ng in grouped_notes(groups)
    ]
    detail = [
        {
            "ends": f"{a.src} → {a.dst}",
            "medium": a.medium,
            "path": a.path or "—",
            "bandwidth": bandwidth_text(a.bandwidth()),
            "time": fmt_seconds(a.seconds),
            "route": " → ".join(a.route),
        }
        for a in inp.fmap.arrows
    ]
    slowest = [(m.medium, m.text()) for m in medium_summary(inp.fmap)]
    nccl = any(a.nccl is not None for a in inp.fmap.arrows)  # the NCCL column only where NCCL sends arrows
    return {"bundles": rows, "slowest": slowest, "notes": notes, "arrows": detail, "nccl": nccl}


def _nic_rate(n: Nic, s: Snapshot) -> str:
    """A NIC's line rate with its kind: "200 Gb/s spec" (a tool's reading), "400 Gb/s (declared)"."""
    speed = nic_speed(n, s)  # the one decision (model.filled_facts): its origin where a lot gave it
    if speed.gbit_s is None:
        return "(speed not recorded)"
    return speed.text() + (" spec" if speed.source == "spec" else "")


def _machine(host: str, topo: Topology | None) -> dict[str, Any]:
    """One row of the machines table; ``source`` None for a host with no snapshot."""
    if topo is None:
        return {"host": host, "source": None}
    s = topo.snapshot
    models: dict[str, int] = {}
    for g in s.gpus:
        models[g.name or "GPU (model not recorded)"] = models.get(g.name or "GPU (model not recorded)", 0) + 1
    gpus = [f"{n}× {m}" for m, n in models.items()] or ["none"]
    memory = {(m.total_bytes, m.source) for m in (gpu_memory(g, s) for g in s.gpus) if m.total_bytes}
    if memory:  # as gpu_memory decides it: read from the snapshot, declared, or derived from the model or the name
        sizes = ", ".join(f"{b / 2**30:.0f} GiB" for b in sorted({b for b, _ in memory}))
        derived = sorted({src for _, src in memory if src != "snapshot"})
        gpus.append(sizes + " each (" + ("; ".join(derived) if derived else "as recorded") + ")")
    nics = ", ".join(nic_name(n) + " " + _nic_rate(n, s) for n in s.nics)
    sw = s.software
    versions = [f"{k} {v}" for k, v in (("driver", sw.driver_version), ("CUDA", sw.cuda_driver_version)) if v]
    software = [", ".join(versions) or "not recorded"]
    if s.problems:
        software.append(f"{len(s.problems)} problem(s) recorded")
    return {
        "host": host,
        "hostname": s.host.hostname,
        "source": origin_line(topo),
        "gpus": gpus,
        "fabric": _fabric(topo),
        "nics": nics or "none recorded",
        "software": software,
    }


def _fabric(topo: Topology) -> str:
    """The GPU fabric in words: NVSwitch, an AMD XGMI mesh (issue 35), or none recorded."""
    if FABRIC in topo.graph:
        return "NVLink fabric (NVSwitch)"
    if any(d.get("kind") == "xgmi" for _, _, d in topo.light.edges(data=True)):
        return "XGMI mesh (AMD Infinity Fabric)"
    return "no NVLink fabric recorded"


def _machines(inp: ReportInputs) -> list[dict[str, Any]]:
    """The machines table: a row per host; alike hosts (topomap.cluster.groups) one row for them all,
    its first cell the count and the hosts (issue 34: 10,000 alike hosts are one row)."""
    g = inp.groups
    if g is None or len(g.groups) == len(g.names):
        return [_machine(h, t) for h, t in inp.topos.items()]
    rows: list[dict[str, Any]] = []
    said: set[str] = set()
    for h, t in inp.topos.items():
        if t is None or h not in g.label_of:
            rows.append(_machine(h, t))
            continue
        group = g.group_of(h)
        if group.label in said:
            continue
        said.add(group.label)
        row = _machine(h, t)
        if len(group) > 1:
            shown = ", ".join(group.hosts[:8]) + (f" and {len(group) - 8} more" if len(group) > 8 else "")
            row.update(host=f"{len(group)} hosts alike: {shown}", hostname=None)
        rows.append(row)
    return rows


def _plan(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan section from the `plan --json` document: durations for people."""
    best = plan.get("best")
    rows = []
    for a in plan.get("arrangements", []) or []:
        speed = a.get("speedup")
        rows.append(
            {
                "cards": a.get("cards"),
                "arrangement": a.get("arrangement"),
                "total": duration(a.get("total_s")),
                "parallel": duration(a.get("parallel_s")),
                "transfers": duration(a.get("transfers_s")),
                "assembly": duration(a.get("assembly_s")),
                "speedup": "—" if speed is None else f"{speed:.2f}×",
                "fit": (a.get("memory_fit") or {}).get("verdict"),
            }
        )
    shortest = None
    if isinstance(best, dict):
        shortest = {"arrangement": best.get("arrangement"), "cards": best.get("cards")}
        shortest["total"] = duration(best.get("total_s"))
    lists = [(title, plan.get(key) or []) for key, title in (("assumptions", "Assumptions"), ("warnings", "Warnings"))]
    return {"best": shortest, "arrangements": rows, "lists": [(t, v) for t, v in lists if v]}


PROVENANCE = [
    "spec: the nominal rate of the link type (NVLink per generation × links, PCIe lanes × gen, NIC line rate)",
    "derived: implied by what the source says (a GPU model from its PCI id; ≥: the slowest part it could be)",
    "model: an estimate (NCCL's topology model; the expected busbw: a rate × an efficiency, with its range)",
    "declared / catalogue: a declared lot's or the catalogue's figure, on a topology no machine showed",
    "topology-file: a static topology file's figure, not the machine's",
    "measured: copied and timed on the machine; assumed: a rule taken where the source is silent",
    "unknown: the source did not record it; a probe on the machine (topomap probe) settles most of it",
]


def report_html(inp: ReportInputs) -> str:
    """The whole page as one string (UTF-8 when written)."""
    flow = inp.fmap.flow
    summary = f"{len(inp.fmap.arrows)} arrow(s) in {len(bundles(inp.fmap))} line(s)"
    if inp.check is not None:
        summary += f" · check: {inp.check.verdict()}"
    hosts = [f"{h}: " + ("no snapshot" if t is None else origin_line(t)) for h, t in inp.topos.items()]
    page = _ENV.get_template("report.html.j2").render(
        colour=lambda m: MEDIUM_COLOURS.get(m, "#616161"),
        title=f"topomap report: flow {flow.name}",
        description=flow.spec.description,
        summary=summary,
        version=__version__,
        svg=_svg_body(inp.svg) if inp.svg else None,
        svg_missing=inp.svg_missing or "no diagram",
        machines=_machines(inp),
        collectives=report_collectives(inp.fmap, inp.topos),
        check=inp.check,
        cluster=inp.cluster,
        plan=None if inp.plan is None else _plan(inp.plan),
        plan_missing=inp.plan_missing or "no plan",
        provenance=PROVENANCE,
        inputs=[*inp.sources, *hosts],
        evidence=evidence_lines,
        assumed=sorted({n for a in inp.fmap.arrows for n in a.assumptions}),
        **_arrows(inp),
    )
    return page
