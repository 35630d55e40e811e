"""nccl-tests results kept in a snapshot (``topomap attach``), beside the busbw the snapshot should reach:
plain lines for ``matrix --bandwidth`` (and ``show``), data for its ``--json`` and the report."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topomap.model.snapshot import Snapshot
from topomap.render.text import visible

if TYPE_CHECKING:
    from topomap.flow.mapping import FlowMap
    from topomap.graph import Topology


def has_results(snap: Snapshot) -> bool:
    return any(m.kind == "collective" for m in snap.measurements)


def attached_lines(snap: Snapshot) -> list[str]:
    """One line per kept run: measured peak, expected figure, verdict; empty when none is kept."""
    if not has_results(snap):
        return []
    from topomap.nccl.attached import attached  # start-up: the model (networkx) only where results are kept

    lines = ["nccl-tests results, busbw GB/s measured (peak as printed) beside the expected (topomap nccl --perf)"]
    lines += [f"  {visible(a.text())}" for a in attached(snap)]
    lines.append("  the likely causes of a shortfall: topomap nccl --tests RESULTS SNAP")
    return lines


def attached_json(snap: Snapshot) -> list[dict[str, Any]]:
    if not has_results(snap):
        return []
    from topomap.nccl.attached import attached  # start-up: see attached_lines

    return [a.to_json() for a in attached(snap)]


def report_collectives(fmap: FlowMap, topos: dict[str, Topology | None]) -> dict[str, list[str]]:
    """The report's collectives: the flow's at their expected busbw (``map``'s lines), and the nccl-tests
    runs kept in the hosts' snapshots beside what each should reach (a snapshot bound twice, once)."""
    measured: list[str] = []
    seen: set[int] = set()
    for host, topo in topos.items():
        if topo is None or id(topo.snapshot) in seen:
            continue
        seen.add(id(topo.snapshot))
        measured += [f"{host}: {line.strip()}" for line in attached_lines(topo.snapshot)[1:-1]]
    return {"flow": [c.text() for c in fmap.collectives], "measured": measured}
