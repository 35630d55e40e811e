"""`topomap diff CLUSTER_A CLUSTER_B` in the terminal (issue 34): the verdict line, then the hosts
compared alike — their A side of one group of alike hosts, their B side of one — each comparison
once, the largest first, then where the per-host listing is (``--all``, ``--host NAME``)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType

from topomap.diff import ClusterDiff
from topomap.diff.clusters import DiffGroup
from topomap.render.cluster_groups import names_text
from topomap.render.verdict_view import _text, not_compared_line

#: Changes listed per comparison before "… and N more" (--json lists all).
CHANGES_SHOWN = 20


def _sides(d: ClusterDiff) -> str:
    def one(groups: list[dict[str, Any]]) -> str:
        hosts = sum(len(g["hosts"]) for g in groups)
        return f"{hosts} hosts in {len(groups)} group{'s' if len(groups) != 1 else ''} of alike hosts"

    return f"A: {one(d.a_groups)}; B: {one(d.b_groups)}"


def _title(g: DiffGroup, first: bool) -> str:
    n = len(g.hosts)
    sides = f"A's group {g.a_group}, B's group {g.b_group}"
    if first and n > 1:
        return f"{n} hosts alike in A and in B ({sides}): one comparison, of {g.hosts[0]}"
    return f"{n} host{'s' if n != 1 else ''} ({sides}): {names_text(g.hosts)}"


def _comparison(g: DiffGroup, style: str, indent: str = "  ") -> list[RenderableType]:
    out: list[RenderableType] = [_text(f"{indent}{g.summary}", style=style)]
    out += [_text(f"{indent}  {line}") for line in g.changes[:CHANGES_SHOWN]]
    if len(g.changes) > CHANGES_SHOWN:
        more = f"{indent}  … and {len(g.changes) - CHANGES_SHOWN} more (--json lists all)"
        out.append(_text(more, style="dim"))
    if g.not_compared:
        out.append(_text(f"{indent}  {not_compared_line(g.not_compared)}", style="dim"))
    return out


def cluster_diff_grouped_view(d: ClusterDiff, closing: str) -> RenderableType:
    """The verdict, each side's grouping, each comparison once per pair of groups, the closing line."""
    parts: list[RenderableType] = [_text(d.summary, style="bold"), _text(_sides(d))]
    if d.groups:
        main, *rest = d.groups
        parts.append(_text(f"\n{_title(main, True)}", style="bold"))
        parts += _comparison(main, "" if main.same else "bold")
        if rest:
            n = sum(len(g.hosts) for g in rest)
            groups = f"{len(rest)} group{'s' if len(rest) != 1 else ''}"
            parts.append(_text(f"\nHosts compared otherwise: {n} host{'s' if n != 1 else ''} in {groups}"))
            for g in rest:
                parts.append(_text(f"  {_title(g, False)}", style="bold"))
                parts += _comparison(g, "", "      ")
    parts.append(_text(f"\n{closing}"))
    return Group(*parts)
