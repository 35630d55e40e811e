"""Writing a large ``--json`` document a piece at a time: the same bytes as ``json.dumps(doc, indent=2,
allow_nan=False)``, with :class:`topomap.base.jsonrows.Rows` written row by row, and nothing held whole
(issue 36 item 5: `plan --json --units` with 100,000 units and 8 cards took 66 s and 3.9 GB)."""

from __future__ import annotations

import math
from json.encoder import encode_basestring_ascii
from typing import TextIO

from topomap.base.jsonrows import Rows
from topomap.base.safetext import json_text

_CHUNK = 1 << 20  # characters gathered before each write
_NOT_FINITE = "Out of range float values are not JSON compliant: "


def _scalar(value: object) -> str:
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(_NOT_FINITE + repr(value))
        return float.__repr__(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class _Writer:
    """Text gathered into pieces of about :data:`_CHUNK` characters, each written made JSON-safe."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.buf: list[str] = []
        self.size = 0

    def add(self, text: str) -> None:
        self.buf.append(text)
        self.size += len(text)
        if self.size >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        self.out.write(json_text("".join(self.buf)))
        self.buf, self.size = [], 0

    def value(self, value: object, level: int) -> None:
        """``value`` at nesting ``level`` (two spaces each), as json.dumps(indent=2) writes it."""
        if isinstance(value, dict):
            if not value:
                self.add("{}")
                return
            inner = "\n" + "  " * (level + 1)
            for k, (key, item) in enumerate(value.items()):
                self.add(("{" if k == 0 else ",") + inner + encode_basestring_ascii(str(key)) + ": ")
                self.value(item, level + 1)
            self.add("\n" + "  " * level + "}")
        elif isinstance(value, (list, tuple)):
            if not value:
                self.add("[]")
                return
            inner = "\n" + "  " * (level + 1)
            for k, item in enumerate(value):
                self.add(("[" if k == 0 else ",") + inner)
                self.value(item, level + 1)
            self.add("\n" + "  " * level + "]")
        elif isinstance(value, Rows):
            self.rows(value, level)
        else:
            self.add(_scalar(value))

    def rows(self, rows: Rows, level: int) -> None:
        """A list of objects sharing their keys: each row through one template (the fast path: a million
        rows in about a second), its strings encoded once each."""
        key_in = "\n" + "  " * (level + 2)
        body = ",".join(key_in + encode_basestring_ascii(k).replace("%", "%%") + ": %s" for k in rows.keys)
        template = "\n" + "  " * (level + 1) + "{" + body + "\n" + "  " * (level + 1) + "}"
        names: dict[str, str] = {}

        def text(value: object) -> str:
            if type(value) is float:  # an exact type test (a float subclass goes through _scalar)
                if value - value != 0.0:  # inf or nan
                    raise ValueError(_NOT_FINITE + repr(value))
                return float.__repr__(value)
            if isinstance(value, str):
                found = names.get(value)
                if found is None:
                    found = names[value] = encode_basestring_ascii(value)
                return found
            return _scalar(value)

        opened = False
        for row in rows:
            self.add(("," if opened else "[") + template % tuple(map(text, row)))
            opened = True
        self.add("\n" + "  " * level + "]" if opened else "[]")


def _check(value: object) -> None:
    """Every number of ``value`` outside :class:`Rows` finite (ValueError otherwise), before any of it
    is written. Rows are checked as they are written: theirs are sums of these (a plan's bars start and
    end within their lane, whose end is checked here)."""
    if isinstance(value, dict):
        for item in value.values():
            _check(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check(item)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(_NOT_FINITE + repr(value))


def write_json(doc: object, out: TextIO) -> None:
    """``doc`` as indented JSON and a newline on ``out``, written in pieces of about 1 MB; control,
    bidirectional and separator characters as ``\\u`` escapes (ASCII output: only DEL can remain).
    A number that is not finite is a ValueError, before anything is written (see :func:`_check`)."""
    _check(doc)
    w = _Writer(out)
    w.value(doc, 0)
    w.add("\n")
    w.flush()
