"""``lscpu`` lines appended to an nvidia-smi paste: the host's CPU model.

NCCL sets its default P2P level by CPU vendor (``ncclTopoCpuType``), and `nvidia-smi topo -m` does
not say which CPU the host has. ``lscpu`` does: ``Model name:  AMD Ryzen 9 3900X 12-Core Processor``
(or only ``Vendor ID:  AuthenticAMD``). Posts paste the whole output or one grepped line
(``lscpu | grep "Model name"``); either is read. A file whose lines name two different CPU models
(two hosts pasted together) sets none, and a note says why.
"""

from __future__ import annotations

import re

import msgspec

from topomap.model.snapshot import Snapshot

_MODEL = re.compile(r"^\s*Model name:\s+(\S.{0,199}?)\s*$")
_VENDOR = re.compile(r"^\s*Vendor ID:\s+(AuthenticAMD|GenuineIntel)\s*$")


def apply_lscpu(snap: Snapshot, lines: list[str]) -> Snapshot:
    """``snap`` with ``host.cpu_model`` from the file's ``lscpu`` lines (unchanged without one, or
    where the host's CPU model is already known)."""
    if snap.host.cpu_model is not None:
        return snap
    models = list(dict.fromkeys(m.group(1) for x in lines if (m := _MODEL.match(x))))
    vendors = list(dict.fromkeys(m.group(1) for x in lines if (m := _VENDOR.match(x))))
    found = models or vendors
    if not found:
        return snap
    if len(found) > 1:
        notes = [*snap.source.notes, f"`lscpu` lines name {len(found)} CPUs ({'; '.join(found)}): CPU model not set"]
        return msgspec.structs.replace(snap, source=msgspec.structs.replace(snap.source, notes=notes))
    notes = [*snap.source.notes, f"CPU model from the file's `lscpu` lines: {found[0]}"]
    return msgspec.structs.replace(
        snap,
        host=msgspec.structs.replace(snap.host, cpu_model=found[0]),
        source=msgspec.structs.replace(snap.source, notes=notes),
    )
