"""Requirements and their verdicts per rule: read the rules (``read_requirements``), name the lots
(``flow_lots`` for a flow's hosts, ``snapshot_lots`` for snapshots), ``check`` them; the result
renders in ``topomap.render.verdict_view`` and encodes with ``to_json()``."""

from __future__ import annotations

from topomap.check.evaluate import check
from topomap.check.requirements import (
    RequirementsError,
    parse_requirements,
    read_requirements,
    requirements_json_schema,
)
from topomap.check.results import CheckResult, Finding, Lot, RuleResult, flow_lots, snapshot_lots

__all__ = [
    "CheckResult",
    "Finding",
    "Lot",
    "RequirementsError",
    "RuleResult",
    "check",
    "flow_lots",
    "parse_requirements",
    "read_requirements",
    "requirements_json_schema",
    "snapshot_lots",
]
