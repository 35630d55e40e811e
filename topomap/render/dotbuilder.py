"""A diagram under construction: the `graphviz` package's own DOT builder and quoting, with generated ids.

The `graphviz` package writes the statements (``graph.node``, ``graph.edge``, ``graph.subgraph``) and
quotes every identifier and value; :func:`dot_string` makes a label from any text (control characters
visible by :func:`topomap.render.text.label_text`, backslashes literal by ``graphviz.escape``, ``<…>``
never HTML). Node ids are generated (``n0``, ``n1``…), never taken from an input, so no name can
become a statement.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import graphviz

from topomap.render.text import label_text


def dot_string(text: str, bounded: bool = True) -> str:
    """Any text as a DOT label or tooltip: shown exactly as written, newlines as line breaks. A label
    line past :data:`topomap.render.text.MAX_LABEL_LINE` is refused (``bounded``; tooltips are not)."""
    text = graphviz.escape(label_text(text, bounded)).replace("\n", "\\n")
    quoted: str = graphviz.nohtml(text)  # a NoHtml string: "<…>" stays text, never an HTML-like label
    return quoted


def node_key(h: int, node: str) -> str:
    """The builder's key of a topology node of host ``h`` (hosts share node names)."""
    return f"{h}:{node}"


@dataclass(frozen=True)
class NodeSpec:
    """A node drawn inside a box another function opens (a flow step inside its host's box)."""

    key: str
    label: str
    attrs: dict[str, str]


@dataclass
class DotBuilder:
    """One diagram: generated ids by key, the keys of the nodes declared (in drawing order, which the
    layout hints use), and the graph or box now being written."""

    ids: dict[str, str] = field(default_factory=dict)
    declared: list[str] = field(default_factory=list)
    _stack: list[Any] = field(default_factory=list)

    def nid(self, key: str) -> str:
        if key not in self.ids:
            self.ids[key] = f"n{len(self.ids)}"
        return self.ids[key]

    def start(self, name: str, graph: dict[str, str], node: dict[str, str], edge: dict[str, str]) -> None:
        """Begin the diagram: a directed graph with these default graph, node and edge attributes."""
        self._stack = [graphviz.Digraph(name, graph_attr=graph, node_attr=node, edge_attr=edge)]

    def source(self) -> str:
        """The DOT text of the finished diagram."""
        text: str = self._stack[0].source
        return text

    def reserve(self, key: str) -> None:
        """Record a node that :meth:`place` draws later, inside a box another function opens (a step)."""
        self.nid(key)
        self.declared.append(key)

    def node(self, key: str, label: str, **attrs: str) -> str:
        """Draw a node in the current box (so every edge refers to a drawn node); returns its id."""
        self.declared.append(key)
        return self._draw(key, label, attrs)

    def place(self, spec: NodeSpec) -> None:
        """Draw a node :meth:`reserve` recorded earlier."""
        self._draw(spec.key, spec.label, spec.attrs)

    def _draw(self, key: str, label: str, attrs: dict[str, str]) -> str:
        self._stack[-1].node(self.nid(key), dot_string(label), **attrs)
        return self.nid(key)

    def edge(self, a: str, b: str, label: str | None = None, **attrs: str) -> None:
        """An edge between two nodes by key; ``label`` and ``tooltip`` are text, shown as written."""
        if "tooltip" in attrs:
            attrs["tooltip"] = dot_string(attrs["tooltip"], bounded=False)
        self._stack[-1].edge(self.nid(a), self.nid(b), None if label is None else dot_string(label), **attrs)

    def invisible(self, a: str, b: str, **attrs: str) -> None:
        """A layout hint: an invisible edge that puts ``b`` below ``a``."""
        self._stack[-1].edge(self.nid(a), self.nid(b), style="invis", **attrs)

    def graph_label(self, html_label: str) -> None:
        """The diagram's own label, a Graphviz HTML-like label (render/legend.py), set last so that
        no box inherits it."""
        self._stack[-1].attr(label=html_label)

    @contextmanager
    def box(self, key: str, label: str, **attrs: str) -> Iterator[None]:
        """A cluster (a drawn box) around whatever is drawn inside the ``with`` block."""
        with self._stack[-1].subgraph(name=f"cluster_{self.nid('cluster:' + key)}") as sub:
            sub.attr(label=dot_string(label), **attrs)
            self._stack.append(sub)
            try:
                yield
            finally:
                self._stack.pop()

    def same_rank(self, keys: list[str]) -> None:
        """These nodes on one row."""
        with self._stack[-1].subgraph() as sub:
            sub.attr(rank="same")
            for k in keys:
                sub.node(self.nid(k))
