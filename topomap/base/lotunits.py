"""What a catalogue line writes, read in one place: a link rate ("400 Gb/s"), a size ("180 GB"), a rental
period ("7 d"), a price ("2.49 USD per GPU-hour"), and whether two memory sizes are one card's. Every
parser returns None for text it cannot read (the caller names the file, line and field); none guesses a
unit that is not written. Rates, sizes and periods are written as everywhere else (:mod:`topomap.base.units`
reads them); this module adds what a lot asks of them (a positive rate, a size under a zettabyte).

Prices keep their currency as given: topomap never converts one currency to another, and two prices in
different currencies are never compared (:meth:`Price.comparable`). A price says what it is per (a GPU,
a host or the whole lot, each an hour): "20 USD per hour" says none of them and is refused.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from topomap.base import units

_NUMBER = f"({units.NUMBER})"

# --- link rates ------------------------------------------------------------------------------------


def parse_rate_gbit(text: str) -> float | None:
    """A line rate in gigabits per second: "400 Gb/s", "400Gbps", "400 GbE", "400G" (as NIC catalogues
    write it), "3.2 Tb/s", "100 Mb/s". A bare number (no unit) is refused, and so is a byte rate
    ("50 GB/s", "50 GBps"): a NIC's rate is written in bits (:func:`topomap.base.units.parse_rate_gbit`)."""
    value = units.parse_rate_gbit(text)
    return value if value is not None and math.isfinite(value) and value > 0 else None


# --- sizes -----------------------------------------------------------------------------------------


def parse_size_bytes(text: str) -> int | None:
    """A memory size in bytes: "180 GB" (decimal, as vendors sell it), "192 GiB" (binary), "2 TB"; a bare
    number or a bare "80G" is refused (:func:`topomap.base.units.parse_size`)."""
    value = units.parse_size(text)
    return int(value) if value is not None and 0 < value < 1e21 else None


#: How far above the smaller of two sizes the larger may be for both to name one card's memory. One card
#: is written three ways: in sold gigabytes ("80 GB"), in binary ones ("80 GiB", 7.4 % more), and as
#: ``nvidia-smi`` prints it after the driver's reserve ("81559 MiB", 6.9 % more); vendors also write the
#: physical stacks or the usable part (B200 "192 GB" or "180 GB", 6.7 %; GB200 "192 GiB" against the
#: parts table's 186 GB, 10.8 %). The nearest sizes of different cards differ more: an A100's 40960
#: MiB against an L40S's 48 GB by 11.8 %, MI325X's 256 GB against MI355X's 288 GB by 12.5 % (two cards
#: closer than that are not told apart: an H100's 81559 MiB is 9.9 % below an H100 NVL's 94 GB).
MEMORY_CLASS_SPREAD = 1.11


def same_memory_class(a_bytes: int, b_bytes: int) -> bool:
    """Two memory sizes (bytes) name the same card's memory: 80 GB, 80 GiB and 81559 MiB do; 40 GB and
    80 GB do not (:data:`MEMORY_CLASS_SPREAD`)."""
    low, high = sorted((a_bytes, b_bytes))
    return low > 0 and high <= low * MEMORY_CLASS_SPREAD


# --- rental periods --------------------------------------------------------------------------------


def parse_period_seconds(text: str) -> float | None:
    """A rental period in seconds: "3 d", "7 days", "1 week", "12 h" (any duration's spelling:
    :func:`topomap.base.units.parse_duration`). Months are refused (their length varies): write them in days."""
    value = units.parse_duration(text)
    return value if value is not None and math.isfinite(value) and value > 0 else None


def fmt_period(seconds: float) -> str:
    """A rental period as it is usually written: 259200 → "3 d", 604800 → "7 d", 43200 → "12 h"."""
    if seconds % 86400 == 0:
        return f"{seconds / 86400:g} d"
    return f"{seconds / 3600:g} h"


# --- prices ----------------------------------------------------------------------------------------

PricedPer = Literal["gpu-hour", "host-hour", "lot-hour"]

_PRICE = re.compile(
    rf"^\s*(?:(?P<sym>[$€£¥])\s*)?{_NUMBER}\s*(?P<cur>[A-Za-z]{{3}})?\s*(?:(?:/|per|an|a)\s*(?P<per>.+?))?\s*$",
    re.IGNORECASE,
)
_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}
_PER = {
    "gpu-hour": "gpu-hour", "gpu hour": "gpu-hour", "gpu-hr": "gpu-hour", "gpu/hour": "gpu-hour",
    "gpu/hr": "gpu-hour", "gpu-h": "gpu-hour", "card-hour": "gpu-hour", "gpu per hour": "gpu-hour",
    "host-hour": "host-hour", "host hour": "host-hour", "instance-hour": "host-hour", "instance hour": "host-hour",
    "node-hour": "host-hour", "node hour": "host-hour", "instance/hour": "host-hour", "node/hour": "host-hour",
    "lot-hour": "lot-hour", "lot hour": "lot-hour", "hour per lot": "lot-hour", "lot per hour": "lot-hour",
    "hour for the lot": "lot-hour", "lot/hour": "lot-hour",
}  # fmt: skip
#: "per hour" alone: of one GPU, one host or the whole lot? Catalogues write all three so; refused.
_BARE_HOUR = frozenset({"hour", "hr", "h"})


@dataclass(frozen=True)
class Price:
    """A rental price as given: ``amount`` ``currency`` per ``per`` (a GPU-hour, one host's hour, or
    the whole lot's hour). ``text`` is the price as written."""

    amount: float
    currency: str
    per: PricedPer
    text: str

    def comparable(self, other: Price) -> bool:
        """Two prices can be set against each other only in one currency (never converted)."""
        return self.currency == other.currency

    def words(self) -> str:
        """ "2.49 USD per GPU-hour", "98.32 USD per host-hour", "40 USD per hour for the lot"."""
        per = {"gpu-hour": "per GPU-hour", "host-hour": "per host-hour", "lot-hour": "per hour for the lot"}
        return f"{self.amount:g} {self.currency} {per[self.per]}"


PRICE_HINT = (
    'write amount, currency and what it is per: "2.49 USD per GPU-hour", "19.92 USD per host-hour" '
    'or "39.84 USD per lot-hour" ($2.49/GPU-hour and instance-hour are read too)'
)


def parse_price(text: str) -> Price | None:
    """ "2.49 USD per GPU-hour", "$2.49/GPU-hour", "98.32 USD per instance-hour", "40 EUR per lot-hour".
    A price without a currency, without what it is per, per a bare "hour" (of a GPU, a host or the lot?)
    or per something else than an hour is refused: :func:`price_problem` says which."""
    m = _PRICE.match(text)
    if m is None or m.group("per") is None:
        return None
    currency = (m.group("cur") or _SYMBOLS.get(m.group("sym") or "", "")).upper()
    per = _PER.get(_per_words(m.group("per")))
    amount = float(m.group(2))
    if not currency or per is None or not (math.isfinite(amount) and amount >= 0):
        return None
    return Price(amount, currency, per, text.strip())  # type: ignore[arg-type]


def _per_words(per: str) -> str:
    return " ".join(per.lower().replace("_", "-").split())


def price_problem(text: str) -> str:
    """Why ``text`` is not a price (:func:`parse_price` refused it), in words."""
    m = _PRICE.match(text)
    if m is None:
        return "not an amount with its currency and what it is per"
    currency = m.group("cur") or m.group("sym")
    per = m.group("per")
    if per is None:
        return "without its currency or what it is per" if currency is None else "without what it is per"
    bare = _per_words(per) in _BARE_HOUR
    if currency is None:
        return "without its currency" + (", and per hour of what: one GPU, one host or the lot?" if bare else "")
    if bare:
        return "per hour of what: one GPU, one host or the whole lot?"
    return "not per an hour of a GPU, a host or the lot"


def fmt_money(amount: float, currency: str) -> str:
    """ "12.18 USD", "287.52 USD" (with cents under 1,000), "1,434 USD" (whole units above)."""
    if amount < 1000:
        return f"{amount:,.2f} {currency}"
    return f"{amount:,.0f} {currency}"
