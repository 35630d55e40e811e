"""The JSON Schemas topomap ships (topomap/schema/*.schema.json), generated from the models.

Each schema's model is imported inside its function, to keep start-up fast: `topomap schema snapshot`
should not import the requirements checker (and with it networkx) to print one schema.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def _snapshot() -> dict[str, Any]:
    from topomap.model.codec import json_schema

    return json_schema()


def _flow() -> dict[str, Any]:
    from topomap.flow.spec import flow_json_schema

    return flow_json_schema()


def _requirements() -> dict[str, Any]:
    from topomap.check import requirements_json_schema

    return requirements_json_schema()


def _run() -> dict[str, Any]:
    import msgspec

    from topomap.record.model import RUN_SCHEMA, Run

    schema: dict[str, Any] = msgspec.json.schema(Run)
    schema["title"] = RUN_SCHEMA
    return schema


def _lot() -> dict[str, Any]:
    from topomap.model.lots import lot_schema

    return lot_schema()


SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "snapshot": _snapshot,
    "flow": _flow,
    "requirements": _requirements,
    "run": _run,
    "lot": _lot,
}


def schema_text(name: str) -> str:
    return json.dumps(SCHEMAS[name](), indent=2, sort_keys=True) + "\n"
