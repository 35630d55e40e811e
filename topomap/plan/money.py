"""What a plan's arrangements cost on a priced lot (``LotTerms``: a declared lot's ``price:`` and
``periods:``). A calculation like the plan it prices: the arrangement's card-minutes × the price per
GPU-hour (or its total × the price of the host or the whole lot, when the lot is priced so), and, when
rental periods are offered, the smallest period that covers the total and what renting the lot for it
costs. Currencies are as given, never converted; two lots priced in different currencies are not
compared. (``plan/costs.py`` is the other kind of cost: the hidden time costs of transfers.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topomap.base.lotunits import Price, fmt_money, fmt_period
from topomap.model.snapshot import LotTerms
from topomap.plan.money_types import ArrangementCost, PlanMoney

if TYPE_CHECKING:
    from topomap.plan.result import Arrangement, PlanResult

__all__ = ["ArrangementCost", "PlanMoney", "cheaper", "cost_words", "plan_money"]


def plan_money(result: PlanResult, terms: LotTerms | None, host_cards: int) -> PlanMoney | None:
    """The costs of a plan's arrangements on a priced lot; None where the lot gives no price."""
    if terms is None or terms.price is None:
        return None
    p = terms.price
    price = Price(p.amount, p.currency, p.per, p.text)
    money = PlanMoney(price, tuple(terms.periods_s), host_cards * max(1, terms.hosts), max(1, terms.hosts))
    money.costs = [_cost(a, money) for a in result.arrangements]
    return money


def _cost(a: Arrangement, m: PlanMoney) -> ArrangementCost:
    """One arrangement: the work's cost, and the smallest period covering its total."""
    price = m.price
    if price.per == "gpu-hour":
        amount = a.card_s / 3600 * price.amount
        basis = f"{a.card_s / 60:.1f} card-min × {price.words()}"
    else:
        amount = a.total_s / 3600 * price.amount
        basis = f"{a.total_s / 60:.1f} min × {price.words()}"
    covering = [s for s in m.periods_s if s >= a.total_s - 1e-9]
    period = min(covering) if covering else None
    period_amount = None if period is None else _rent(period, m)
    fits = a.fit.verdict != "does not fit"
    beyond = bool(m.periods_s) and period is None
    partial = not a.transfers_complete or (a.kind == "coordinated" and a.exchange_s is None)
    known = a.fit.verdict != "unknown"
    return ArrangementCost(a.k, a.kind, fits, amount, basis, period, period_amount, beyond, partial, known)


def _rent(seconds: float, m: PlanMoney) -> float:
    """Renting the lot for a period: every card (or host, or the lot) for the whole period."""
    hours = seconds / 3600
    if m.price.per == "gpu-hour":
        return hours * m.price.amount * m.lot_cards
    if m.price.per == "host-hour":
        return hours * m.price.amount * m.hosts
    return hours * m.price.amount


def cost_words(c: ArrangementCost, m: PlanMoney) -> str:
    """ "12.45 USD (124.0 card-min × 2.49 USD per GPU-hour); the 3 d period covers it: 1,434 USD for the
    lot's 8 cards" — the work's cost and, with periods, what renting for the covering one costs."""
    text = ("at least " if c.lower_bound else "") + f"{fmt_money(c.amount, m.currency)} ({c.basis})"
    if c.period_s is not None and c.period_amount is not None:
        whole = f"the lot's {m.lot_cards} cards" if m.price.per == "gpu-hour" else "the lot"
        text += f"; the {fmt_period(c.period_s)} period covers it: {fmt_money(c.period_amount, m.currency)} for {whole}"
    elif c.beyond:
        text += f"; longer than every rental period offered (the longest is {fmt_period(max(m.periods_s))})"
    return text


def cheaper(a: PlanMoney | None, b: PlanMoney | None, names: tuple[str, str]) -> str | None:
    """Which of two priced lots does the flow's work for less (the cheapest arrangement that fits on
    each); None when either lot gives no price. Prices in two currencies are said, not compared."""
    if a is None or b is None:
        return None
    ca, cb = a.cheapest(), b.cheapest()
    if ca is None or cb is None:
        lost = names[0] if ca is None else names[1]
        return f"cost: no arrangement's tasks fit on {lost}, so its cost is not compared"
    if not a.price.comparable(b.price):
        return (
            f"cost: {names[0]} is priced in {a.currency}, {names[1]} in {b.currency}: "
            "not compared (topomap never converts currencies)"
        )
    said = (
        f"{names[0]} {fmt_money(ca.amount, a.currency)} ({ca.cards} card(s), {ca.arrangement}), "
        f"{names[1]} {fmt_money(cb.amount, b.currency)} ({cb.cards} card(s), {cb.arrangement})"
    )
    if abs(ca.amount - cb.amount) <= 0.005 * max(ca.amount, cb.amount):
        return f"cost: the work costs the same on both lots: {said} (calculated)"
    cheap = names[0] if ca.amount < cb.amount else names[1]
    return f"cost: {cheap} does the work for less: {said} (calculated)"
