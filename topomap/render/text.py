"""The one rule for putting a string from a file into any view, and the memory text every view shares.

Names come from files users paste and machines they rent: a host, GPU, NIC, step or run label may
hold an escape sequence, a newline, a tab, a bidirectional override, a line separator, a lone
surrogate. Every view writes each such character visibly as ``\\xNN`` (``\\uNNNN`` above U+00FF; the
rule is :mod:`topomap.base.safetext`'s, which the CLI also applies to all it prints), so no input can
recolour the terminal, move the cursor, split a line, shift a table's columns, or make a page, an
SVG or an XML file unreadable:

- :func:`visible` — terminal text, the HTML report, chart text: every control character escaped;
- :func:`chart_text` — chart text (matplotlib): the same, and "$" never starts mathematics;
- :func:`label_text` — diagram labels (DOT, Graphviz HTML-like labels): the same, but a newline
  stays a line break of the label (the diagram's own syntax is then quoted by render/dot.py and
  render/legend.py);
- ``visible(text, keep="\\t\\n\\r")`` — GraphML (render/export.py): XML keeps those three as data.

This module imports no library, so the light commands (`matrix`, `show`) can use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topomap.base.errors import TopomapError
from topomap.base.safetext import safe_text
from topomap.base.units import fmt_bytes

#: What to install for charts (matplotlib is an extra: the probe in a container needs none of it).
#: The README installs from a checkout (`pip install -e .`): its extra is installed the same way.
PLOT_HINT = "pip install -e '.[plot]' in the topomap checkout, or pip install 'topomap[plot]' (matplotlib)"

if TYPE_CHECKING:
    from topomap.model.facts import Bandwidth, GpuMemory

#: The longest line of a diagram label (a name, a flow's label). Graphviz fails on a few thousand
#: characters in some builds and a 1,000,000-character label closes its pipe (issue 24), so a longer
#: line is refused before `dot` runs. Tooltips are not labels and are not bounded here.
MAX_LABEL_LINE = 2000


def visible(text: str, keep: str = "") -> str:
    """``text`` with its control, bidirectional and separator characters written visibly as ``\\xNN`` /
    ``\\uNNNN`` (:func:`topomap.base.safetext.safe_text`, the one rule); those in ``keep`` stay."""
    return safe_text(text, keep)


def label_text(text: str, bounded: bool = True) -> str:
    """Text for a diagram label: control characters visible as ``\\xNN``, newlines kept as line breaks.
    With ``bounded``, a line longer than :data:`MAX_LABEL_LINE` characters is refused (TopomapError)."""
    if bounded and len(text) > MAX_LABEL_LINE:
        longest = max(text.split("\n"), key=len)
        if len(longest) > MAX_LABEL_LINE:
            raise TopomapError(
                f"a diagram label of {len(longest):,} characters ({visible(longest[:40])}…) is longer than the "
                f"{MAX_LABEL_LINE:,} a diagram can show",
                hint="shorten that name or label in the flow or snapshot",
            )
    return visible(text, keep="\n")


def chart_text(text: str) -> str:
    """Text for a matplotlib chart (timeline, Gantt): control characters visible as ``\\xNN`` (an SVG
    cannot hold them, and matplotlib warns of glyphs it lacks), and "$" escaped so that a name such
    as ``a$b$`` is not typeset as mathematics."""
    return visible(text).replace("$", r"\$")


def memory_text(mem: GpuMemory) -> str:
    """A card's memory as :func:`topomap.model.facts.gpu_memory` decides it, written as every view
    writes a size (:func:`topomap.base.units.fmt_bytes`): ``79.65 GiB``, ``80 GiB (derived)`` when
    taken from the model or the name rather than read, ``—`` when unknown."""
    if mem.total_bytes is None:
        return "—"
    if mem.kind == "given":  # a lot's figure, with the size it gave: "(declared: 80 GB)"
        return f"{fmt_bytes(mem.total_bytes)} ({mem.source})"
    return fmt_bytes(mem.total_bytes) + (" (derived)" if mem.derived else "")


def bandwidth_text(bw: Bandwidth) -> str:
    """A link's bandwidth on a view (:meth:`Bandwidth.text`: "450 GB/s spec", "≥ 253 GB/s derived"), or
    "bandwidth unknown" where the source did not record it."""
    return "bandwidth unknown" if bw.gbps is None else bw.text()


def nic_words(name: str) -> str:
    """A NIC by its name as the paste's legend gives it (``NIC mlx5_0``); a paste with no NIC legend
    names it by its matrix column (``NIC0``), said once, never ``NIC NIC0``."""
    return name if name[:3].upper() == "NIC" else f"NIC {name}"
