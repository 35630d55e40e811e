"""Topology → GraphML and node-link JSON for other graph tools (Gephi, yEd, networkx users); PDFs made
reproducible (:func:`reproducible_pdf`)."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import re
from typing import Any

import networkx as nx

from topomap.base.errors import TopomapError
from topomap.graph import Topology
from topomap.render.text import visible


def combined_graph(topos: list[Topology]) -> nx.Graph:
    """One graph for several hosts: node ids prefixed with the host name when there are several."""
    if len(topos) == 1:
        return topos[0].graph
    out = nx.Graph()
    for k, t in enumerate(topos):
        prefix = (t.snapshot.host.hostname or f"host{k}") + "/"
        out.update(nx.relabel_nodes(t.graph, {n: prefix + n for n in t.graph.nodes}, copy=True))
    return out


def xml_safe(text: str) -> str:
    """Text GraphML can hold: control characters written visibly as \\xNN by the one rule
    (:func:`topomap.render.text.visible`), tab, newline and return kept as data. A name from a paste can
    carry them (issue 14: GraphML was invalid XML)."""
    return visible(text, keep="\t\n\r")


def _value(v: object) -> object:
    return xml_safe(v) if isinstance(v, str) else v


def _scalar_only(g: nx.Graph) -> nx.Graph:
    """GraphML holds scalars only: drop None, keep bool/int/float/str; strings made XML-safe."""
    h = nx.Graph()
    for n, d in g.nodes(data=True):
        h.add_node(_value(n), **{k: _value(v) for k, v in d.items() if isinstance(v, (bool, int, float, str))})
    for u, v, d in g.edges(data=True):
        h.add_edge(
            _value(u),
            _value(v),
            **{k: _value(val) for k, val in d.items() if isinstance(val, (bool, int, float, str))},
        )
    return h


def graphml(topos: list[Topology]) -> bytes:
    buf = io.BytesIO()
    g = _scalar_only(combined_graph(topos))
    h = nx.Graph()
    h.add_nodes_from(sorted(g.nodes(data=True)))
    h.add_edges_from(sorted((min(u, v), max(u, v), d) for u, v, d in g.edges(data=True)))
    nx.write_graphml(h, buf)
    return buf.getvalue()


def node_link_json(topos: list[Topology]) -> bytes:
    g = combined_graph(topos)
    data: dict[str, Any] = nx.node_link_data(g, edges="edges")
    data["nodes"] = sorted(data["nodes"], key=lambda n: str(n["id"]))
    data["edges"] = sorted(data["edges"], key=lambda e: (str(e["source"]), str(e["target"])))
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


# --- reproducible PDFs (issue 36 item 10) ---------------------------------------------------------

#: A date in a PDF's document information (PDF 1.7 §7.9.4): ``D:YYYYMMDDHHmmSS`` and a time zone.
#: Graphviz's cairo (1.16, as Ubuntu 22.04 ships it) writes ``/CreationDate (D:20261203095735Z)``
#: from the clock, and ignores SOURCE_DATE_EPOCH (later cairo releases read it).
_PDF_DATE = re.compile(rb"/(?:CreationDate|ModDate) \(D:[0-9]{4,14}(?:Z|[+-][0-9]{2}'?[0-9]{2}'?)?\)")


def source_date() -> dt.datetime | None:
    """The time ``SOURCE_DATE_EPOCH`` names (seconds since 1970, UTC), as reproducible builds set it
    (https://reproducible-builds.org/specs/source-date-epoch/); None when it is unset or empty. A value
    that is not a whole number of seconds is refused: the specification asks a tool to fail then."""
    raw = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or len(raw) > 12:  # 12 digits: past the year 33,000
        raise TopomapError(
            f"SOURCE_DATE_EPOCH={visible(raw[:40])!r} is not a number of seconds since 1970",
            hint="set it to a whole number (e.g. $(git log -1 --format=%ct)), or unset it",
        )
    return dt.datetime.fromtimestamp(int(raw), dt.timezone.utc)


def _pdf_date(when: dt.datetime, width: int) -> bytes | None:
    """``when`` as ``(D:…)`` of exactly ``width`` bytes, or None: a date the same length as the one it
    replaces keeps every byte offset of the file (its cross-reference table) true."""
    stamp = when.strftime("%Y%m%d%H%M%S").encode()
    for zone in (b"Z", b"+00'00'", b"+00'00", b"+0000", b""):
        text = b"(D:" + stamp + zone + b")"
        if len(text) == width:
            return text
    return None


def reproducible_pdf(data: bytes) -> bytes:
    """A PDF whose bytes depend on its content only: each ``/CreationDate`` (and ``/ModDate``) becomes
    the time of ``SOURCE_DATE_EPOCH`` when it is set, and is blanked out (spaces of the same length: the
    date is optional, PDF 1.7 §14.3.3) when it is not, so the same diagram gives the same file on every
    run. Lengths are kept, so the cross-reference offsets stay true."""
    when = source_date()

    def fix(m: re.Match[bytes]) -> bytes:
        key, _, date = m.group().partition(b" ")
        new = _pdf_date(when, len(date)) if when is not None else None
        return key + b" " + new if new is not None else b" " * len(m.group())

    return _PDF_DATE.sub(fix, data)
