"""The one rule for putting a string from a file into any view, and the memory text every view shares.

Names come from files users paste and machines they rent: a host, GPU, NIC, step or run label may
hold an escape sequence, a newline, a tab, a lone surrogate. Every view writes each such character
visibly as ``\\xNN`` (``\\uNNNN`` above U+00FF), so no input can recolour the terminal, move the
cursor, split a line, shift a table's columns, or make a page, an SVG or an XML file unreadable:

- :func:`visible` — terminal text, the HTML report, chart text: every control character escaped;
- :func:`label_text` — diagram labels (DOT, Graphviz HTML-like labels): the same, but a newline
  stays a line break of the label (the diagram's own syntax is then quoted by render/dot.py and
  render/legend.py);
- ``visible(text, keep="\\t\\n\\r")`` — GraphML (render/export.py): XML keeps those three as data.

This module imports no library, so the light commands (`matrix`, `show`) can use it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from topomap.base.units import fmt_bytes

if TYPE_CHECKING:
    from topomap.model.facts import Bandwidth, GpuMemory

#: Control characters (C0, DEL, C1), lone surrogates (not encodable as UTF-8), U+FFFE and U+FFFF.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 256 else f"\\u{code:04x}"


def visible(text: str, keep: str = "") -> str:
    """``text`` with its control characters written visibly as ``\\xNN``; those in ``keep`` stay."""
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else _escaped(m.group()), text)


def label_text(text: str) -> str:
    """Text for a diagram label: control characters visible as ``\\xNN``, newlines kept as line breaks."""
    return visible(text, keep="\n")


def memory_text(mem: GpuMemory) -> str:
    """A card's memory as :func:`topomap.model.facts.gpu_memory` decides it, written as every view
    writes a size (:func:`topomap.base.units.fmt_bytes`): ``79.65 GiB``, ``80 GiB (derived)`` when
    taken from the model or the name rather than read, ``—`` when unknown."""
    if mem.total_bytes is None:
        return "—"
    return fmt_bytes(mem.total_bytes) + (" (derived)" if mem.derived else "")


def bandwidth_text(bw: Bandwidth) -> str:
    """A link's bandwidth on a view (:meth:`Bandwidth.text`: "450 GB/s spec", "≥ 253 GB/s derived"), or
    "bandwidth unknown" where the source did not record it."""
    return "bandwidth unknown" if bw.gbps is None else bw.text()
