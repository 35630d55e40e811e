"""The one grouping of notes every view uses (`map`, `map --all`'s summary, the HTML report).

Notes of one kind (:class:`topomap.base.notes.Note`: the same template) are said once, with the
devices and hosts they cover: sixteen "speed of NIC mlx5_N not recorded" notes on two hosts become
"NIC speed not recorded on node-a and node-b: 8 NICs mlx5_0, mlx5_3–9", and eight "mlx5_gdr_N is PIX
to gpuN" become one line ending "N = 0–7". A note that is plain text groups with its equals only.
Pure data: no rich, no Graphviz.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from topomap.base.notes import NUMBERED, Note, compress, ranges

__all__ = ["NOUNS", "NoteLine", "and_list", "compress", "group_notes", "ranges"]

#: The noun a slot's devices are counted in ("8 NICs"); a slot not here is listed without one.
NOUNS = {"nic": "NIC", "gpu": "GPU", "numa": "NUMA node", "bridge": "bridge", "host": "host"}


@dataclass
class NoteLine:
    """One line of grouped notes: its text, where it applies (bundle rows, 1-based), how many arrows
    carry it and how many notes it stands for."""

    text: str
    rows: list[int] = field(default_factory=list)
    arrows: int = 0
    notes: int = 0


def group_notes(entries: Iterable[tuple[str, int]]) -> list[NoteLine]:
    """``(note, row)`` pairs → one line per kind of note, in the order each kind first appears."""
    kinds: dict[str, list[tuple[str, int]]] = {}
    for note, row in entries:
        kinds.setdefault(note.template if isinstance(note, Note) else "\0" + note, []).append((note, row))
    out: list[NoteLine] = []
    for items in kinds.values():
        distinct = list(dict.fromkeys(n for n, _ in items))
        rows = list(dict.fromkeys(r for _, r in items))
        text = _said_once(distinct) if len(distinct) > 1 else str(distinct[0])
        out.append(NoteLine(text, rows, len(items), len(distinct)))
    return out


def _said_once(notes: list[str]) -> str:
    """Several notes of one template as one sentence (each is a Note here: plain text groups only
    with its equals, so a kind with several distinct texts is typed)."""
    typed = [n for n in notes if isinstance(n, Note)]
    first = typed[0]
    hosts = list(dict.fromkeys(n.host for n in typed if n.host))
    # the hosts whose devices are the same are one group; different devices on different hosts are
    # listed per host
    per_host: dict[str | None, list[tuple[tuple[str, str], ...]]] = {}
    for n in typed:
        per_host.setdefault(n.host, [])
        if n.subjects not in per_host[n.host]:
            per_host[n.host].append(n.subjects)
    shapes = {tuple(v) for v in per_host.values()}
    named = "{host}" in first.template  # else the host goes before the sentence
    if len(shapes) == 1:
        text = _fill(first.template, and_list(hosts), next(iter(shapes)))
        return text if named or len(hosts) < 2 else f"{and_list(hosts)}: {text}"
    # different devices per host: the sentence once, with each host's devices after it
    every = tuple(t for subs in per_host.values() for t in subs)
    slots = list(dict.fromkeys(k for t in every for k, _ in t))
    varying = [k for k in slots if len({dict(t).get(k) for t in every}) > 1]
    if not varying:  # the same devices, told apart by something else: each host's sentence
        return "; ".join(f"{h}: {_fill(first.template, h or '', tuple(subs))}" for h, subs in per_host.items())
    fixed = {k: dict(every[0]).get(k, "") for k in slots if k not in varying}
    text = first.template.format(host=and_list(hosts), **fixed, **{k: f"‹{NOUNS.get(k, k)}›" for k in varying})
    heads = " ↔ ".join(f"‹{NOUNS.get(k, k)}›" for k in varying)

    def devices(subs: list[tuple[tuple[str, str], ...]]) -> str:
        if len(varying) > 1:
            return _pairs(tuple(subs), varying)
        return compress([dict(t).get(varying[0], "") for t in subs])

    each = "; ".join(f"{h}: {devices(subs)}" for h, subs in per_host.items())
    return f"{text} ({heads} — {each})"


def _fill(template: str, host: str, tuples: tuple[tuple[tuple[str, str], ...], ...]) -> str:
    """The template with ``host`` and, per slot, its one device, its devices as a set, or — where
    several slots vary together by one number (mlx5_gdr_3 with gpu3) — ``…N…`` and ``N = 0–7``."""
    slots = list(dict.fromkeys(k for t in tuples for k, _ in t))
    values = {k: list(dict.fromkeys(dict(t).get(k, "") for t in tuples)) for k in slots}
    varying = [k for k in slots if len(values[k]) > 1]
    filled: dict[str, str] = {k: values[k][0] for k in slots if k not in varying}
    tail = ""
    numbers = _shared_number(tuples, varying)
    if len(varying) > 1 and numbers is not None:
        for k in varying:
            m = NUMBERED.match(values[k][0])
            filled[k] = f"{m['pre']}N{m['post']}" if m else k
        tail = f", N = {ranges(numbers)}"
    elif len(varying) > 1:
        for k in varying:
            filled[k] = f"‹{NOUNS.get(k, k)}›"
        pairs = _pairs(tuples, varying)
        tail = f" ({' ↔ '.join(filled[k] for k in varying)}: {pairs})"
    elif varying:
        k = varying[0]
        noun = NOUNS.get(k)
        filled[k] = (f"{len(values[k])} {noun}s " if noun else "") + compress(values[k])
    return template.format(host=host, **filled) + tail


def _pairs(tuples: tuple[tuple[tuple[str, str], ...], ...], varying: list[str]) -> str:
    """The devices of several varying slots side by side: ``gpu0–3 ↔ numa0, gpu4–7 ↔ numa1`` when
    the last slot takes fewer values than there are notes, else each note's ``mlx5_3 ↔ gpu1``."""
    rows = [[dict(t).get(k, "") for k in varying] for t in tuples]
    if len(varying) == 2:
        for keep in (1, 0):  # the slot whose value repeats heads each group, the other is compressed
            by: dict[str, list[str]] = {}
            for r in rows:
                by.setdefault(r[keep], []).append(r[1 - keep])
            if len(by) < len(rows):
                pairs = [(compress(others), head) for head, others in by.items()]
                return ", ".join(f"{a} ↔ {b}" if keep == 1 else f"{b} ↔ {a}" for a, b in pairs)
    return ", ".join(" ↔ ".join(r) for r in rows)


def _shared_number(tuples: tuple[tuple[tuple[str, str], ...], ...], varying: list[str]) -> list[int] | None:
    """The number every varying slot of each tuple shares (mlx5_gdr_3 and gpu3: 3), when each slot
    keeps one prefix and suffix; None otherwise."""
    shapes: dict[str, tuple[str, str]] = {}
    out: list[int] = []
    for t in tuples:
        d = dict(t)
        ns = set()
        for k in varying:
            m = NUMBERED.match(d.get(k, ""))
            if m is None or shapes.setdefault(k, (m["pre"], m["post"])) != (m["pre"], m["post"]):
                return None
            ns.add(int(m["n"]))
        if len(ns) != 1:
            return None
        out.append(ns.pop())
    return sorted(set(out))


def and_list(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""
