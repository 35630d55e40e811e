"""Property: map, check, show and diff give the same answer for every GPU pair, on every shipped
sample and on random topologies, because they ask the same evidence functions; and an arrow over
NVLink always stands on an NV# pair."""

from __future__ import annotations

import itertools
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from tests.conftest import SAMPLES, run_probe
from tests.fakes import machines
from tests.fakes.flows import all_gpu_pairs, map_text
from topomap.base.links import PCIE_CLASSES
from topomap.base.units import fmt_bytes
from topomap.check import Lot, check, parse_requirements
from topomap.diff import diff_snapshots
from topomap.graph import build
from topomap.graph.evidence import nvlink
from topomap.graph.link_summary import gpu_pairs_nvlink_summary
from topomap.graph.routes import route
from topomap.importers import load_any
from topomap.model.snapshot import P2P, Fabric, Gpu, Mig, Pair, Snapshot, Source
from topomap.model.source_facts import source_knows
from topomap.render.terminal import show

SAMPLE_FILES = sorted((SAMPLES / "snapshots").glob("*.json"))
# a GPU link of either vendor: NVLink, or AMD's XGMI (issue 35)
NVLINK_RULE, _ = parse_requirements("requirements:\n  - gpu_links: {min: gpu-link}\n", "r.yaml")


def assert_views_agree(s: Snapshot) -> None:
    t = build(s)
    gpus = [f"gpu{g.index}" for g in s.gpus]
    if len(gpus) < 2:
        return
    # map: every ordered GPU pair in one flow
    fmap = map_text(all_gpu_pairs(gpus), {"lot": t}, "p.yaml")
    mapped = {(a.src.split(":")[1], a.dst.split(":")[1]): a for a in fmap.arrows}
    # check: one verdict per pair, read from its typed findings (never from its prose)
    result = check(NVLINK_RULE, [Lot("lot", t)], None).results[0]
    verdict = {f.subject: f.status for f in result.findings}
    assert len(verdict) == len(gpus) * (len(gpus) - 1) // 2
    # show: the NVLink cell of each GPU
    cells = {g: gpu_pairs_nvlink_summary(t, g) for g in gpus}
    for a, b in itertools.combinations(gpus, 2):
        m = mapped[(a, b)]
        nv = nvlink(t, a, b)
        over_nvlink = m.medium == "gpu-link" and m.via in ("nvlink", "nvswitch", "xgmi")
        said = verdict[f"{a}–{b}"]
        assert over_nvlink == nv.usable.yes == (said == "pass"), (a, b, m.via, nv.usable, said)
        if over_nvlink:
            assert m.path == nv.path and route(t, a, b).path == m.path
            own = next((p.path for p in s.pairs if {p.a, p.b} == {a, b}), None)
            assert own is None or own == m.path, (a, b, own, m.path)  # an NV# pair, never a relay
            assert not any(x.split("/")[1].startswith("gpu") for x in m.route[1:-1])  # no relay
            assert cells[a] != "none" and not cells[a].startswith("unknown")
        if said == "unknown":
            assert m.medium == "unknown" or m.via == "pcie-p2p"
        if nv.usable.value == "unknown" and not source_knows(s, "nvlink"):
            assert cells[a].startswith("unknown"), cells[a]
    # diff: a snapshot against itself changes nothing
    assert diff_snapshots(s, s).changes == []
    Console(file=open("/dev/null", "w")).print(show(s, t))  # noqa: SIM115 - renders without error


@pytest.mark.parametrize("f", SAMPLE_FILES, ids=lambda f: f.stem)
def test_views_agree_on_every_sample(f: Path) -> None:
    assert_views_agree(load_any(f))


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    n = draw(st.integers(2, 7))
    nvlink_known = draw(st.booleans())
    unknown = [] if nvlink_known else ["pairs.nvlink", "gpus.nvlinks"]
    gpus = []
    for i in range(n):
        fabric = draw(
            st.sampled_from(
                [
                    None,
                    Fabric(state="completed", status="success", clique_id=1, cluster_uuid="c1"),
                    Fabric(state="in-progress", clique_id=0),
                    Fabric(state="not-supported"),
                ]
            )
        )
        mig = draw(st.sampled_from([None, Mig(enabled=False), Mig(enabled=True)]))
        gpus.append(Gpu(index=i, numa_node=draw(st.sampled_from([0, 1, None])), fabric=fabric, mig=mig))
    all_nv = draw(st.integers(0, 18)) if draw(st.booleans()) else None
    pairs = []
    for a, b in itertools.combinations(range(n), 2):
        if all_nv:
            path = f"NV{all_nv}"
        elif nvlink_known and draw(st.booleans()):
            path = f"NV{draw(st.integers(1, 12))}"
        else:
            path = draw(st.sampled_from(PCIE_CLASSES))
        p2p = draw(
            st.sampled_from([None, P2P(read="OK", write="OK", nvlink="OK"), P2P(read="CNS", write="CNS", nvlink="NS")])
        )
        nvl = int(path[2:]) if path.startswith("NV") else 0
        pairs.append(Pair(a=f"gpu{a}", b=f"gpu{b}", path=path, nvlinks=nvl, p2p=p2p))
    return Snapshot(
        source=Source(kind="nvidia-smi", origin="random", tool="test", unknown_fields=unknown),
        gpus=gpus,
        pairs=pairs,
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots())
def test_views_agree_on_random_topologies(s: Snapshot) -> None:
    assert_views_agree(s)


def test_check_and_diff_write_a_memory_size_alike(tmp_path: Path) -> None:
    """One text for a memory size (units.fmt_bytes): diff wrote MiB from a function named `_gib`,
    check wrote its own MiB figure."""
    s = run_probe(machines.hgx_h100(), tmp_path).snapshot
    small = [msgspec.structs.replace(g, memory_total_bytes=40 * 2**30) for g in s.gpus]
    d = diff_snapshots(s, msgspec.structs.replace(s, gpus=small))
    reqs, _ = parse_requirements("requirements:\n  - gpus: {min_count: 8, min_memory_gb: 96}\n", "r.yaml")
    r = check(reqs, [Lot("h100", build(s))], None).results[0]
    have = fmt_bytes(s.gpus[0].memory_total_bytes)
    assert f"gpu0: memory {have} → {fmt_bytes(40 * 2**30)}" in [c.text for c in d.changes]
    assert r.evidence[1].startswith(f"gpu0: {have} = ") and have == "80 GiB"
