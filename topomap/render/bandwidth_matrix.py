"""`topomap matrix --bandwidth` and the `measure` summary: measured GB/s beside nominal.

Pure functions: snapshot in, text or a rich renderable out (the CLI prints).
"""

from __future__ import annotations

from typing import Any

from topomap.base.units import fmt_bytes, fmt_gbps
from topomap.model.measured import DEGRADED_FRACTION, degraded_links, measured_bandwidth, nominal_gbps, unusable_pairs
from topomap.model.snapshot import MeasureKind, Measurement, Snapshot
from topomap.render.attached_view import attached_json, attached_lines
from topomap.render.text import visible

_W = 14


def _cell(snap: Snapshot, a: str, b: str, bad: dict[frozenset[str], str]) -> str:
    if a == b:
        return "X"
    if frozenset({a, b}) in bad:
        return "UNUSABLE"
    got = measured_bandwidth(snap, a, b, "d2d")
    if got is None:
        return "—"
    return _fmt(snap, a, b, got[0], got[1])


def _fmt(snap: Snapshot, a: str, b: str, gbps: float, m: Measurement) -> str:
    nominal = nominal_gbps(snap, a, b)
    flag = "!" if nominal is not None and m.route != "staged" and gbps < DEGRADED_FRACTION * nominal[0] else ""
    staged = "s" if m.route == "staged" else ""
    return f"{gbps:.1f}{staged}{flag}"


def _method_line(snap: Snapshot) -> str:
    used = sorted(
        {
            (m.origin, m.size_bytes, m.repetitions, m.samples)
            for m in snap.measurements
            if m.kind not in ("latency", "collective")
        },
        key=str,
    )
    parts = []
    for origin, size, reps, samples in used:
        detail = ", ".join(
            x
            for x in (
                f"{fmt_bytes(size)} copies" if size else "size not recorded",
                f"{reps} per sample" if reps else "",
                f"median of {samples}" if samples else "",
            )
            if x
        )
        parts.append(f"{visible(origin)} ({detail})")
    return "; ".join(parts)


def render_bandwidth_matrix(snap: Snapshot) -> str:
    """GPU→GPU measured GB/s (row = source, column = destination), then host↔GPU, with a legend."""
    results = attached_lines(snap)
    if not any(m.median_gbps is not None for m in snap.measurements):
        what = "copy bandwidth" if results else "bandwidth"
        return (
            (
                f"no measured {what} in this snapshot: every figure would be nominal (spec)\n"
                "  settle it with `topomap measure SNAP -o OUT` on the machine, or `topomap attach SNAP "
                "nvbandwidth.txt -o OUT`\n"
            )
            + "".join(f"\n{line}" for line in results)
            + ("\n" if results else "")
        )
    ids = [f"gpu{g.index}" for g in snap.gpus]
    bad = unusable_pairs(snap)
    lines = ["GPU→GPU copy bandwidth, GB/s measured (row = source, column = destination)"]
    lines.append(" " * 8 + "".join(f"{i.upper():>{_W}}" for i in ids))
    for a in ids:
        lines.append(f"{a.upper():<8}" + "".join(f"{_cell(snap, a, b, bad):>{_W}}" for b in ids))
    lines.append("")
    lines.append("host↔GPU copy bandwidth, GB/s measured; nominal GB/s (spec) of the GPU's PCIe link")
    lines.append(f"{'':<8}{'host→GPU':>{_W}}{'GPU→host':>{_W}}{'nominal':>{_W}}")
    for a in ids:
        h2d, d2h = measured_bandwidth(snap, "host", a, "h2d"), measured_bandwidth(snap, a, "host", "d2h")
        nominal = nominal_gbps(snap, "host", a)
        lines.append(
            f"{a.upper():<8}"
            + f"{_fmt(snap, 'host', a, *h2d) if h2d else '—':>{_W}}"
            + f"{_fmt(snap, a, 'host', *d2h) if d2h else '—':>{_W}}"
            + f"{(f'{nominal[0]:g}' if nominal else 'unknown'):>{_W}}"
        )
    lines += [
        "",
        "Legend:",
        "  N.N      = GB/s measured (median), one direction, data verified where the origin checks it",
        "  s        = staged through host memory (peer access not enabled)",
        f"  !        = under {DEGRADED_FRACTION:.0%} of the link's nominal (spec) rate",
        "  UNUSABLE = peer copies returned wrong data or hung: do not use P2P on this pair",
        "  —        = not measured (`topomap measure` on the machine settles it)",
        "  unknown  = nominal unknown: the snapshot does not record the GPU's PCIe link (a probe does)",
        f"  measured by: {_method_line(snap)}",
    ]
    lines += ["", *results] if results else []
    return "\n".join(lines) + "\n"


_SETTLE = "`topomap measure SNAP -o OUT` on the machine, or `topomap attach SNAP nvbandwidth.txt -o OUT`"


def bandwidth_json(snap: Snapshot) -> dict[str, Any]:
    """`matrix --bandwidth --json`: what the text matrix shows, as data. Every figure is GB/s (1e9 bytes/s),
    one direction; ``source`` is measured (with origin, method and data check) or unknown, and each
    theoretical ``nominal_gbps`` names its basis (the PCIe link or NVLink bundle it is the rate of)."""
    ids = [f"gpu{g.index}" for g in snap.gpus]
    bad = unusable_pairs(snap)
    measured = any(m.median_gbps is not None for m in snap.measurements)
    return {
        "unit": "GB/s (1e9 bytes per second), one direction",
        "measured": measured,
        "settle": None if measured else _SETTLE,
        "gpu_to_gpu": [_figure(snap, a, b, "d2d", bad.get(frozenset({a, b}))) for a in ids for b in ids if a != b],
        "host_to_gpu": [_figure(snap, "host", a, "h2d", None) for a in ids],
        "gpu_to_host": [_figure(snap, a, "host", "d2h", None) for a in ids],
        "degraded": degraded_links(snap),
        "degraded_below_fraction_of_nominal": DEGRADED_FRACTION,
        "measured_by": _method_line(snap) or None,
        "collectives": attached_json(snap),
    }


def _figure(snap: Snapshot, a: str, b: str, kind: MeasureKind, unusable: str | None) -> dict[str, Any]:
    """One direction between two ends: the measured median (or why there is none) beside the nominal rate."""
    got = measured_bandwidth(snap, a, b, kind)
    nominal = nominal_gbps(snap, a, b)
    out: dict[str, Any] = {
        "from": a,
        "to": b,
        "kind": kind,
        "gbps": None,
        "source": "unknown",
        "nominal_gbps": None if nominal is None else nominal[0],  # theoretical
        "nominal_basis": "unknown: the snapshot does not record the link's rate" if nominal is None else nominal[1],
    }
    if unusable is not None:
        return {**out, "status": "unusable", "reason": unusable}
    if got is None:
        return {**out, "status": "not measured", "settle": _SETTLE}
    gbps, m = got
    return {
        **out,
        "status": "measured",
        "gbps": gbps,
        "source": "measured",
        "min_gbps": m.min_gbps,
        "max_gbps": m.max_gbps,
        "route": m.route,
        "origin": m.origin,
        "method": m.method,
        "verified": m.verified,
        "size_bytes": m.size_bytes,
        "samples": m.samples,
        "host_numa_node": m.host_numa_node,
    }


def measurements_table(snap: Snapshot) -> Any:
    """A rich table of every measurement: what, route, median and spread, verified, origin."""
    from rich.table import Table  # start-up: `matrix --bandwidth` prints plain text and never needs rich
    from rich.text import Text

    t = Table(title="Measured (GB/s = 1e9 bytes/s; nominal is spec)", show_lines=False)
    for col in (
        "what",
        "from → to",
        "route",
        "median",
        "spread (min–max)",
        "nominal GB/s (spec)",
        "verified",
        "origin",
    ):
        t.add_column(col)
    for m in snap.measurements:
        if m.kind == "latency":
            value, spread = (f"{m.median_us:.1f} µs" if m.median_us is not None else "—"), ""
            nominal = ""
        else:
            value = f"{m.median_gbps:.1f} GB/s" if m.median_gbps is not None else "—"
            spread = f"{m.min_gbps:.1f}–{m.max_gbps:.1f}" if m.min_gbps is not None and m.max_gbps is not None else ""
            nom = nominal_gbps(snap, m.src, m.dst) if m.direction == "one-way" else None
            nominal = fmt_gbps(nom[0]) if nom else ""
        verified = {True: "yes", False: "WRONG DATA", None: "not checked"}[m.verified]
        numa = f" (host NUMA {m.host_numa_node})" if m.host_numa_node is not None else ""
        cells = (
            f"{m.kind} {m.direction}",
            f"{m.src} {'↔' if m.direction == 'both-way' else '→'} {m.dst}{numa}",
            m.route or "",
            value,
            spread,
            nominal,
            verified,
            m.origin,
        )
        t.add_row(*(Text(visible(c)) for c in cells))  # a file's names as text: never markup, no raw ESC
    return t
