"""A plan's Gantt charts as SVG through matplotlib (imported here, only when drawing); PNG is drawn
with Pillow alone (:mod:`topomap.render.gantt_png`), the same panels without matplotlib's import.

One panel per arrangement of the chosen card count: cards as rows, units as bars (labelled with
the unit's name), transfers and exchange as their own colours, idle time hatched grey, and the
assembly on its own row. The title says it is a calculation, not a measurement."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from topomap.base.errors import TopomapError
from topomap.base.units import fmt_span
from topomap.render.text import PLOT_HINT, chart_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from topomap.plan import Arrangement, Lane, PlanResult

_COLOURS: dict[str, str | tuple[str, str]] = {
    "compute": ("#2e7d32", "#66bb6a"),
    "units": ("#2e7d32", "#66bb6a"),
    "input": "#ab47bc",
    "output": "#ce93d8",
    "exchange": "#f9a825",
}
_ASSEMBLY, _IDLE = "#1565c0", "#bdbdbd"
MERGE_ABOVE = 300  # a lane of more bars is drawn as RUNS bars, each a run of consecutive units
RUNS = 100


def _rows(a: Arrangement) -> list[tuple[str, int | None]]:
    """(row label, slot index or None for idle cards) — one row per card."""
    by_slot = {ln.slot for ln in a.lanes}
    return [(card, i if i in by_slot else None) for i, cards in enumerate(a.slots) for card in cards]


def _lane_bars(ax: Axes, y: int, lane: Lane, result: PlanResult, scale: float) -> int:
    """Draw one lane's bars on row ``y``, one matplotlib call per colour; returns the units per
    merged bar (1 when every unit has its own)."""
    bars = lane.runs(MERGE_ABOVE, RUNS)
    spans: dict[str, list[tuple[float, float]]] = {}
    nth = 0
    for b in bars:
        colour = _COLOURS[b.kind]
        face = colour[nth % 2] if isinstance(colour, tuple) else colour
        nth += b.kind in ("compute", "units")
        spans.setdefault(face, []).append((b.start / 60, (b.end - b.start) / 60))
        name = chart_text(result.units[b.unit].name) if b.count == 1 else f"{b.count:,} units"
        if b.kind in ("compute", "units") and (b.end - b.start) / 60 > (len(name) + 1) * scale / 160:
            ax.text((b.start + b.end) / 120, y, name, ha="center", va="center", fontsize=7, color="white")
    for face, xs in spans.items():
        ax.broken_barh(xs, (y - 0.3, 0.6), facecolors=face, edgecolors="white", linewidth=0.5 if len(xs) < 50 else 0)
    return max((b.count for b in bars), default=1)


def _tie(others: list[str] | None) -> str:
    return f" (tie: {', '.join(others)})" if others else ""


def gantt_image(result: PlanResult, fmt: str, cards: int | None = None) -> bytes:
    """The Gantt charts of every arrangement of ``cards`` cards (default: the largest planned), as
    bytes: PNG drawn with Pillow (:mod:`topomap.render.gantt_png`), SVG with matplotlib."""
    k = cards if cards is not None else max((a.k for a in result.arrangements), default=0)
    groups = [g for g in result.ties() if g[0].k == k]  # tied arrangements: one panel
    shown = [g[0] for g in groups]
    tied = {id(g[0]): [a.kind for a in g[1:]] for g in groups}
    if not shown:
        raise TopomapError(f"no arrangement of {k} cards to draw")
    if fmt == "png":
        try:  # start-up: Pillow (installed with matplotlib) only when drawing
            from topomap.render.gantt_png import gantt_png

            return gantt_png(result, shown, tied)
        except ImportError as err:
            raise TopomapError("drawing a Gantt chart needs matplotlib (and its Pillow)", hint=PLOT_HINT) from err
    try:  # start-up: matplotlib is heavy and optional; only drawing needs it
        import matplotlib
        from matplotlib import ticker
        from matplotlib.figure import Figure  # not pyplot: its import and backend set-up cost ~0.5 s
        from matplotlib.patches import Patch
    except ImportError as err:
        raise TopomapError("drawing a Gantt chart needs matplotlib", hint=PLOT_HINT) from err
    # a fixed hash salt makes the SVG's ids the same on every run, as the timeline's (issue 24)
    with matplotlib.rc_context({"svg.hashsalt": "topomap"}):
        return _draw(Figure, Patch, ticker, result, fmt, shown, tied)


def _draw(
    figure: Any, patch: Any, ticker: Any, result: PlanResult, fmt: str, shown: list[Arrangement],
    tied: dict[int, list[str]],
) -> bytes:  # fmt: skip
    """The figure of the arrangements ``shown``, one panel each, as ``fmt`` bytes. Margins are set
    from the labels' lengths, not by tight_layout (which draws the whole figure once more to measure
    it: a third of the time of `plan -o gantt.png`)."""
    scale = max(a.total_s for a in shown) / 60
    heights = [len(_rows(a)) + (1 if a.assembly_s is not None else 0) + 1.5 for a in shown]
    tall = 0.42 * sum(heights) + 1.2
    fig = figure(figsize=(10, tall))
    label = max(len(chart_text(card)) for a in shown for card, _ in _rows(a))
    fig.subplots_adjust(
        left=min(0.4, (max(label, 8) * 0.075 + 0.25) / 10), right=0.98, top=1 - 0.75 / tall, bottom=0.85 / tall,
        hspace=0.75 / (0.42 * (sum(heights) / len(shown))),
    )  # fmt: skip
    axes = fig.subplots(len(shown), 1, squeeze=False, gridspec_kw={"height_ratios": heights})
    grid = [x for x in ticker.MaxNLocator(nbins=8).tick_values(0, scale) if 0 <= x <= scale * 1.02]
    for ax, a in zip(axes[:, 0], shown):
        rows = _rows(a)
        lanes = {ln.slot: ln for ln in a.lanes}
        per_bar = 1
        for y, (_card, slot) in enumerate(rows):
            lane = lanes.get(slot) if slot is not None else None
            end = lane.end / 60 if lane else 0.0
            if a.parallel_s / 60 > end:
                ax.barh(y, a.parallel_s / 60 - end, left=end, color="white", edgecolor=_IDLE, hatch="///", height=0.6)
                idle = a.parallel_s / 60 - end
                if idle > 12 * scale / 160:
                    ax.text(end + idle / 2, y, f"idle {fmt_span(idle * 60)}", ha="center", va="center", fontsize=7)
            if lane is not None:
                per_bar = max(per_bar, _lane_bars(ax, y, lane, result, scale))
        labels = [chart_text(card) for card, _ in rows]
        if a.assembly_s is not None:
            y = len(rows)
            ax.barh(y, a.assembly_s / 60, left=(a.total_s - a.assembly_s) / 60, color=_ASSEMBLY, height=0.6)
            labels.append("assembly")
        ax.set_yticks(range(len(labels)), labels)
        ax.set_xlim(0, scale * 1.02)
        refused = " (does not fit in a card's memory)" if a.fit.verdict == "does not fit" else ""
        colour = "#c62828" if refused else "black"
        merged = f"; a bar is a run of up to {per_bar:,} units, transfers included" if per_bar > 1 else ""
        ax.set_title(
            f"{a.k} card(s), {a.kind}{_tie(tied.get(id(a)))}: total {fmt_span(a.total_s)}{merged}{refused}",
            fontsize=10,
            loc="left",
            color=colour,
        )
        # the grid as one set of lines at the bottom panel's ticks, and x ticks on that panel only:
        # every tick is an object with its own text, and making them was most of the drawing time
        ax.vlines(grid, -0.5, len(labels) - 0.5, colors="#eeeeee", linewidth=0.8, zorder=0)
        ax.set_ylim(len(labels) - 0.5, -0.5)
        if ax is not axes[-1, 0]:
            ax.xaxis.set_visible(False)
    axes[-1, 0].set_xticks(grid)
    axes[-1, 0].set_xlabel("minutes from the start (calculated)")
    legend = [
        patch(color=_COLOURS["compute"][0], label="unit (compute)"),
        patch(color=str(_COLOURS["input"]), label="input transfer"),
        patch(color=str(_COLOURS["output"]), label="output transfer"),
        patch(color=str(_COLOURS["exchange"]), label="exchange"),
        patch(facecolor="white", edgecolor=_IDLE, hatch="///", label="idle"),
        patch(color=_ASSEMBLY, label="assembly"),
    ]
    fig.legend(handles=legend, loc="lower center", ncol=6, fontsize=8, frameon=False)
    fig.suptitle(
        f"plan of {chart_text(result.flow)} on {chart_text(result.lot)}: "
        "a calculation from the work's stated assumptions, not a measurement",
        fontsize=10,
    )
    buf = io.BytesIO()
    meta = {"Date": None} if fmt == "svg" else {}
    fig.savefig(buf, format=fmt, dpi=110, metadata=meta)
    return buf.getvalue()
