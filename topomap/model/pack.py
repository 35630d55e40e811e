"""The packed cluster file: a merged snapshot of many hosts as JSON Lines, each distinct part once.

A cluster of thousands of hosts is a few host builds repeated: one plain JSON document of 10,000
hosts × 8 GPUs is about 800 MB (past the 128 MiB any snapshot may have) and decodes into a
million structs. Packed, the parts that hosts of one build share — the GPU/NIC ``pairs`` (the
`topo -m` matrix), the ``pci`` tree, the ``nvswitches``, each GPU's ``nvlinks`` — are written once each and referred to
by number; what differs per host (names, UUIDs, driver, link widths, NIC states, fabric,
findings) stays on the host's own line. Read back, hosts of one build share those lists (one
object each: snapshots are not changed in place after they are read), and the checks that depend
only on a shared part run once per distinct (part, device ids) combination.

Lines: 1. ``{"schema": "topomap.cluster-pack/1", "hosts": N, "parts": P, "cluster": {the merged
snapshot without its members}}`` (``topomap show --json`` adds ``"groups"``: the hosts in groups of
alike hosts, which readers do not need); 2..P+1. ``{"part": k, "pairs"|"pci"|"nvswitches": [...]}``;
then N lines ``{"parts": {"pairs": k, "pci": k, "nvswitches": k}, "nvlinks": [k per GPU], "host":
{a host snapshot with those fields empty}}``. JSON Lines rather than one document: each line decodes on its own
(an error names its line), and nothing reads more than one host's text at a time.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec

from topomap.model.snapshot import NvLink, NvSwitch, Pair, PciDevice, Snapshot, SnapshotError

PACK_SCHEMA = "topomap.cluster-pack/1"
#: `merge` writes the packed form from this many hosts on; fewer stay one plain snapshot document.
PACK_MIN_HOSTS = 256
SHARED = ("pairs", "pci", "nvswitches")
KINDS = (*SHARED, "nvlinks")  # and each GPU's ``nvlinks``


class PackHead(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    schema: str
    hosts: int
    parts: int
    cluster: Snapshot
    # The hosts in groups of alike hosts (topomap.cluster.groups: label, hosts, first, summary,
    # differs), as `topomap show --json` writes them; for people and other tools: topomap's views
    # group the hosts themselves when they read the file. Absent in what `merge` writes.
    groups: list[dict[str, Any]] | None = None


class PackPart(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    part: int
    pairs: list[Pair] | None = None
    pci: list[PciDevice] | None = None
    nvswitches: list[NvSwitch] | None = None
    nvlinks: list[NvLink] | None = None


class PackHost(msgspec.Struct, forbid_unknown_fields=True):
    parts: dict[str, int]
    nvlinks: list[int]  # per GPU, in the order of ``host.gpus``: its NVLink list's part
    host: Snapshot


def is_packed(data: bytes) -> bool:
    """Does the file start as a packed cluster (its first line's schema)?"""
    return data[:200].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b'{"schema":"' + PACK_SCHEMA.encode() + b'"')


def encode_pack(snap: Snapshot, groups: list[dict[str, Any]] | None = None) -> bytes:
    """A merged snapshot as packed JSON Lines (deterministic: the same cluster gives the same bytes);
    ``groups``: its hosts' groups of alike hosts, written in the first line."""
    enc = msgspec.json.Encoder(order="deterministic")
    seen: dict[tuple[str, bytes], int] = {}
    parts: list[bytes] = []
    hosts: list[bytes] = []

    by_id: dict[int, int] = {}  # a list shared in memory (hosts read from files of one build): encoded once

    def part(field: str, value: object) -> int:
        k = by_id.get(id(value))
        if k is not None:
            return k
        raw = enc.encode(value)
        k = seen.get((field, raw))
        if k is None:
            k = seen[(field, raw)] = len(parts)
            parts.append(b'{"part":%d,"%s":%s}' % (k, field.encode(), raw))
        by_id[id(value)] = k
        return k

    for m in snap.members:
        refs = {field: part(field, getattr(m, field)) for field in SHARED}
        links = [part("nvlinks", g.nvlinks) for g in m.gpus]
        gpus = [msgspec.structs.replace(g, nvlinks=[]) for g in m.gpus]
        bare = msgspec.structs.replace(m, pairs=[], pci=[], nvswitches=[], gpus=gpus)
        hosts.append(enc.encode(PackHost(refs, links, bare)))
    head = enc.encode(PackHead(PACK_SCHEMA, len(hosts), len(parts), msgspec.structs.replace(snap, members=[]), groups))
    return b"\n".join([head, *parts, *hosts]) + b"\n"


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while a cluster's objects are made: they hold no
    cycle, and passes over a heap of millions of new objects find nothing. Not frozen afterwards
    (``gc.freeze`` would save about a second of the 10,000-host flow stage, but would keep every
    cycle alive at that point uncollected for the rest of the process)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def decode_pack(data: bytes, where: str) -> Snapshot:
    """The merged snapshot of a packed file; errors name the file, the line and the field. Not yet
    validated: :func:`light_members` gives the members to validate (topomap.model.codec)."""
    with collector_paused():
        return _decode_pack(data, where)


def _decode_pack(data: bytes, where: str) -> Snapshot:
    lines = data.split(b"\n")
    while lines and not lines[-1].strip():
        lines.pop()
    head = _line(lines, 0, PackHead, where)
    if head.schema != PACK_SCHEMA:
        raise SnapshotError(f"{where}:1: schema {head.schema!r}, expected {PACK_SCHEMA!r}")
    if head.parts < 0 or head.hosts < 0:
        raise SnapshotError(f"{where}:1: parts {head.parts}, hosts {head.hosts}: counts are never negative")
    if len(lines) != 1 + head.parts + head.hosts:
        raise SnapshotError(
            f"{where}: {len(lines)} lines, the first says {1 + head.parts + head.hosts} "
            f"(1 + {head.parts} parts + {head.hosts} hosts)",
            hint="is the file complete? topomap writes it whole",
        )
    parts: list[tuple[str, Any]] = []
    for k in range(head.parts):
        p = _line(lines, 1 + k, PackPart, where)
        given = [(f, getattr(p, f)) for f in KINDS if getattr(p, f) is not None]
        if p.part != k or len(given) != 1:
            raise SnapshotError(f"{where}:{k + 2}: part {p.part}: expected part {k} with one of {', '.join(KINDS)}")
        parts.append(given[0])
    members = []
    for i in range(head.hosts):
        at = 1 + head.parts + i
        h = _line(lines, at, PackHost, where)
        m = h.host
        for field in SHARED:
            k = h.parts.get(field)
            if k is None or not 0 <= k < len(parts) or parts[k][0] != field:
                raise SnapshotError(f"{where}:{at + 1}: parts.{field}: {k!r} is no {field} part of this file")
            setattr(m, field, parts[k][1])
        if len(h.nvlinks) != len(m.gpus):
            raise SnapshotError(f"{where}:{at + 1}: nvlinks: {len(h.nvlinks)} parts for {len(m.gpus)} GPUs")
        for g, k in zip(m.gpus, h.nvlinks):
            if not 0 <= k < len(parts) or parts[k][0] != "nvlinks":
                raise SnapshotError(f"{where}:{at + 1}: nvlinks: {k!r} is no nvlinks part of this file")
            g.nvlinks = parts[k][1]
        members.append(m)
    cluster: Snapshot = head.cluster
    cluster.members = members
    return cluster


_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {}


def _line(lines: list[bytes], i: int, typ: type[Any], where: str) -> Any:
    dec = _DECODERS.get(typ)
    if dec is None:
        dec = _DECODERS[typ] = msgspec.json.Decoder(typ)
    try:
        return dec.decode(lines[i])
    except (msgspec.DecodeError, RecursionError) as err:
        raise SnapshotError(f"{where}:{i + 1}: {err}", hint="is the file complete? topomap writes it whole") from err


def light_members(snap: Snapshot) -> Snapshot:
    """The merged snapshot with the shared parts left on one host per distinct combination of (parts,
    device ids and bus ids) and emptied on the others: validating that copy checks every host,
    and each shared part against each set of devices once (the checks of ``pairs`` and ``pci``
    depend only on them and on the hosts' GPU and NIC indices and bus ids)."""
    seen: set[tuple[object, ...]] = set()
    out = []
    for m in snap.members:
        key = (
            id(m.pairs),
            id(m.pci),
            id(m.nvswitches),
            tuple((g.index, g.pci_bus_id) for g in m.gpus),
            tuple((n.index, n.pci_bus_id) for n in m.nics),
        )
        if key in seen:
            out.append(msgspec.structs.replace(m, pairs=[], pci=[], nvswitches=[]))
        else:
            seen.add(key)
            out.append(m)
    return msgspec.structs.replace(snap, members=out)


#: Parts (pairs, PCI tree, NVSwitches with the device ids they were checked against) already
#: validated in this process, by their bytes: a host of a build seen before shares those lists and
#: skips their checks. Bounded: a process reading a few builds keeps a few entries.
_SEEN: dict[bytes, tuple[Any, Any, Any]] = {}
_LINKS: dict[bytes, list[NvLink]] = {}
_HOST_LINKS: dict[bytes, list[list[NvLink]]] = {}  # all of a host's GPUs' lists, in GPU order
_SEEN_MAX = 256


def reuse_parts(host: Snapshot) -> tuple[bytes, Snapshot | None]:
    """For a host snapshot just decoded: its parts key, and when parts of these bytes were validated
    before against the same devices, the copy to validate (those parts emptied; they are the ones
    checked before, now shared). Each GPU's NVLink list is shared with an equal one seen before."""
    enc = msgspec.json.encode
    every = enc([g.nvlinks for g in host.gpus])
    known = _HOST_LINKS.get(every)  # a host whose GPUs' NVLink lists were all seen together before
    if known is not None and len(known) == len(host.gpus):
        for g, links in zip(host.gpus, known):
            g.nvlinks = links
    else:
        for g in host.gpus:
            if g.nvlinks:
                raw = enc(g.nvlinks)
                same = _LINKS.get(raw)
                if same is None and len(_LINKS) < _SEEN_MAX:
                    _LINKS[raw] = g.nvlinks
                elif same is not None:
                    g.nvlinks = same
        if len(_HOST_LINKS) < _SEEN_MAX:
            _HOST_LINKS[every] = [g.nvlinks for g in host.gpus]
    key = enc(
        [
            host.pairs,
            host.pci,
            host.nvswitches,
            [(g.index, g.pci_bus_id) for g in host.gpus],
            [(n.index, n.pci_bus_id) for n in host.nics],
        ]
    )
    seen = _SEEN.get(key)
    if seen is None:
        return key, None
    host.pairs, host.pci, host.nvswitches = seen
    return key, msgspec.structs.replace(host, pairs=[], pci=[], nvswitches=[])


def remember_parts(key: bytes, host: Snapshot) -> None:
    """After ``host`` passed validation: its parts are known good for hosts with the same key."""
    if key not in _SEEN and len(_SEEN) < _SEEN_MAX:
        _SEEN[key] = (host.pairs, host.pci, host.nvswitches)
