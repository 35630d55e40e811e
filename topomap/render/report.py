"""One self-contained HTML page for a mapped flow: diagram, arrows, machines, verdict, plan, provenance.

No script, no style sheet, font or image from anywhere else: the page opens offline, attached to a
ticket. Every name from an input (hosts, steps, NICs, GPUs, labels, file names) goes through
:func:`esc`, which writes markup characters as entities and control characters visibly (\\x1b),
so no input can add markup or reach a terminal. Pure: builds a string, prints nothing.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

from topomap import __version__
from topomap.base.units import fmt_seconds
from topomap.flow.mapping import FlowMap
from topomap.graph import FABRIC, Topology
from topomap.render.bundles import bundles, fmt_bw, grouped_notes, slowest_line, slowest_per_medium
from topomap.render.dot import origin_line
from topomap.render.hostdot import nic_name
from topomap.render.legend import MEDIUM_COLOURS

_CONTROL = re.compile("[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\ud800-\\udfff\\ufffe\\uffff]")

CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:24px auto;max-width:1180px;color:#212121;line-height:1.4}
h1{font-size:22px;margin-bottom:4px} h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0;font-size:13px} td,th{border:1px solid #ddd;padding:3px 7px;
text-align:left;vertical-align:top} th{background:#f5f5f5} .muted{color:#757575;font-size:12px}
.pass{color:#2e7d32;font-weight:bold} .fail{color:#c62828;font-weight:bold} .unknown{color:#ef6c00;font-weight:bold}
.diagram svg{max-width:100%;height:auto} code{font-size:12px} details{margin:8px 0}
"""


def esc(value: object) -> str:
    """Any value as HTML text: entities for markup characters, control characters shown as \\xNN."""
    text = "—" if value is None else str(value)
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else "\\ufffd", text)
    return html.escape(text, quote=True)


@dataclass
class ReportInputs:
    """What the page shows; None where the flow has no such part (the page says so)."""

    fmap: FlowMap
    topos: dict[str, Topology | None]
    svg: str | None  # the flow diagram, or None when Graphviz is absent
    svg_missing: str | None = None  # why there is no diagram
    check_verdict: str | None = None
    check_results: list[dict[str, Any]] = field(default_factory=list)  # RuleResult.to_json()
    plan: dict[str, Any] | None = None  # PlanResult.to_json()
    plan_missing: str | None = None
    sources: list[str] = field(default_factory=list)  # input files, for provenance


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


def _table(head: list[str], rows: list[list[str]]) -> str:
    """Rows are already-escaped HTML cells."""
    out = "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"
    for r in rows:
        out += "<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>"
    return out + "</table>"


def _medium(m: str) -> str:
    return f'<span style="color:{MEDIUM_COLOURS.get(m, "#616161")};font-weight:bold">{esc(m)}</span>'


def _arrows(inp: ReportInputs) -> str:
    groups = bundles(inp.fmap)
    rows = [
        [
            str(k),
            esc(f"{g.src_step} {'↔' if g.both_ways else '→'} {g.dst_step}"),
            esc(g.label or ""),
            str(g.count),
            _medium(g.medium),
            esc(g.via_text()),
            esc("—" if g.medium == "local" else g.bandwidth_text()),
            esc(g.volume_text()),
            esc(g.places()),
        ]
        for k, g in enumerate(groups, 1)
    ]
    out = _table(["#", "from → to", "label", "arrows", "medium", "via", "bandwidth", "volume, time", "places"], rows)
    slow = [f"<li>{_medium(m)}: {esc(slowest_line(a, n, u))}</li>" for m, a, n, u in slowest_per_medium(inp.fmap)]
    out += "<p><b>Slowest arrow per medium</b></p><ul>" + "".join(slow) + "</ul>"
    notes = grouped_notes(groups)
    if notes:
        out += "<p><b>Notes</b> (each once; #: the lines above it applies to)</p><ul>"
        for ng in notes:
            more = f" (and {ng.similar} more like it for other devices)" if ng.similar else ""
            out += (
                f"<li>{esc(ng.text)}{esc(more)} <span class='muted'>[{', '.join(f'#{r}' for r in ng.rows)}]</span></li>"
            )
        out += "</ul>"
    detail = [
        [
            str(k),
            esc(f"{a.src} → {a.dst}"),
            _medium(a.medium),
            esc(a.path or "—"),
            esc(fmt_bw(a.bandwidth_gbps, a.bandwidth_source)),
            esc(fmt_seconds(a.seconds)),
            "<code>" + esc(" → ".join(a.route)) + "</code>",
        ]
        for k, a in enumerate(inp.fmap.arrows, 1)
    ]
    out += f"<details><summary>Every arrow ({len(inp.fmap.arrows)}) with its route</summary>"
    out += _table(["#", "from → to", "medium", "path", "bandwidth", "time", "route"], detail) + "</details>"
    return out


def _machines(inp: ReportInputs) -> str:
    rows = []
    for host, topo in inp.topos.items():
        if topo is None:
            rows.append([esc(host), "no snapshot: inside unknown (a probe there settles it)", "", "", "", ""])
            continue
        s = topo.snapshot
        models: dict[str, int] = {}
        for g in s.gpus:
            models[g.name or "GPU (model not recorded)"] = models.get(g.name or "GPU (model not recorded)", 0) + 1
        gpus = "<br>".join(esc(f"{n}× {m}") for m, n in models.items()) or "none"
        mem = {g.memory_total_bytes for g in s.gpus if g.memory_total_bytes}
        if mem:
            gpus += "<br>" + esc(", ".join(f"{m / 2**30:.0f} GiB" for m in sorted(mem)) + " each (spec/probe)")
        nics = ", ".join(
            esc(nic_name(n) + (f" {n.speed_gbit_s:g} Gb/s spec" if n.speed_gbit_s else " (speed not recorded)"))
            for n in s.nics
        )
        sw = s.software
        versions = ", ".join(
            esc(f"{k} {v}") for k, v in (("driver", sw.driver_version), ("CUDA", sw.cuda_driver_version)) if v
        )
        rows.append(
            [
                esc(host) + (f"<br><span class='muted'>{esc(s.host.hostname)}</span>" if s.host.hostname else ""),
                esc(origin_line(topo)),
                gpus,
                "NVLink fabric (NVSwitch)" if FABRIC in topo.graph else "no NVLink fabric recorded",
                nics or "none recorded",
                (versions or "not recorded") + (f"<br>{len(s.problems)} problem(s) recorded" if s.problems else ""),
            ]
        )
    return _table(["host", "source", "GPUs", "fabric", "NICs", "software"], rows)


def _check(inp: ReportInputs) -> str:
    if inp.check_verdict is None:
        return "<p>No <code>requirements:</code> in this flow: nothing to check.</p>"
    word = inp.check_verdict.split(":", 1)[0].lower()
    out = f"<p class='{esc(word)}'>{esc(inp.check_verdict)}</p>"
    rows = [
        [
            esc(r.get("rule")),
            esc(r.get("lot")),
            f"<span class='{esc(r.get('status'))}'>{esc(str(r.get('status', '')).upper())}</span>",
            esc(r.get("description")),
            "<br>".join(esc(e) for e in r.get("evidence", []) or []),
        ]
        for r in inp.check_results
    ]
    return out + _table(["rule", "lot", "status", "what", "evidence"], rows)


def _plan(inp: ReportInputs) -> str:
    if inp.plan is None:
        return f"<p>plan: not available — {esc(inp.plan_missing or 'no plan')}</p>"
    p = inp.plan
    best = p.get("best")
    out = "<p>A calculation from the flow's <code>work:</code> (durations are assumed; see assumptions).</p>"
    if isinstance(best, dict):
        out += (
            f"<p><b>Shortest:</b> {esc(best.get('arrangement'))} on {esc(best.get('cards'))} card(s), "
            f"{esc(duration(best.get('total_s')))} total (calculated)</p>"
        )
    rows = []
    for a in p.get("arrangements", []) or []:
        fit = a.get("memory_fit") or {}
        speed = a.get("speedup")
        rows.append(
            [
                esc(a.get("cards")),
                esc(a.get("arrangement")),
                esc(duration(a.get("total_s"))),
                esc(duration(a.get("parallel_s"))),
                esc(duration(a.get("transfers_s"))),
                esc(duration(a.get("assembly_s"))),
                esc("—" if speed is None else f"{speed:.2f}×"),
                esc(fit.get("verdict")),
            ]
        )
    out += _table(
        ["cards", "arrangement", "total", "parallel part", "transfers", "assembly", "speed-up", "memory fit"], rows
    )
    for key, title in (("assumptions", "Assumptions"), ("warnings", "Warnings")):
        items = p.get(key) or []
        if items:
            out += f"<p><b>{title}</b></p><ul>" + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>"
    return out


def _provenance(inp: ReportInputs) -> str:
    items = [
        "spec: the nominal rate of the link type (NVLink per generation × links, PCIe lanes × gen, NIC line rate)",
        "model / derived: computed from what the source says (e.g. a GPU model from its PCI id)",
        "measured: copied and timed on the machine; assumed: a rule taken where the source is silent",
        "unknown: the source did not record it; a probe on the machine (topomap probe) settles most of it",
    ]
    hosts = [f"{h}: " + ("no snapshot" if t is None else origin_line(t)) for h, t in inp.topos.items()]
    assumed = sorted({n for a in inp.fmap.arrows for n in a.notes if "assum" in n})
    out = "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>"
    out += "<p><b>Inputs</b></p><ul>" + "".join(f"<li>{esc(x)}</li>" for x in [*inp.sources, *hosts]) + "</ul>"
    if assumed:
        out += "<p><b>Assumptions made while mapping</b></p><ul>" + "".join(f"<li>{esc(x)}</li>" for x in assumed)
        out += "</ul>"
    return out


def report_html(inp: ReportInputs) -> str:
    """The whole page as one string (UTF-8 when written)."""
    flow = inp.fmap.flow
    title = f"topomap report: flow {flow.name}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
    ]
    if flow.spec.description:
        parts.append(f"<p>{esc(flow.spec.description)}</p>")
    summary = f"{len(inp.fmap.arrows)} arrow(s) in {len(bundles(inp.fmap))} line(s)"
    if inp.check_verdict:
        summary += f" · check: {inp.check_verdict}"
    parts.append(f"<p class='muted'>{esc(summary)} · made by topomap {esc(__version__)}</p>")
    parts.append("<h2>Flow diagram</h2>")
    if inp.svg:
        parts.append(f"<div class='diagram'>{_svg_body(inp.svg)}</div>")
    else:
        parts.append(f"<p>diagram not drawn: {esc(inp.svg_missing or 'no diagram')}</p>")
    parts += ["<h2>Arrows</h2>", _arrows(inp), "<h2>Machines</h2>", _machines(inp)]
    parts += ["<h2>Requirements check</h2>", _check(inp), "<h2>Plan</h2>", _plan(inp)]
    parts += ["<h2>Provenance and assumptions</h2>", _provenance(inp), "</body></html>"]
    return "\n".join(parts) + "\n"
