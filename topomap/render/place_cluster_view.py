"""`topomap place CLUSTER --gpus K` in the terminal (issue 34): the alike hosts' placement once, then
the hosts that differ and what their placement changes, then where the per-host listing is."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from topomap.cluster.groups import Grouping, HostGroup
from topomap.place import PlaceError, PlaceResult
from topomap.render.cluster_groups import closing, differing, opening
from topomap.render.place_view import place_view
from topomap.render.tables import esc


def _brief(r: PlaceResult) -> str:
    """The choice in one line: the GPUs, their NICs, the slowest link inside the group."""
    text = ", ".join(g.gid for g in r.gpus)
    if r.nics:
        text += " with NICs " + ", ".join(g.nic or "none" for g in r.gpus)
    if r.slowest is not None:
        text += f"; slowest link {r.slowest.text} ({r.slowest.a}–{r.slowest.b})"
    return text


def place_cluster_view(g: Grouping, placed: dict[str, PlaceResult | PlaceError]) -> RenderableType:
    """``placed``: per group label, its first host's placement (or why it cannot be placed)."""
    main = placed[g.main.label]
    parts: list[RenderableType] = [esc(opening(g, "one placement"))]
    parts.append(place_view(main) if isinstance(main, PlaceResult) else esc(f"cannot place: {main}", "bold red"))

    def own(group: HostGroup) -> list[str]:
        mine = placed[group.label]
        if isinstance(mine, PlaceError):
            return [f"      its placement: cannot place: {mine}" + (f" (hint: {mine.hint})" if mine.hint else "")]
        if isinstance(main, PlaceResult) and _brief(mine) == _brief(main) and mine.commands == main.commands:
            return ["      its placement: the same"]
        return [f"      its placement: {_brief(mine)}"]

    parts.append(Text("\n".join(["", *differing(g, own), closing("place", g)])))
    return Group(*parts)
