"""NCCL's rules and environment: they live in :mod:`topomap.transport.rules` (below the flow, which
asks them too); re-exported here under their old names."""

from __future__ import annotations

from topomap.transport.rules import (
    NCCL_SOURCE,
    PATH_ORDER,
    RULES,
    TRANSPORTS,
    NcclEnv,
    Rule,
    Transport,
    cumem_default,
    parse_env,
    path_rank,
    rules_used,
    version_tuple,
)

__all__ = [
    "NCCL_SOURCE",
    "PATH_ORDER",
    "RULES",
    "TRANSPORTS",
    "NcclEnv",
    "Rule",
    "Transport",
    "cumem_default",
    "parse_env",
    "path_rank",
    "rules_used",
    "version_tuple",
]
