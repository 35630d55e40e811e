"""A host's shape: what hosts of one hardware build share (GPU models and memory, the NVLink matrix,
the GPU↔NIC rails, the PCIe tree). The shape is worked out once per distinct host build: a cheap
key of the raw fields (:func:`raw_key`, one msgspec encode per host) finds the hosts that are the
same, and :func:`shape_of` computes the shape facts once for each such group.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from topomap.model.facts import gpu_memory, gpu_model_name
from topomap.model.merge import rails
from topomap.model.snapshot import Snapshot
from topomap.model.source_facts import source_knows

#: The shape's parts, in the order views list them.
PARTS = ("gpus", "nvlink", "rails", "pcie_tree")

GpuShape = tuple[tuple[str | None, int | None], ...]  # per GPU by index: (model, memory bytes)
NvlinkShape = tuple[tuple[str, str, int], ...]  # GPU pairs joined by NVLink: (gpuA, gpuB, links)
RailShape = tuple[tuple[str, tuple[str, ...]], ...]  # per GPU: (gpu, (class, nic, ...)), merge.rails
TreeShape = tuple[tuple[str, tuple[str, ...]], ...]  # per GPU/NIC: (device, kinds from the root down)


@dataclass(frozen=True)
class Shape:
    """The shape facts of one host build. A part is None where the host's source does not carry it
    (an import without NVLink or PCIe data): unknown, never "none"."""

    gpus: GpuShape
    nvlink: NvlinkShape | None
    rails: RailShape | None
    pcie_tree: TreeShape | None

    def part(self, name: str) -> object:
        value: object = getattr(self, name)
        return value

    @property
    def key(self) -> str:
        """A stable id of the shape (12 hex digits), the same on every run and machine."""
        raw = msgspec.json.encode([self.gpus, self.nvlink, self.rails, self.pcie_tree])
        return hashlib.blake2b(raw, digest_size=6).hexdigest()


def raw_key(h: Snapshot) -> bytes:
    """Bytes that are equal for hosts of one build: the raw fields the shape is made of (GPU names,
    memory and device ids, the pairs, NIC names and PCI parents, what the source cannot know). Two
    hosts with equal bytes have one shape; unequal bytes may still give one shape (a P2P status that
    differs): :func:`shape_of` decides, once per distinct key."""
    return msgspec.json.encode(
        [
            [(g.index, g.name, g.memory_total_bytes, g.pci_device_id, g.lost) for g in h.gpus],
            h.pairs,
            [(n.index, n.name, n.rdma, n.pci_bus_id) for n in h.nics],
            [(p.id, p.kind, p.parent) for p in h.pci],
            h.nvswitches,
            h.source.unknown_fields,
            h.source.path_recorded_as,
        ]
    )


def shape_of(h: Snapshot) -> Shape:
    """The shape facts of one host (computed once per distinct :func:`raw_key`)."""
    gpus = tuple((gpu_model_name(g)[0], gpu_memory(g).total_bytes) for g in sorted(h.gpus, key=lambda g: g.index))
    return Shape(gpus, _nvlink(h), rails(h), _tree(h))


def _nvlink(h: Snapshot) -> NvlinkShape | None:
    if not source_knows(h, "nvlink"):
        return None
    out = []
    for p in h.pairs:
        if p.nvlinks and p.a.startswith("gpu") and p.b.startswith("gpu"):
            a, b = sorted((p.a, p.b), key=_index)
            out.append((a, b, p.nvlinks))
    return tuple(sorted(out, key=lambda t: (_index(t[0]), _index(t[1]))))


def _tree(h: Snapshot) -> TreeShape | None:
    """Each GPU's and RDMA NIC's chain of PCI kinds from its root port down (bus ids left out: the
    same build may number its buses differently); None when the source has no PCI tree."""
    if not h.pci or not source_knows(h, "pci"):
        return None
    by_id = {p.id: p for p in h.pci}
    out = []
    devices = [(f"gpu{g.index}", g.pci_bus_id) for g in h.gpus] + [
        (f"nic{n.index}", n.pci_bus_id) for n in h.nics if n.rdma
    ]
    for dev, bus in devices:
        kinds: list[str] = []
        seen: set[str] = set()
        cur = by_id.get(bus) if bus else None
        while cur is not None and cur.id not in seen:
            seen.add(cur.id)
            kinds.append(cur.kind)
            cur = by_id.get(cur.parent) if cur.parent else None
        out.append((dev, tuple(reversed(kinds))))
    return tuple(out)


def _index(dev: str) -> int:
    digits = "".join(c for c in dev if c.isdigit())
    return int(digits) if digits else -1


# --- words ---------------------------------------------------------------------------------------


def gpus_text(v: GpuShape) -> str:
    """``8 × NVIDIA H100 80GB HBM3 (79.6 GiB)``; several models each with its count."""
    if not v:
        return "no GPU"
    counts = Counter(v)
    return ", ".join(f"{n} × {m or 'unknown model'} ({_gib(b)})" for (m, b), n in counts.items())


def _gib(b: int | None) -> str:
    return "memory unknown" if b is None else f"{b / 2**30:.1f} GiB"


def nvlink_text(v: NvlinkShape | None) -> str:
    """``28 GPU pairs on NVLink: 28 × NV18``; unknown when the source cannot carry it."""
    if v is None:
        return "unknown (the source does not carry NVLink)"
    if not v:
        return "no GPU pair on NVLink"
    if len(v) == 1:
        a, b, n = v[0]
        return f"{a}–{b} NV{n}"
    counts = Counter(n for _a, _b, n in v)
    return f"{len(v)} GPU pairs on NVLink: " + ", ".join(f"{c} × NV{n}" for n, c in sorted(counts.items()))


def rails_text(v: RailShape | None) -> str:
    if v is None:
        return "unknown (no RDMA NIC, or the source has no GPU↔NIC path)"
    return ", ".join(f"{g}→{'/'.join(names)} {cls}" for g, (cls, *names) in v)


def tree_text(v: TreeShape | None) -> str:
    """The PCIe tree by chain form: ``8 GPUs under root>switch>switch; 8 NICs under root>switch>switch``."""
    if v is None:
        return "unknown (the source has no PCIe tree)"
    forms: Counter[tuple[str, str]] = Counter()
    for dev, kinds in v:
        forms[("GPU" if dev.startswith("gpu") else "NIC", ">".join(kinds[:-1]) or "no parent")] += 1
    return "; ".join(f"{n} {what}s under {chain}" for (what, chain), n in sorted(forms.items()))


PART_TEXT: dict[str, Callable[[Any], str]] = {
    "gpus": gpus_text,
    "nvlink": nvlink_text,
    "rails": rails_text,
    "pcie_tree": tree_text,
}
PART_NAME = {
    "gpus": "GPU models and memory",
    "nvlink": "NVLink matrix",
    "rails": "GPU↔NIC rails",
    "pcie_tree": "PCIe tree",
}


def part_text(name: str, value: object) -> str:
    fn = PART_TEXT[name]
    return fn(value)
