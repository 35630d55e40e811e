"""A run's timeline as an image: per-card memory and utilisation, and the host side, over time.

matplotlib is imported inside :func:`timeline_image` only (it is slow to import and only this
view needs it), through its object-oriented API (no pyplot global state). SVG output is
deterministic: fixed hash salt and no date in the metadata.
"""

from __future__ import annotations

import io
from typing import Any

from topomap.base.errors import TopomapError
from topomap.record.model import Run
from topomap.render.text import PLOT_HINT
from topomap.render.text import chart_text as _mpl

FORMATS = ("svg", "png", "pdf")
GIB = 2**30


def timeline_image(run: Run, fmt: str) -> bytes:
    """Draw ``run``: memory used (GiB, observed) and utilisation (%, observed) per card, then the
    command's process tree CPU (% of one CPU) and resident memory (GiB). Returns the file bytes."""
    if fmt not in FORMATS:
        raise TopomapError(f"cannot draw a run as {fmt!r}; expected one of {', '.join(FORMATS)}")
    try:  # start-up: matplotlib is heavy and optional; only drawing needs it
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise TopomapError("drawing a run's timeline needs matplotlib", hint=PLOT_HINT) from err

    with matplotlib.rc_context({"svg.hashsalt": "topomap", "svg.fonttype": "none", "font.size": 9}):
        gpu_panels = 2 if run.gpus else 0
        fig = Figure(figsize=(10, 2.4 * (gpu_panels + 1) + 0.6))
        FigureCanvasAgg(fig)
        axes = fig.subplots(gpu_panels + 1, 1, sharex=True, squeeze=False)[:, 0]
        title = f"{_mpl(' '.join(run.command))[:90]} — exit {run.exit_status}, {run.duration_s or 0:.2f} s (observed)"
        fig.suptitle(title, fontsize=10)
        if run.gpus:
            _memory(axes[0], run)
            _util(axes[1], run)
        _host(axes[-1], run)
        axes[-1].set_xlabel("seconds since the command started")
        fig.tight_layout()
        buf = io.BytesIO()
        meta: dict[str, Any] = {"Date": None} if fmt == "svg" else {}
        if fmt == "pdf":  # no date unless SOURCE_DATE_EPOCH names one: the same run, the same file
            from topomap.render.export import source_date  # start-up: networkx, only for a PDF

            meta = {"CreationDate": source_date()}
        fig.savefig(buf, format=fmt, metadata=meta)
    return buf.getvalue()


def _xy(t: list[float], values: list[Any], scale: float = 1.0) -> tuple[list[float], list[float]]:
    """Points with a reading; a gap (NaN) where nothing was read, so lines break there."""
    ys = [float("nan") if v is None else v / scale for v in values]
    return t, ys


def _memory(ax: Any, run: Run) -> None:
    top = max((v for s in run.gpus for v in s.memory_used_bytes if v is not None), default=0)
    for s in run.gpus:
        (line,) = ax.plot(*_xy(s.t_s, s.memory_used_bytes, GIB), label=_mpl(s.id), linewidth=1.2)
        if s.memory_total_bytes and top >= 0.25 * s.memory_total_bytes:  # else it would flatten the curves
            ax.axhline(s.memory_total_bytes / GIB, color=line.get_color(), linestyle=":", linewidth=0.8)
        known = [(v, t) for t, v in zip(s.t_s, s.memory_used_bytes) if v is not None]
        if known:
            peak, at = max(known, key=lambda p: p[0])
            ax.plot([at], [peak / GIB], marker="v", color=line.get_color())
            ax.annotate(
                f"{_mpl(s.id)} peak {peak / GIB:.1f} GiB",
                (at, peak / GIB),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
        if s.lost_at_s is not None:
            ax.axvline(s.lost_at_s, color=line.get_color(), linestyle="--", linewidth=0.8)
    ax.margins(y=0.15)  # room for the peak labels
    ax.set_ylabel("GPU memory used (GiB)")
    caps = sorted({s.memory_total_bytes for s in run.gpus if s.memory_total_bytes})
    cap_text = " / ".join(f"{c / GIB:.0f} GiB" for c in caps) or "unknown"
    ax.set_title(
        f"memory per card (observed, NVML); capacity {cap_text} (dotted when within 4× of the peak)",
        fontsize=9,
        loc="left",
    )
    ax.legend(loc="upper right", fontsize=7, ncol=4)


def _util(ax: Any, run: Run) -> None:
    for s in run.gpus:
        if any(u is not None for u in s.util_gpu_pct):
            ax.plot(*_xy(s.t_s, s.util_gpu_pct), label=_mpl(s.id), linewidth=1.0)
    ax.set_ylim(0, 105)
    ax.set_ylabel("utilisation (%)")
    ax.set_title("time a kernel ran, per card (observed, NVML)", fontsize=9, loc="left")


def _host(ax: Any, run: Run) -> None:
    h = run.host
    ax.plot(*_xy(h.t_s, h.tree_cpu_pct), color="tab:red", linewidth=1.0, label="CPU")
    ax.set_ylabel("tree CPU (% of one CPU)", color="tab:red")
    note = "" if run.sampling.gpu_sampled else f" — {_mpl(run.sampling.gpu_note or 'no GPU sampled')}"
    ax.set_title(f"command's process tree (observed, psutil){note}", fontsize=9, loc="left")
    twin = ax.twinx()
    twin.plot(*_xy(h.t_s, h.tree_rss_bytes, GIB), color="tab:blue", linewidth=1.0)
    twin.set_ylabel("resident memory (GiB)", color="tab:blue")
