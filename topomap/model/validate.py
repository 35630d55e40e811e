"""Snapshot consistency beyond the schema: refuse what no view can use (issue 14).

The schema says each field has the right type; this says the parts fit together: every pair
names devices that exist, the PCI tree is a tree, names and indices that views use as keys are
unique, and no count or rate is absurd. :func:`validate_snapshot` is called by
``decode_snapshot`` and by every importer before it returns, so the views can rely on it.
Each error is one line naming the file and the field.
"""

from __future__ import annotations

import functools
import math
import re
import types
import typing
from collections.abc import Iterable

import msgspec

from topomap.base.errors import TopomapError
from topomap.base.links import MAX_NVLINKS, PCIE_CLASSES, is_xgmi, path_code_problem, pcie_class_problem
from topomap.model.snapshot import I64_MAX, I64_MIN, MAX_RATE, Snapshot
from topomap.model.source_facts import is_amd_source

# Limits, each far above any real machine (largest known host: 72 GPUs in an NVL72 rack seen
# as one NVLink domain; largest NVLink bundle per GPU pair: 18 links on Hopper/Blackwell).
# 256 GPUs or NICs: 3.5 times the largest known host, and what `show` draws in about 2 s on one
# 2-core machine (issue 24: 4,096 GPUs on one NVSwitch fabric took minutes: every GPU pair is a route).
MAX_GPUS_PER_HOST = 256
MAX_NICS_PER_HOST = 256
MAX_PCI_DEVICES_PER_HOST = 65536
MAX_MEMBERS = 100_000  # hosts in a merged cluster
# Names are data (escaped where shown) but not unbounded: real RDMA device names fit in 64
# characters (IB_DEVICE_NAME_MAX), netdevs in 15, NVML GPU names in 96; 256 leaves room for pasted
# decorations while a 5000-digit "name" is refused.
MAX_NIC_NAME = 256
MAX_GPU_NAME = 256
MAX_HOSTNAME = 253  # DNS
MAX_PCIE_GEN = 7
MAX_PCIE_WIDTH = 32
_RATE_WORDS = ("gbps", "gbit", "bandwidth", "rate", "speed")
_DEVICE_ID = re.compile(r"^(gpu|nic)(\d+)$")


class SnapshotInvalid(TopomapError):
    """A snapshot whose parts do not fit together; the message names the file and field."""


def validate_snapshot(snap: Snapshot, where: str, numbers_checked: bool = False) -> None:
    """Raise :class:`SnapshotInvalid` naming ``where`` and the field at the first inconsistency.

    ``numbers_checked``: the snapshot was decoded from JSON, where msgspec checked every number
    against the model's bounds (``I64``, ``Rate``) and JSON floats are finite; a snapshot built in
    memory (an importer's) has its numbers walked here instead."""
    if snap.source.kind == "merge":
        if len(snap.members) > MAX_MEMBERS:
            raise SnapshotInvalid(f"{where}: members: {len(snap.members)} hosts (at most {MAX_MEMBERS})")
        names: dict[str, int] = {}
        for i, m in enumerate(snap.members):
            at = f"{where}: members[{i}]"
            if m.source.kind == "merge" or m.members:
                raise SnapshotInvalid(f"{at}: a cluster inside a cluster", hint="merge the host snapshots directly")
            _host(m, at, numbers=not numbers_checked)
            host = m.host.hostname
            if host is not None:
                if host in names:
                    raise SnapshotInvalid(f"{at}.host.hostname: {host!r} is also members[{names[host]}]")
                names[host] = i
        _host(snap, where, merged=True, numbers=not numbers_checked)
        return
    if snap.members:
        raise SnapshotInvalid(f"{where}: members: only a merged cluster (source.kind merge) has members")
    _host(snap, where, numbers=not numbers_checked)


def _host(snap: Snapshot, where: str, merged: bool = False, numbers: bool = True) -> None:
    if numbers:
        _numbers(snap, where)
    if len(snap.gpus) > MAX_GPUS_PER_HOST:
        raise SnapshotInvalid(f"{where}: gpus: {len(snap.gpus)} GPUs in one host (at most {MAX_GPUS_PER_HOST})")
    if len(snap.nics) > MAX_NICS_PER_HOST:
        raise SnapshotInvalid(f"{where}: nics: {len(snap.nics)} NICs in one host (at most {MAX_NICS_PER_HOST})")
    if len(snap.pci) > MAX_PCI_DEVICES_PER_HOST:
        raise SnapshotInvalid(f"{where}: pci: {len(snap.pci)} devices (at most {MAX_PCI_DEVICES_PER_HOST})")
    gpu_ids = _unique((g.index for g in snap.gpus), where, "gpus", "index")
    nic_ids = _unique((n.index for n in snap.nics), where, "nics", "index")
    _unique((n.name for n in snap.nics), where, "nics", "name")
    _unique((g.uuid for g in snap.gpus if g.uuid), where, "gpus", "uuid")
    _unique((g.pci_bus_id for g in snap.gpus if g.pci_bus_id), where, "gpus", "pci_bus_id")
    for k, g in enumerate(snap.gpus):
        if g.index < 0:
            raise SnapshotInvalid(f"{where}: gpus[{k}].index: {g.index} is negative")
        if len(g.nvlinks) > MAX_NVLINKS:
            raise SnapshotInvalid(
                f"{where}: gpus[{k}].nvlinks: {len(g.nvlinks)} NVLinks on one GPU (at most {MAX_NVLINKS})"
            )
        if g.pcie is not None:
            for f in ("gen_current", "gen_max", "width_current", "width_max"):
                if not _pcie_ok(getattr(g.pcie, f), f):  # the message (made only then) says why
                    _pcie_value(getattr(g.pcie, f), f, f"{where}: gpus[{k}].pcie.{f}")
    for k, d in enumerate(snap.pci):
        if not (_pcie_ok(d.link_gen, "gen") and _pcie_ok(d.link_width, "width")):
            _pcie_value(d.link_gen, "gen", f"{where}: pci[{k}].link_gen")
            _pcie_value(d.link_width, "width", f"{where}: pci[{k}].link_width")
    for k, n in enumerate(snap.nics):
        if n.index < 0:
            raise SnapshotInvalid(f"{where}: nics[{k}].index: {n.index} is negative")
        if not 0 < len(n.name) <= MAX_NIC_NAME:
            raise SnapshotInvalid(f"{where}: nics[{k}].name: {len(n.name)} characters (1 to {MAX_NIC_NAME})")
    for k, g in enumerate(snap.gpus):
        if g.name is not None and len(g.name) > MAX_GPU_NAME:
            raise SnapshotInvalid(f"{where}: gpus[{k}].name: {len(g.name)} characters (at most {MAX_GPU_NAME})")
    if snap.host.hostname is not None and len(snap.host.hostname) > MAX_HOSTNAME:
        raise SnapshotInvalid(f"{where}: host.hostname: {len(snap.host.hostname)} characters (at most {MAX_HOSTNAME})")
    ids = {f"gpu{i}" for i in gpu_ids} | {f"nic{i}" for i in nic_ids}
    _pairs(snap, where, ids)
    _pci(snap, where)
    # A PCI function of kind gpu/nic is drawn as that GPU/NIC: it must be one.
    owners = {"gpu": {g.pci_bus_id for g in snap.gpus}, "nic": {n.pci_bus_id for n in snap.nics}}
    for k, d in enumerate(snap.pci):
        if d.kind in owners and d.id not in owners[d.kind]:
            raise SnapshotInvalid(
                f"{where}: pci[{k}]: {d.kind} {d.id!r} is no {d.kind.upper()}'s pci_bus_id",
                hint=f"list the device in `{d.kind}s` or give it kind `other`",
            )


def _pcie_ok(value: int | None, field: str) -> bool:
    return value is None or 0 <= value <= (MAX_PCIE_GEN if "gen" in field else MAX_PCIE_WIDTH)


def _pcie_value(value: int | None, field: str, at: str) -> None:
    """PCIe generations 1-7 (7.0 is the newest specification); widths x1-x32."""
    if value is None:
        return
    top = MAX_PCIE_GEN if "gen" in field else MAX_PCIE_WIDTH
    if not 0 <= value <= top:
        raise SnapshotInvalid(f"{at}: {value} (PCIe {'generation' if 'gen' in field else 'width'} is 0 to {top})")


def _unique(values: Iterable[object], where: str, field: str, key: str) -> set[object]:
    seen: dict[object, int] = {}
    for k, v in enumerate(values):
        if v in seen:
            raise SnapshotInvalid(
                f"{where}: {field}[{k}].{key}: {v!r} is also {field}[{seen[v]}].{key}",
                hint=f"each {field[:-1].upper()} needs its own {key}",
            )
        seen[v] = k
    return set(seen)


def _pairs(snap: Snapshot, where: str, ids: set[str]) -> None:
    seen: set[tuple[str, str]] = set()
    amd = is_amd_source(snap)
    n = len(ids)
    if len(snap.pairs) > n * (n - 1) // 2:
        raise SnapshotInvalid(f"{where}: pairs: {len(snap.pairs)} pairs for {n} devices (at most one per pair)")
    for k, p in enumerate(snap.pairs):
        at = f"{where}: pairs[{k}]"
        for end, v in (("a", p.a), ("b", p.b)):
            if v not in ids:
                what = "no such device" if _DEVICE_ID.match(v) else "not a device id (gpu<N> or nic<N>)"
                raise SnapshotInvalid(f"{at}.{end}: {v!r}: {what}")
        if p.a == p.b:
            raise SnapshotInvalid(f"{at}: a device paired with itself ({p.a})")
        key = (p.a, p.b) if p.a < p.b else (p.b, p.a)
        if key in seen:
            raise SnapshotInvalid(f"{at}: {p.a}/{p.b} appears twice")
        seen.add(key)
        # decoding checked both codes (PathCode, PathClass); a snapshot built in memory is checked here
        bad = path_code_problem(p.path) if p.path is not None else None
        if bad is not None:
            raise SnapshotInvalid(f"{at}.path: {bad}")
        if p.pcie_path is not None and p.pcie_path not in PCIE_CLASSES:
            raise SnapshotInvalid(f"{at}.pcie_path: {pcie_class_problem(p.pcie_path)}")
        if not 0 <= p.nvlinks <= MAX_NVLINKS:
            raise SnapshotInvalid(f"{at}.nvlinks: {p.nvlinks} (0 to {MAX_NVLINKS} per pair)")
        if is_xgmi(p.path) and not amd:
            raise SnapshotInvalid(f"{at}.path: XGMI joins AMD GPUs; this snapshot's GPUs are NVIDIA's")


def _pci(snap: Snapshot, where: str) -> None:
    by_id: dict[str, str | None] = {}
    for k, d in enumerate(snap.pci):
        if d.id in by_id:
            raise SnapshotInvalid(f"{where}: pci[{k}].id: {d.id!r} appears twice")
        if d.parent == d.id:
            raise SnapshotInvalid(f"{where}: pci[{k}].parent: {d.id!r} is its own parent")
        by_id[d.id] = d.parent
    for k, d in enumerate(snap.pci):
        if d.parent is not None and d.parent not in by_id:
            raise SnapshotInvalid(f"{where}: pci[{k}].parent: {d.parent!r} names no device in `pci`")
    # Walk each chain up once; a node seen on the current walk twice is a cycle.
    done: set[str] = set()
    for k, d in enumerate(snap.pci):
        walk: list[str] = []
        on_walk: set[str] = set()
        cur: str | None = d.id
        while cur is not None and cur not in done:
            if cur in on_walk:
                raise SnapshotInvalid(f"{where}: pci[{k}].parent: the PCI tree has a cycle through {cur!r}")
            on_walk.add(cur)
            walk.append(cur)
            cur = by_id.get(cur)
        done.update(walk)


_SKIP: frozenset[object] = frozenset({str, bool, type(None)})
_OPEN: set[type] = set()  # structs whose fields are being classified (recursion guard)


def _is_text(tp: object) -> bool:
    """True for a field that can hold only strings, booleans or None (nothing to range-check)."""
    if tp in _SKIP:
        return True
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return all(type(a) in (str, bool) for a in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        return all(_is_text(a) for a in typing.get_args(tp))
    if origin in (list, tuple, dict):  # of text only (a dict's keys are text in JSON)
        return all(_is_text(a) for a in typing.get_args(tp)[-1:] if a is not Ellipsis)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return tp not in _OPEN and not _walked_fields(tp)  # a struct inside itself (members) is walked
    return False


@functools.cache
def _walked_fields(cls: type[msgspec.Struct]) -> tuple[str, ...]:
    """The fields of ``cls`` that can hold a number, directly or inside: text-only fields (most
    of a snapshot: ids, names, bus ids) are never visited."""
    _OPEN.add(cls)
    try:
        return tuple(f.name for f in msgspec.structs.fields(cls) if not _is_text(f.type))
    finally:
        _OPEN.discard(cls)


def _numbers(snap: Snapshot, where: str) -> None:
    """Every float finite, every integer a signed 64-bit one (the model's I64), every rate or
    bandwidth within 0..MAX_RATE (members are checked apart). Only fields whose type can hold a
    number are walked, and the path of a bad value is built only when one is found: a 1024-host
    cluster holds millions of values."""
    containers: list[tuple[int, str | int]] = []  # (parent container, key) of each container met
    stack: list[tuple[object, int, str | int]] = [
        (getattr(snap, f), -1, f) for f in _walked_fields(type(snap)) if f != "members"
    ]

    def path(parent: int, key: str | int) -> str:
        keys: list[str | int] = [key]
        while parent >= 0:
            parent, k = containers[parent]
            keys.append(k)
        out = ""
        for k in reversed(keys):
            out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else k)
        return out

    def leaf(parent: int, key: str | int) -> str:
        while isinstance(key, int) and parent >= 0:
            parent, key = containers[parent]
        return str(key)

    while stack:
        value, parent, key = stack.pop()
        kind = type(value)
        if value is None or kind is str or kind is bool:
            continue
        if kind is int:
            if not I64_MIN <= value <= I64_MAX:  # type: ignore[operator]
                raise SnapshotInvalid(f"{where}: {path(parent, key)}: {value} does not fit in 64 bits")
        elif kind is float:
            number = float(value)  # type: ignore[arg-type]
            if not math.isfinite(number):
                raise SnapshotInvalid(f"{where}: {path(parent, key)}: {value} is not a number")
            name = leaf(parent, key)
            if any(w in name for w in _RATE_WORDS) and not 0 <= number <= MAX_RATE:
                raise SnapshotInvalid(f"{where}: {path(parent, key)}: {number:g} is outside 0 to {MAX_RATE:g}")
        elif isinstance(value, msgspec.Struct):
            me = len(containers)
            containers.append((parent, key))
            stack.extend((getattr(value, f), me, f) for f in _walked_fields(type(value)))
        elif isinstance(value, list):
            me = len(containers)
            containers.append((parent, key))
            stack.extend((v, me, i) for i, v in enumerate(value) if type(v) is not str)
        elif isinstance(value, dict):
            me = len(containers)
            containers.append((parent, key))
            stack.extend((v, me, str(k)) for k, v in value.items() if type(v) is not str)
