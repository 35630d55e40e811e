"""Several nodes from a merged snapshot: NCCL's transport for the pairs inside each host and for the
pairs its rings join across hosts; :func:`predict` takes any snapshot, one host or several."""

from __future__ import annotations

from topomap.model.snapshot import Snapshot
from topomap.nccl.cluster import predict_groups
from topomap.nccl.predict import NcclReport, predict_snapshot
from topomap.transport.rules import NcclEnv


def predict(snap: Snapshot, env: NcclEnv, ranks: str | None = None, version: str | None = None) -> NcclReport:
    """NCCL's transports on one host's snapshot, or on every node of a merged one."""
    if snap.source.kind == "merge":
        return predict_cluster(snap, env, ranks, version)
    return predict_snapshot(snap, env, ranks, version)


def predict_cluster(snap: Snapshot, env: NcclEnv, ranks: str | None, version: str | None) -> NcclReport:
    """Several nodes from a merged snapshot: ranks host by host (``--ranks`` applies on every host), every
    pair inside a host, and across hosts the pairs NCCL's rings join by default — the same local rank on
    consecutive hosts, both ways, each decided for the sender's side. Worked out once per group of
    alike hosts (topomap.nccl.cluster); every host's entries listed."""
    return predict_groups(snap, env, ranks, version).report()
