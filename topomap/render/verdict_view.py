"""rich renderables for the verdicts: diff and check. Renderers build; only the CLI prints."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from topomap.check import CheckResult, RuleResult
from topomap.diff import ClusterDiff, DiffResult, NotCompared
from topomap.diff.results import arrow_cell
from topomap.flow.mapping import MappedArrow
from topomap.render.terminal import MEDIUM_STYLE, recorded_as_words, unknown_in_words
from topomap.render.text import visible


def _text(value: str, style: str = "") -> Text:
    """Verdict text holds names from files (hosts, steps, lots): plain text, control characters
    visible, never markup. Leading newlines are the layout's own (a blank line before a section)."""
    body = value.lstrip("\n")
    return Text("\n" * (len(value) - len(body)) + visible(body), style=style)


def _block(title: str, lines: list[str], style: str = "", limit: int = 40) -> list[RenderableType]:
    """A titled block of indented lines (a blank line before it), the rest counted past ``limit``."""
    if not lines:
        return []
    out: list[RenderableType] = [_text(f"\n{title}", style="bold")]
    out += [_text(f"  {line}", style=style) for line in lines[:limit]]
    if len(lines) > limit:
        out.append(_text(f"  … and {len(lines) - limit} more (--json lists all)", style="dim"))
    return out


def diff_view(d: DiffResult) -> RenderableType:
    """The verdict alone on the first line; then its reasons, the plan, the flow's arrows that
    change (one block each, never a cut cell), the machine differences (under a flow: those its
    arrows use, then those no arrow uses, never in the verdict), and what could not be compared."""
    style = {"equivalent": "bold green", "cannot-confirm": "bold yellow"}.get(d.verdict, "bold red")
    parts: list[RenderableType] = [_text(d.summary(), style=style)]
    if d.match == "structure" and any(k != v for k, v in d.mapping.items()):
        moved = {k: v for k, v in d.mapping.items() if k != v}
        parts.append(_text("matched by structure: " + ", ".join(f"{k}→{v}" for k, v in moved.items())))
    for n in d.notes:
        parts.append(_text(f"note: {n}", style="dim"))
    parts += _block("Why", d.reasons(8))
    parts += _block("The plan (a calculation from the flow's work block)", d.plan_lines)
    if d.arrows:
        parts += _block("The flow's arrows", [d.arrow_summary()])
        parts += _arrow_blocks(d)
    if d.flow is None:
        lines = d.grouped()
        parts += _block(f"Changes from {d.a_name} to {d.b_name} ({len(d.changes)}, grouped)", lines)
    else:
        parts += _block("Machine differences on what the flow uses (its arrows above decide)", d.used())
        parts += _block("Not used by this flow (not in the verdict)", d.not_used(), style="dim")
    if d.not_compared:
        parts.append(_text("\n" + not_compared_line(d.not_compared), style="dim"))
    return Group(*parts)


def _arrow_blocks(d: DiffResult) -> list[RenderableType]:
    """The arrows that change, grouped by their two cells and the change: a head line (how many,
    which, what changes), then each lot's cell on its own indented line."""
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    for r in d.arrows:
        if r.direction == "neutral" and not r.medium_changed:
            continue
        flag = {"worse": "WORSE", "better": "better", "unknown": "cannot be compared"}.get(r.direction, "changed")
        key = (_arrow_cell(r.a).plain, _arrow_cell(r.b).plain, f"{flag}: {r.reason}" if r.reason else flag, r.direction)
        groups.setdefault(key, []).append(f"{r.src} → {r.dst}")
    out: list[RenderableType] = []
    for (cell_a, cell_b, flag, direction), names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        who = names[0] if len(names) == 1 else f"{len(names)} arrows ({names[0]} …)"
        out.append(_text(f"  {who}", style="bold red" if direction == "worse" else ""))
        out.append(_text(f"      {flag}", style="bold red" if direction == "worse" else ""))
        out.append(_text(f"      {d.a_name}: {cell_a}"))
        out.append(_text(f"      {d.b_name}: {cell_b}"))
    return out


#: A compared fact that is one snapshot field, said in that field's words so it is named once
#: ("compute capability, model, compute capability, GPU models" was one fact said twice, twice).
_AS_FIELD = {
    ("gpu", "model"): "gpus.name",
    ("gpu", "compute capability"): "gpus.compute_capability",
    ("gpu", "memory"): "gpus.memory_total_bytes",
    ("gpu", "MIG"): "gpus.mig",
    ("numa", "NUMA node"): "gpus.numa_node",
    ("pcie", "PCIe link"): "gpus.pcie",
    ("nic", "its NIC's line rate"): "nics.speed_gbit_s",
    ("nics", "line rates"): "nics.speed_gbit_s",
    ("nics", "link layers"): "nics.kind",
    ("software", "driver"): "software",
    ("software", "CUDA"): "software",
}


def not_compared_line(entries: list[NotCompared]) -> str:
    """The "Not compared" line of a comparison (every diff view says it in these words)."""
    return "Not compared (a source could not know): " + _not_compared(entries)


def _not_compared(entries: list[NotCompared]) -> str:
    """What could not be compared, in words as show names it, grouped by the side that cannot know
    it, each fact once."""
    by_side: dict[str, list[str]] = {}
    for x in entries:
        field = _AS_FIELD.get((x.kind, x.field), x.field) if x.kind is not None else x.field
        words = field
        if x.recorded_as is not None:
            words = recorded_as_words(*x.recorded_as)
        elif x.kind is None or field != x.field:  # a snapshot field: its words, else its name
            words = unknown_in_words([field])[0]
            if words == field and "." in field:
                words = field.split(".", 1)[1]
        by_side.setdefault(x.side, [])
        if words not in by_side[x.side]:
            by_side[x.side].append(words)
    return "; ".join(f"unknown in {side}: " + ", ".join(words) for side, words in sorted(by_side.items()))


def _arrow_cell(a: MappedArrow) -> Text:
    """An arrow as map prints it: medium, route, links, bandwidth with its provenance."""
    return _text(arrow_cell(a), style=MEDIUM_STYLE.get(a.medium, ""))


def collapse(entries: list[tuple[str | None, str]]) -> list[str]:
    """Evidence that says the same of several subjects becomes one line (``subject`` None: a line
    of its own): ``gpu0–gpu1: NV18`` … ``gpu6–gpu7: NV18`` → ``28 of them (gpu0–gpu1, … gpu6–gpu7): NV18``."""
    groups: dict[str, list[str]] = {}
    order: list[tuple[bool, str]] = []  # (a plain line, the line or the shared text)
    for subject, text in entries:
        if subject is None:
            order.append((True, text))
            continue
        if text not in groups:
            groups[text] = []
            order.append((False, text))
        groups[text].append(subject)
    out: list[str] = []
    for plain, key in order:
        if plain:
            out.append(key)
            continue
        subjects = groups[key]
        if len(subjects) == 1:
            out.append(f"{subjects[0]}: {key}")
        elif len(subjects) <= 8:
            out.append(f"{', '.join(subjects)}: {key}")
        else:
            out.append(f"{len(subjects)} of them ({subjects[0]}, {subjects[1]} … {subjects[-1]}): {key}")
    return out


def _evidence(r: RuleResult) -> list[tuple[str | None, str]]:
    """A rule's evidence apart from its summary, each line with the subject its finding names."""
    by_line = {f.line: f for f in r.findings}
    out: list[tuple[str | None, str]] = []
    for line in r.evidence:
        if line == r.summary:
            continue
        f = by_line.get(line)
        out.append((f.subject, f.text) if f is not None else (None, line))
    return out


def evidence_lines(r: RuleResult) -> list[str]:
    """A rule's evidence as the report shows it: its summary, then the evidence collapsed as the
    terminal collapses it (:func:`collapse`): 28 pairs that say "NV18" are one line."""
    return ([r.summary] if r.summary and r.summary in r.evidence else []) + collapse(_evidence(r))


#: Evidence lines shown per rule in the terminal; the rest are counted, and --json has them all.
EVIDENCE_SHOWN = 10


def check_view(r: CheckResult) -> RenderableType:
    """The verdict first, then every rule with the fact that decides it and its evidence."""
    style = {"pass": "green", "fail": "bold red", "unknown": "yellow"}
    head = {"pass": "bold green", "fail": "bold red", "unknown": "bold yellow"}[r.status]
    parts: list[RenderableType] = [_text(r.verdict(), style=head)]
    for x in r.results:
        line = _text(f"{x.status.upper():8} {x.rule} [{x.lot}]: {x.description}", style=style[x.status])
        if x.summary and x.status != "pass":
            line.append(f" — {visible(x.summary)}")
        parts.append(line)
        lines = collapse(_evidence(x))
        shown = lines[:EVIDENCE_SHOWN]
        for e in shown:
            parts.append(_text(f"           {e}", style="dim"))
        rest = len(lines) - len(shown)
        if rest > 0:
            parts.append(_text(f"           … and {rest} more (--json lists all)", style="dim"))
        for cmd in x.settle:
            parts.append(_text(f"           to answer it: {cmd}", style="yellow"))
    return Group(*parts)


def cluster_diff_view(d: ClusterDiff) -> RenderableType:
    """The cluster verdict, then each host that differs with its grouped changes."""
    parts: list[RenderableType] = [_text(d.summary, style="bold")]
    for name, h in d.hosts.items():
        if not h.same:
            parts.append(_text(f"\n{name}: {h.summary}", style="bold"))
            for line in h.changes[:20]:
                parts.append(_text(f"  {line}"))
            unknown = d.not_compared_of(name)
            if unknown:
                parts.append(_text(f"  {not_compared_line(unknown)}", style="dim"))
    return Group(*parts)
