"""What a catalogue line writes, read in one place (topomap.base.lotunits): rates in bits with their unit,
sizes, rental periods, prices with their currency as given (never converted)."""

from __future__ import annotations

import pytest

from topomap.base.lotunits import (
    Price,
    fmt_money,
    fmt_period,
    parse_period_seconds,
    parse_price,
    parse_rate_gbit,
    parse_size_bytes,
    price_problem,
    same_memory_class,
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
    lot = parse_price("40 EUR per lot-hour")
    assert lot is not None and lot.per == "lot-hour" and lot.currency == "EUR"
    assert parse_price(lot.words()) == Price(40, "EUR", "lot-hour", "40 EUR per hour for the lot")
    sym = parse_price("$2.49/GPU-hour")
    assert sym is not None and sym.currency == "USD"
    assert not p.comparable(lot)  # never converted, so never compared
    assert parse_price("2.49 per GPU-hour") is None and parse_price("2.49 USD per GPU-month") is None
    assert fmt_money(12.179, "USD") == "12.18 USD" and fmt_money(1434.24, "USD") == "1,434 USD"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("2.49", "without its currency or what it is per"),
        ("2.49 USD", "without what it is per"),
        ("$2.49", "without what it is per"),
        ("20 USD per hour", "per hour of what: one GPU, one host or the whole lot?"),
        ("20 USD/h", "per hour of what: one GPU, one host or the whole lot?"),
        ("20 USD an hour", "per hour of what: one GPU, one host or the whole lot?"),
        ("20 per hour", "without its currency, and per hour of what: one GPU, one host or the lot?"),
        ("2.49 per GPU-hour", "without its currency"),
        ("2.49 USD per GPU-month", "not per an hour of a GPU, a host or the lot"),
        ("cheap", "not an amount with its currency and what it is per"),
    ],
)
def test_an_ambiguous_price_is_refused_and_the_refusal_says_what_is_missing(text: str, problem: str) -> None:
    assert parse_price(text) is None
    assert price_problem(text) == problem


@pytest.mark.parametrize(
    ("text", "per"),
    [
        ("2.49 USD per GPU-hour", "gpu-hour"),
        ("$2.49/GPU-hour", "gpu-hour"),
        ("19.92 USD per host-hour", "host-hour"),
        ("98.32 USD per instance-hour", "host-hour"),
        ("39.84 USD per lot-hour", "lot-hour"),
        ("39.84 USD per hour for the lot", "lot-hour"),
    ],
)
def test_the_spellings_the_price_hint_names_are_read(text: str, per: str) -> None:
    price = parse_price(text)
    assert price is not None and price.per == per


MIB = 2**20


@pytest.mark.parametrize(
    ("reading", "sold"),
    [
        (81559 * MIB, 80 * 10**9),  # NVIDIA H100 80GB HBM3, nvidia-smi -q (tests/data/real-topologies)
        (81559 * MIB, 80 * 2**30),  # the same card written in GiB
        (80 * 2**30, 80 * 10**9),
        (143771 * MIB, 141 * 10**9),  # H200
        (40960 * MIB, 40 * 10**9),  # A100 40GB
        (183359 * MIB, 180 * 10**9),  # B200, sold as 180 GB
        (183359 * MIB, 192 * 10**9),  # and as 192 GB
        (46068 * MIB, 48 * 10**9),  # NVIDIA L40S, --query-gpu memory.total (tests/data/real-topologies)
        (192 * 2**30, 186 * 10**9),  # Azure's GB200 "192 GiB", the parts table's 186 GB
    ],
)
def test_spellings_of_one_cards_memory_are_one_class(reading: int, sold: int) -> None:
    assert same_memory_class(reading, sold) and same_memory_class(sold, reading)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (40 * 10**9, 80 * 10**9),  # A100 40GB against 80GB
        (40960 * MIB, 48 * 10**9),  # an A100 40GB's reading against an L40S
        (81559 * MIB, 141 * 10**9),  # H100 against H200
        (256 * 10**9, 288 * 10**9),  # MI325X against MI355X
        (0, 80 * 10**9),
    ],
)
def test_sizes_of_different_cards_are_not_one_class(a: int, b: int) -> None:
    assert not same_memory_class(a, b) and not same_memory_class(b, a)
