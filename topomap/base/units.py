"""Human-readable durations and sizes, for every renderer."""

from __future__ import annotations


def fmt_seconds(sec: float | None) -> str:
    """1.2e-5 → "12 µs", 0.0215 → "21.5 ms", 8.59 → "8.59 s"; None → "—"."""
    if sec is None:
        return "—"
    if sec < 1e-3:
        return f"{sec * 1e6:.0f} µs"
    if sec < 1:
        return f"{sec * 1e3:.1f} ms"
    return f"{sec:.2f} s"


def fmt_span(sec: float | None) -> str:
    """A stretch of work time: 720 → "12 min", 3490 → "58.2 min", 0.021 → "21.0 ms", 0 → "0 s";
    None → "unknown". Under a minute it is :func:`fmt_seconds`."""
    if sec is None:
        return "unknown"
    if sec == 0:
        return "0 s"
    if sec >= 60:
        return f"{sec / 60:.1f}".removesuffix(".0") + " min"
    return fmt_seconds(sec)


def fmt_bytes(n: int | None) -> str:
    """2**30 → "1 GiB"; None → ""."""
    if n is None:
        return ""
    for unit, f in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f:
            return f"{n / f:.4g} {unit}"
    return f"{n} B"


def fmt_gbps(gbps: float | None) -> str:
    """A bandwidth with honest precision: 478.1 → "478", 63.015 → "63.0", 0.25 → "0.25"; None → "unknown"."""
    if gbps is None:
        return "unknown"
    if gbps >= 100:
        return f"{gbps:.0f}"
    if gbps >= 10:
        return f"{gbps:.1f}"
    if gbps >= 1:
        return f"{gbps:.2f}"
    return f"{gbps:.3g}"


def fmt_bandwidth(gbps: float | None, source: str | None = None, lower_bound: bool = False) -> str:
    """A bandwidth with its unit and provenance: "450 GB/s spec", "≥ 253 GB/s derived", "unknown"."""
    if gbps is None:
        return "unknown"
    text = ("≥ " if lower_bound else "") + f"{fmt_gbps(gbps)} GB/s"
    return f"{text} {source}" if source else text


# --- how much work a plan lays out (the flow's work block and `plan`'s options) ---

#: Units a plan lays out one by one, however they are given (count, durations, a CSV, --observed-units);
#: more are refused while reading (a huge count ran out of memory, a CSV of a million rows hung).
MAX_UNITS = 100_000
#: Cards a task spans or a plan arranges (--gantt): more is a typo (a 400-digit count overflowed: exit 4).
MAX_CARDS = 100_000


# --- the bounds of what the work block reads (issue 36: the parsers, their messages and the README
# disagreed: "1 PB/s" was "not a rate" under a "1 kB/s to 1 PB/s" range, "1 EB" "not a size" under
# "(under a zettabyte)", "1 µs" refused though durations start there). Each bound is inclusive. ---

#: The shortest duration a unit or the assembly may have, in seconds: one microsecond (a card
#: schedule resolves nothing shorter).
MIN_SPAN_S = 1e-6
#: The longest: one year of 365 days (8,760 h). Past it a value is a typo or hostile (300 nines
#: overflowed to infinity and broke every view of the plan).
MAX_SPAN_S = 365 * 24 * 3600.0
SPAN_RANGE = "1 µs to 8,760 h (a year)"
#: Shared rates (work.limits), in GB/s: 1 kB/s to 1 PB/s; outside them a transfer time is absurd.
MIN_RATE_GBPS = 1e-6
MAX_RATE_GBPS = 1e6
RATE_RANGE = "1 kB/s to 1 PB/s"
#: The largest size (an arrow's volume, memory per task, an exchange), in bytes: one exabyte (10^18,
#: within a 64-bit integer as every snapshot's integers are).
MAX_SIZE_BYTES = 10**18
SIZE_RANGE = "at most 1 EB"
