"""A priced lot's plan in money: one line per row of the plan's table (ties together, as the table has
them), then the cheapest. Renderables only; the CLI prints."""

from __future__ import annotations

from rich.text import Text

from topomap.base.lotunits import fmt_money, fmt_period
from topomap.plan import PlanResult
from topomap.plan.money import ArrangementCost, PlanMoney, cost_words
from topomap.plan.result import arrangement_name
from topomap.render.text import visible


def money_lines(r: PlanResult) -> list[Text]:
    """What each arrangement costs (calculated), the cheapest that fits, and the rental periods."""
    m = r.money
    if m is None:
        return []
    head = f"cost ({m.price.words()}, {m.how()}; calculated"
    if m.periods_s:
        head += f"; rental periods {', '.join(fmt_period(s) for s in m.periods_s)}"
    out = Text(visible(head + "):") + "\n", style="bold")
    by_row = {(c.cards, c.arrangement): c for c in m.costs}
    for group in r.ties():
        a = group[0]
        c = by_row.get((a.k, a.kind))
        if c is None:
            continue
        kind = arrangement_name(a, r) + (f" (+{len(group) - 1})" if len(group) > 1 else "")
        fit = "" if c.fits else " — does not fit"
        out.append(visible(f"  {a.k:>2} {kind}: {cost_words(c, m)}{fit}") + "\n")
    best = m.cheapest()
    if best is not None:
        which = "cheapest that fits" if best.fit_known else "cheapest that may fit (its memory fit is unknown)"
        out.append(visible(_cheapest(which, best, r, m)))
        sure = m.cheapest(sure=True)
        if not best.fit_known and sure is not None:
            out.append("\n")
            out.append(visible(_cheapest("cheapest that fits", sure, r, m)))
    return [out]


def _cheapest(which: str, c: ArrangementCost, r: PlanResult, m: PlanMoney) -> str:
    """ "cheapest that fits: 2 card(s), one task at a time: 18.18 USD", the arrangement named as the table does."""
    row = next((a for a in r.arrangements if (a.k, a.kind) == (c.cards, c.arrangement)), None)
    name = arrangement_name(row, r) if row is not None else c.arrangement
    return f"{which}: {c.cards} card(s), {name}: {fmt_money(c.amount, m.currency)}"
