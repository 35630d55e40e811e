"""The NIC Legend of `nvidia-smi topo -m` (``NIC0: mlx5_0`` …): the device name behind each NICn column.

A paste is often cut inside it — the legend comes last, and a terminal selection or a forum post
stops a few lines early. The names the legend gives are kept; a NIC column it does not reach is
named by its column (``NIC2``), and the note says where the legend stops, so that a mix such as
``mlx5_0, mlx5_1, NIC2`` is never silent (issue 23).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from topomap.base.errors import ImportFailure
from topomap.model.snapshot import Finding

_ENTRY = re.compile(r"^\s*NIC(\d+):\s*(\S+)\s*$")
_TITLE = re.compile(r"^\s*NIC Legend\s*:?\s*$", re.IGNORECASE)


@dataclass
class NicLegend:
    """What the NIC Legend names: NIC index → device name; the line of its title (None: no title);
    and the entry whose name the paste cut off (``("NIC2", "mlx5")``), if any."""

    names: dict[int, str] = field(default_factory=dict)
    title_line: int | None = None
    cut_entry: tuple[int, str] | None = None


def read_nic_legend(lines: list[str], origin: str, error: type[ImportFailure]) -> NicLegend:
    """The NIC Legend of a paste. Two different names for one NIC are refused (two outputs in one
    file). The last entry, when it is the paste's last line and its name a strict beginning of
    another entry's name (``NIC2: mlx5`` after ``mlx5_0``, ``mlx5_1``), is taken as cut, not as a name."""
    legend = NicLegend()
    last: tuple[int, int, str] | None = None  # (line index, NIC index, name) of the last entry
    for i, line in enumerate(lines):
        if _TITLE.match(line):
            legend.title_line = i + 1
            continue
        m = _ENTRY.match(line)
        if m is None or len(m.group(1)) > 6:
            continue
        k, name = int(m.group(1)), m.group(2)
        if legend.names.get(k, name) != name:
            raise error(
                f"{origin}:{i + 1}: the NIC Legend names NIC{k} twice ({legend.names[k]} and {name}); "
                "two outputs in one file?",
                hint="split the file, one per host",
            )
        legend.names[k] = name
        last = (i, k, name)
    if last is not None:
        i, k, name = last
        others = [v for j, v in legend.names.items() if j != k]
        if not any(x.strip() for x in lines[i + 1 :]) and _looks_cut(name, others):
            del legend.names[k]
            legend.cut_entry = (k, name)
    return legend


def _looks_cut(name: str, others: list[str]) -> bool:
    """``name`` is the start of another entry's name and not itself a name of their shape: ``mlx5``
    or ``mlx5_`` beside ``mlx5_0`` is cut; ``mlx5_1`` beside ``mlx5_10`` is a name."""
    if not any(v != name and v.startswith(name) for v in others):
        return False
    stems = {re.sub(r"\d+$", "", v) for v in others}
    return not any(re.fullmatch(re.escape(s) + r"\d+", name) for s in stems)


def legend_notes(nic_labels: list[str], legend: NicLegend) -> tuple[list[str], list[Finding]]:
    """What to say about the NIC columns the legend does not name (they keep their column's name):
    no legend at all is a source note; a legend the paste cuts, or one with a gap, is a finding
    (shown by `show`, kept in the snapshot) naming where it stops and which NICs it misses."""
    columns = sorted(int(x[3:]) for x in nic_labels if x.startswith("NIC") and x[3:].isdigit())
    missing = [k for k in columns if k not in legend.names]
    if not missing:
        return [], []
    if not legend.names and legend.title_line is None and legend.cut_entry is None:
        return ["NIC names not shown (no NIC Legend)"], []
    shown = _span(missing)
    evidence = [f"NIC Legend: line {legend.title_line}"] if legend.title_line is not None else []
    evidence += [f"named: {', '.join(f'NIC{k}: {v}' for k, v in sorted(legend.names.items()))}"] if legend.names else []
    if legend.cut_entry is not None:
        k, name = legend.cut_entry
        where = f"cut inside NIC{k}'s line ({name!r} is the start of a name)"
    elif not legend.names:
        where = "cut after its title"
    elif min(missing) > max(legend.names):
        where = f"cut after NIC{max(legend.names)}"
    else:
        where = f"does not name {shown}"
    text = f"NIC Legend {where}: {shown} named by their matrix column; paste the whole legend for their names"
    found = Finding(
        kind="nic-legend-cut", subject="host", severity="warning", text=text, evidence=evidence, source="nvidia-smi"
    )
    return [], [found]


def _span(indexes: list[int]) -> str:
    """``NIC2–NIC9`` for a run of consecutive NICs, else ``NIC2, NIC5``."""
    if len(indexes) > 2 and indexes == list(range(indexes[0], indexes[-1] + 1)):
        return f"NIC{indexes[0]}–NIC{indexes[-1]}"
    return ", ".join(f"NIC{k}" for k in indexes)
