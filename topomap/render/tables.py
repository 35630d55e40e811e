"""Terminal tables that never split or cut a value: free text wraps, values stay whole (on a terminal
too narrow for them, :func:`topomap.render.whole.whole` gives blocks instead); a column unknown in
every row is left out and named once under the table. Cells stay data (a value, or
:class:`Unknown`) until the table is drawn. Renderers build; only the CLI prints."""

from __future__ import annotations

from dataclasses import dataclass

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from topomap.render.text import visible


def esc(value: object, style: str = "") -> Text:
    """Any value from a snapshot as terminal text: control characters visible (``\\x1b``, by
    :func:`topomap.render.text.visible`), never rich markup (a Text is not parsed)."""
    return Text(visible(str(value)), style=style)


class Column:
    """A column of a terminal table: a value (bus id, CPU list, UUID: never wrapped or cut) or free text."""

    def __init__(self, header: str, text: bool = False) -> None:
        self.header = header
        self.text = text


#: What tells a value an imported source does not carry (a column of a `show` table left out).
SETTLE_ANY = "`topomap probe` on the machine records them"


@dataclass(frozen=True)
class Unknown:
    """A table cell the source did not record (None in the snapshot, an unknown answer), kept as data
    until the table is drawn: shown as ``shown`` where its column stays; a column unknown in every row
    is left out (:func:`fit_table`)."""

    shown: str = "—"


#: A cell of a terminal table: a value, or what is not known.
Cell = Text | Unknown

UNKNOWN = Unknown()


def cell(value: object) -> Cell:
    """A snapshot value as a cell: None is unknown (shown "—"), "" says nothing (shown empty)."""
    if value is None:
        return UNKNOWN
    return Unknown("") if value == "" else esc(value)


def known(text: str, known: bool) -> Cell:
    """``text`` as a cell that is unknown where ``known`` is False (its words still shown where the column stays)."""
    return esc(text) if known else Unknown(text)


def shown_cell(c: Cell) -> Text:
    return esc(c.shown) if isinstance(c, Unknown) else c


def fit_table(title: str, columns: list[Column], rows: list[list[Cell]]) -> RenderableType:
    """The full table, value columns never split or cut: rich wraps free-text columns only (``overflow=
    "fold"``, which :func:`topomap.render.whole.fits` lets narrow down to ``TEXT_MIN``). A column unknown
    in every row is left out and named once under the table (a `topo -m` paste has no UUIDs, bus ids or
    models); a table with nothing known but its first column is one line."""
    if rows:
        gone = [k for k in range(1, len(columns)) if all(isinstance(row[k], Unknown) for row in rows)]
        if gone:
            names = ", ".join(columns[k].header.replace("\n", " ") for k in gone)
            keep = [k for k in range(len(columns)) if k not in gone]
            if len(keep) == 1:
                return Group(esc(f"{title}: not in this source ({names}); {SETTLE_ANY}", style="dim"), Text(""))
            table = fit_table(title, [columns[k] for k in keep], [[row[k] for k in keep] for row in rows])
            return Group(table, esc(f"not in this source: {names} ({SETTLE_ANY})", style="dim"), Text(""))
    shown = [[shown_cell(c) for c in row] for row in rows]
    t = Table(title=esc(title), box=box.SIMPLE_HEAD, title_justify="left", collapse_padding=True)
    for col in columns:
        if col.text:
            t.add_column(col.header, overflow="fold")
        else:
            t.add_column(col.header, no_wrap=True, overflow="ignore")
    for row in shown:
        t.add_row(*row)
    return t
