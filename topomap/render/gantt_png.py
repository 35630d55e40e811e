"""A plan's Gantt charts as PNG drawn with Pillow: the same panels, colours and labels as the
matplotlib figure of :mod:`topomap.render.gantt` (which still draws the SVG), without importing
matplotlib and numpy — their import was most of the time of `plan -o gantt.png` (bench/gantt.py).
It needs the `plot` extra like the SVG: the font is matplotlib's own DejaVu Sans, Pillow comes with it."""

from __future__ import annotations

import importlib.util
import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from topomap.base.units import fmt_span
from topomap.render.text import chart_text

if TYPE_CHECKING:
    from topomap.plan import Arrangement, PlanResult

W, ROW, BAR, GAP, TOP, BOTTOM = 1100, 40, 24, 34, 44, 84
MERGE_ABOVE, RUNS = 300, 100  # as the matplotlib chart: a lane of more bars is drawn as runs of units
_UNIT = ("#2e7d32", "#66bb6a")
_KIND = {"input": "#ab47bc", "output": "#ce93d8", "exchange": "#f9a825"}
_ASSEMBLY, _IDLE, _GRID = "#1565c0", "#bdbdbd", "#eeeeee"


def _font(size: int) -> Any:
    """matplotlib's DejaVu Sans: the PNG needs the `plot` extra installed (matplotlib brings Pillow and
    this font) though it never imports matplotlib. Without it: ImportError, which the caller words."""
    from PIL import ImageFont  # start-up: only drawing needs Pillow

    try:
        spec = importlib.util.find_spec("matplotlib")
    except ValueError:  # a module entry of None (matplotlib blocked): not installed for us
        spec = None
    if spec is None or not spec.origin:
        raise ImportError("matplotlib is not installed")
    ttf = Path(spec.origin).parent / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf"
    if not ttf.is_file():
        raise ImportError(f"matplotlib's font {ttf} is missing")
    return ImageFont.truetype(str(ttf), size)


def _ticks(scale_min: float) -> list[float]:
    """At most 8 round tick values (minutes) from 0 to ``scale_min``."""
    raw = max(scale_min, 1e-9) / 8
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(scale_min / step) + 1)]


def _rows(a: Arrangement) -> list[tuple[str, int | None]]:
    by_slot = {ln.slot for ln in a.lanes}
    return [(card, i if i in by_slot else None) for i, cards in enumerate(a.slots) for card in cards]


def _hatch(draw: Any, box: tuple[float, float, float, float]) -> None:
    """A rectangle outlined grey and hatched with /// lines, clipped to it."""
    x0, y0, x1, y1 = box
    draw.rectangle(box, outline=_IDLE, width=1)
    h = y1 - y0
    d = x0 - h
    while d < x1:
        xa, xb = max(d, x0), min(d + h, x1)  # the line y = y1 - (x - d) within the box
        if xb > xa:
            draw.line([(xa, y1 - (xa - d)), (xb, y1 - (xb - d))], fill=_IDLE, width=1)
        d += 8


def gantt_png(result: PlanResult, shown: list[Arrangement], tied: dict[int, list[str]]) -> bytes:
    """The Gantt panels of ``shown`` (one per tie group; ``tied``: the other arrangements of each) as PNG."""
    from PIL import Image, ImageDraw  # start-up: only drawing needs Pillow

    small, normal = _font(10), _font(13)
    labels = [chart_text(card) for a in shown for card, _ in _rows(a)] + ["assembly"]
    left = int(max(normal.getlength(t) for t in labels)) + 24
    right = W - 24
    scale = max(a.total_s for a in shown) / 60 * 1.02
    px = (right - left) / max(scale, 1e-9)
    heights = [24 + ROW * (len(_rows(a)) + (a.assembly_s is not None)) for a in shown]
    img = Image.new("RGB", (W, TOP + sum(heights) + GAP * (len(shown) - 1) + BOTTOM), "white")
    draw = ImageDraw.Draw(img)
    title = f"plan of {chart_text(result.flow)} on {chart_text(result.lot)}: a calculation from the work's stated "
    draw.text((W / 2, 16), title + "assumptions, not a measurement", fill="black", font=normal, anchor="mm")
    ticks = _ticks(scale / 1.02)
    y = TOP
    for a, h in zip(shown, heights):
        _panel(draw, a, result, (left, y, px, h), tied.get(id(a)), (small, normal), ticks)
        y += h + GAP
    for t in ticks:
        x = left + t * px
        draw.text((x, y - GAP + 6), f"{t:g}", fill="black", font=normal, anchor="mt")
    draw.text(((left + right) / 2, y - GAP + 28), "minutes from the start (calculated)", fill="black", font=normal,
              anchor="mt")  # fmt: skip
    _legend(draw, small, img.height - 16)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    return buf.getvalue()


def _panel(
    draw: Any, a: Arrangement, result: PlanResult, at: tuple[float, float, float, int], others: list[str] | None,
    fonts: tuple[Any, Any], ticks: list[float],
) -> None:  # fmt: skip
    small, normal = fonts
    left, y, px, h = at
    refused = " (does not fit in a card's memory)" if a.fit.verdict == "does not fit" else ""
    tie = f" (tie: {', '.join(others)})" if others else ""
    head = f"{a.k} card(s), {a.kind}{tie}: total {fmt_span(a.total_s)}{refused}"
    draw.text((left, y + 2), head, fill="#c62828" if refused else "black", font=normal)
    top, bottom = y + 24, y + h
    for t in ticks:
        draw.line([(left + t * px, top), (left + t * px, bottom)], fill=_GRID, width=1)
    lanes = {ln.slot: ln for ln in a.lanes}
    per_bar = 1
    for i, (card, slot) in enumerate(_rows(a)):
        cy = top + ROW * i + ROW / 2
        draw.text((left - 8, cy), chart_text(card), fill="black", font=normal, anchor="rm")
        lane = lanes.get(slot) if slot is not None else None
        end = lane.end / 60 if lane else 0.0
        if a.parallel_s / 60 > end:
            _hatch(draw, (left + end * px, cy - BAR / 2, left + a.parallel_s / 60 * px, cy + BAR / 2))
            idle = f"idle {fmt_span(a.parallel_s - end * 60)}"
            if small.getlength(idle) + 8 < (a.parallel_s / 60 - end) * px:
                draw.text((left + (end + a.parallel_s / 60) / 2 * px, cy), idle, fill="black", font=small, anchor="mm")
        if lane is None:
            continue
        nth = 0
        bars = lane.runs(MERGE_ABOVE, RUNS)
        for b in bars:
            unit = b.kind in ("compute", "units")
            colour = _UNIT[nth % 2] if unit else _KIND[b.kind]
            nth += unit
            x0, x1 = left + b.start / 60 * px, left + b.end / 60 * px
            draw.rectangle((x0, cy - BAR / 2, max(x1, x0 + 1), cy + BAR / 2), fill=colour)
            if len(bars) < 50 and x1 - x0 > 2:
                draw.line([(x1, cy - BAR / 2), (x1, cy + BAR / 2)], fill="white", width=1)
            name = chart_text(result.units[b.unit].name) if b.count == 1 else f"{b.count:,} units"
            if unit and small.getlength(name) + 8 < x1 - x0:
                draw.text(((x0 + x1) / 2, cy), name, fill="white", font=small, anchor="mm")
        per_bar = max([per_bar] + [b.count for b in bars])
    if per_bar > 1:
        note = f"a bar is a run of up to {per_bar:,} units, transfers included"
        draw.text((left + normal.getlength(head) + 12, y + 2), note, fill="black", font=normal)
    if a.assembly_s is not None:
        cy = top + ROW * len(_rows(a)) + ROW / 2
        draw.text((left - 8, cy), "assembly", fill="black", font=normal, anchor="rm")
        x0 = left + (a.total_s - a.assembly_s) / 60 * px
        draw.rectangle((x0, cy - BAR / 2, max(left + a.total_s / 60 * px, x0 + 1), cy + BAR / 2), fill=_ASSEMBLY)
    draw.rectangle((left, top, W - 24, bottom), outline="black", width=1)


def _legend(draw: Any, font: Any, y: float) -> None:
    items = [
        (_UNIT[0], "unit (compute)"), (_KIND["input"], "input transfer"), (_KIND["output"], "output transfer"),
        (_KIND["exchange"], "exchange"), (None, "idle"), (_ASSEMBLY, "assembly"),
    ]  # fmt: skip
    width = sum(28 + font.getlength(t) + 18 for _, t in items)
    x = (W - width) / 2
    for colour, text in items:
        box = (x, y - 6, x + 22, y + 6)
        if colour is None:
            _hatch(draw, box)
        else:
            draw.rectangle(box, fill=colour)
        draw.text((x + 28, y), text, fill="black", font=font, anchor="lm")
        x += 28 + font.getlength(text) + 18
