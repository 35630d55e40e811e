"""rich renderables for `topomap map`: the summary (one line per bundle) and the full detail (--all).

Renderers build; only the CLI prints. Every bandwidth carries its unit and provenance
(spec / model / measured), and unknown says so.
"""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from topomap.base.units import fmt_seconds
from topomap.flow.mapping import FlowMap, medium_summary
from topomap.render.bundles import bundles, grouped_notes
from topomap.render.terminal import MEDIUM_STYLE, short_node
from topomap.render.text import visible


def safe(text: str, style: str = "") -> Text:
    """A name as plain text for the terminal: never rich markup, control characters visible
    (:func:`topomap.render.text.visible`)."""
    return Text(visible(text), style=style)


#: The columns of free text: they wrap at spaces (rich, or the blocks of a narrow terminal); every
#: other cell is a value, never split or cut.
_TEXT = ("label", "places")


def _column(t: Table, name: str) -> None:
    if name in _TEXT:
        t.add_column(name, overflow="fold")
    else:
        t.add_column(name, no_wrap=True, overflow="ignore")


def _rows(numbers: list[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers)


def summary_view(fmap: FlowMap) -> RenderableType:
    """One line per flow arrow (replicas and pairs bundled), the slowest arrow per medium, each distinct
    note once with the lines it applies to."""
    groups = bundles(fmap)
    t = Table(
        title=safe(f"Flow {fmap.flow.name}: {len(fmap.arrows)} arrow(s) in {len(groups)} line(s) (--all: every arrow)"),
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )
    for col in ("#", "from → to", "label", "arrows", "medium", "via", "bandwidth", "time (slowest)", "places"):
        _column(t, col)
    for k, g in enumerate(groups, 1):
        arrow = " ↔ " if g.both_ways else " → "
        slow = g.slowest
        t.add_row(
            str(k),
            safe(f"{g.src_step}{arrow}{g.dst_step}"),
            safe(g.label or ""),
            str(g.count),
            Text(g.medium, style=MEDIUM_STYLE.get(g.medium, "")),
            safe(g.via_text()),
            "—" if g.medium == "local" else g.bandwidth_text(),
            fmt_seconds(slow.seconds),
            safe(g.places()),
        )
    parts: list[RenderableType] = [t, *_slowest(fmap), *_collectives(fmap)]
    notes = grouped_notes(groups)
    if notes:
        parts.append(Text(f"\nNotes ({len(notes)} kinds, each once with the devices it covers)", style="bold"))
        for ng in notes:
            where = f"[{_rows(ng.rows)}" + (f", {ng.arrows} arrows]" if ng.arrows > 1 else "]")
            parts.append(safe(f"  • {ng.text}  {where}"))
    return Group(*parts)


def arrows_view(fmap: FlowMap) -> RenderableType:
    """Every arrow: medium, via, path class, bandwidth with provenance, time; then routes and notes."""
    t = Table(
        title=safe(f"Flow {fmap.flow.name}: {len(fmap.arrows)} arrow(s)"), box=box.SIMPLE_HEAD, title_justify="left"
    )
    for col in ("#", "from → to", "label", "medium", "via", "path", "bandwidth", "time"):
        _column(t, col)
    details: list[RenderableType] = [Text("Routes and notes", style="bold")]
    for k, a in enumerate(fmap.arrows, 1):
        bw = a.bandwidth().text()
        arrow = " ↔ " if a.both_ways else " → "
        t.add_row(
            str(k),
            safe(f"{a.src_step}{arrow}{a.dst_step}") + Text("\n") + safe(f"{a.src}{arrow}{a.dst}"),
            safe(a.label or ""),
            Text(a.medium, style=MEDIUM_STYLE.get(a.medium, "")),
            safe(a.via),
            safe(a.path or "—"),
            bw,
            fmt_seconds(a.seconds),
        )
        details.append(safe(f"#{k} " + " → ".join(short_node(n) for n in a.route)))
        for n in a.notes:
            details.append(safe(f"    • {n}", "dim"))
    return Group(t, *_slowest(fmap), *_collectives(fmap), Text(""), *details)


def _collectives(fmap: FlowMap) -> list[RenderableType]:
    """The flow's collectives at NCCL's expected busbw (`topomap nccl LOT --perf`), one line each."""
    if not fmap.collectives:
        return []
    head = Text("\nCollectives (time at the expected NCCL busbw; `topomap nccl LOT --perf`)", style="bold")
    return [head, *(safe(f"  • {c.text()}") for c in fmap.collectives)]


def _slowest(fmap: FlowMap) -> list[RenderableType]:
    """Per medium, the one summary (:func:`topomap.flow.mapping.medium_summary`): unknown members named."""
    lines: list[RenderableType] = [Text("Slowest arrow per medium", style="bold")]
    for m in medium_summary(fmap):
        lines.append(safe(f"  {m.medium}: " + m.text(), MEDIUM_STYLE.get(m.medium, "")))
    return lines
