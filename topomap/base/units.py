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
