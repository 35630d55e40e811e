"""A plan in the terminal: the arrangements table, a Gantt chart per arrangement, the per-unit
transfers from the map, memory fit, assumptions and warnings. Rich renderables; nothing printed."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from topomap.base.units import fmt_gbps, fmt_span
from topomap.plan import Arrangement, Bar, PlanResult
from topomap.plan.result import arrangement_name
from topomap.render.text import visible
from topomap.render.whole import Laid

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


def plan_table(r: PlanResult) -> Laid:
    """One row per arrangement, arrangements with equal figures (a tie) on one row. The assembly
    column shows only when it differs between rows, and the transfers column only when transfers
    are not already inside the unit durations. Laid out as plain lines, never cut; on a terminal too
    narrow for them, one block per row instead (:func:`topomap.render.whole.whole`)."""
    assemblies = {a.assembly_s for a in r.arrangements}
    cols = ["cards arrangement", "parallel"]
    cols += [] if r.includes_transfers else ["transfers"]
    cols += ["assembly"] if len(assemblies) > 1 else []
    cols += ["total", "card-min", "idle", "speed", "fits"]
    best = r.best()
    rows: list[tuple[list[str], list[str]]] = []  # cells, and their styles
    for group in r.ties():
        a = group[0]
        name = arrangement_name(a, r) + (f" (+{len(group) - 1})" if len(group) > 1 else "")
        row = [f"{a.k:>2} {name}" + (" ★" if best in group else ""), fmt_span(a.parallel_s)]
        if not r.includes_transfers:
            low = "≥" if a.transfers_lower_bound else ""
            row.append(low + fmt_span(a.transfers_s) + ("" if a.transfers_complete else "+?"))
        row += [fmt_span(a.assembly_s) if a.assembly_s is not None else "none"] if len(assemblies) > 1 else []
        row += [fmt_span(a.total_s) + ("+?" if _partial(a) else ""), _minutes(a.card_s), _minutes(a.idle_card_s)]
        fit = _fit(a)
        row += ["—" if a.speedup is None else f"{a.speedup:.2f}×", fit.plain]
        styles = [""] * len(row)
        styles[cols.index("total")] = "bold" if best in group else ""
        styles[-1] = str(fit.style)
        rows.append((row, styles))
    widths = [max([len(c)] + [len(cells[i]) for cells, _ in rows]) for i, c in enumerate(cols)]
    left = {0, len(cols) - 1}

    def cell(i: int, text: str) -> str:
        return text.ljust(widths[i]) if i in left else text.rjust(widths[i])

    title = visible(f"plan of {r.flow} on {r.lot} (calculated, not measured)")
    out = Text(title + "\n\n")
    out.append(" " + "  ".join(cell(i, c) for i, c in enumerate(cols)).rstrip() + "\n", style="bold")
    out.append(" " + "─" * (sum(widths) + 2 * (len(cols) - 1)) + "\n")
    for cells, styles in rows:
        out.append(" ")
        for i, (c, st) in enumerate(zip(cells, styles)):
            out.append(("  " if i else "") + (cell(i, c) if i < len(cells) - 1 else c), style=st)
        out.append("\n")
    table = Table(title=Text(title + "\n"))
    for c in cols:
        table.add_column(c, no_wrap=True)
    for cells, styles in rows:
        table.add_row(*(Text(c.strip(), style=st) for c, st in zip(cells, styles)))
    return Laid(out, table)


def _table_notes(r: PlanResult) -> list[Text]:
    over = "one card" if r.cards_per_task == 1 else f"one task at a time on {r.cards_per_task} cards"
    out = [
        Text(
            "card-min: cards × total, what the rental costs; idle: card-minutes without work during the parallel "
            f"part; speed: over {over}",
            style="dim",
        )
    ]
    tied: dict[str, list[int]] = {}
    for group in r.ties():
        if len(group) > 1:
            tied.setdefault(", ".join(arrangement_name(a, r) for a in group), []).append(group[0].k)
    for names, ks in tied.items():
        on = ", ".join(str(k) for k in ks)
        out.append(Text(f"tie: {names} give equal figures on {on} card(s): one row (+N: N more) and one chart"))
    if any(a.transfers_lower_bound for a in r.arrangements):
        out.append(
            Text("≥: at least this: host memory's bandwidth, unknown, may slow cards loading at once", style="dim")
        )
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


def gantt_text(
    a: Arrangement, r: PlanResult, scale_s: float, width: int = WIDTH, tied: list[str] | None = None
) -> Text:
    """One arrangement as text: a row per card, units as alternating blocks, transfers ░, exchange ≈,
    idle ·, and the assembly on its own row. A lane of many units is drawn as runs of units."""
    per = max(scale_s, 1e-9) / width
    by_slot = {ln.slot: ln for ln in a.lanes}
    bars = {i: ln.runs(MERGE_ABOVE, width // 2) for i, ln in by_slot.items()}
    run = max((b.count for bs in bars.values() for b in bs), default=1)
    out = Text()
    same = f" (tie: {', '.join(tied)})" if tied else ""
    out.append(f"{a.k} card(s), {a.kind}{same}: total {fmt_span(a.total_s)}", style="bold")
    out.append(f"\n  (a block is a run of up to {run:,} units)" if run > 1 else "")
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
        parts += _best_lines(r, best)
    else:
        parts.append(
            Text("no arrangement fits: every one needs more memory per card than a card has", style="bold red")
        )
    if r.money is not None:  # a priced lot (a declared lot's price: and periods:)
        from topomap.render.money_view import money_lines  # start-up: only a priced lot

        parts += money_lines(r)
    fits = {(a.fit.reason, a.fit.verdict == "does not fit") for a in r.arrangements if a.fit.verdict != "fits"}
    for reason, bad in sorted(fits):
        parts.append(
            Text(
                visible(f"memory: {reason}" if bad else f"memory fit unknown: {reason}"),
                style="red" if bad else "yellow",
            )
        )
    k = gantt_cards if gantt_cards is not None else max((a.k for a in r.arrangements), default=0)
    shown = [g for g in r.ties() if g[0].k == k]
    if shown:
        scale = max(g[0].total_s for g in shown)
        parts.append(Text(f"\nGantt, {k} card(s) (█▓ units, ░ transfers, ≈ exchange, · idle, ▒ assembly):"))
        for g in shown:
            parts.append(gantt_text(g[0], r, scale, tied=[a.kind for a in g[1:]]))
            parts.append(units_text(g, r))
    parts.append(_legs(r))
    parts += _sharing(r)
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


def _best_lines(r: PlanResult, best: Arrangement) -> list[Text]:
    """Fastest, cheapest (card-minutes) and the fewest cards within the margin of the fastest."""

    def one(a: Arrangement) -> str:
        return f"{a.k} card(s), {arrangement_name(a, r)}: {fmt_span(a.total_s)}, {_minutes(a.card_s)} card-min"

    out = [Text(f"fastest: {one(best)} (calculated)", style="bold")]
    cheap, few = r.cheapest(), r.fewest_within()
    if cheap is not None:
        out.append(Text(f"fewest card-minutes: {one(cheap)}"))
    if few is not None:
        out.append(Text(f"fewest cards within {r.margin * 100:g} % of the fastest (--margin): {one(few)}"))
    return out


def _runs(idx: list[int], r: PlanResult) -> str:
    """Unit names of a lane: every name up to 12 units; past that, consecutive units as first…last
    ("u1…u400, u801…u1200"), at most 8 stretches shown."""
    if len(idx) <= 12:
        return visible(", ".join(r.units[i].name for i in idx))
    parts: list[str] = []
    i = 0
    while i < len(idx):
        j = i
        while j + 1 < len(idx) and idx[j + 1] == idx[j] + 1:
            j += 1
        first, last = r.units[idx[i]].name, r.units[idx[j]].name
        parts.append(first if i == j else f"{first}…{last}" if j > i + 1 else f"{first}, {last}")
        i = j + 1
    shown = ", ".join(parts[:8]) + (f", … ({len(parts) - 8} more stretches)" if len(parts) > 8 else "")
    return visible(shown)


def units_text(group: list[Arrangement], r: PlanResult) -> Text:
    """Which units run on which card, for each distinct assignment among tied arrangements."""
    out = Text()
    layouts: dict[tuple[tuple[int, ...], ...], list[str]] = {}
    for a in group:
        layouts.setdefault(tuple(tuple(ln.units) for ln in a.lanes), []).append(a.kind)
    for lanes, kinds in layouts.items():
        label = f" ({', '.join(kinds)})" if len(layouts) > 1 else ""
        out.append(f"  units per card{label}:\n", style="dim")
        a = next(x for x in group if x.kind == kinds[0])
        for ln, units in zip(a.lanes, lanes):
            n = len(units)
            out.append(
                f"    {visible(_label(a.slots[ln.slot]))}: {_runs(list(units), r)} ({n:,} unit{'s' * (n != 1)})\n"
            )
    return out


def _sharing(r: PlanResult) -> list[Text]:
    """The links cards share when they move data at once, and host memory above the root ports."""
    out: list[Text] = []
    if r.includes_transfers:
        return out
    widest = max((lk.cards_at_once for lk in r.sharing), default=0)
    for lk in (lk for lk in r.sharing if lk.cards_at_once == widest):
        who = ", ".join(lk.cards)
        rate = (
            "of unknown rate: their times are lower bounds"
            if lk.each_gbps is None or lk.hop.gbps is None
            else (f"{fmt_gbps(lk.each_gbps)} GB/s each (model)")
        )
        line = f"  {who} share {lk.hop.what} ({lk.direction}s), {rate}"
        out.append(Text(visible(line)))
    if out:
        head = f"Shared links, {widest} cards at once (every other link is a card's own; --json: every card count):"
        out.insert(0, Text(head, style="bold"))
    hm = r.host_memory
    if hm is not None:
        way = "load from" if hm.direction == "input" else "write to"
        together = (
            "" if hm.together_gbps is None else f", together ≤ {fmt_gbps(hm.together_gbps)} GB/s by their own links"
        )
        out.append(
            Text(
                visible(
                    f"host memory bandwidth unknown (no snapshot records it): {hm.cards} cards {way} it at once"
                    f"{together}; `{hm.settle}` measures it"
                ),
                style="yellow",
            )
        )
    return out
