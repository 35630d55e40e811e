"""What diff finds, as typed records: the changes, the flow's arrows on each lot, the facts not
compared, and the verdict they add up to. ``DiffResult.to_json()`` is the one place the JSON of
``topomap diff --json`` is made (msgspec encodes the report structs; field order is the contract).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from topomap.flow.mapping import MappedArrow
from topomap.graph import natural_key

Match = Literal["index", "structure"]
Direction = Literal["worse", "better", "neutral", "unknown"]
Verdict = Literal["equivalent", "a-better", "b-better", "mixed", "different", "cannot-confirm"]

#: Exit status of `topomap diff` per verdict.
EXIT_STATUS: dict[Verdict, int] = {
    "equivalent": 0,
    "a-better": 1,
    "b-better": 1,
    "mixed": 1,
    "different": 1,
    "cannot-confirm": 3,
}

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

    kind: str  # gpus, gpu, nvlink, gdr, p2p, pair, proximity, numa, pcie, nics, nic, software, host, plan
    subject: str  # "gpu2", "gpu2–gpu3"
    field: str
    a: Any
    b: Any
    direction: Direction = "neutral"  # for B against A
    text: str


class NotCompared(msgspec.Struct, frozen=True):
    """A fact left out because a side cannot know it: a snapshot field the source declares unknown
    (``gpus.uuid``), or a compared fact (``kind`` ``numa``, ``field`` ``NUMA node``)."""

    field: str
    side: str  # a lot's name, or "both"
    kind: str | None = None

    @property
    def entry(self) -> str:
        """As --json lists it: ``gpus.uuid (unknown in both)``, ``numa.NUMA node (unknown in B)``."""
        name = f"{self.kind}.{self.field}" if self.kind else self.field
        return f"{name} (unknown in {self.side})"


@dataclass(frozen=True)
class ArrowRow:
    """One arrow of the flow mapped on A and on B."""

    a: MappedArrow
    b: MappedArrow
    slower: bool | None  # None: cannot be told (a bandwidth unknown on one side)
    direction: Direction = "neutral"
    reason: str = ""

    @property
    def src(self) -> str:
        return self.a.src

    @property
    def dst(self) -> str:
        return self.a.dst

    @property
    def medium_changed(self) -> bool:
        return self.a.medium != self.b.medium


class ArrowReport(msgspec.Struct, rename={"src": "from", "dst": "to"}):
    src: str
    dst: str
    a: dict[str, object]
    b: dict[str, object]
    medium_changed: bool
    slower: bool | None
    direction: Direction
    reason: str


class DiffReport(msgspec.Struct):
    """``topomap diff --json`` of two snapshots."""

    same: bool
    verdict: Verdict
    summary: str
    reasons: list[str]
    unconfirmed: list[str]
    match: Match
    mapping: dict[str, str]
    grouped: list[str]
    plan: list[str]
    changes: list[Change]
    not_compared: list[str]
    notes: list[str]
    arrows: list[ArrowReport]


@dataclass
class DiffResult:
    """Filled by ``diff_snapshots`` (and, under a flow, its arrows and plan)."""

    a_name: str
    b_name: str
    match: Match
    mapping: dict[str, str]  # A id → B id
    changes: list[Change] = field(default_factory=list)
    not_compared: list[NotCompared] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    arrows: list[ArrowRow] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)  # facts one side cannot tell, needed for equivalence
    plan_lines: list[str] = field(default_factory=list)  # how the flow's plan changes (when it has a work block)

    @property
    def verdict(self) -> Verdict:
        dirs = [c.direction for c in self.changes] + [r.direction for r in self.arrows]
        worse, better = "worse" in dirs, "better" in dirs
        if worse and better:
            return "mixed"
        if (worse or better) and "unknown" in dirs:
            return "cannot-confirm"  # a change one side cannot tell may outweigh the known ones
        if worse:
            return "a-better"
        if better:
            return "b-better"
        if self.changes or any(r.medium_changed or r.direction != "neutral" for r in self.arrows):
            return "different"
        if self.unconfirmed:
            return "cannot-confirm"
        return "equivalent"

    @property
    def same(self) -> bool:
        return self.verdict == "equivalent"

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.verdict]

    def grouped(self) -> list[str]:
        """Changes with the same before → after collapsed into one line, heaviest first."""
        return grouped(self.changes)

    def reasons(self, limit: int = 3) -> list[str]:
        """The few changes that decide the verdict: regressions and gains, heaviest first."""
        out = grouped([c for c in self.changes if c.direction in ("worse", "better", "unknown")])[:limit]
        flow = self.arrow_summary()
        if flow:
            out.append(flow)
        return out

    def arrow_summary(self) -> str:
        if not self.arrows:
            return ""
        moved = sum(r.medium_changed for r in self.arrows)
        worse = sum(r.direction == "worse" for r in self.arrows)
        better = sum(r.direction == "better" for r in self.arrows)
        unknown = sum(r.direction == "unknown" for r in self.arrows)
        slower_known = sum(r.slower is True for r in self.arrows)
        text = f"flow: {moved} of {len(self.arrows)} arrows change medium, {worse} get worse on {self.b_name}"
        if worse:
            text += f" ({slower_known} with a known GB/s drop; the rest by links or path class)"
        if better:
            text += f", {better} get better"
        if unknown:
            text += f", {unknown} slower: unknown (a bandwidth not recorded on one side)"
        return text

    def summary(self) -> str:
        """The verdict in one line."""
        v = self.verdict
        a, b = self.a_name, self.b_name
        work = "for this flow" if self.arrows else "for work across its GPUs"
        renumbered = ""
        if self.match == "structure" and any(k != x for k, x in self.mapping.items()):
            moved = ", ".join(f"{k}→{x}" for k, x in self.mapping.items() if k != x)
            renumbered = f" (devices renumbered: {moved})"
        if v == "equivalent":
            return f"{b} is equivalent to {a} in everything both sources record{renumbered}."
        dirs = {c.direction for c in self.changes} | {r.direction for r in self.arrows}
        if v == "cannot-confirm" and dirs & {"worse", "better"}:
            return f"cannot tell which lot is better {work}: " + "; ".join(self.reasons(4)) + "."
        if v == "cannot-confirm":
            return (
                f"cannot confirm that {b} is equivalent to {a}: nothing differs in what both record{renumbered}, "
                "but " + "; ".join(self.unconfirmed[:3]) + "."
            )
        if v == "a-better":
            return f"{a} is better than {b} {work}: " + "; ".join(self.reasons()) + "."
        if v == "b-better":
            return f"{b} is better than {a} {work}: " + "; ".join(self.reasons()) + "."
        if v == "mixed":
            return f"neither lot is better in everything {work}: " + "; ".join(self.reasons(4)) + "."
        return f"{b} differs from {a}: " + "; ".join(self.grouped()[:3]) + "."

    def report(self) -> DiffReport:
        return DiffReport(
            same=self.same,
            verdict=self.verdict,
            summary=self.summary(),
            reasons=self.reasons(),
            unconfirmed=self.unconfirmed,
            match=self.match,
            mapping=self.mapping,
            grouped=self.grouped(),
            plan=self.plan_lines,
            changes=self.changes,
            not_compared=[x.entry for x in self.not_compared],
            notes=self.notes,
            arrows=[
                ArrowReport(
                    r.src, r.dst, r.a.to_json(), r.b.to_json(), r.medium_changed, r.slower, r.direction, r.reason
                )
                for r in self.arrows
            ],
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self.report())
        return out


def fmt_value(v: Any) -> str:
    """A compared value in a change's line: ``unknown`` for None, floats without trailing zeros."""
    if v is None:
        return "unknown"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def grouped(changes: list[Change]) -> list[str]:
    """Changes with the same before → after collapsed into one line, heaviest first."""
    groups: dict[tuple[str, str, str, Direction], list[Change]] = {}
    for c in changes:
        groups.setdefault((c.kind, c.field, f"{fmt_value(c.a)} → {fmt_value(c.b)}", c.direction), []).append(c)
    lines: list[tuple[int, str]] = []
    for (kind, fieldname, arrow, _direction), items in groups.items():
        lines.append((WEIGHT.get(kind, 0), _group_line(kind, fieldname, arrow, items)))
    return [t for _, t in sorted(lines, key=lambda x: -x[0])]


def _group_line(kind: str, fieldname: str, arrow: str, items: list[Change]) -> str:
    if len(items) == 1:
        return items[0].text
    subjects = sorted({c.subject for c in items}, key=natural_key)
    what = _SUBJECTS.get(kind, "items")
    label = fieldname if fieldname not in ("path", "links", "GPUDirect", "P2P") else ""
    return f"{len(subjects)} {what}: {label + ' ' if label else ''}{arrow}".strip()
