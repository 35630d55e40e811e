"""Which hosts of a cluster are alike: the one notion every view asks (issue 34).

Two hosts are *alike* when their snapshots are equal in every field but the :data:`IDENTITY` fields,
which name a host rather than describe it (its name, the file it came from, when it was captured,
its GPUs' and MIG instances' UUIDs). Alike hosts get the same answer from every view — graph,
path evidence, NCCL transport, check rule, placement, diff — so each view works one host of each
group out and says it once for the group. :class:`AlikeKeys` gives the bytes that are equal exactly
for alike hosts; :class:`topomap.graph.Shapes` builds one graph per key, and ``topomap.cluster.groups``
groups a merged snapshot's hosts by it. :func:`field_changes` says, field by field, how one host's
snapshot differs from another's, for the views' "how it differs" where no named fact says it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from topomap.model.snapshot import Mig, Snapshot

#: Fields of a host snapshot that name the host rather than describe it. No view's answer depends
#: on them but for the host's name in its text (graph/build.py reads only ``host.hostname``, as the
#: host node's label; GPU and MIG UUIDs and the capture time reach no node, edge or note).
IDENTITY = ("source.origin", "source.captured_at", "host.hostname", "gpus[].uuid", "gpus[].mig.devices[].uuid")


class AlikeKeys:
    """Keys of host snapshots, equal exactly when the hosts are alike (every field but
    :data:`IDENTITY`). The long lists that hosts of a packed cluster share in memory (pairs, PCI tree,
    NVSwitches, each GPU's NVLinks: topomap.model.pack) are encoded once each, so keying 10,000 hosts
    of one build costs about one small encode per host."""

    def __init__(self) -> None:
        self._parts: dict[int, tuple[object, bytes]] = {}  # id → (list, its bytes): lists hosts share
        self._enc = msgspec.json.Encoder(order="deterministic")

    def key(self, snap: Snapshot) -> bytes:
        """The snapshot's bytes without the :data:`IDENTITY` fields."""
        rep = msgspec.structs.replace
        gpus = [
            rep(g, uuid=None, nvlinks=[], mig=_anonymous_mig(g.mig) if g.mig is not None else None) for g in snap.gpus
        ]
        bare = rep(
            snap,
            source=rep(snap.source, origin="", captured_at=None),
            host=rep(snap.host, hostname=None),
            gpus=gpus,
            pairs=[],
            pci=[],
            nvswitches=[],
        )
        parts = [self._part(snap.pairs), self._part(snap.pci), self._part(snap.nvswitches)]
        parts += [self._part(g.nvlinks) for g in snap.gpus]
        return b"\n".join([self._enc.encode(bare), *parts])

    def _part(self, value: object) -> bytes:
        held = self._parts.get(id(value))
        if held is None or held[0] is not value:
            held = self._parts[id(value)] = (value, self._enc.encode(value))
        return held[1]


def _anonymous_mig(mig: Mig) -> Mig:
    return msgspec.structs.replace(mig, devices=[msgspec.structs.replace(d, uuid=None) for d in mig.devices])


# --- how one host differs from another, field by field ----------------------------------------------

#: How the items of a list are told apart when two hosts' lists are compared: GPUs by index, NICs
#: by name, pairs by their two ends, PCI devices by id, and so on; a list not named here by position.
_ITEM_KEY: dict[str, tuple[str, ...]] = {
    "gpus": ("index",),
    "nics": ("name",),
    "pairs": ("a", "b"),
    "pci": ("id",),
    "numa_nodes": ("id",),
    "nvlinks": ("link",),
    "nvswitches": ("id",),
    "findings": ("kind", "subject"),
    "problems": ("source", "call", "target"),
    "devices": ("index",),
}
#: Lists whose items are named by a field of theirs ("gpu3", "mlx5_0", "gpu0–gpu1").
_ITEM_NAME = {"gpus": "gpu{index}", "nics": "{name}", "pairs": "{a}–{b}", "numa_nodes": "numa{id}"}


def field_changes(snap: Snapshot, usual: Snapshot) -> list[tuple[str, Any, Any]]:
    """Where ``snap`` differs from ``usual``, leaf by leaf, :data:`IDENTITY` fields left out:
    ``(path, snap's value, usual's value)`` with paths such as ``gpus[gpu3].lost``,
    ``nics[mlx5_0].state``, ``pairs[gpu0–gpu1].nvlinks`` and ``software.driver_version``; an item one
    side lacks is ``(path, value or None, None or value)`` for the whole item."""
    out: list[tuple[str, Any, Any]] = []
    for name in snap.__struct_fields__:
        if name in ("schema", "members"):
            continue
        out += _changes(name, getattr(snap, name), getattr(usual, name))
    return [c for c in out if not _identity(c[0])]


def _changes(path: str, a: Any, b: Any) -> Iterator[tuple[str, Any, Any]]:
    if a is b or a == b:
        return
    if isinstance(a, msgspec.Struct) and isinstance(b, msgspec.Struct) and type(a) is type(b):
        for name in a.__struct_fields__:
            yield from _changes(f"{path}.{name}", getattr(a, name), getattr(b, name))
        return
    if isinstance(a, list) and isinstance(b, list):
        yield from _list_changes(path, a, b)
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted({*a, *b}, key=str):
            yield from _changes(f"{path}.{k}", a.get(k), b.get(k))
        return
    yield path, a, b


def _list_changes(path: str, a: list[Any], b: list[Any]) -> Iterator[tuple[str, Any, Any]]:
    field = path.rsplit(".", 1)[-1]
    keys = _ITEM_KEY.get(field)
    if keys is None or not all(isinstance(x, msgspec.Struct) for x in (*a, *b)):
        if len(a) != len(b):
            yield path, a, b
            return
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _changes(f"{path}[{i}]", x, y)
        return
    mine = {tuple(getattr(x, k) for k in keys): x for x in a}
    theirs = {tuple(getattr(y, k) for k in keys): y for y in b}
    for k in [*mine, *(k for k in theirs if k not in mine)]:
        x, y = mine.get(k), theirs.get(k)
        item = f"{path}[{_item_name(field, x if x is not None else y, k)}]"
        if x is None or y is None:
            yield item, x, y
        else:
            yield from _changes(item, x, y)


def _item_name(field: str, item: Any, key: tuple[Any, ...]) -> str:
    form = _ITEM_NAME.get(field)
    if form is not None:
        return form.format(**{k: getattr(item, k) for k in item.__struct_fields__})
    return "/".join(str(k) for k in key)


def _identity(path: str) -> bool:
    """Is ``path`` (``gpus[gpu3].uuid``) one of the :data:`IDENTITY` fields?"""
    dotted = ".".join(p.split("[", 1)[0] + ("[]" if "[" in p else "") for p in path.split("."))
    return dotted in IDENTITY
