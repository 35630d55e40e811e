"""The corner block every diagram carries: title, legend of line colours, provenance, tool version.

Written as a Graphviz HTML-like label, so every input string goes through :func:`html`.
"""

from __future__ import annotations

from topomap import __version__
from topomap.render.text import label_text

GPU_LINK = "#2e7d32"
HOST_MEMORY = "#1565c0"
NETWORK = "#ef6c00"
FADED = "#b0b0b0"
UNKNOWN = "#8e24aa"
MEDIUM_COLOURS = {
    "gpu-link": GPU_LINK,
    "host-memory": HOST_MEMORY,
    "network": NETWORK,
    "local": "#616161",
    "unknown": UNKNOWN,
}


def legend_rows(with_flow: bool) -> list[tuple[str, str]]:
    """(colour, meaning) per line style of the diagrams; colour "" for a text-only row."""
    rows = [
        (GPU_LINK, "GPU link (NVLink, bridge, NVSwitch)"),
        (HOST_MEMORY, "PCIe / host memory"),
        (NETWORK, "network"),
    ]
    if with_flow:
        rows.append((MEDIUM_COLOURS["local"], "local (same device)"))
        rows.append((UNKNOWN, "medium unknown (the source cannot tell)"))
        rows.append((FADED, "hardware the flow does not use"))
    return rows


def flow_legend_rows(media: set[str]) -> list[tuple[str, str]]:
    """The legend of a flow picture (no faded hardware): the three media, local, and the purple of an
    unknown medium whenever an arrow is drawn in it."""
    rows = legend_rows(True)
    keep = rows[:4] + ([rows[4]] if "unknown" in media else [])
    return keep


def html(text: str) -> str:
    """Text for a Graphviz HTML-like label: markup characters as entities, control characters visible
    (:func:`topomap.render.text.label_text`), newlines as line breaks."""
    text = label_text(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return text.replace("\n", "<br/>")


def graph_label(title: str | None, footer: list[str], rows: list[tuple[str, str]], inferred: bool = False) -> str:
    """The bottom-left corner block: title, a one-row legend, provenance lines and the tool version.

    As the graph's own label it always sits in the same corner, never between hosts."""
    cells = "".join(
        f'<td><font color="{c}" point-size="13"><b>&#9472;&#9472;</b></font></td><td align="left">{html(t)}  </td>'
        for c, t in rows
    )
    out = '<<table border="0" cellborder="0" cellspacing="2" cellpadding="1">'
    if title:
        out += f'<tr><td align="left"><font point-size="14"><b>{html(title)}</b></font></td></tr>'
    inner = f'<table border="0" cellborder="0" cellspacing="0" cellpadding="1"><tr>{cells}</tr></table>'
    out += f'<tr><td align="left">{inner}</td></tr>'
    notes = [
        *(["dashed box: inferred from path classes"] if inferred else []),
        # each figure says its own kind (spec, derived, declared …): no list here claims one it lacks
        "GB/s per direction, each with its kind (≥: a lower bound); unknown: not recorded "
        "(a probe on the machine settles it)",
        *footer,
        f"topomap {__version__}",
    ]
    for line in notes:
        out += f'<tr><td align="left"><font point-size="9">{html(line)}</font></td></tr>'
    return out + "</table>>"
