"""Sizes, durations and rates: read in one place, written in one place (issue 33 item 3).

Every size, duration and rate a user writes, in a flow, a lot declaration or an option, is read here,
with one set of spellings (this list is also the documentation site's page ``docs/reference/units.md``,
which ``scripts/docs_reference.py`` writes from it):

- **Sizes**: ``B``; ``kB`` (or ``KB``), ``MB``, ``GB``, ``TB``, ``PB``, ``EB`` are decimal (10^3 steps, as
  vendors sell memory); ``KiB``, ``MiB``, ``GiB``, ``TiB``, ``PiB``, ``EiB`` are binary (2^10 steps; ``Gi``
  without its ``B`` too, as Kubernetes writes it). Any case, with or without a space: ``2 GiB``, ``500mb``.
  A bare ``K``, ``M``, ``G`` or ``T`` (``1g``) is refused as ambiguous, except in the two options that
  mirror a GPU tool's own flag, where it is binary as there: ``measure --size`` and ``nccl --sizes``.
- **Durations**: ``µs`` (or ``us``), ``ms``, ``s`` (``sec``), ``min``, ``h`` (``hr``, ``hour``), ``d``
  (``day``), ``w`` (``week``), with or without a space, in any case, one or several parts: ``1min``,
  ``1.5 h``, ``1 h 30 min``. A bare ``m`` (a minute or a month?) is refused, and so are months (their
  length varies). A bare number is seconds only where the option says so (``record --interval``).
- **Rates**: bits and bytes are kept apart by the case of the ``b``. ``Gb/s``, ``Gbit/s``, ``Gbps``,
  ``GbE`` and a bare ``400G`` (as NIC catalogues write it) are bits per second; ``GB/s``, ``GBps`` and
  ``MiB/s`` are bytes per second. A field in bytes (a flow's storage rate) refuses a bit rate and a field
  in bits (a NIC's line rate) refuses a byte rate, each saying so; neither converts the other silently.

The parsers return None for text they cannot read (the caller names the file, line, field or option,
and says :data:`SIZE_SPELLINGS`, :data:`DURATION_SPELLINGS` or :data:`RATE_SPELLINGS`); the ``*_problem``
functions say why in words. The formatters below them write sizes, durations and rates for every view.
"""

from __future__ import annotations

import functools
import re
from typing import Literal

# --- reading -------------------------------------------------------------------------------------

#: A number as every value is written: digits with an optional fraction (``12``, ``1.5``, ``.5``); no
#: sign, no exponent, no thousands separator. ASCII digits only (``\d`` would take other scripts' digits).
NUMBER = r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+"

SIZE_SPELLINGS = "kB, MB, GB, TB, PB, EB are decimal, KiB, MiB, GiB, TiB, PiB, EiB binary"
DURATION_SPELLINGS = "in µs (or us), ms, s, min, h, d or w"
#: The two options that mirror a GPU tool's own flag read a bare letter as that tool does.
BINARY_LETTERS = "a bare K, M, G or T is binary (1G = 1 GiB), as nccl-tests' -b and -e read it"
RATE_SPELLINGS = "bytes a second as GB/s, MB/s or MiB/s, bits as Gb/s, Gbit/s or 400G"

_PREFIX = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6, "z": 7}
_SIZE = re.compile(rf"^\s*({NUMBER})\s*(?:(?P<p>[kmgtpez])(?P<i>i)?(?P<b>b)?|(?P<bytes>b|bytes?))?\s*$", re.IGNORECASE)


def _size_parts(text: str) -> tuple[float, int, Literal["bare", "letter", "decimal", "binary"]] | None:
    """The number, the prefix's power of 1000 or 1024 and how the unit was written; None: not a size."""
    m = _SIZE.match(text)
    if m is None:
        return None
    value = float(m.group(1))
    if m.group("bytes"):
        return value, 0, "decimal"
    p = m.group("p")
    if p is None:
        return value, 0, "bare"
    power = _PREFIX[p.lower()]
    if m.group("i"):
        return value, power, "binary"
    return value, power, "decimal" if m.group("b") else "letter"


def parse_size(text: str, *, binary_letters: bool = False, bare: float | None = None) -> float | None:
    """A size in bytes, unbounded (``1 ZB`` is a size, only too large: :func:`size_problem`); None when
    ``text`` is not one. "2 GiB" → 2147483648.0, "500 MB" → 5e8, "1.5TB" → 1.5e12, "80Gi" → 80 × 2^30.

    ``binary_letters``: a bare K, M, G, T is binary (nccl-tests' ``-b 8G``); otherwise it is refused.
    ``bare``: the bytes a bare number stands for (1 for nccl-tests, 2^20 for nvbandwidth's MiB); None
    refuses a bare number."""
    parts = _size_parts(text)
    if parts is None:
        return None
    value, power, how = parts
    if how == "bare":
        return None if bare is None else value * bare
    if how == "letter" and not binary_letters:
        return None
    base = 1024 if how in ("binary", "letter") else 1000
    return value * float(base**power)


def size_problem(text: str, *, binary_letters: bool = False, bare: float | None = None) -> str | None:
    """Why ``text`` is refused as a size, in words after the quoted value ("is not a size", "has no unit",
    "is ambiguous: …", "is larger than 1 EB …"); None when it is a size within :data:`MAX_SIZE_BYTES`."""
    value = parse_size(text, binary_letters=binary_letters, bare=bare)
    if value is not None:
        return None if value <= MAX_SIZE_BYTES else "is larger than 1 EB (the largest size topomap reads)"
    parts = _size_parts(text)
    if parts is None:
        return "is not a size"
    if parts[2] == "bare":
        return "has no unit"
    letter = text.strip()[-1].upper()
    return f"is ambiguous: write {letter}B (10^{3 * parts[1]} bytes) or {letter}iB (2^{10 * parts[1]})"


_SECONDS = {
    "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6,  # µ as the micro sign or the Greek letter mu: both are typed
    "ms": 1e-3,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
    "w": 604800.0, "wk": 604800.0, "week": 604800.0, "weeks": 604800.0,
}  # fmt: skip
_PART = re.compile(rf"\s*({NUMBER})\s*([A-Za-z\u00b5\u03bc]+)\s*")
_BARE_SECONDS = re.compile(rf"^\s*({NUMBER})\s*$")


def parse_duration(text: str | float, *, bare_seconds: bool = False) -> float | None:
    """A duration in seconds: "12 min" → 720.0, "1min" → 60.0, "1 h 30 min" → 5400.0, "500 µs" → 0.0005;
    None for words, a number that is not text (YAML's ``12``) and a bare number, unless ``bare_seconds``
    (then "0.5" → 0.5). Unbounded: the caller applies its own range."""
    if not isinstance(text, str):
        return None
    if bare_seconds:
        m = _BARE_SECONDS.match(text)
        if m is not None:
            return float(m.group(1))
    return _parse_duration(text) if len(text) <= 64 else _parse_duration.__wrapped__(text)


@functools.lru_cache(maxsize=4096)  # a batch's CSV repeats its durations: "12 min" 100,000 times
def _parse_duration(text: str) -> float | None:
    pos, total, seen = 0, 0.0, False
    while pos < len(text):
        m = _PART.match(text, pos)
        if m is None or m.group(2).lower() not in _SECONDS:
            return None
        total += float(m.group(1)) * _SECONDS[m.group(2).lower()]
        pos, seen = m.end(), True
    return total if seen else None


_RATE = re.compile(
    rf"^\s*({NUMBER})\s*(?P<p>[kmgtpe])?(?P<i>i)?(?P<u>bits?|bytes?|b)?(?P<per>\s*/\s*s(?:ec)?|ps|e)?\s*$",
    re.IGNORECASE,
)
RateUnit = Literal["bits", "bytes"]


def parse_rate(text: str) -> tuple[float, RateUnit] | None:
    """A rate as written, in its own unit's base (bits or bytes per second) and which unit: "2 GB/s" →
    (2e9, "bytes"), "500 MiB/s" → (524288000.0, "bytes"), "400 Gb/s", "400Gbps", "400 GbE", "400G" →
    (4e11, "bits"), "3.2 Tb/s" → (3.2e12, "bits"); None: not a rate (no unit, a size without "/s")."""
    m = _RATE.match(text)
    if m is None:
        return None
    p, u, per = m.group("p"), m.group("u") or "", m.group("per") or ""
    if p is None and m.group("i"):
        return None
    bits = u.lower().startswith("bit") or u == "b" or per.lower() == "e" or (not u and not per)
    if not u and (per or p is None):
        return None  # "2 G/s", "2 GE": of what? and a bare number has no unit
    if u and not per and not bits:
        return None  # "50 GB" is a size
    power = _PREFIX[p.lower()] if p else 0
    scale = (1024 if m.group("i") else 1000) ** power
    return float(m.group(1)) * scale, "bits" if bits else "bytes"


def parse_rate_gbps(text: str) -> float | None:
    """A rate in bytes per second, as GB/s (10^9 bytes a second): "2 GB/s" → 2.0, "500 MiB/s" →
    0.524288; None for a bit rate ("16 Gb/s") and anything not a rate (:func:`rate_problem`)."""
    rate = parse_rate(text)
    return rate[0] / 1e9 if rate is not None and rate[1] == "bytes" else None


def parse_rate_gbit(text: str) -> float | None:
    """A rate in bits per second, as Gb/s: "400 Gb/s", "400Gbps", "400 GbE", "400G" → 400.0, "100 Mb/s" →
    0.1; None for a byte rate ("50 GB/s") and anything not a rate (:func:`rate_problem`)."""
    rate = parse_rate(text)
    return rate[0] / 1e9 if rate is not None and rate[1] == "bits" else None


def rate_problem(text: str, want: RateUnit) -> str:
    """Why ``text`` is refused where a rate in ``want`` is read, in words after the quoted value."""
    rate = parse_rate(text)
    if rate is None:
        return "has no unit" if _BARE_SECONDS.match(text) else "is not a rate"
    if rate[1] == "bits" and want == "bytes":
        return "is in bits (a lowercase b, or G alone): this rate is in bytes, e.g. 2 GB/s (= 16 Gb/s)"
    if rate[1] == "bytes" and want == "bits":
        return "is in bytes (a capital B): this rate is in bits, e.g. 400 Gb/s (= 50 GB/s)"
    return "is not a rate"


# --- writing -------------------------------------------------------------------------------------


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


def fmt_mib(n: int) -> str:
    """A file size or limit in whole MiB: 64 MiB → "64 MiB", 1 GiB → "1024 MiB"; under a MiB in bytes: "512 bytes"."""
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n} bytes"


def fmt_gbit(gbit: float) -> str:
    """A line rate in bits, as NIC catalogues write it: 400 → "400 Gb/s", 12.5 → "12.5 Gb/s"."""
    return f"{gbit:g} Gb/s"


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


def fmt_byte_rate(bps: float | None) -> str:
    """Bytes per second → "1.2 GB/s" (decimal, as link rates are quoted), "512 B/s"; None → "—"."""
    if bps is None:
        return "—"
    for unit, f in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bps >= f:
            return f"{bps / f:.3g} {unit}"
    return f"{bps:.0f} B/s"


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
