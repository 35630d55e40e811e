"""A long list of a ``--json`` document made row by row, never held whole: `plan --json --units` with
100,000 units on 8 cards listed 3 million bars, built as 3 million dicts and one 366 MB string (66 s,
3.9 GB; issue 36 item 5). :class:`Rows` stands for a JSON array of objects that share their keys; the
CLI's JSON writer (:mod:`topomap.cli.jsonout`) writes it as ``json.dumps`` would write the list of
dicts, a row at a time; :func:`Rows.as_list` is that list, for a caller that wants it whole."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Rows:
    """``keys``, and a function that yields each row's values in that order (called each time the rows
    are read, so they can be read more than once)."""

    keys: tuple[str, ...]
    make: Callable[[], Iterator[tuple[object, ...]]]

    def __iter__(self) -> Iterator[tuple[object, ...]]:
        return self.make()

    def as_list(self) -> list[dict[str, object]]:
        """The rows as the list of dicts they stand for."""
        return [dict(zip(self.keys, row)) for row in self.make()]
