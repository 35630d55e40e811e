"""Keep a long run's record small: halve the stored points, keeping every peak.

When a run has produced ``max_samples`` points, each pair of neighbouring points becomes one:
the time of the first, the larger value of each quantity (so a memory peak survives exactly,
its time within one interval), the later value of cumulative counters (disk, network bytes).
The runner then samples half as often. ``Sampling.thinned`` records the factor.
"""

from __future__ import annotations

from typing import Any

import msgspec

from topomap.record.model import GpuSeries, HostSeries, Run

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


#: Points per series of the first smaller record tried when the full one does not fit on the disk.
PARTIAL_POINTS = 256


def smaller_records(run: Run) -> list[tuple[Run, str]]:
    """Smaller versions of ``run`` to write when the full record does not fit (the disk filled during
    the run, issue 24), largest first, each with the note it carries: the series halved (every peak
    kept) to at most :data:`PARTIAL_POINTS` points; then the series and the machine snapshot dropped,
    keeping the command, its exit status, duration, CPU time and peak memory."""
    thin = msgspec.structs.replace(
        run,
        gpus=[msgspec.structs.replace(g) for g in run.gpus],
        host=msgspec.structs.replace(run.host),
    )
    factor = 1
    every: list[GpuSeries | HostSeries] = [thin.host, *thin.gpus]
    for series in every:
        times = 1
        while len(series.t_s) > PARTIAL_POINTS:
            halve(series)
            times *= 2
        factor = max(factor, times)
    points = f"at most {PARTIAL_POINTS} points per series (peaks kept)"
    note = "partial record: the disk filled when it was written; " + points
    thin = msgspec.structs.replace(
        thin, sampling=msgspec.structs.replace(run.sampling, thinned=run.sampling.thinned * factor)
    )
    thin.notes = [*run.notes, note]
    bare = msgspec.structs.replace(
        run,
        gpus=[],
        host=HostSeries(
            cpu_count=run.host.cpu_count,
            memory_total_bytes=run.host.memory_total_bytes,
            cpu_user_s=run.host.cpu_user_s,
            cpu_system_s=run.host.cpu_system_s,
            max_rss_bytes=run.host.max_rss_bytes,
        ),
        snapshot=None,
        notes=[*run.notes, "partial record: the disk filled when it was written; samples and snapshot left out"],
    )
    return [(thin, points), (bare, "samples and snapshot left out")]
