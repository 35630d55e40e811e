"""The bounds the work block's parsers apply, the words of their messages and the README agree (issue 36
item 9: "1 PB/s" was "not a rate" under a "1 kB/s to 1 PB/s" range, "1 EB" "not a size" under "(under
a zettabyte)", "1 µs" refused though the README says durations start at 1 µs). Each stated bound is
accepted and the next value beyond it refused, with the stated range in the message."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from topomap.base.units import RATE_RANGE, SIZE_RANGE, SPAN_RANGE
from topomap.flow import parse_flow
from topomap.flow.spec import FlowError

ROOT = Path(__file__).resolve().parents[2]
FLOW = (SAMPLES / "flows" / "eight-documents.yaml").read_text()


def _with_duration(value: str) -> str:
    return FLOW.replace("duration: 12 min", f"duration: {value}")


def _with_rate(value: str) -> str:
    return FLOW.replace("  includes_transfers: true", f"  limits: {{storage_read: {value}}}")


def _with_size(value: str) -> str:
    return FLOW.replace("volume: 4 GiB", f"volume: {value}")


def _with_memory(value: str) -> str:
    return FLOW.replace("  includes_transfers: true", f"  memory_per_task: {value}")


def _refusal(text: str) -> str:
    with pytest.raises(FlowError) as err:
        parse_flow(text, "f.yaml")
    return str(err.value)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("1 µs", 1e-6), ("1 μs", 1e-6), ("1 us", 1e-6), ("0.001 ms", 1e-6), ("8760 h", 8760 * 3600.0),
     ("525600 min", 8760 * 3600.0), ("1 h 30 min", 5400.0)],
)  # fmt: skip
def test_durations_at_their_stated_bounds_are_accepted(value: str, seconds: float) -> None:
    flow = parse_flow(_with_duration(value), "f.yaml")
    assert flow.work is not None and flow.work.units[0].seconds == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("value", "why"),
    [("0.999 µs", "is shorter than a microsecond"), ("0.5 us", "is shorter than a microsecond"),
     ("8760.001 h", "is longer than a year"), ("366 h 8400 h", "is longer than a year")],
)  # fmt: skip
def test_durations_just_beyond_their_bounds_are_refused_with_the_range(value: str, why: str) -> None:
    line = _refusal(_with_duration(value))
    assert line == f"f.yaml:14: work: duration '{value}' {why}: durations are {SPAN_RANGE}"


@pytest.mark.parametrize(
    ("value", "gbps"),
    [("1 kB/s", 1e-6), ("1 KB/s", 1e-6), ("1000 B/s", 1e-6), ("1 PB/s", 1e6), ("1000 TB/s", 1e6), ("2 GB/s", 2.0)],
)
def test_rates_at_their_stated_bounds_are_accepted(value: str, gbps: float) -> None:
    flow = parse_flow(_with_rate(value), "f.yaml")
    assert flow.work is not None and flow.work.limits.storage_read_gbps == pytest.approx(gbps)


@pytest.mark.parametrize("value", ["0.999 kB/s", "999 B/s", "1.001 PB/s", "1 EB/s", "1 PiB/s"])
def test_rates_just_beyond_their_bounds_are_outside_the_stated_range(value: str) -> None:
    assert _refusal(_with_rate(value)).endswith(f"storage_read '{value}' is outside {RATE_RANGE}")


@pytest.mark.parametrize(("value", "size"), [("1 EB", 10**18), ("1000 PB", 10**18), ("0 B", 0), ("1 B", 1)])
def test_sizes_up_to_the_stated_bound_are_accepted(value: str, size: int) -> None:
    assert parse_flow(_with_size(value), "f.yaml").volumes[0] == size
    work = parse_flow(_with_memory(value), "f.yaml").work
    assert work is not None and work.memory_per_task_bytes == size


@pytest.mark.parametrize("value", ["1.001 EB", "1 EiB", "1 ZB", "1001 PB"])
def test_sizes_beyond_the_stated_bound_are_too_large_not_unreadable(value: str) -> None:
    assert _refusal(_with_size(value)) == (
        f"f.yaml:23: arrow 1: volume '{value}' is larger than 1 EB (the largest size topomap reads)"
    )
    assert _refusal(_with_memory(value)).endswith(
        f"memory_per_task '{value}' is larger than 1 EB (the largest size topomap reads)"
    )


def test_every_refusal_hint_states_the_same_range() -> None:
    for text, stated in (
        (_with_size("2 ZB"), SIZE_RANGE),
        (_with_memory("2 ZB"), SIZE_RANGE),
        (_with_rate("2 EB/s"), RATE_RANGE),
        (_with_rate("quick"), RATE_RANGE),
    ):
        with pytest.raises(FlowError) as err:
            parse_flow(text, "f.yaml")
        assert err.value.hint is not None and stated in err.value.hint, err.value.hint


def test_the_docs_state_the_bounds_the_parsers_apply() -> None:
    """The plan guide (docs/guides/plan.md, once the README's plan section) states the bounds."""
    page = (ROOT / "docs" / "guides" / "plan.md").read_text()
    assert f"from {SPAN_RANGE}" in page
    assert f"rates from {RATE_RANGE}" in page
    assert f"sizes {SIZE_RANGE}" in page
