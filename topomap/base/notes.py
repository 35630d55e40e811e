"""A note as a value: what it says, apart from the devices and the host it is about.

An arrow's notes are read by people ("speed of NIC mlx5_3 not recorded on node-a") and by the views
that group them: a two-host flow over eight NICs each makes the same note sixteen times, once per
NIC and host. :class:`Note` is still the text (a ``str``, so JSON, tests and ``in`` see the sentence)
and carries its kind — the template, the sentence with each subject as a ``{slot}`` — its subjects
(slot → device name) and its host, so that `topomap.render.notes.group_notes` can say it once:
"NIC speed not recorded on node-a and node-b: 8 NICs mlx5_0, mlx5_3–9". :func:`compress` writes
such a set of names, for the views and for the lines ``merge`` keeps in a cluster file alike.
"""

from __future__ import annotations

import re
from functools import lru_cache


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

    @classmethod
    def about(cls, text: str, host: str | None = None, **subjects: str | None) -> Note:
        """A note made from a finished sentence (a reason another module wrote): each subject's name
        and the host, where they stand as whole words, become the slots of its template."""
        given = {k: v for k, v in subjects.items() if v}
        template = text.replace("{", "{{").replace("}", "}}")
        for slot, value in sorted([*given.items(), *([("host", host)] if host else [])], key=lambda kv: -len(kv[1])):
            template = _whole(value).sub("{" + slot + "}", template)
        used = {k: v for k, v in given.items() if "{" + k + "}" in template}
        note = cls(template, host, **used)
        return note if note == text else cls(text.replace("{", "{{").replace("}", "}}"), host)

    def __reduce__(self) -> tuple[object, ...]:  # copy and pickle keep the kind and subjects
        return (_rebuild, (self.template, self.host, self.subjects))


@lru_cache(maxsize=4096)
def _whole(value: str) -> re.Pattern[str]:
    """``value`` where it stands as a whole word (compiled once per device name)."""
    return re.compile(rf"(?<![\w.-]){re.escape(value)}(?![\w-])")


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
