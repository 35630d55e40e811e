"""Keep a long run's record small: halve the stored points, keeping every peak.

When a run has produced ``max_samples`` points, each pair of neighbouring points becomes one:
the time of the first, the larger value of each quantity (so a memory peak survives exactly,
its time within one interval), the later value of cumulative counters (disk, network bytes).
The runner then samples half as often. ``Sampling.thinned`` records the factor.
"""

from __future__ import annotations

from typing import Any

from topomap.record.model import GpuSeries, HostSeries

CUMULATIVE = {"disk_read_bytes", "disk_write_bytes", "net_rx_bytes", "net_tx_bytes"}


def _pairs(col: list[Any], cumulative: bool) -> list[Any]:
    out: list[Any] = []
    for i in range(0, len(col), 2):
        pair = col[i : i + 2]
        if cumulative:
            out.append(next((v for v in reversed(pair) if v is not None), None))
        else:
            known = [v for v in pair if v is not None]
            out.append(max(known) if known else None)
    return out


def halve(series: GpuSeries | HostSeries) -> None:
    """Halve ``series`` in place (every list column aligned with ``t_s``)."""
    series.t_s = series.t_s[::2]
    for name in series.__struct_fields__:
        col = getattr(series, name)
        if name in ("t_s", "processes") or not isinstance(col, list):
            continue
        setattr(series, name, _pairs(col, name in CUMULATIVE))
