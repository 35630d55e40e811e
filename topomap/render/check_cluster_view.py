"""`topomap check REQS CLUSTER` in the terminal (issue 34): each rule's result once per group of alike
hosts — and once for the groups it answers alike — then the cluster-wide rules, the hosts that differ
and how, and where the per-host listing is (``--all``, ``--host NAME``). Renderables only."""

from __future__ import annotations

from rich.console import Group, RenderableType

from topomap.check import CheckResult, RuleResult
from topomap.cluster.groups import HostGroup
from topomap.render.cluster_groups import names_text
from topomap.render.text import visible
from topomap.render.verdict_view import EVIDENCE_SHOWN, _evidence, _text, collapse

_STYLE = {"pass": "green", "fail": "bold red", "unknown": "yellow"}
_HEAD = {"pass": "bold green", "fail": "bold red", "unknown": "bold yellow"}


def _same(r: RuleResult) -> tuple[object, ...]:
    """What a result says, apart from the lot it is about."""
    return (r.rule, r.status, r.description, r.summary, tuple(r.evidence), tuple(r.settle))


def _who(groups: list[HostGroup]) -> str:
    """``group A: 594 hosts alike``; ``groups C, D: h00150, h00250``; names where they are few."""
    n = sum(len(g) for g in groups)
    labels = ", ".join(g.label for g in groups)
    head = f"group {labels}" if len(groups) == 1 else f"groups {labels}"
    hosts = [h for g in groups for h in g.hosts]
    if n > 8:
        return f"{head}: {n} hosts" + (" alike" if len(groups) == 1 else "")
    return f"{head}: {names_text(hosts, None)}"


def _rule(results: list[RuleResult], groups: dict[str, HostGroup], group_of: dict[str, str]) -> list[RenderableType]:
    """One rule's results on the hosts of a cluster: each distinct result once, with the groups it holds for."""
    said: dict[tuple[object, ...], tuple[RuleResult, list[HostGroup]]] = {}
    for r in results:
        label = group_of.get(r.lot)
        if label is None:  # a lot of no group (another --probe beside the cluster): its own line
            said[(_same(r), r.lot)] = (r, [])
            continue
        _first, members = said.setdefault((_same(r), None), (r, []))
        if groups[label] not in members:
            members.append(groups[label])
    out: list[RenderableType] = []
    for r, members in said.values():
        where = _who(members) if members else visible(r.lot)
        line = _text(f"{r.status.upper():8} {r.rule} [{where}]: {r.description}", style=_STYLE[r.status])
        if r.summary and r.status != "pass":
            line.append(f" — {visible(r.summary)}")
        out.append(line)
        lines = collapse(_evidence(r))
        out += [_text(f"           {e}", style="dim") for e in lines[:EVIDENCE_SHOWN]]
        if len(lines) > EVIDENCE_SHOWN:
            out.append(_text(f"           … and {len(lines) - EVIDENCE_SHOWN} more (--json lists all)", style="dim"))
        out += [_text(f"           to answer it: {cmd}", style="yellow") for cmd in r.settle]
    return out


def check_cluster_view(r: CheckResult, differing: list[str], closing: str) -> RenderableType:
    """The verdict first; then per rule its result per group of alike hosts; the cluster-wide rules;
    then ``differing`` (the hosts that differ and how) and ``closing`` (where the per-host listing is)."""
    groups = {g.label: g for g in r.groups}
    group_of = {h: g.label for g in r.groups for h in g.hosts}
    hosts = sum(len(g) for g in r.groups)
    parts: list[RenderableType] = [
        _text(r.verdict(), style=_HEAD[r.status]),
        _text(
            f"{hosts} hosts in {len(r.groups)} group{'s' if len(r.groups) != 1 else ''} of alike hosts: "
            "each rule's result once per group (alike hosts answer every rule alike)"
        ),
    ]
    by_rule: dict[tuple[str, str], list[RuleResult]] = {}
    for x in r.results:
        key = (x.rule, x.description) if x.lot in group_of else (x.rule, f"{x.description}\0{x.lot}")
        by_rule.setdefault(key, []).append(x)
    for results in by_rule.values():
        parts += _rule(results, groups, group_of)
    parts += [_text(line) for line in ["", *differing, closing]]
    return Group(*parts)
