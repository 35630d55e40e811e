"""topomap: what your data travels over on a GPU server — host memory, GPU link or network.

Importing the package touches no hardware and loads no heavy dependency. The library's calls
(:mod:`topomap.api`: ``topomap.load``, ``topomap.load_flow``, ``topomap.map_flow``,
``topomap.bind_snapshots``) load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from topomap.api import BoundFlow, bind_snapshots, load, load_flow, map_flow

_API = ("BoundFlow", "bind_snapshots", "load", "load_flow", "map_flow")

__all__ = ["BoundFlow", "__version__", "bind_snapshots", "load", "load_flow", "map_flow"]


def __getattr__(name: str) -> object:
    """The library's calls, imported on first use (PEP 562)."""
    if name in _API:
        from topomap import api

        return getattr(api, name)
    raise AttributeError(f"module 'topomap' has no attribute {name!r}")
