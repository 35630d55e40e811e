"""A plan in the terminal: the arrangements table, a Gantt chart per arrangement, the per-unit
transfers from the map, memory fit, assumptions and warnings. Rich renderables; nothing printed."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from topomap.base.units import fmt_span
from topomap.plan import Arrangement, Bar, PlanResult
from topomap.render.text import visible

WIDTH = 50  # characters for the longest total of the arrangements drawn together
MERGE_ABOVE = 2 * WIDTH  # a lane of more bars is drawn as runs of units, WIDTH // 2 of them
_UNIT_STYLES = ("bold green", "bold cyan")
_KIND = {"input": ("░", "magenta"), "output": ("░", "magenta"), "exchange": ("≈", "yellow")}


def _minutes(sec: float) -> str:
    return f"{sec / 60:.0f}" if abs(sec / 60 - round(sec / 60)) < 0.05 else f"{sec / 60:.1f}"


def _partial(a: Arrangement) -> bool:
    """Some time of this arrangement is unknown and left out of its total."""
    return not a.transfers_complete or (a.kind == "coordinated" and a.exchange_s is None)


def _fit(a: Arrangement) -> Text:
    f = a.fit
    if f.verdict == "fits":
        return Text("yes", style="green")
    if f.verdict == "does not fit":
        return Text("NO", style="bold red")
    return Text("unknown", style="yellow")


def plan_table(r: PlanResult) -> Table:
    """One row per arrangement. The assembly column shows only when it differs between rows, and
    the transfers column only when transfers are not already inside the unit durations."""
    t = Table(
        title=Text(visible(f"plan of {r.flow} on {r.lot} (calculated, not measured)")),  # names are data, never markup
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
    )
    assemblies = {a.assembly_s for a in r.arrangements}
    cols = ["cards arrangement", "parallel"]
    cols += [] if r.includes_transfers else ["transfers"]
    cols += ["assembly"] if len(assemblies) > 1 else []
    cols += ["total", "idle", "speed", "fits"]
    for col in cols:
        t.add_column(col, justify="left" if col in ("cards arrangement", "fits") else "right", no_wrap=True)
    best = r.best()
    for a in r.arrangements:
        mark = "+?" if _partial(a) else ""
        kind = "one task at a time" if a.kind == "one card" and r.cards_per_task > 1 else a.kind
        row: list[str | Text] = [f"{a.k:>2} {kind}" + (" ★" if a is best else ""), fmt_span(a.parallel_s)]
        row += [] if r.includes_transfers else [fmt_span(a.transfers_s) + ("" if a.transfers_complete else "+?")]
        row += [fmt_span(a.assembly_s) if a.assembly_s is not None else "none"] if len(assemblies) > 1 else []
        total = Text(fmt_span(a.total_s) + mark, style="bold" if a is best else "")
        row += [total, _minutes(a.idle_card_s), "—" if a.speedup is None else f"{a.speedup:.2f}×", _fit(a)]
        t.add_row(*row)
    return t


def _table_notes(r: PlanResult) -> list[Text]:
    over = "one card" if r.cards_per_task == 1 else f"one task at a time on {r.cards_per_task} cards"
    out = [Text(f"idle: card-minutes without work during the parallel part; speed: over {over}", style="dim")]
    assemblies = {a.assembly_s for a in r.arrangements}
    if r.includes_transfers:
        out.append(Text("transfers: inside the unit durations (work.includes_transfers)", style="dim"))
    if len(assemblies) == 1:
        only = assemblies.pop()
        text = "none declared" if only is None else f"{fmt_span(only)} after the units, in every total"
        if only:
            text += f"; every rented card waits meanwhile ({_minutes(only)} card-min each)"
        out.append(Text(f"assembly: {text}", style="dim"))
    if any(_partial(a) for a in r.arrangements):
        out.append(Text("+?: plus time that is unknown and left out of the total (see the warnings)", style="yellow"))
    return out


def _label(cards: list[str]) -> str:
    return "+".join(cards) if len(cards) <= 2 else f"{cards[0]}…{cards[-1]}"


def _cells(bars: list[Bar], parallel_s: float, per: float, width: int) -> list[tuple[str, str]]:
    """A lane's characters: its bars over idle dots up to the parallel part's end, then blanks."""
    cells: list[tuple[str, str]] = [("·", "dim")] * min(round(parallel_s / per), width) + [(" ", "")] * width
    nth = 0
    for b in bars:
        lo, hi = round(b.start / per), max(round(b.end / per), round(b.start / per) + 1)
        ch, style = _KIND.get(b.kind, ("█▓"[nth % 2], _UNIT_STYLES[nth % 2]))
        nth += b.kind in ("compute", "units")
        for x in range(lo, min(hi, width)):
            cells[x] = (ch, style)
    return cells[:width]


def gantt_text(a: Arrangement, r: PlanResult, scale_s: float, width: int = WIDTH) -> Text:
    """One arrangement as text: a row per card, units as alternating blocks, transfers ░, exchange ≈,
    idle ·, and the assembly on its own row. A lane of many units is drawn as runs of units."""
    per = max(scale_s, 1e-9) / width
    by_slot = {ln.slot: ln for ln in a.lanes}
    bars = {i: ln.runs(MERGE_ABOVE, width // 2) for i, ln in by_slot.items()}
    run = max((b.count for bs in bars.values() for b in bs), default=1)
    out = Text()
    out.append(f"{a.k} card(s), {a.kind}: total {fmt_span(a.total_s)}", style="bold")
    out.append(f"; a block is a run of up to {run:,} units" if run > 1 else "")
    out.append(" (does not fit in a card's memory)\n" if a.fit.verdict == "does not fit" else "\n", style="bold red")
    label_w = max([len(visible(_label(s))) for s in a.slots] + [8])
    for i, cards in enumerate(a.slots):
        out.append(f"  {visible(_label(cards)):>{label_w}} │")
        lane = by_slot.get(i)
        for ch, style in _cells(bars.get(i, []), a.parallel_s, per, width):
            out.append(ch, style=style)
        idle = a.parallel_s - (lane.end if lane else 0.0)
        tail = [f"{len(lane.units):,} units"] if run > 1 and lane is not None else []
        tail += [f"idle {fmt_span(idle)}"] if idle > 0.5 else []
        out.append("│" + (" " + ", ".join(tail) if tail else "") + "\n")
    if a.assembly_s is not None:
        lo = min(round((a.total_s - a.assembly_s) / per), width - 1)  # a short assembly still shows
        hi = round(a.total_s / per)
        row = [" "] * width
        for x in range(lo, min(max(hi, lo + 1), width)):
            row[x] = "▒"
        out.append(f"  {'assembly':>{label_w}} │")
        out.append("".join(row), style="blue")
        out.append("│" + (" streamed" if r.assembly_streamed else "") + "\n")
    out.append(f"  {'':>{label_w}}  0{fmt_span(scale_s):>{width - 1}}\n", style="dim")
    return out


def plan_view(r: PlanResult, gantt_cards: int | None = None) -> RenderableType:
    parts: list[RenderableType] = [plan_table(r), *_table_notes(r)]
    best = r.best()
    if best is not None:
        parts.append(Text(f"best: {best.k} card(s), {best.kind}: {fmt_span(best.total_s)} (calculated)", style="bold"))
    else:
        parts.append(
            Text("no arrangement fits: every one needs more memory per card than a card has", style="bold red")
        )
    fits = {a.fit.reason for a in r.arrangements if a.fit.verdict != "fits"}
    for reason in sorted(fits):
        bad = reason.startswith("does not fit")
        parts.append(
            Text(
                visible(f"memory: {reason}" if bad else f"memory fit unknown: {reason}"),
                style="red" if bad else "yellow",
            )
        )
    k = gantt_cards if gantt_cards is not None else max((a.k for a in r.arrangements), default=0)
    shown = [a for a in r.arrangements if a.k == k]
    if shown:
        scale = max(a.total_s for a in shown)
        parts.append(Text(f"\nGantt, {k} card(s) (█▓ units, ░ transfers, ≈ exchange, · idle, ▒ assembly):"))
        parts += [gantt_text(a, r, scale) for a in shown]
    parts.append(_legs(r))
    parts.append(Text("Assumptions (this is a calculation, not a measurement):", style="bold"))
    parts += [Text(visible(f"  - {x}")) for x in r.assumptions]
    for w in r.warnings:
        parts.append(Text(visible(f"warning: {w}"), style="yellow"))
    for s in r.skipped:
        parts.append(Text(visible(f"not planned: {s}"), style="dim"))
    return Group(*parts)


def _legs(r: PlanResult) -> Text:
    """Per-unit transfers from the map for the first card (the others differ only by their own path)."""
    out = Text("Per-unit transfers from the map" + (" (already inside the durations)" if r.includes_transfers else ""))
    out.append(":\n")
    first = r.cards_available[0] if r.cards_available else None
    legs = [lg for lg in r.legs if lg.card == first]
    if not legs:
        out.append("  none: the flow has no arrows into or out of its compute steps\n", style="dim")
    for lg in legs:
        sec = lg.seconds()
        tail = "" if r.includes_transfers else (f": {fmt_span(sec)}" if sec is not None else ": unknown, excluded")
        out.append(f"  {visible(lg.describe())}{tail}\n")
    return out
