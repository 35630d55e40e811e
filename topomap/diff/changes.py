"""One fact that differs between two lots, as a typed record, and how changes read when alike ones are
collapsed into one line (``grouped``): the pieces ``topomap.diff.results`` builds its verdict from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from topomap.base.links import PathClass
from topomap.base.units import fmt_bytes
from topomap.graph import natural_key

Direction = Literal["worse", "better", "neutral", "unknown"]

#: How much a kind of change weighs in the verdict's reasons (higher first).
WEIGHT: dict[str, int] = {
    "plan": 110,
    "gpus": 100,
    "gpu": 90,
    "nvlink": 80,
    "gdr": 70,
    "p2p": 60,
    "pair": 55,
    "proximity": 50,
    "numa": 40,
    "pcie": 35,
    "nics": 30,
    "nic": 25,
    "software": 10,
    "host": 5,
    "collective": 4,  # under a flow only; its reasons list it after the arrows (flow_reasons)
}

#: What the subjects of a collapsed group of changes are, per kind.
_SUBJECTS = {
    "nvlink": "GPU pairs",
    "p2p": "GPU pairs",
    "pair": "GPU pairs",
    "gdr": "GPUs",
    "proximity": "GPUs",
    "numa": "GPUs",
    "pcie": "GPUs",
    "gpu": "GPUs",
    "nic": "NICs",
}


class Change(msgspec.Struct, frozen=True, kw_only=True):
    """One fact that differs, B against A (field order is the JSON's)."""

    kind: str  # gpus, gpu, nvlink, gdr, p2p, pair, proximity, numa, pcie, nics, nic, software, host, plan, collective
    subject: str  # "gpu2", "gpu2–gpu3"
    field: str
    a: Any
    b: Any
    direction: Direction = "neutral"  # for B against A
    text: str
    why: str = ""  # what ranks it, or why it cannot be ranked (the figures compared, the command that settles it)


class NotCompared(msgspec.Struct, frozen=True):
    """A fact left out because a side cannot know it: a snapshot field the source declares unknown
    (``gpus.uuid``), or a compared fact (``kind`` ``numa``, ``field`` ``NUMA node``)."""

    field: str
    side: str  # a lot's name, or "both"
    kind: str | None = None
    # a path class the side's source cannot tell apart (Source.path_recorded_as): (told, recorded as)
    recorded_as: tuple[PathClass, PathClass] | None = None

    @property
    def entry(self) -> str:
        """As --json lists it: ``gpus.uuid (unknown in both)``, ``numa.NUMA node (unknown in B)``,
        ``pairs.path (PHB vs NODE) (unknown in both)``."""
        name = f"{self.kind}.{self.field}" if self.kind else self.field
        if self.recorded_as is not None:
            name += f" ({self.recorded_as[1]} vs {self.recorded_as[0]})"
        return f"{name} (unknown in {self.side})"


def fmt_value(v: Any) -> str:
    """A compared value in a change's line: ``unknown`` for None, floats without trailing zeros."""
    if v is None:
        return "unknown"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


#: How a compared value reads where its field is not a plain number or name (the single-change line's
#: formatter, diff/snapshots._cmp, is the same): memory in bytes reads "80 GB", not 80000000000.
FIELD_FORMATS: dict[str, Callable[[Any], str]] = {"memory": fmt_bytes}


def grouped(changes: list[Change]) -> list[str]:
    """Changes with the same before → after collapsed into one line, heaviest first."""
    groups: dict[tuple[str, str, str, Direction, str], list[Change]] = {}
    for c in changes:
        fmt = FIELD_FORMATS.get(c.field, fmt_value)
        key = (c.kind, c.field, f"{fmt(c.a)} → {fmt(c.b)}", c.direction, c.why)
        groups.setdefault(key, []).append(c)
    lines: list[tuple[int, str]] = []
    for (kind, fieldname, arrow, _direction, why), items in groups.items():
        line = _group_line(kind, fieldname, arrow, items)
        lines.append((WEIGHT.get(kind, 0), f"{line} ({why})" if why else line))
    return [t for _, t in sorted(lines, key=lambda x: -x[0])]


def _group_line(kind: str, fieldname: str, arrow: str, items: list[Change]) -> str:
    if len(items) == 1:
        return items[0].text
    subjects = sorted({c.subject for c in items}, key=natural_key)
    what = _SUBJECTS.get(kind, "items")
    label = fieldname if fieldname not in ("path", "links", "GPUDirect", "P2P") else ""
    return f"{len(subjects)} {what}: {label + ' ' if label else ''}{arrow}".strip()
