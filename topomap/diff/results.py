"""What diff finds, as typed records: the changes, the flow's arrows on each lot, the facts not
compared, and the verdict they add up to. ``DiffResult.to_json()`` is the one place the JSON of
``topomap diff --json`` is made (msgspec encodes the report structs; field order is the contract).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from topomap.diff.changes import Change, Direction, NotCompared, grouped
from topomap.flow.mapping import MappedArrow
from topomap.graph.nodeid import hop_node

Match = Literal["index", "structure"]
Verdict = Literal["equivalent", "a-better", "b-better", "mixed", "different", "cannot-confirm"]
Outcome = Literal["worse", "better", "cannot be compared", "the same", "unknown on both"]
#: The order the headline counts arrows in.
OUTCOMES: tuple[Outcome, ...] = ("better", "worse", "cannot be compared", "unknown on both", "the same")

#: Exit status of `topomap diff` per verdict.
EXIT_STATUS: dict[Verdict, int] = {
    "equivalent": 0,
    "a-better": 1,
    "b-better": 1,
    "mixed": 1,
    "different": 1,
    "cannot-confirm": 3,
}

#: Changes that decide a flow's verdict with its arrows: its plan, its collectives' expected busbw.
FLOW_DECIDING = ("plan", "collective")


@dataclass(frozen=True)
class ArrowRow:
    """One arrow of the flow mapped on A and on B."""

    a: MappedArrow
    b: MappedArrow
    slower: bool | None  # None: cannot be told (a bandwidth unknown on one side)
    direction: Direction = "neutral"
    reason: str = ""
    qualities: list[str] = field(default_factory=list)  # qualities gained or lost ("loses GPUDirect RDMA at …")
    confirmed: bool = False  # unchanged and known equal: both figures recorded and exact, every quality known

    @property
    def src(self) -> str:
        return self.a.src

    @property
    def dst(self) -> str:
        return self.a.dst

    @property
    def medium_changed(self) -> bool:
        return self.a.medium != self.b.medium

    @property
    def outcome(self) -> Outcome:
        """What the arrow adds to the headline: worse or better on B, cannot be compared (a change that
        cannot be told), the same (confirmed equal: figures exact, every quality known), or unknown on
        both (unchanged in what both lots record, but a figure or quality neither records)."""
        if self.direction in ("worse", "better"):
            return self.direction
        if self.direction == "unknown":
            return "cannot be compared"
        return "the same" if self.confirmed or self.a.medium == "local" else "unknown on both"


class ArrowReport(msgspec.Struct, rename={"src": "from", "dst": "to"}):
    src: str
    dst: str
    a: dict[str, object]
    b: dict[str, object]
    medium_changed: bool
    slower: bool | None
    direction: Direction
    reason: str
    qualities: list[str]
    confirmed: bool


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
    flow: str | None
    not_used_by_flow: list[str]
    arrows_only_in_a: list[str]
    arrows_only_in_b: list[str]


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
    #: Of them, those that can outweigh any known change for work across the GPUs (which pairs NVLink joins,
    #: on a side that cannot tell): with one, no lot is ranked better, as with a change that cannot be ranked.
    unrankable: list[str] = field(default_factory=list)
    plan_lines: list[str] = field(default_factory=list)  # how the flow's plan changes (when it has a work block)
    flow: str | None = None  # the flow's name under `diff --flow`: then its arrows alone decide
    only_a: list[str] = field(default_factory=list)  # the flow's arrows that exist on A only ("lot:gpu7 → lot:gpu0")
    only_b: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        if self.flow is not None:
            return flow_verdict(self)
        dirs = [c.direction for c in self.changes]
        worse, better = "worse" in dirs, "better" in dirs
        if worse and better:
            return "mixed"
        if "unknown" in dirs or ((worse or better) and self.unrankable):
            return "cannot-confirm"  # a change that cannot be ranked (or a fact not known) may outweigh the known ones
        if worse:
            return "a-better"
        if better:
            return "b-better"
        if self.changes:
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

    def reasons(self, limit: int = 6) -> list[str]:
        """What decides the verdict, heaviest first. Under a flow: the plan's change and the flow's
        arrows grouped by what changes on them; else the machine's directed changes."""
        if self.flow is not None:
            return flow_reasons(self)[:limit]
        out = grouped([c for c in self.changes if c.direction in ("worse", "better", "unknown")])[:limit]
        if self.verdict == "cannot-confirm":
            out += self.unconfirmed
        return out

    def arrow_summary(self) -> str:
        """The flow's arrows counted, every one of them (:func:`arrow_counts`), and how many change
        medium or have a known GB/s drop."""
        if not self.arrows:
            return ""
        moved = sum(r.medium_changed for r in self.arrows)
        counts = arrow_counts(self, ("worse", "better"))
        text = f"flow: {len(self.arrows)} arrows; on {self.b_name} {counts}; {moved} change medium"
        slower = sum(r.slower is True for r in self.arrows)
        if slower:
            text += f"; {slower} with a known GB/s drop"
        return text

    def touched(self, c: Change) -> bool:
        """Whether a machine change concerns something the flow's arrows use (on A's ids)."""
        return touched(self, c)

    def not_used(self) -> list[str]:
        """Under a flow: the machine differences no arrow of the flow touches, grouped (never in the
        verdict), then the facts a side cannot tell that no arrow needs."""
        if self.flow is None:
            return []
        lines = grouped([c for c in self.changes if c.kind not in FLOW_DECIDING and not self.touched(c)])
        blocking = self.verdict == "cannot-confirm" and not set(_flow_dirs(self)) - {"neutral"}
        return lines + ([] if blocking else self.unconfirmed)

    def used(self) -> list[str]:
        """Under a flow: the machine differences on the devices and pairs its arrows use (context:
        the arrows' own comparison decides)."""
        return grouped([c for c in self.changes if c.kind not in FLOW_DECIDING and self.touched(c)])

    def summary(self) -> str:
        """The verdict in one short line (the reasons follow it, never inside it)."""
        if self.flow is not None:
            return flow_summary(self)
        v, a, b = self.verdict, self.a_name, self.b_name
        work = "for work across its GPUs"
        if v == "equivalent":
            return f"{b} is equivalent to {a} in everything both sources record."
        dirs = {c.direction for c in self.changes}
        if v == "cannot-confirm" and dirs & {"worse", "better", "unknown"}:
            return f"cannot tell which lot is better {work}."
        if v == "cannot-confirm":
            return f"cannot confirm that {b} is equivalent to {a}: nothing differs in what both record."
        if v == "a-better":
            return f"{a} is better than {b} {work}."
        if v == "b-better":
            return f"{b} is better than {a} {work}."
        if v == "mixed":
            return f"neither lot is better in everything {work}."
        return f"{b} differs from {a}."

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
                    r.src,
                    r.dst,
                    r.a.to_json(),
                    r.b.to_json(),
                    r.medium_changed,
                    r.slower,
                    r.direction,
                    r.reason,
                    r.qualities,
                    r.confirmed,
                )
                for r in self.arrows
            ],
            flow=self.flow,
            not_used_by_flow=self.not_used(),
            arrows_only_in_a=self.only_a,
            arrows_only_in_b=self.only_b,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self.report())
        return out


def arrow_counts(d: DiffResult, lead: tuple[Outcome, ...] = ()) -> str:
    """Every arrow counted once by its outcome (``ArrowRow.outcome``), the ``lead`` outcomes first and
    always, then the others that occur: "28 worse, 0 better, 4 cannot be compared, 16 unknown on both,
    8 the same" (issue 30 item 9: a headline that leaves out the arrows unknown on both says less than
    it knows)."""
    return ", ".join(_count_parts(d, lead))


def _count_parts(d: DiffResult, lead: tuple[Outcome, ...]) -> list[str]:
    """The parts of :func:`arrow_counts`, one per outcome ("28 worse"), the ``lead`` ones first."""
    counts = {o: sum(r.outcome == o for r in d.arrows) for o in OUTCOMES}
    rest = [o for o in OUTCOMES if o not in lead and counts[o]]
    return [f"{counts[o]} {o}" for o in (*lead, *rest)]


def arrow_cell(a: MappedArrow) -> str:
    """One lot's arrow in a diff row, as map prints it (medium, route, links, figure with its
    provenance); what is unknown said once, with why and what settles it, never "unknown unknown
    PHB bandwidth unknown" (issue 30 item 9)."""
    figure = "bandwidth unknown" if a.bandwidth_gbps is None else a.bandwidth().text()
    if a.medium != "unknown":
        return " ".join(x for x in (a.medium, a.via, a.path or "", figure) if x)
    could = f"{', '.join(a.candidates[:-1])} or {a.candidates[-1]}" if len(a.candidates) > 1 else "".join(a.candidates)
    why = f"medium and bandwidth unknown{f' ({a.path} by PCIe)' if a.path else ''}"
    why += f": {could}" if could else ""
    return why + (f"; {a.settle} settles it" if a.settle else "")


# --- under a flow: its arrows decide ---------------------------------------------------------------


def _flow_dirs(d: DiffResult) -> list[Direction]:
    """The directions that decide a flow's verdict: its arrows, its plan when it has one, its collectives."""
    return [r.direction for r in d.arrows] + [c.direction for c in d.changes if c.kind in FLOW_DECIDING]


def flow_verdict(d: DiffResult) -> Verdict:
    """The verdict for a flow: from its arrows (and plan) only. An arrow that cannot be compared
    blocks a winner; unchanged arrows whose figures are unrecorded or only bounded on both lots
    block equivalence; arrows present on one lot only (the flow spreads over the GPUs each lot
    has) make the lots differ unless the plan decides."""
    dirs = _flow_dirs(d)
    plan = [c.direction for c in d.changes if c.kind == "plan"]  # the whole flow's figure: it alone outweighs
    worse, better, unknown = "worse" in dirs, "better" in dirs, "unknown" in dirs
    if (d.only_a or d.only_b) and not set(plan) & {"worse", "better"}:
        return "different"
    if worse and better:
        return "mixed"
    if unknown:
        return "cannot-confirm"
    if worse:
        return "a-better"
    if better:
        return "b-better"
    if any(r.medium_changed or r.a.via != r.b.via or r.a.path != r.b.path for r in d.arrows):
        return "different"
    if _blind_arrows(d) and d.unconfirmed:
        return "cannot-confirm"
    return "equivalent"


def _blind_arrows(d: DiffResult) -> list[ArrowRow]:
    """Unchanged arrows not confirmed equal: a figure unrecorded or only a lower bound on both lots,
    or a quality unknown. They block equivalence only where a lot also lacks what the figures rest
    on (the GPU model, which pairs NVLink joins): two records of one machine stay equivalent."""
    return [r for r in d.arrows if r.direction == "neutral" and not r.confirmed and r.a.medium != "local"]


def flow_summary(d: DiffResult) -> str:
    """One short line: who wins for this flow and every arrow counted (reasons come after it)."""
    a, b, n = d.a_name, d.b_name, len(d.arrows)
    worse, better = (sum(r.direction == x for r in d.arrows) for x in ("worse", "better"))
    v = d.verdict
    deciding = {c.kind for c in d.changes if c.kind in FLOW_DECIDING and c.direction in ("worse", "better")}
    deciding |= {"plan"} if any(c.kind == "plan" for c in d.changes) else set()
    plan_only = not (worse or better) and bool(deciding)
    rest = _count_parts(d, ("better", "worse"))[2:]
    tail = f", {', '.join(rest)}" if rest else ""
    counts = f"{better} of {n} arrows better on {b}, {worse} worse{tail}"
    if plan_only:
        what = {"plan": "its plan", "collective": "its collectives' expected busbw"}
        words = [what[k] for k in FLOW_DECIDING if k in deciding]
        verb = "changes" if len(words) == 1 else "change"
        counts = f"{' and '.join(words)} {verb} (no arrow better or worse{tail})"
    if v == "equivalent":
        return f"{b} is equivalent to {a} for this flow: none of its {n} arrows changes."
    if v == "a-better":
        counts = counts if plan_only else f"{worse} of {n} arrows worse on {b}, {better} better{tail}"
        return f"{a} is better for this flow: {counts}."
    if v == "b-better":
        return f"{b} is better for this flow: {counts}."
    if v == "mixed":
        return f"neither lot is better for this flow: {counts}."
    if v == "cannot-confirm" and any(r.direction != "neutral" for r in d.arrows):
        return f"cannot tell which lot is better for this flow: {counts}."
    if v == "cannot-confirm":
        return f"cannot confirm that {b} equals {a} for this flow: no arrow differs in what both record ({counts})."
    if d.only_a or d.only_b:
        return f"{b} differs from {a} for this flow: it has {len(d.arrows) + len(d.only_a)} arrows on {a}, " + (
            f"{len(d.arrows) + len(d.only_b)} on {b}."
        )
    return f"{b} differs from {a} for this flow: arrows change, none better or worse ({counts})."


def flow_reasons(d: DiffResult) -> list[str]:
    """The plan's change first, then the flow's arrows grouped by what changes on them (worse first), its
    collectives ranked better or worse, then the rest, then why unchanged arrows are not confirmed equal."""
    out = [c.text for c in d.changes if c.kind == "plan"]
    groups: dict[tuple[Direction, str], list[ArrowRow]] = {}
    for r in d.arrows:
        if r.direction != "neutral":
            groups.setdefault((r.direction, r.reason), []).append(r)
    order = {"worse": 0, "better": 1, "unknown": 2}
    for (direction, reason), rows in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 3), -len(kv[1]))):
        word = {"worse": "worse on", "better": "better on", "unknown": "cannot be compared on"}[direction]
        who = (
            f"{rows[0].src} → {rows[0].dst}"
            if len(rows) == 1
            else f"{len(rows)} arrows ({rows[0].src} → {rows[0].dst} …)"
        )
        out.append(f"{who} {word} {d.b_name}: {reason}")
    out += [c.text for c in d.changes if c.kind == "collective" and c.direction != "neutral"]
    if d.only_a or d.only_b:
        out.append(f"arrows on {d.a_name} only: {len(d.only_a)}; on {d.b_name} only: {len(d.only_b)}")
    out += [c.text for c in d.changes if c.kind == "collective" and c.direction == "neutral"]
    if d.verdict == "cannot-confirm" and not out:
        out.append(
            f"{len(_blind_arrows(d))} unchanged arrows have figures not recorded, or only lower bounds, on both "
            f"lots, and {'; '.join(d.unconfirmed)}: equal cannot be confirmed"
        )
    return out


def touched(d: DiffResult, c: Change) -> bool:
    """Whether a machine change concerns what the flow's arrows use, by A's device ids: a GPU pair
    that an arrow joins inside a host, a GPU whose network arrow takes its NIC, a GPU on a route."""
    pairs: set[frozenset[str]] = set()
    network: set[str] = set()
    on_route: set[str] = set()
    for r in d.arrows:
        x = r.a
        ends = [p.gpu for p in (x.src_place, x.dst_place) if p.kind == "gpu" and p.gpu]
        if len(ends) == 2 and x.src_place.host == x.dst_place.host:
            pairs.add(frozenset(ends))
        if "network" in (r.a.medium, r.b.medium):
            network.update(ends)
        on_route.update(hop_node(hop) for hop in x.route)
        on_route.update(ends)
    if c.kind in ("nvlink", "p2p", "pair"):
        return frozenset(c.subject.split("–")) in pairs
    if c.kind in ("gdr", "proximity", "nic"):
        return c.subject in network
    if c.kind in ("pcie", "numa", "gpu"):
        return c.subject in on_route
    return c.kind in FLOW_DECIDING
