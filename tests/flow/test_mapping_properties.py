"""Property: every arrow of a random valid flow on a random snapshot gets exactly one medium and
a route whose hops exist in the graph."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import SAMPLES
from tests.fakes.flows import arrow, flow_yaml, step
from topomap.flow import bind, gpus_of, parse_flow
from topomap.flow.mapping import map_flow
from topomap.graph import build
from topomap.importers import load_any

SNAPS = {f.stem: build(load_any(f)) for f in sorted((SAMPLES / "snapshots").glob("*.json"))}
MEDIA = {"gpu-link", "host-memory", "network", "local", "unknown"}


@st.composite
def flows(draw: st.DrawFn) -> tuple[str, dict[str, str | None]]:
    hosts = {"h0": draw(st.sampled_from(sorted(SNAPS)))}
    if draw(st.booleans()):
        hosts["h1"] = draw(st.sampled_from(sorted(SNAPS)))
    if draw(st.booleans()):
        hosts["ws"] = None

    def placement() -> str:
        h = draw(st.sampled_from(sorted(hosts)))
        if hosts[h] is None:
            return h
        n = len(SNAPS[hosts[h]].snapshot.gpus)  # type: ignore[index]
        return draw(
            st.sampled_from([f"{h}:gpu{draw(st.integers(0, n - 1))}", f"{h}:memory", f"{h}:storage", f"{h}:gpus"])
        )

    n_steps = draw(st.integers(2, 6))
    kinds = ["input", "compute", "exchange", "aggregate", "output"]
    steps = {f"s{i}": step(draw(st.sampled_from(kinds)), placement()) for i in range(n_steps)}
    arrows = []
    for i in range(1, n_steps):
        j = draw(st.integers(0, i - 1))  # only forward arrows: no cycles
        arrows.append(arrow(f"s{j}", f"s{i}", f"{draw(st.integers(1, 9))} GiB", pattern="all-to-all"))
    return flow_yaml(steps, arrows, hosts=dict.fromkeys(hosts), name="p"), hosts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flows())
def test_every_arrow_gets_one_medium_and_a_real_route(case: tuple[str, dict[str, str | None]]) -> None:
    text, hosts = case
    flow = parse_flow(text, "p.yaml")
    topos = {h: (SNAPS[s] if s else None) for h, s in hosts.items()}
    bind(flow, gpus_of(topos))
    fmap = map_flow(flow, topos)
    assert len(fmap.arrows) == len(flow.arrows)
    for a in fmap.arrows:
        assert a.medium in MEDIA
        assert (a.bandwidth_gbps is None) == (a.bandwidth_source == "unknown")
        hops = [h.partition("/") for h in a.route if h != "nvlink-fabric"]
        for host, sep, node in hops:
            t = topos.get(host)
            if sep and t is not None:
                assert node in t.graph, (a.src, a.dst, node)
        for (h1, s1, n1), (h2, s2, n2) in itertools.pairwise(hops):
            t = topos.get(h1)
            if h1 == h2 and s1 and s2 and t is not None and n1 != n2:
                assert t.graph.has_edge(n1, n2), (a.src, a.dst, n1, n2)
        if a.medium == "local":
            assert a.src == a.dst or a.src.split(":")[0] == a.dst.split(":")[0]
