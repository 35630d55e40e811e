"""The lines every view of a merged cluster opens and closes with (issue 34): what is the same once
("512 hosts alike (8 × NVIDIA H200, NV18 all pairs, 10 NICs): one description, of h00000"), the
hosts that differ and how (each group of alike hosts outside the largest, every host named), and
where the per-host listing is (``--all``, ``--host NAME``). The grouping is
:func:`topomap.cluster.groups.group_hosts`'s; plain strings, names made visible, never cut."""

from __future__ import annotations

from collections.abc import Callable

from topomap.cluster.groups import Grouping, HostGroup
from topomap.render.text import visible

#: Host names listed for a group before "and N more (--json lists all)".
NAMES_SHOWN = 8


def names_text(hosts: tuple[str, ...] | list[str], limit: int | None = NAMES_SHOWN) -> str:
    """``h00001, h00002 and 590 more (--json lists all)``."""
    shown = list(hosts) if limit is None else list(hosts)[:limit]
    text = ", ".join(visible(h) for h in shown)
    if len(shown) < len(hosts):
        text += f" and {len(hosts) - len(shown)} more (--json lists all)"
    return text


def opening(g: Grouping, what: str) -> str:
    """``512 hosts alike (…): one description, of h00000``; ``what``: what the view gives once."""
    main = g.main
    return f"{visible(main.headline())}: {what}, of {visible(main.hosts[0])}"


def group_title(group: HostGroup) -> str:
    """``group B: 2 hosts alike (…): h00050, h00550`` (every host named: they are few, and they differ)."""
    return f"group {group.label}: {visible(group.headline())}: {names_text(group.hosts, None)}"


def differing(g: Grouping, extra: Callable[[HostGroup], list[str]] | None = None) -> list[str]:
    """The hosts outside group A, group by group, each with how it differs from group A, then the
    lines ``extra`` gives for the group (what the view says of it: its own matrix, its prediction)."""
    main = g.main
    if not g.others:
        return [f"Hosts that differ from the {len(main)} alike: none"]
    n = g.differing
    out = [
        f"Hosts that differ from the {len(main)} alike: {n} host{'s' if n != 1 else ''} in "
        f"{len(g.others)} group{'s' if len(g.others) != 1 else ''}"
    ]
    for group in g.others:
        out.append(f"  {group_title(group)}")
        out += [f"      {visible(line)}" for line in group.differs]
        if extra is not None:
            out += extra(group)
    return out


def closing(command: str, g: Grouping, full: str = "") -> str:
    """Where the per-host listing is; ``full``: what a host in full adds."""
    some = visible(g.main.hosts[0])
    return f"(topomap {command} … --host {some} shows one host in full{f', {full}' if full else ''}; --all every host)"
