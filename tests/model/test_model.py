"""The snapshot contract: strict validation with JSON paths, versioning, determinism, the shipped schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from topomap.model.codec import decode_snapshot, encode_snapshot, load_snapshot
from topomap.model.snapshot import SnapshotError

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "topomap" / "schema" / "snapshot.schema.json"


def sample() -> dict:  # type: ignore[type-arg]
    return json.loads((SAMPLES / "snapshots" / "rtx5090-pair-p2p-gns.json").read_text())


def test_shipped_schemas_are_generated_from_the_models() -> None:
    from topomap.render.schemas import SCHEMAS, schema_text

    assert SCHEMA_FILE.read_text() == schema_text("snapshot")
    for name in SCHEMAS:
        shipped = SCHEMA_FILE.parent / f"{name}.schema.json"
        assert shipped.read_text() == schema_text(name), f"run: topomap schema {name} > {shipped}"


def test_bad_field_error_names_the_json_path() -> None:
    d = sample()
    d["gpus"][1]["index"] = "one"
    with pytest.raises(SnapshotError) as exc:
        decode_snapshot(json.dumps(d).encode(), "lot.json")
    assert str(exc.value) == "lot.json: gpus[1].index: expected `int`, got `str`"  # the field first, as every message


def test_typo_in_a_key_is_refused() -> None:
    d = sample()
    d["gpus"][0]["numa_nod"] = 0
    with pytest.raises(SnapshotError, match=r"lot.json: gpus\[0\]: object contains unknown field `numa_nod`$"):
        decode_snapshot(json.dumps(d).encode(), "lot.json")


def test_newer_schema_is_refused_with_what_to_do() -> None:
    d = sample()
    d["schema"] = "topomap.snapshot/2"
    with pytest.raises(SnapshotError) as exc:
        decode_snapshot(json.dumps(d).encode(), "new.json")
    assert "newer than this topomap reads" in str(exc.value) and "upgrade topomap" in str(exc.value)


def test_not_json_and_wrong_document() -> None:
    with pytest.raises(SnapshotError, match="not valid JSON"):
        decode_snapshot(b'{"schema": ', "cut.json")
    with pytest.raises(SnapshotError, match="not a topomap snapshot"):
        decode_snapshot(b'{"schema": "something/1"}', "x.json")


def test_encoding_is_byte_identical_and_round_trips() -> None:
    for f in sorted((SAMPLES / "snapshots").glob("*.json")):
        snap = load_snapshot(f)
        once = encode_snapshot(snap)
        assert once == f.read_bytes(), f"{f.name} is not in canonical form (run samples/regenerate.py)"
        assert encode_snapshot(decode_snapshot(once)) == once
