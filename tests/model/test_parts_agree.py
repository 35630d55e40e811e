"""One parts table, every view (issue 30 item 8): for every snapshot and real paste in the repository,
`show`, `map`, `check`, `diff`, `place` and `nccl` give each GPU the same model and memory and each
NVLink pair the same figure — its range, its source — because they all ask the same functions, which
read the one parts table (topomap/base/parts.py)."""

from __future__ import annotations

import io
import itertools
from pathlib import Path

import pytest
from rich.console import Console

from tests.conftest import REAL, SAMPLES
from tests.fakes.flows import all_gpu_pairs
from tests.fakes.flows import mapped as mapped_flow
from topomap.base.part_names import model_of
from topomap.check import Lot, check, parse_requirements
from topomap.diff import diff_snapshots
from topomap.flow import parse_flow
from topomap.graph import build
from topomap.graph.evidence import nvlink
from topomap.importers import load_any
from topomap.model.facts import Bandwidth, gpu_memory
from topomap.model.snapshot import Snapshot
from topomap.nccl.predict import predict_snapshot
from topomap.place.candidates import pair_link
from topomap.render.terminal import show
from topomap.render.text import memory_text
from topomap.transport.rules import NcclEnv

LOGS = REAL.parent / "real-nccl-logs"
INPUTS = sorted(
    [
        *(SAMPLES / "snapshots").glob("*.json"),
        *(REAL / "nvidia-smi").glob("*.txt"),
        *(REAL / "nccl-xml").glob("*.xml"),
        *(REAL / "hwloc").glob("*.xml"),
        *(REAL / "lstopo").glob("*.txt"),
        *LOGS.glob("*.topo.txt"),
        *(f for f in LOGS.glob("*.log") if "=== System" in f.read_text(errors="replace")),
    ]
)


def _same(a: Bandwidth, b: Bandwidth) -> bool:
    return (a.gbps, a.high, a.source, a.lower_bound) == (b.gbps, b.high, b.source, b.lower_bound)


def _shown(s: Snapshot) -> str:
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(show(s, build(s)))
    return out.getvalue()


def test_every_input_of_the_repository_is_read() -> None:
    """Nothing is left out of the comparison below by failing to import."""
    assert len(INPUTS) > 40
    for f in INPUTS:
        assert load_any(f).gpus is not None, f


@pytest.mark.parametrize("f", INPUTS, ids=lambda f: f.name)
def test_every_view_gives_each_gpu_one_model_memory_and_nvlink_figure(f: Path) -> None:
    s = load_any(f)
    t = build(s)
    shown = _shown(s)
    gpus = [f"gpu{g.index}" for g in s.gpus]
    # each GPU: the model and memory show prints are the parts table's, and check reads the same
    for g in s.gpus:
        part = model_of(g.name, g.pci_device_id)
        mem = gpu_memory(g)
        if mem.total_bytes is not None:
            assert memory_text(mem) in shown, (g.index, memory_text(mem))
        if part is not None and g.name:
            reqs, _ = parse_requirements(f"requirements:\n  - gpus: {{min_count: 1, model: '{part.name}'}}\n", "r")
            assert check(reqs, [Lot("lot", t)], None).results[0].status == "pass", (g.name, part.name)
    if len(gpus) < 2:
        return
    flow = parse_flow(all_gpu_pairs(gpus), "p.yaml")
    fmap = mapped_flow(flow, {"lot": t})
    mapped = {(a.src.split(":")[1], a.dst.split(":")[1]): a for a in fmap.arrows}
    rows = {(r.a.src.split(":")[1], r.a.dst.split(":")[1]): r for r in diff_snapshots(s, s, flow=flow).arrows}
    nccl = {(e.src_gpu, e.dst_gpu): e.decision for e in predict_snapshot(s, NcclEnv(), topo=t).entries}
    for a, b in itertools.combinations(gpus, 2):
        nv = nvlink(t, a, b)
        if not nv.usable.yes:
            continue
        fig = nv.bandwidth
        m = mapped[(a, b)]
        # map and diff: the figure with its range and source (a measured figure replaces the nominal)
        if m.bandwidth_source != "measured":
            assert _same(m.bandwidth(), fig), (a, b, m.bandwidth(), fig)
            assert _same(rows[(a, b)].a.bandwidth(), fig) and rows[(a, b)].direction == "neutral"
        # place ranks the pair on the same figure
        pl = pair_link(t, a, b)
        assert pl.figure is not None and _same(pl.figure, fig) and fig.text() in pl.text
        # show prints it (the NVLink tree, direct or through the fabric)
        assert fig.text() in shown, (a, b, fig.text())
        # check: a minimum at the figure's low end passes, above its high end fails
        if fig.gbps is not None and m.bandwidth_source != "measured":
            for need, status in ((fig.gbps, "pass"), ((fig.high or fig.gbps) * 1.5 + 1, "fail")):
                if status == "fail" and fig.high is None:
                    continue
                steps = f"from_step: s{a}, to_step: s{b}"
                text = f"requirements:\n  - arrow_bandwidth: {{min_gbps: {need:.6f}, {steps}}}\n"
                reqs, _ = parse_requirements(text, "r.yaml")
                assert check(reqs, [Lot("lot", t)], fmap).results[0].status == status, (a, b, need)
        # nccl: the pair goes peer-to-peer over NVLink
        d = nccl[(a, b)]
        assert d.transport == "P2P" and ("NVLink" in d.detail or "XGMI" in d.detail), (a, b, d)  # AMD: RCCL over XGMI
