"""Semantic differences between two lots (and, with a flow, between the flow's arrows), or two
clusters host by host. ``diff_snapshots`` (with ``flow=``) and ``diff_clusters`` are the entry
points; their results render in ``topomap.render.verdict_view`` and encode with ``to_json()``."""

from __future__ import annotations

from topomap.diff.changes import Change, NotCompared
from topomap.diff.clusters import ClusterDiff, HostDiff, diff_clusters
from topomap.diff.results import ArrowRow, DiffResult, Match
from topomap.diff.snapshots import diff_snapshots

__all__ = [
    "ArrowRow",
    "Change",
    "ClusterDiff",
    "DiffResult",
    "HostDiff",
    "Match",
    "NotCompared",
    "diff_clusters",
    "diff_snapshots",
]
