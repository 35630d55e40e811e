"""topomap: what your data travels over on a GPU server — host memory, GPU link or network.

Importing the package touches no hardware and loads no heavy dependency. The library's calls
(:mod:`topomap.api`: ``topomap.load``, ``topomap.load_flow``, ``topomap.map_flow``,
``topomap.bind_snapshots``) load on first use; ``from topomap.api import load`` gives them typed.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_API = ("BoundFlow", "bind_snapshots", "load", "load_flow", "map_flow")

__all__ = ["BoundFlow", "__version__", "bind_snapshots", "load", "load_flow", "map_flow"]


def __getattr__(name: str) -> Any:
    """The library's calls, imported on first use (PEP 562): start-up stays light, and the modules that read
    ``topomap.__version__`` do not sit above the api."""
    if name in _API:
        return getattr(importlib.import_module("topomap.api"), name)
    raise AttributeError(f"module 'topomap' has no attribute {name!r}")
