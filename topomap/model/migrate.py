"""Snapshots written by earlier topomap versions, read as this one writes them.

``topomap.snapshot/1`` only grows (DESIGN.md: additions need no version bump), but a fact once spelt
in prose may since have got its own typed field; a snapshot that still holds the prose is moved to
the field when read, so every view sees one form. Each step says what it moves and since when.
"""

from __future__ import annotations

import msgspec

from topomap.model.snapshot import Snapshot

#: Before ``Source.path_recorded_as``: NCCL's topology telling PHB from NODE not, as an entry of
#: ``Source.unknown_fields`` (prose, no field path). Read as ``path_recorded_as={"NODE": "PHB"}``.
OLD_PHB_NODE = "pairs.path (PHB vs NODE)"
_OLD_PHB_NODE_JSON = b'"' + OLD_PHB_NODE.encode() + b'"'


def migrate(snap: Snapshot, data: bytes) -> Snapshot:
    """``snap`` (decoded from ``data``) in today's form: unchanged, and at no cost beyond one scan of
    the bytes, when ``data`` holds nothing an earlier version wrote differently."""
    if _OLD_PHB_NODE_JSON not in data:
        return snap
    members = [_host(m) for m in snap.members]
    return _host(msgspec.structs.replace(snap, members=members) if members else snap)


def _host(snap: Snapshot) -> Snapshot:
    src = snap.source
    if OLD_PHB_NODE not in src.unknown_fields:
        return snap
    source = msgspec.structs.replace(
        src,
        unknown_fields=[f for f in src.unknown_fields if f != OLD_PHB_NODE],
        path_recorded_as={**src.path_recorded_as, "NODE": "PHB"},
    )
    return msgspec.structs.replace(snap, source=source)
