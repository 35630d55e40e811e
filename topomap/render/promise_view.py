"""Promised against received in the terminal: one line per fact (status, fact, promised, received), the
same facts of several hosts said once with the hosts, then the verdict and the commands that would
check what could not be. Renderables only; the CLI prints."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from topomap.diff.promise import PromiseLine, PromiseResult
from topomap.render.text import visible

_STYLE = {"as promised": "green", "short": "bold red", "cannot check": "yellow"}
_WORD = {"as promised": "as promised", "short": "SHORT", "cannot check": "cannot check"}


def _grouped(lines: list[PromiseLine]) -> list[tuple[PromiseLine, list[str]]]:
    """Lines equal but for their host, once each with the hosts they hold on."""
    out: dict[tuple[str, str, str, str], tuple[PromiseLine, list[str]]] = {}
    for x in lines:
        key = (x.fact, x.status, x.promised, x.received)
        out.setdefault(key, (x, []))[1].append(x.host or "")
    return list(out.values())


def promise_view(r: PromiseResult) -> RenderableType:
    t = Text()
    t.append(visible(f"promised: {r.promised}") + "\n", style="bold")
    t.append(visible(f"received: {r.received}") + "\n\n")
    groups = _grouped(r.lines)
    wf = max((len(x.fact) for x, _ in groups), default=4)
    wp = max((len(x.promised) for x, _ in groups), default=8)
    for x, hosts in groups:
        named = [h for h in hosts if h]
        where = f" [{', '.join(named)}]" if named else ""
        t.append(f"  {_WORD[x.status]:<12}", style=_STYLE[x.status])
        t.append(visible(f"  {x.fact:<{wf}}  promised {x.promised:<{wp}}  received {x.received}{where}") + "\n")
    short = sum(x.status == "short" for x, _ in groups)
    unchecked = sorted({x.settle for x, _ in groups if x.status == "cannot check" and x.settle})
    cannot = sum(x.status == "cannot check" for x, _ in groups)
    said = [f"{short} fact(s) short"] if short else []
    said += [f"{cannot} cannot be checked from what was received"] if cannot else []
    counts = ", ".join(said) or "every promised fact checked"
    style = "bold red" if r.verdict == "short of the promise" else "yellow" if r.verdict == "cannot tell" else "green"
    parts: list[RenderableType] = [t, Text(visible(f"verdict: {r.verdict} ({counts})"), style=style)]
    if unchecked:
        parts.append(Text("what would check the rest (appended to the paste, or `topomap probe` on the machine):"))
        parts += [Text(visible(f"  - {c}")) for c in unchecked]
    return Group(*parts)
