"""The expected busbw over message sizes as a chart (PNG or SVG), one line per collective, with the measured
rows of a results file beside it when given. matplotlib is imported only here, only when drawing (the
``plot`` extra); without it the caller gets one line that says how to install it."""

from __future__ import annotations

import io
from typing import Any

from topomap.base.errors import TopomapError
from topomap.collective.expect import Expectation
from topomap.render.text import PLOT_HINT


def curve_image(
    found: list[Expectation], sizes: list[int], fmt: str, measured: dict[str, list[tuple[int, float]]]
) -> bytes:
    """PNG or SVG bytes of the curves of ``found`` over ``sizes`` (bytes), and ``measured`` points per collective."""
    try:  # start-up: matplotlib is heavy and optional; only drawing needs it
        import matplotlib
        from matplotlib.figure import Figure  # not pyplot: its import and backend set-up cost ~0.5 s
    except ImportError as err:
        raise TopomapError("drawing the busbw curve needs matplotlib", hint=PLOT_HINT) from err
    with matplotlib.rc_context({"svg.hashsalt": "topomap"}):
        return _draw(Figure, found, sizes, fmt, measured)


def _draw(figure: Any, found: list[Expectation], sizes: list[int], fmt: str, measured: dict[str, Any]) -> bytes:
    fig = figure(figsize=(9, 5))
    ax = fig.subplots()
    drawn = 0
    for e in found:
        points = [(n, e.busbw_at(n)) for n in sizes]
        xs = [n for n, v in points if v is not None]
        ys = [v for _, v in points if v is not None]
        if xs:
            ax.plot(xs, ys, label=f"{e.collective} (model, {e.algorithm or '—'})")
            drawn += 1
        if e.collective in measured:
            mx, my = zip(*measured[e.collective], strict=True)
            ax.plot(mx, my, marker="o", linestyle="none", label=f"{e.collective} (measured)")
    if not drawn and not measured:
        raise TopomapError(
            "nothing to draw: every expected figure is unknown", hint="the text output says what settles it"
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.subplots_adjust(left=0.09, right=0.98, top=0.95, bottom=0.11)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, metadata={"Software": None} if fmt == "png" else {"Date": None})
    return buf.getvalue()
