"""`topomap cluster`: a merged snapshot's hosts by shape, where they differ, the rails, the NVLink
cliques and the outliers (``analyse``); the result renders in ``topomap.render.cluster_view`` and
encodes with ``ClusterReport.to_json()``."""

from __future__ import annotations

from topomap.cluster.analyse import analyse, analyse_hosts
from topomap.cluster.report import CLUSTER_SCHEMA, ClusterReport, FactReport, Outlier

__all__ = ["CLUSTER_SCHEMA", "ClusterReport", "FactReport", "Outlier", "analyse", "analyse_hosts"]
