"""`topo -m` labels and cells a paste glued together: the tab between two of them lost.

nvidia-smi separates every label and cell with a tab. A paste that loses one (a web page that drops
it, a mirror that collapses whitespace) leaves two in one token: ``NIC7NIC8`` in the header,
``SYSSYS`` or ``PXBSYS`` in a row (nccl-tests#311 as stored). nvidia-smi never writes such a token,
so each is read as its parts, and the matrix reader says which lines it read so.
"""

from __future__ import annotations

import re

_GLUED_LABELS = re.compile(r"^(?:(?:GPU|NIC)\d+){2,}$")
_LABEL_PART = re.compile(r"(?:GPU|NIC)\d+")
_GLUED_CELLS = re.compile(r"^(?:NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|X){2,}$")
_CELL_PART = re.compile(r"NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|X")


def split_glued_labels(tokens: list[str]) -> list[str]:
    """Header tokens with ``NIC7NIC8`` read as ``NIC7``, ``NIC8``."""
    return [p for t in tokens for p in (_LABEL_PART.findall(t) if _GLUED_LABELS.match(t) else [t])]


def row_cells(body: str) -> tuple[list[tuple[str, int]], bool]:
    """The cells of a matrix row, each with the offset where its text ends, and whether any were
    glued (two codes in one token): those are read as their parts."""
    out: list[tuple[str, int]] = []
    glued = False
    for mt in re.finditer(r"\S+", body):
        tok = mt.group()
        if _GLUED_CELLS.match(tok):
            glued = True
            out.extend((part, mt.end()) for part in _CELL_PART.findall(tok))
        else:
            out.append((tok, mt.end()))
    return out, glued
