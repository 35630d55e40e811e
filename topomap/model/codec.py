"""Snapshot JSON: read (schema version first, then one typed decode and validation), write
(deterministic, indented, atomically), and the shipped JSON Schema."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from topomap.base.links import path_code_problem, pcie_class_problem
from topomap.files.atomic import atomic_write
from topomap.files.budget import MAX_JSON_VALUES, MAX_PACKED_VALUES, check_json_values
from topomap.files.inputs import MAX_SNAPSHOT_BYTES, read_bytes, recode_utf8
from topomap.files.kind import json_what
from topomap.model.migrate import migrate
from topomap.model.pack import (
    PACK_MIN_HOSTS,
    collector_paused,
    decode_pack,
    encode_pack,
    is_packed,
    light_members,
    remember_parts,
    reuse_parts,
)
from topomap.model.snapshot import I64_MAX, I64_MIN, MAX_RATE, SCHEMA, SCHEMA_VERSION, Snapshot, SnapshotError
from topomap.model.validate import validate_snapshot

_SCHEMA_RE = re.compile(r"^topomap\.snapshot/(\d{1,9})$")  # bounded: int() refuses 4300+ digits


def check_schema_version(value: object, where: str) -> None:
    """Refuse a snapshot of another schema, naming the version and what to do."""
    if not isinstance(value, str):
        raise SnapshotError(f"{where}: missing or invalid `schema` (expected {SCHEMA!r})")
    m = _SCHEMA_RE.match(value)
    if not m:
        raise SnapshotError(f"{where}: not a topomap snapshot (schema {value!r}, expected {SCHEMA!r})")
    version = int(m.group(1))
    if version > SCHEMA_VERSION:
        raise SnapshotError(
            f"{where}: snapshot schema {value} is newer than this topomap reads ({SCHEMA}); "
            "upgrade topomap (pip install -U topomap)"
        )
    if version < SCHEMA_VERSION:
        raise SnapshotError(f"{where}: snapshot schema {value} is older than {SCHEMA} and cannot be migrated")


class _Head(msgspec.Struct):
    schema: Any = None


_JSON_HINT = "is the file complete? topomap writes snapshots whole; a copy cut short or edited by hand is not"


def decode_snapshot(data: bytes, where: str = "<snapshot>") -> Snapshot:
    """Validate JSON bytes into a Snapshot; errors name ``where`` and the JSON path.

    The schema version is read first (a newer snapshot is told apart from a broken one), then the
    whole file is decoded straight into the model, which checks every type and number bound in one
    pass. Beyond the schema, :func:`topomap.model.validate.validate_snapshot` refuses what no view can use
    (PCI parent cycles, pairs naming no device, absurd counts)."""
    if len(data) > MAX_SNAPSHOT_BYTES:
        raise SnapshotError(f"{where}: {len(data)} bytes is larger than any snapshot ({MAX_SNAPSHOT_BYTES} max)")
    packed = is_packed(data)
    most = MAX_PACKED_VALUES if packed else MAX_JSON_VALUES  # ~100 bytes a value once decoded
    check_json_values(data, where, "snapshot", SnapshotError, most)
    if packed:  # a large cluster as JSON Lines, each shared part once (topomap.model.pack)
        with collector_paused():  # decoding and checking make no cycle: no collector pass over the hosts
            snap = migrate(decode_pack(data.lstrip(b"\xef\xbb\xbf \t\r\n"), where), data)
            check_schema_version(snap.schema, f"{where}:1: cluster")
            validate_snapshot(light_members(snap), where, numbers_checked=True)
        return snap
    if data.startswith(_SCHEMA_FIRST):
        whole = _decode_whole(data)
        if whole is not None:
            check_schema_version(whole.schema, where)
            whole = migrate(whole, data)
            _validate_shared(whole, where)
            return whole
    try:
        head = _HEAD.decode(data)
    except msgspec.ValidationError as err:  # (a subclass of DecodeError)
        got = str(err).rpartition(", got ")[2] or "something else"
        raise SnapshotError(f"{where}: a snapshot is a JSON object, got {got}") from err
    except msgspec.DecodeError as err:
        raise SnapshotError(f"{where}: not valid JSON ({err})", hint=_JSON_HINT) from err
    except RecursionError as err:
        raise _too_deep(where) from err
    if head.schema is None:  # no schema at all: say what the JSON looks like and what takes it (issue 30)
        what, hint = json_what(data[:65536].decode("utf-8", "replace"), _top_keys(data))
        raise SnapshotError(f"{where}: {what}", hint=hint)
    check_schema_version(head.schema, where)
    try:
        snap = _WHOLE.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as err:
        raise _decode_error(data, where, err) from err
    snap = migrate(snap, data)
    _validate_shared(snap, where)
    return snap


_HEAD = msgspec.json.Decoder(_Head)
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])


def _top_keys(data: bytes) -> list[str] | None:
    """A JSON object's top-level keys (its values left undecoded), or None."""
    try:
        return list(_TOP.decode(data))
    except (msgspec.DecodeError, RecursionError):
        return None


_WHOLE = msgspec.json.Decoder(Snapshot)
#: How every snapshot topomap writes starts (indented, or compact): ``schema`` is the first key, so
#: decoding the whole file reads the same schema value the head would (a duplicate key: the last
#: one, in both), and the head's own pass over the file — a third of the time — can be left out.
_SCHEMA_FIRST = (b'{\n  "schema": ', b'{"schema":')


def _decode_whole(data: bytes) -> Snapshot | None:
    """A file that starts as topomap writes snapshots, decoded straight into the model; None when it
    does not decode (the careful path then reads the head first and words the error as always)."""
    try:
        snap: Snapshot = _WHOLE.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return None
    return snap


def _validate_shared(snap: Snapshot, where: str) -> None:
    """validate_snapshot, with the parts a host shares with one of a build read before (pairs, PCI
    tree, NVSwitches, against the same device ids) checked once per process and shared in memory:
    `merge` of 10,000 hosts of a few builds checks and keeps a few sets (topomap.model.pack)."""
    hosts = snap.members if snap.source.kind == "merge" else [snap]
    keyed = [reuse_parts(h) for h in hosts]
    if snap.source.kind == "merge":
        light = [lt if lt is not None else h for h, (_k, lt) in zip(hosts, keyed)]
        validate_snapshot(light_members(msgspec.structs.replace(snap, members=light)), where, numbers_checked=True)
    else:
        validate_snapshot(keyed[0][1] or snap, where, numbers_checked=True)
    for h, (key, _lt) in zip(hosts, keyed):
        remember_parts(key, h)


def _too_deep(where: str) -> SnapshotError:
    return SnapshotError(f"{where}: JSON nested deeper than any snapshot", hint="is this a topomap snapshot?")


def _decode_error(data: bytes, where: str, err: Exception) -> SnapshotError:
    """The one-line message for a snapshot that did not decode (the slow path, taken only then):
    invalid JSON or nesting beyond any snapshot; else msgspec's message with its JSON path, and for
    a number outside the model's bounds, the number and the bound."""
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as e:
        return SnapshotError(f"{where}: not valid JSON ({e})", hint=_JSON_HINT)
    except RecursionError:
        return _too_deep(where)
    if isinstance(err, RecursionError):
        return SnapshotError(f"{where}: `members` nested deeper than any cluster snapshot")
    text = str(err)
    message, sep, at = text.rpartition(" - at `$")
    if not sep:
        return SnapshotError(f"{where}: {text}")
    path = at.rstrip("`").lstrip(".")
    value = _value_at(raw, path)
    if type(value) is int and not I64_MIN <= value <= I64_MAX:
        return SnapshotError(f"{where}: {path}: {value} does not fit in 64 bits")
    if type(value) in (int, float) and message.startswith("Expected `float`"):
        return SnapshotError(f"{where}: {path}: {float(value):g} is outside 0 to {MAX_RATE:g}")  # type: ignore[arg-type]
    code = _code_problem(path, value)
    if code is not None:
        return SnapshotError(f"{where}: {path}: {code}")
    return SnapshotError(f"{where}: {path}: {_lower(message)}")


def _lower(message: str) -> str:
    """msgspec's message after the field, as the other messages read: ``expected `int`, got `str```."""
    return message[:1].lower() + message[1:]


def _code_problem(path: str, value: object) -> str | None:
    """A pair's path code the model refused (``PathCode``, ``PathClass``), in base.links's words."""
    if not isinstance(value, str) or not _PAIR_FIELD.search(path):
        return None
    return path_code_problem(value) if path.endswith(".path") else pcie_class_problem(value)


_PAIR_FIELD = re.compile(r"(?:^|\.)pairs\[\d+\]\.(?:pcie_)?path$")
_STEP = re.compile(r"\.?([^.\[]+)|\[(\d+)\]")


def _value_at(raw: object, path: str) -> object:
    """The value at a msgspec error path (``gpus[1].index``) in decoded JSON, or None."""
    cur = raw
    for m in _STEP.finditer(path):
        key, index = m.group(1), m.group(2)
        if key is not None and isinstance(cur, dict):
            cur = cur.get(key)
        elif index is not None and isinstance(cur, list) and int(index) < len(cur):
            cur = cur[int(index)]
        else:
            return None
    return cur


def load_snapshot(path: str | Path) -> Snapshot:
    """Read and validate a snapshot file (a regular file under the size cap; BOM/UTF-16 decoded)."""
    data = read_bytes(path, "snapshot", MAX_SNAPSHOT_BYTES, SnapshotError)
    return decode_snapshot(recode_utf8(data, str(path), SnapshotError), str(path))


def to_builtins(snap: Snapshot) -> Any:
    """Snapshot as plain JSON-compatible Python values."""
    return msgspec.to_builtins(snap, order="deterministic")


def encode_snapshot(snap: Snapshot) -> bytes:
    """Deterministic, indented JSON with a trailing newline; a merged cluster of
    :data:`~topomap.model.pack.PACK_MIN_HOSTS` hosts or more as packed JSON Lines (each part that
    hosts share written once: 10,000 hosts fit in about 100 MB instead of 800)."""
    if snap.source.kind == "merge" and len(snap.members) >= PACK_MIN_HOSTS:
        return encode_pack(snap)
    compact = msgspec.json.encode(snap, order="deterministic")
    return msgspec.json.format(compact, indent=2) + b"\n"


def encode_checked(snap: Snapshot, what: str) -> bytes:
    """:func:`encode_snapshot`, then the bytes read back as every reader reads them (issue 24: `attach`
    wrote a figure of 1e308 that every later command refused). A snapshot no reader would accept is
    refused here, in one line naming ``what`` was being written and the bad field; nothing is written."""
    data = encode_snapshot(snap)
    try:
        decode_snapshot(data, what)
    except SnapshotError as err:
        raise SnapshotError(
            f"refusing to write {err}", hint=err.hint or "the input holds a value no snapshot can"
        ) from err
    return data


def save_snapshot(snap: Snapshot, path: str | Path) -> None:
    atomic_write(path, encode_checked(snap, str(path)))


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the snapshot, as shipped in the package."""
    schema: dict[str, Any] = msgspec.json.schema(Snapshot)
    schema["$id"] = f"https://topomap.dev/schema/{SCHEMA.replace('/', '-')}.json"
    schema["title"] = SCHEMA
    return schema
