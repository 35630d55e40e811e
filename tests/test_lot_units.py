"""What a catalogue line writes, read in one place (topomap.base.lotunits): rates in bits with their unit,
sizes, rental periods, prices with their currency as given (never converted)."""

from __future__ import annotations

import pytest

from topomap.base.lotunits import (
    fmt_money,
    fmt_period,
    parse_period_seconds,
    parse_price,
    parse_rate_gbit,
    parse_size_bytes,
)


@pytest.mark.parametrize(
    ("text", "gbit"),
    [("400 Gb/s", 400), ("400Gbps", 400), ("400 GbE", 400), ("400G", 400), ("3.2 Tb/s", 3200), ("100 Mb/s", 0.1)],
)
def test_rates_in_bits_with_their_unit(text: str, gbit: float) -> None:
    assert parse_rate_gbit(text) == pytest.approx(gbit)


@pytest.mark.parametrize("text", ["400", "50 GB/s", "50 GBps", "", "fast", "-400 Gb/s"])
def test_a_rate_without_a_unit_or_in_bytes_is_refused(text: str) -> None:
    assert parse_rate_gbit(text) is None


def test_sizes_decimal_as_sold_or_binary() -> None:
    assert parse_size_bytes("180 GB") == 180 * 10**9
    assert parse_size_bytes("192 GiB") == 192 * 2**30
    assert parse_size_bytes("2 TB") == 2 * 10**12
    assert parse_size_bytes("80") is None


def test_periods_in_hours_days_weeks_never_months() -> None:
    assert parse_period_seconds("3 d") == 3 * 86400
    assert parse_period_seconds("1 week") == 7 * 86400
    assert parse_period_seconds("12 h") == 12 * 3600
    assert parse_period_seconds("1 month") is None
    assert fmt_period(7 * 86400) == "7 d" and fmt_period(12 * 3600) == "12 h"


def test_prices_keep_their_currency_and_say_what_they_are_per() -> None:
    p = parse_price("2.49 USD per GPU-hour")
    assert p is not None and (p.amount, p.currency, p.per) == (2.49, "USD", "gpu-hour")
    host = parse_price("98.32 USD per instance-hour")
    assert host is not None and host.per == "host-hour"
    lot = parse_price("40 EUR per hour")
    assert lot is not None and lot.per == "lot-hour" and lot.currency == "EUR"
    sym = parse_price("$2.49/GPU-hour")
    assert sym is not None and sym.currency == "USD"
    assert not p.comparable(lot)  # never converted, so never compared
    assert parse_price("2.49 per GPU-hour") is None and parse_price("2.49 USD per GPU-month") is None
    assert fmt_money(12.179, "USD") == "12.18 USD" and fmt_money(1434.24, "USD") == "1,434 USD"
