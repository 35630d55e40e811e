"""Rich renderables for run records: `show RUN.json` and `diff RUN_A.json RUN_B.json`.

Pure: builds renderables, never prints (the CLI owns the console). Every figure says its unit
and where it came from: observed (the record), measured (the recorder's own cost), spec (a
nominal link rate from the snapshot), psutil (host capacity).
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from topomap.base.units import fmt_byte_rate, fmt_bytes, fmt_seconds
from topomap.record.compare import Row, RunDiff
from topomap.record.model import Run
from topomap.record.summary import busiest, cards, host_peaks, last, shared_resources
from topomap.render.text import visible

BLOCKS = "▁▂▃▄▅▆▇█"


def _lines(lines: list[str], style: str = "") -> Text:
    """Lines as one Text: each line made visible (our own text has no control characters, so this
    escapes exactly the strings from the record), never parsed as rich markup."""
    return Text("\n".join(visible(line) for line in lines), style=style)


def _cell(text: str) -> Text:
    """A table cell or title: visible, and never rich markup ("[bold]" in a GPU name stays text)."""
    return Text(visible(text))


def _size(n: float | None) -> str:
    if n is None:
        return "—"
    return fmt_bytes(round(n / 2**20) * 2**20) if n >= 2**20 else fmt_bytes(int(n))


def sparkline(t: list[float], values: list[Any], t_end: float, vmax: float | None, width: int = 48) -> str:
    """Values over time in ``width`` columns (the largest value per column); "·" where nothing was read."""
    if not t or t_end <= 0:
        return "·" * width
    top = vmax or max((v for v in values if v is not None), default=0) or 1
    cols: list[float | None] = [None] * width
    for ti, v in zip(t, values):
        if v is None:
            continue
        k = min(width - 1, int(ti / t_end * width))
        cols[k] = v if cols[k] is None else max(cols[k] or 0, v)
    out = []
    prev: float | None = None
    for c in cols:
        c = prev if c is None else c  # a column between two samples holds the last reading
        prev = c
        out.append("·" if c is None else BLOCKS[min(len(BLOCKS) - 1, int(c / top * (len(BLOCKS) - 1) + 0.5))])
    return "".join(out)


def _header(run: Run) -> Text:
    s = run.sampling
    status = f"exit {run.exit_status}" + (f" ({run.signal})" if run.signal else "")
    if run.interrupted_by:
        status += f", interrupted by {run.interrupted_by} (forwarded to the command)"
    command = shlex.join(run.command).split("\n")  # a script passed with -c keeps its lines, indented
    lines = [
        f"Run of {command[0]}",
        *(f"    {line}" for line in command[1:]),
    ]
    lines[-1] += f" [{run.label}]" if run.label else ""
    lines += [
        f"  on {run.hostname or 'unknown host'}, started {run.started_at}: {status} after "
        f"{fmt_seconds(run.duration_s)} (observed wall time)",
        f"  {s.samples} samples every {s.interval_s:g} s; one sample cost {fmt_seconds(s.sample_cost_mean_s)} "
        f"(max {fmt_seconds(s.sample_cost_max_s)}); recorder CPU {fmt_seconds(s.recorder_cpu_s)}, "
        f"{_pct(s.overhead_pct)} of one CPU over the run (measured)",
    ]
    if s.thinned > 1:
        lines.append(
            f"  a long run: points thinned to {s.thinned}× the interval, each merged point the largest of its "
            "readings (peaks kept)"
        )
    if not s.gpu_sampled:
        lines.append(f"  {s.gpu_note or 'no GPU sampled'}")
    lines += [f"  note: {n}" for n in run.notes]
    return _lines(lines)


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.3g} %"


def _cards_table(run: Run) -> Table:
    cs = cards(run)
    names = Counter(c.name or "unknown" for c in cs if "/mig" not in c.id)
    title = "Per card (observed, NVML): " + ", ".join(f"{n}× {name}" for name, n in names.items())
    pcie = any(c.pcie_rx_peak_bytes_s is not None or c.pcie_tx_peak_bytes_s is not None for c in cs)
    nvlink = any(c.nvlink_rx_peak_bytes_s is not None or c.nvlink_tx_peak_bytes_s is not None for c in cs)
    t = Table(title=_cell(title), title_justify="left", box=box.SIMPLE_HEAD)
    if not (pcie and nvlink):
        absent = " and ".join(x for x, have in (("PCIe", pcie), ("NVLink", nvlink)) if not have)
        t.caption, t.caption_justify = f"{absent} throughput: not given by NVML for these cards (unknown)", "left"
    cols = ["card", "memory peak", "at", "of total", "command's own", "util mean / peak"]
    cols += ["PCIe RX / TX peak"] if pcie else []
    cols += ["NVLink RX / TX peak"] if nvlink else []
    for col in cols:
        t.add_column(col, justify="left" if col == "card" else "right")
    t.add_column("note")
    for c in cs:
        share = (
            f"{c.peak_memory_bytes / c.memory_total_bytes:.1%} of {_size(c.memory_total_bytes)}"
            if c.peak_memory_bytes is not None and c.memory_total_bytes
            else "—"
        )
        notes = []
        if c.lost_at_s is not None:
            notes.append(f"LOST at {c.lost_at_s:.1f} s")
        if c.visible_to_command is False:
            notes.append("not visible to the command")
        row: list[str | Text] = [
            _cell(c.id),
            _size(c.peak_memory_bytes),
            f"{c.peak_at_s:.1f} s" if c.peak_at_s is not None else "—",
            share,
            _size(c.command_memory_bytes),
            f"{_pct(c.util_mean_pct)} / {_pct(c.util_peak_pct)}",
        ]
        if pcie:
            row.append(f"{fmt_byte_rate(c.pcie_rx_peak_bytes_s)} / {fmt_byte_rate(c.pcie_tx_peak_bytes_s)}")
        if nvlink:
            row.append(f"{fmt_byte_rate(c.nvlink_rx_peak_bytes_s)} / {fmt_byte_rate(c.nvlink_tx_peak_bytes_s)}")
        t.add_row(*row, _cell("; ".join(notes)))
    return t


def _timelines(run: Run, width: int) -> Text:
    """One sparkline per quantity, each ending with its scale (the height of █) and, where the scale is
    a capacity rather than the peak (utilisation 100 %, CPU N × 100 %), the peak the run reached."""
    end = run.duration_s or 0.0
    lines = [f"Timeline 0 → {fmt_seconds(end)}, largest reading per column (█ = the line's scale; · no reading)"]
    for s in run.gpus:
        top = max((v for v in s.memory_used_bytes if v is not None), default=None)
        mem = sparkline(s.t_s, s.memory_used_bytes, end, top, width)
        lines.append(f"  {s.id:<10} memory {mem}  █ = peak {_size(top)}")
        if any(u is not None for u in s.util_gpu_pct):
            util = sparkline(s.t_s, s.util_gpu_pct, end, 100, width)
            lines.append(f"  {'':<10} util   {util}  █ = 100 %, peak {_pct(_peak(s.util_gpu_pct))}")
    h = run.host
    cpu_top = (h.cpu_count or 1) * 100
    cpu = sparkline(h.t_s, h.tree_cpu_pct, end, cpu_top, width)
    cpus = f"{h.cpu_count} CPUs" if h.cpu_count else "1 CPU (count unknown)"
    lines.append(f"  {'host tree':<10} CPU    {cpu}  █ = {cpu_top} % ({cpus}), peak {_pct(_peak(h.tree_cpu_pct))}")
    rss_top = max((v for v in h.tree_rss_bytes if v is not None), default=None)
    rss = sparkline(h.t_s, h.tree_rss_bytes, end, rss_top, width)
    lines.append(f"  {'':<10} RSS    {rss}  █ = peak {_size(rss_top)}")
    return _lines(lines)


def _peak(values: Sequence[float | None]) -> float | None:
    return max((v for v in values if v is not None), default=None)


def _host_table(run: Run) -> Table:
    h = run.host
    peaks = host_peaks(run)
    t = Table(title="Host (psutil; rusage for CPU time)", title_justify="left", show_header=False, box=box.SIMPLE_HEAD)
    t.add_column("what")
    t.add_column("value", justify="right")
    t.add_column("source")
    cpu, cpu_at = peaks["tree_cpu_pct"]
    rss, rss_at = peaks["tree_rss_bytes"]
    t.add_row("CPU time user / system", f"{fmt_seconds(h.cpu_user_s)} / {fmt_seconds(h.cpu_system_s)}", "rusage")
    t.add_row(
        "tree CPU peak",
        f"{_pct(cpu)} of one CPU at {cpu_at:.1f} s" if cpu_at is not None else "—",
        f"observed, {h.cpu_count} CPUs",
    )
    t.add_row("tree RSS peak", f"{_size(rss)} at {rss_at:.1f} s" if rss_at is not None else "—", "observed")
    t.add_row("largest process RSS", _size(h.max_rss_bytes), "rusage ru_maxrss")
    t.add_row(
        "disk read / written",
        f"{_size(last(h.disk_read_bytes))} / {_size(last(h.disk_write_bytes))}",
        "observed, whole host",
    )
    t.add_row(
        "network received / sent",
        f"{_size(last(h.net_rx_bytes))} / {_size(last(h.net_tx_bytes))}",
        "observed, whole host",
    )
    return t


def _busiest(run: Run) -> Text:
    b = busiest(run)
    if b is None:
        return Text("Busiest shared resource: unknown (no capacity known for any resource used)")
    rate = fmt_byte_rate
    peak = rate(b.peak) if b.unit == "B/s" else _size(b.peak) if b.unit == "B" else f"{b.peak:.2f} CPUs"
    cap = rate(b.capacity) if b.unit == "B/s" else _size(b.capacity) if b.unit == "B" else f"{b.capacity:g} CPUs"
    lines = [
        f"Busiest shared resource: {b.name} at {b.fraction:.0%} of capacity "
        f"(peak {peak} observed; capacity {cap}, {b.capacity_source})"
    ]
    others = [r for r in shared_resources(run)[1:] if r.fraction is not None][:3]
    if others:
        lines.append("  next: " + ", ".join(f"{r.name} {r.fraction:.0%}" for r in others if r.fraction is not None))
    return _lines(lines)


def run_view(run: Run, width: int = 48) -> RenderableType:
    """Everything `topomap show RUN.json` prints."""
    parts: list[RenderableType] = [_header(run)]
    if run.gpus:
        parts.append(_cards_table(run))
    parts += [_timelines(run, width), _host_table(run), _busiest(run)]
    if run.problems:
        parts.append(_problems(run))
    return Group(*parts)


def _problems(run: Run) -> Text:
    """Problems grouped by call and error, the ones that are not a plain NotSupported first."""
    groups: dict[tuple[str, str], list[str]] = {}
    for p in run.problems:
        groups.setdefault((p.call, p.error), []).append(p.target or "-")
    order = sorted(groups.items(), key=lambda kv: ("NotSupported" in kv[0][1], kv[0]))
    lines = [f"{len(run.problems)} problem(s) while sampling:"]
    lines += [f"  {call}: {error} — {', '.join(targets)}" for (call, error), targets in order[:8]]
    if len(order) > 8:
        lines.append(f"  … {len(order) - 8} more (show --json lists them all)")
    return _lines(lines)


def _value(r: Row, v: float | None) -> str:
    if v is None:
        return "—"
    if r.unit == "s":
        return fmt_seconds(v)
    if r.unit == "B":
        return _size(v)
    if r.unit == "CPU s":
        return f"{v:.2f} CPU s"
    if r.unit == "%":
        return f"{v:g} %"
    return f"{v:g}"


def run_diff_view(d: RunDiff) -> RenderableType:
    """Everything `topomap diff RUN_A.json RUN_B.json` prints: the verdict first."""
    parts: list[RenderableType] = [_lines(d.headline, style="bold")]
    if d.warnings:
        said = [f"  ! {w}".replace("\n", "\n      ") for w in d.warnings]  # a multi-line command, indented
        title = "Not comparable:" if d.verdict == "different commands" else "Not fully comparable:"
        parts.append(_lines([title, *"\n".join(said).split("\n")], style="yellow"))
    if d.arrangement:
        parts.append(_lines(["Arrangement (expected to differ): " + "; ".join(d.arrangement)]))
    title = (
        "Observed in each run (lower is better where marked)"
        if d.rows_marked
        else f"Observed in each run (none marked better: {d.verdict})"
    )
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    t.add_column("quantity")
    t.add_column(_cell(d.names[0]), justify="right")
    t.add_column(_cell(d.names[1]), justify="right")
    t.add_column("better")
    for r in d.rows:
        better = d.names[0] if r.better == "A" else d.names[1] if r.better == "B" else ""
        t.add_row(_cell(r.metric), _value(r, r.a), _value(r, r.b), _cell(better))
    parts.append(t)
    if d.outputs is not None:
        o = d.outputs
        lines = [f"Outputs ({o.dir_a} vs {o.dir_b}): {o.summary()}"]
        lines += [f"  missing in {d.names[1]}: {n}" for n in o.missing_in_b[:10]]
        lines += [f"  missing in {d.names[0]}: {n}" for n in o.missing_in_a[:10]]
        lines += [f"  different: {f.name}: {f.reason}" for f in o.different[:10]]
        for name, skipped in zip(d.names, (o.skipped_a, o.skipped_b)):
            lines += [f"  not compared in {name}: {n}: {why}" for n, why in list(skipped.items())[:10]]
        parts.append(_lines(lines))
    return Group(*parts)
