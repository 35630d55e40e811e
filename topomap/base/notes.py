"""A note as a value: what it says, apart from the devices and the host it is about.

An arrow's notes are read by people ("speed of NIC mlx5_3 not recorded on node-a") and by the views
that group them: a two-host flow over eight NICs each makes the same note sixteen times, once per
NIC and host. :class:`Note` is still the text (a ``str``, so JSON, tests and ``in`` see the sentence)
and carries its kind — the template, the sentence with each subject as a ``{slot}`` — its subjects
(slot → device name) and its host, so that `topomap.render.notes.group_notes` can say it once:
"NIC speed not recorded on node-a and node-b: 8 NICs mlx5_0, mlx5_3–9". :func:`compress` writes
such a set of names, for the views and for the lines ``merge`` keeps in a cluster file alike.

A reason is made a Note where it is made, and a longer note is made of reasons by :func:`cat` (each
Note piece keeps its slots, plain text is said as it is); :meth:`Note.only` keeps the slots a view
groups by and writes the others into the words.
"""

from __future__ import annotations

import re
from string import Formatter


class Note(str):
    """The text of a note, with ``template`` (the kind: the text with ``{host}`` and each subject as
    a slot), ``subjects`` (slot → device, in order) and ``host`` (None: about no one host)."""

    template: str
    subjects: tuple[tuple[str, str], ...]
    host: str | None

    def __new__(cls, template: str, host: str | None = None, **subjects: str) -> Note:
        text = template.format(host=host or "", **subjects)
        note = super().__new__(cls, text)
        note.template = template
        note.subjects = tuple(subjects.items())
        note.host = host
        return note

    def only(self, **subjects: str | None) -> Note:
        """This note with only the slots named here, where they hold the device given (in this order),
        and its host: every other slot's device is written into the template as words."""
        have = {k: v for k, v in self.subjects if k in _slots(self.template)}
        keep = {k: v for k, v in subjects.items() if v and have.get(k) == v}
        return Note(_rewrite(self.template, self._values(), {"host", *keep}), self.host, **keep)

    def _values(self) -> dict[str, str]:
        return {"host": self.host or "", **dict(self.subjects)}

    def __reduce__(self) -> tuple[object, ...]:  # copy and pickle keep the kind and subjects
        return (_rebuild, (self.template, self.host, self.subjects))


def said(text: str) -> str:
    """Plain text as a template (its braces doubled): it says itself, with no slot."""
    return text.replace("{", "{{").replace("}", "}}")


def cat(*parts: str, host: str | None = None) -> Note:
    """One note of several pieces in order: a :class:`Note` piece keeps its slots (a slot another piece
    already holds with another device, and a host other than the note's, are written as words), plain
    text is said as it is. The host: ``host``, else the first piece's that has one."""
    host = host or next((p.host for p in parts if isinstance(p, Note) and p.host), None)
    template: list[str] = []
    subjects: dict[str, str] = {}
    for part in parts:
        if not isinstance(part, Note):
            template.append(said(part))
            continue
        slots = {k for k, v in part.subjects if subjects.setdefault(k, v) == v}
        template.append(_rewrite(part.template, part._values(), slots | ({"host"} if part.host == host else set())))
    whole = "".join(template)
    return Note(whole, host, **{k: v for k, v in subjects.items() if k in _slots(whole)})


_FORMAT = Formatter()


def _slots(template: str) -> set[str]:
    return {name for _, name, _, _ in _FORMAT.parse(template) if name is not None}


def _rewrite(template: str, values: dict[str, str], slots: set[str]) -> str:
    """``template`` with the slots in ``slots`` kept and every other one's value written in as words."""
    out: list[str] = []
    for literal, name, _, _ in _FORMAT.parse(template):
        out.append(said(literal))
        if name is not None:
            out.append("{" + name + "}" if name in slots else said(values[name]))
    return "".join(out)


def _rebuild(template: str, host: str | None, subjects: tuple[tuple[str, str], ...]) -> Note:
    return Note(template, host, **dict(subjects))


#: A device name ending in a number (``mlx5_3``: ``mlx5_``, ``3``, ``""``).
NUMBERED = re.compile(r"^(?P<pre>.*?)(?P<n>\d+)(?P<post>\D*)$", re.S)


def compress(names: list[str]) -> str:
    """``mlx5_0, mlx5_3, … mlx5_9`` → ``mlx5_0, mlx5_3–9``: names that differ only by a final number
    as ranges, others listed once each, in order."""
    order: list[tuple[str, str]] = []
    numbers: dict[tuple[str, str], list[int]] = {}
    for name in names:
        m = NUMBERED.match(name)
        plain = m is None or (m["n"].startswith("0") and m["n"] != "0")  # gpu07: not a number to range
        key = (name, "\0") if plain or m is None else (m["pre"], m["post"])
        if key not in numbers:
            numbers[key] = []
            order.append(key)
        if key[1] != "\0" and m is not None:
            numbers[key].append(int(m["n"]))
    parts = []
    for pre, post in order:
        if post == "\0":
            parts.append(pre)
        else:
            parts += [f"{pre}{r}{post}" for r in ranges(sorted(set(numbers[pre, post]))).split(", ")]
    return ", ".join(parts)


def ranges(ns: list[int]) -> str:
    """[0, 1, 2, 5] → ``0–2, 5``."""
    parts: list[str] = []
    start = prev = ns[0]
    for n in ns[1:]:
        if n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}–{prev}")
        start = prev = n
    parts.append(str(start) if start == prev else f"{start}–{prev}")
    return ", ".join(parts)
