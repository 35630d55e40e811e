"""The priced plan's values (an arrangement's cost, a plan's costs on its lot), apart from the calculation
(``plan/money.py``) so that the plan's result can hold them and the calculation read the result, neither
importing the other back."""

from __future__ import annotations

from dataclasses import dataclass, field

from topomap.base.lotunits import Price


@dataclass(frozen=True)
class ArrangementCost:
    """One arrangement's price: ``amount`` for the work (see :class:`PlanMoney`), and the smallest rental
    period covering its total (None: no periods offered, or ``beyond`` them all) with what it costs."""

    cards: int
    arrangement: str
    fits: bool
    amount: float
    basis: str
    period_s: float | None = None
    period_amount: float | None = None
    beyond: bool = False  # the total is longer than the longest period offered
    lower_bound: bool = False  # some time of the arrangement is unknown: at least this much
    fit_known: bool = True  # its memory fit is decided (False: ``fits`` means "may fit")

    def to_json(self) -> dict[str, object]:
        return {
            "cards": self.cards,
            "arrangement": self.arrangement,
            "fits": self.fits,
            "amount": self.amount,
            "basis": self.basis,
            "rental_period_s": self.period_s,
            "rental_period_amount": self.period_amount,
            "longer_than_every_period": self.beyond,
            "lower_bound": self.lower_bound,
        }


@dataclass
class PlanMoney:
    """What each arrangement of a plan costs on its lot: the price as given, the periods offered, the
    lot's cards (hosts × GPUs per host: what a rental period rents), and one cost per arrangement."""

    price: Price
    periods_s: tuple[float, ...]
    lot_cards: int
    hosts: int
    costs: list[ArrangementCost] = field(default_factory=list)

    @property
    def currency(self) -> str:
        return self.price.currency

    def cheapest(self, sure: bool = False) -> ArrangementCost | None:
        """The arrangement whose tasks fit (or may; with ``sure``, surely) that does the work for the least
        money."""
        ok = [c for c in self.costs if c.fits and (c.fit_known or not sure)]
        return min(ok, key=lambda c: (round(c.amount, 6), c.cards)) if ok else None

    def how(self) -> str:
        """How the figure is made, in words."""
        if self.price.per == "gpu-hour":
            return "card-minutes × the price per GPU-hour"
        whole = "the host" if self.price.per == "host-hour" else "the whole lot"
        return f"the total × the price of {whole} per hour ({whole} is paid whether its cards work or not)"

    def to_json(self) -> dict[str, object]:
        best = self.cheapest()
        return {
            "price": {"amount": self.price.amount, "currency": self.price.currency, "per": self.price.per},
            "how": self.how(),
            "rental_periods_s": list(self.periods_s),
            "lot_cards": self.lot_cards,
            "arrangements": [c.to_json() for c in self.costs],
            "cheapest": None if best is None else best.to_json(),
            "calculated": True,
        }
