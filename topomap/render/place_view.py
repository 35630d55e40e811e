"""``topomap place`` in the terminal: the chosen GPUs and why, what the next-best group loses,
what could not be ranked, the skipped GPUs, and the lines that pin a job there. Renderables only."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from topomap.base.notes import Note
from topomap.place import FlowPlacement, PlaceResult
from topomap.render.mapview import summary_view
from topomap.render.notes import group_notes
from topomap.render.tables import esc


def _ids(gids: list[str]) -> str:
    return ", ".join(gids)


def grouped_notes(notes: list[Note]) -> list[str]:
    """Per-GPU notes that say the same thing are said once with their GPUs ("4 GPUs gpu0–3: cores
    unknown: …"), where the first of them stood; every other note as it is, in order: the one grouping
    of notes (:func:`topomap.render.notes.group_notes`), by each note's kind and its ``gpu`` subject."""
    return [line.text for line in group_notes((n, 0) for n in notes)]


def place_view(r: PlaceResult) -> RenderableType:
    """The placement of one host, in reading order: choice, reasons, ranks, lines, notes."""
    what = "each GPU alone" if r.pattern == "independent" else f"pattern {r.pattern}"
    head = f"{r.k} GPU(s) for {what}" + (" with a NIC each" if r.nics else "") + f": {_ids([g.gid for g in r.gpus])}"
    parts: list[RenderableType] = [esc(head, "bold")]
    if r.slowest is not None:
        parts.append(esc(f"  slowest link inside the group: {r.slowest.text} ({r.slowest.a}–{r.slowest.b})"))
    searched = r.search_note()
    if searched:
        parts.append(esc(f"  {searched}", "yellow"))
    if r.ties > 1:
        many = f"{r.ties} groups" if r.search_complete else f"at least {r.ties} groups"
        parts.append(esc(f"  {many} tie on every measure; the lowest indices win"))
    if r.runner_up:
        parts.append(
            esc(f"  next best {'' if r.search_complete else 'found '}{_ids(r.runner_up)}: " + "; ".join(r.runner_lost))
        )
    for line in r.unranked:
        parts.append(esc(f"  {line}", "yellow"))
    if r.links:
        parts.append(Text("\nLinks inside the group", style="bold"))
        for p in r.links:
            parts.append(esc(f"  {p.a}–{p.b}: {p.text}", "" if p.certain else "yellow"))
    parts.append(Text("\nPer GPU", style="bold"))
    for g in r.gpus:
        ordinal = f"CUDA {g.cuda_ordinal}" if g.cuda_ordinal is not None else "CUDA ordinal unknown"
        numa = f"NUMA {g.numa_node}" if g.numa_node is not None else "NUMA unknown"
        cpus = f"cores {g.cpus} ({g.cpus_source})" if g.cpus else "cores unknown"
        line = f"  {g.gid} (nvidia-smi {g.index}, {ordinal}): {numa}, {cpus}"
        if r.nics:
            nic = f"NIC {g.nic} {g.nic_path or 'path unknown'}, GPUDirect {g.gdr}" if g.nic else "no usable NIC"
            line += f"; {nic}"
        parts.append(esc(line))
    if r.skipped:
        parts.append(Text("\nSkipped", style="bold"))
        for s in r.skipped:
            parts.append(esc(f"  {s.gid}: {s.reason}"))
    parts.append(Text("\nUse it", style="bold"))
    for what_for, line in r.commands:
        parts.append(esc(f"  {what_for + ':':<14} {line}"))
    parts.append(Text("\nNotes", style="bold"))
    for n in grouped_notes(r.notes):
        parts.append(esc(f"  • {n}", "dim"))
    return Group(*parts)


def flow_place_view(fp: FlowPlacement) -> RenderableType:
    """Each placed step's placement, then the flow's arrows as written and as placed."""
    parts: list[RenderableType] = []
    for step, host, r in fp.steps:
        parts.append(esc(f"Step {step} on {host}:gpus → {_ids([f'{host}:{g.gid}' for g in r.gpus])}", "bold"))
    seen: set[str] = set()
    for _, host, r in fp.steps:
        if host not in seen:
            seen.add(host)
            parts += [Text("\nHost ", style="bold") + esc(host, "bold"), place_view(r)]
    parts += [Text("\nArrows as written (every GPU of the host)", style="bold"), summary_view(fp.before)]
    parts += [Text("\nArrows as placed", style="bold"), summary_view(fp.after)]
    return Group(*parts)
