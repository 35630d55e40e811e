"""Every name and number whole on a narrow terminal: the one place where a view meets the width.

Views take no width: they build their full tables. A rich table squeezed below its natural width cuts
its cells ("idle 41…", "unkno…"): rich shrinks the columns and ends each cut value with an ellipsis, or
folds it over two lines. :func:`whole` walks what a command prints and gives every table that does not
fit the terminal (:func:`fits`: every value whole, free text at no less than ``TEXT_MIN``) the block
form instead (:func:`table_blocks`): the first cell as a heading, then one ``header: value`` line per
cell, a value never split, free text wrapped at spaces under a hanging indent. A table a view lays out
as text itself (:class:`Laid`) gets the same blocks. Text is never folded inside a word (``overflow="ignore"``)
and the CLI prints without cropping (``crop=False``): a line longer than the terminal is left for the
terminal to show whole. Piped output has no width at all (``cli.wiring._console``).
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from topomap.base.safetext import safe_text

#: A free-text column (``overflow="fold"``) is never planned narrower than this (or its widest cell,
#: when narrower), nor than its longest word.
TEXT_MIN = 8


def whole(console: Console, renderable: RenderableType, width: int) -> RenderableType:
    """``renderable`` laid out for a terminal ``width`` columns wide with nothing cut: a table wider
    than that as blocks, text wrapped at spaces only (a hanging indent under its bullet or leading
    blanks), anything else (a tree) at its own natural width. Groups are walked."""
    if isinstance(renderable, Group):
        return Group(*(whole(console, r, width) for r in renderable.renderables))
    if isinstance(renderable, str):
        renderable = console.render_str(renderable)
    if isinstance(renderable, Text):
        return renderable if renderable.no_wrap else wrap_words(renderable, width)
    if isinstance(renderable, Table):
        return renderable if fits(console, renderable, width) else table_blocks(console, renderable, width)
    if isinstance(renderable, Laid):
        return renderable.text if renderable.width() <= width else table_blocks(console, renderable.table, width)
    if Measurement.get(console, console.options.update_width(100_000), renderable).maximum > width:
        return _Natural(console, renderable)
    return renderable


class Safe:
    """A renderable whose text reaches the terminal safe (:func:`topomap.base.safetext.safe_text`): every
    segment's text has its control, bidirectional and separator characters escaped after layout, so
    nothing a view forgot to escape can move the cursor or forge a line; rich's own styles and line
    ends (control segments, newlines) are kept."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for seg in console.render(self.renderable, options):
            if seg.control or not seg.text or seg.text == "\n":
                yield seg
            else:
                yield Segment(safe_text(seg.text, keep="\n"), seg.style)


class _Natural:
    """A renderable drawn at its own natural width, whatever the terminal's: its lines come out whole
    (the terminal wraps a long one), where rich would crop them to the terminal."""

    def __init__(self, console: Console, renderable: RenderableType) -> None:
        wide = console.options.update_width(100_000)
        natural = Measurement.get(console, wide, renderable).maximum
        self.lines = console.render_lines(renderable, wide.update(width=natural))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines:
            yield from line
            yield Segment.line()


#: A unit after a number ("824 MiB", "200 %", "7.32 s", "450 GB/s"): the space before it never breaks.
_UNIT = re.compile(r"^(%|[A-Za-zµ]{1,3}(/s)?)[,.;:)]*$")
#: A command's option ("topo -p2p", "render -o -", "--format dot"): the space before it never breaks.
_OPTION = re.compile(r"^--?[A-Za-z0-9]")


def breaks(text: str, width: int) -> list[int]:
    """Where to start new lines so that each is at most ``width`` cells: only at a space, never between
    a number and its unit nor before a command's option (``topo -p2p``) where the two fit one line; a
    word longer than ``width`` stays whole on its own line."""
    offsets: list[int] = []
    line_start = 0
    prev_end = 0
    prev_word = ""
    for m in re.finditer(r"\S+", text):
        glued = (prev_word[-1:].isdigit() and bool(_UNIT.match(m.group()))) or bool(
            prev_word and _OPTION.match(m.group())
        )
        glued = glued and cell_len(text[prev_end - len(prev_word) : m.end()]) <= width  # a pair too wide breaks
        if m.start() > line_start and cell_len(text[line_start : m.end()]) > width and not glued:
            offsets.append(m.start())
            line_start = m.start()
        elif glued and cell_len(text[line_start : m.end()]) > width and prev_end > line_start:
            start = text.rfind(" ", line_start, prev_end - len(prev_word)) + 1
            if start > line_start:
                offsets.append(start)
                line_start = start
        prev_end, prev_word = m.end(), m.group()
    return offsets


_HANG = re.compile(r"^(\s*(?:[•*\-] |\d+\. |\S+ {2,})?)")


def wrap_words(text: Text, width: int) -> Text:
    """``text`` with every line longer than ``width`` broken at spaces (a word longer than the line stays
    whole on its own), later lines indented under the first one's bullet, leading blanks or leading label
    (``PASS     ``, ``  gpu0       ``)."""
    out = Text(style=text.style, no_wrap=True, overflow="ignore", end=text.end)
    for k, line in enumerate(text.split("\n", allow_blank=True)):
        if k:
            out.append("\n")
        if line.cell_len <= width:
            out.append_text(line)
            continue
        hang = len(_HANG.match(line.plain).group(1))  # type: ignore[union-attr]  # the pattern always matches
        for j, piece in enumerate(line.divide(breaks(line.plain, max(width - hang, 20)))):
            piece.rstrip()
            if j:
                out.append("\n" + " " * hang)
                piece = piece[len(piece.plain) - len(piece.plain.lstrip(" ")) :]
            out.append_text(piece)
    return out


class Laid:
    """A table a view lays out as text itself (``text``, its lines as piped output shows them), with the
    same cells as a rich ``table``: on a terminal too narrow for the text, :func:`whole` gives the
    table's blocks."""

    def __init__(self, text: Text, table: Table) -> None:
        self.text = text
        self.table = table

    def width(self) -> int:
        """Cells of the text's longest line."""
        return max((cell_len(line) for line in self.text.plain.split("\n")), default=0)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text


def natural_width(console: Console, table: Table) -> int:
    """Columns the table needs to show every cell on one line (rich's own measurement, unbounded)."""
    return Measurement.get(console, console.options.update_width(100_000), table).maximum


def needed_width(console: Console, table: Table) -> int:
    """Columns the table needs with every value whole: its natural width, less what each free-text
    column (``overflow="fold"`` and wrapping) may give up, down to ``TEXT_MIN`` (or its widest cell,
    when narrower) but never below its longest word."""
    wide = console.options.update_width(100_000)
    needed = natural_width(console, table)
    for col in table.columns:
        if col.no_wrap or col.overflow != "fold":
            continue
        cells = [col.header, *col.cells] if table.show_header else list(col.cells)
        sizes = [Measurement.get(console, wide, c) for c in cells]
        most = max((m.maximum for m in sizes), default=0)
        word = max((m.minimum for m in sizes), default=0)
        needed -= most - max(min(most, TEXT_MIN), word)
    return needed


def fits(console: Console, table: Table, width: int) -> bool:
    """Whether ``table`` fits ``width`` columns as a table: every value whole at its natural width, free
    text wrapped (:func:`needed_width`)."""
    return needed_width(console, table) <= width


def _cell_text(console: Console, cell: object) -> Text | None:
    if isinstance(cell, Text):
        return cell
    if isinstance(cell, str):
        return console.render_str(cell)
    return None


def table_blocks(console: Console, table: Table, width: int) -> RenderableType:
    """A table as blocks: its title, then per row the first cell as heading and one indented
    ``header: value`` line per other cell. A column that wraps (``overflow="fold"`` or a free-text
    column) wraps at spaces under a hanging indent; any other value stays on one line, whole."""
    columns = table.columns
    cells = [list(c.cells) for c in columns]
    parts: list[RenderableType] = []
    if table.title:
        title = _cell_text(console, table.title) or Text(str(table.title))
        parts.append(Text.assemble(title, style="bold"))
    for r in range(table.row_count):
        row = [col[r] if r < len(col) else "" for col in cells]
        first = _cell_text(console, row[0])
        head = Text(_header(console, columns[0].header) + " ", style="bold")
        if first is not None:
            head.append_text(first[len(first.plain) - len(first.plain.lstrip(" ")) :])  # alignment blanks off
        parts.append(head)
        for col, cell in zip(columns[1:], row[1:]):
            value = _cell_text(console, cell)
            label = f"  {_header(console, col.header)}: "
            if value is None:
                parts.append(Text(label))
                parts.append(cell)  # a nested renderable, as it is
                continue
            wraps = col.overflow == "fold" and not col.no_wrap
            parts.append(_hanging(label, value, width if wraps else None))
    if table.caption:
        parts.append(_cell_text(console, table.caption) or Text(str(table.caption)))
    return Group(*parts)


def _header(console: Console, header: object) -> str:
    text = _cell_text(console, header)
    return (text.plain if text is not None else str(header)).replace("\n", " ")


def _hanging(label: str, value: Text, width: int | None) -> Text:
    """``label`` then ``value``; with ``width``, the value wrapped at spaces (never inside a word) with
    its later lines indented under its first."""
    line = Text(label, no_wrap=True, overflow="ignore")
    line.append_text(value)
    if width is None or line.cell_len <= width:
        line.no_wrap, line.overflow = True, "ignore"
        return line
    out = Text(no_wrap=True, overflow="ignore")
    pieces = value.divide(breaks(value.plain, max(width - len(label), 20)))
    for k, piece in enumerate(pieces):
        out.append(label if k == 0 else "\n" + " " * len(label))
        piece.rstrip()
        out.append_text(piece)
    return out
