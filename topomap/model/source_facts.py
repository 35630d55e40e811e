"""What a snapshot's source can know: the one test every view asks before it states a fact.

A static NCCL file does not say which GPU pairs NVLink joins; an imported `topo -m` has no link
rates. A fact the source does not carry is unknown, never "none". This module imports nothing
heavy, so the light commands (`matrix`) ask the same function as the graph's evidence.
"""

from __future__ import annotations

from topomap.model.snapshot import Snapshot


def source_knows(snap: Snapshot, fact: str) -> bool:
    """Whether the snapshot's source carries a fact. ``nvlink``: which GPU pairs NVLink joins."""
    unknown = set(snap.source.unknown_fields)
    fields = {
        "nvlink": ("pairs.nvlink",),
        "nvlink_links": ("gpus.nvlinks",),
        "p2p": ("pairs.p2p",),
        "fabric": ("gpus.fabric",),
        "mig": ("gpus.mig",),
        "nic_speed": ("nics.speed_gbit_s",),
        "nic_kind": ("nics.kind",),
        "gpu_model": ("gpus.name",),
        "gpu_memory": ("gpus.memory_total_bytes",),
        "pcie_link": ("gpus.pcie",),
    }.get(fact, (fact,))
    return not any(f in unknown for f in fields)
