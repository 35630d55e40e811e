"""Alike hosts, the one notion (topomap/model/alike.py), and what rests on it: the light graph the
views read (topomap/graph/light.py) against networkx's own reading of the same dicts, NCCL on a cluster
once per group (topomap/nccl/cluster.py) against predicting every host on its own, as it was before."""

from __future__ import annotations

import gc
import sys
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import synth  # noqa: E402

from tests.conftest import SAMPLES  # noqa: E402
from topomap.graph import FABRIC, Topology, build, gpu_node  # noqa: E402
from topomap.importers import load_any  # noqa: E402
from topomap.model.alike import AlikeKeys, field_changes  # noqa: E402
from topomap.model.codec import load_snapshot  # noqa: E402
from topomap.model.facts import fabric_clique  # noqa: E402
from topomap.model.merge import merge  # noqa: E402
from topomap.model.snapshot import Fabric, Gpu, Snapshot, hosts_of  # noqa: E402
from topomap.nccl.cluster import predict_groups  # noqa: E402
from topomap.nccl.predict import Entry, NcclReport, parse_ranks, predict_snapshot  # noqa: E402
from topomap.transport.decide import decide  # noqa: E402
from topomap.transport.facts import remote_facts  # noqa: E402
from topomap.transport.rules import NcclEnv, parse_env  # noqa: E402

SNAPS = sorted((SAMPLES / "snapshots").glob("*.json"))
rep = msgspec.structs.replace


def test_hosts_alike_but_for_their_names_have_one_key() -> None:
    base = load_snapshot(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json")
    other = rep(
        base,
        host=rep(base.host, hostname="elsewhere"),
        source=rep(base.source, origin="elsewhere.json", captured_at="2026-01-01T00:00:00Z"),
        gpus=[rep(g, uuid=f"GPU-{g.index:08d}") for g in base.gpus],
    )
    keys = AlikeKeys()
    assert keys.key(base) == keys.key(other) and field_changes(other, base) == []
    down = rep(other, nics=[rep(n, state="down") if n.index == 2 else n for n in other.nics])
    assert keys.key(down) != keys.key(base)
    name = base.nics[2].name
    assert field_changes(down, base) == [(f"nics[{name}].state", "down", base.nics[2].state)]


def test_field_changes_name_items_by_what_they_are() -> None:
    base = synth.h200_base()
    lost = rep(base, gpus=[rep(g, lost=True) if g.index == 3 else g for g in base.gpus])
    assert field_changes(lost, base) == [("gpus[gpu3].lost", True, False)]
    nv = synth.h200_host(base, 0, "NV12 pair")
    assert field_changes(nv, rep(base, host=nv.host)) == [
        ("pairs[gpu0–gpu1].path", "NV12", "NV18"),
        ("pairs[gpu0–gpu1].nvlinks", 12, 18),
    ]
    fewer = rep(base, gpus=base.gpus[:7])
    assert field_changes(fewer, base) == [("gpus[gpu7]", None, base.gpus[7])]


def test_snapshots_are_not_tracked_by_the_cycle_collector() -> None:
    snap = load_snapshot(SNAPS[0])
    assert not gc.is_tracked(snap) and not gc.is_tracked(snap.gpus[0])


@pytest.mark.parametrize("path", SNAPS, ids=[p.stem for p in SNAPS])
def test_the_light_graph_reads_as_networkx_reads_the_same_dicts(path: Path) -> None:
    """Nodes, edges (each once, in the same order), neighbours and degrees, one node's edges: what
    topomap.graph.light gives is what networkx gives over the dicts Topology.graph shares with it."""
    topo = build(load_any(path))
    light, nx_graph = topo.light, topo.graph
    assert nx_graph._node is light._node and nx_graph._adj is light._adj
    assert light.nodes(data=True) == list(nx_graph.nodes(data=True)) and list(light) == list(nx_graph)
    assert light.edges(data=True) == list(nx_graph.edges(data=True))
    assert light.edges() == list(nx_graph.edges()) == list(light.edges)
    for n in light:
        assert list(light.neighbors(n)) == list(nx_graph.neighbors(n)) and light.degree(n) == nx_graph.degree(n)
    if FABRIC in light:
        assert light.edges(FABRIC, data=True) == list(nx_graph.edges(FABRIC, data=True))
    u, v = next(iter(light.edges))
    assert light.edges[u, v] is nx_graph.edges[u, v] and light.has_edge(v, u) and not light.has_edge(u, "nope")
    nx_graph.add_node("added", kind="test")  # a change through networkx is seen by the light graph
    assert light.nodes["added"] == {"kind": "test"}


# --- NCCL on a cluster, against every host predicted on its own (topomap/nccl/nodes.py before issue 34) ---


def _as_before(snap: Snapshot, env: NcclEnv, ranks: str | None, version: str | None) -> NcclReport:
    """The per-host prediction of a merged snapshot as nodes.predict_cluster made it before hosts were
    grouped: every host built and predicted, the cross-host pairs decided pair by pair."""
    hosts = [(h, build(h), parse_ranks(ranks, h)[0]) for h in hosts_of(snap)]
    parts = [predict_snapshot(h, env, ranks, version, topo) for h, topo, _ in hosts]
    base = [sum(len(chosen) for _, _, chosen in hosts[:i]) for i in range(len(hosts))]
    entries: list[Entry] = []
    for (h, _, _), part, off in zip(hosts, parts, base, strict=True):
        name = h.host.hostname or "?"
        entries += [
            replace(e, src_rank=e.src_rank + off, dst_rank=e.dst_rank + off, src_host=name, dst_host=name)
            for e in part.entries
        ]  # fmt: skip
    for i in range(len(hosts) - 1 if len(hosts) > 2 else 1):
        j = (i + 1) % len(hosts)
        entries += _across((hosts[i], base[i]), (hosts[j], base[j]), env, version)
        entries += _across((hosts[j], base[j]), (hosts[i], base[i]), env, version)
    out = NcclReport(entries, env=env, version=version, source=snap.source.origin or "merged snapshot")
    for (h, _, _), part in zip(hosts, parts, strict=True):
        out.nics += [replace(n, gpu=f"{h.host.hostname}:{n.gpu}") for n in part.nics]
        out.features += [replace(f, gpu=f"{h.host.hostname}:{f.gpu}") for f in part.features]
    out.notes.append(
        f"{len(hosts)} hosts, ranks host by host; across hosts, the same local rank on consecutive hosts "
        "(NCCL's rings join those by default)"
    )
    if version is None:
        out.notes.append("no NCCL version given: --nccl-version 2.18.3 predicts for an older release")
    return out


_Host = tuple[Snapshot, Topology, list[Gpu]]


def _across(src: tuple[_Host, int], dst: tuple[_Host, int], env: NcclEnv, version: str | None) -> list[Entry]:
    (sa, ta, ga), base_a = src
    (sb, _, gb), base_b = dst
    out = []
    for k, (g, other) in enumerate(zip(ga, gb, strict=False)):
        clique = fabric_clique(sa, g)
        mnnvl = clique is not None and clique == fabric_clique(sb, other)
        d = decide(replace(remote_facts(ta, g), mnnvl=mnnvl), env, version)
        hosts = {"src_host": sa.host.hostname, "dst_host": sb.host.hostname}
        out.append(Entry(base_a + k, base_b + k, gpu_node(g), gpu_node(other), d, **hosts))
    return out


def _rack(n: int, cliques: list[int]) -> Snapshot:
    """Hosts on an NVLink fabric: host i's GPUs in clique ``cliques[i]`` (multi-node NVLink between
    hosts of one clique)."""
    base = load_any(str(SAMPLES / "snapshots" / "hgx-h200-8gpu-10nic.json"))
    hosts = []
    for i in range(n):
        fab = Fabric(cluster_uuid="6f1c1b2e-0000-4000-8000-00000000beef", clique_id=cliques[i], state="completed")
        hosts.append(rep(base, host=rep(base.host, hostname=f"r{i}"), gpus=[rep(g, fabric=fab) for g in base.gpus]))
    return merge([(f"r{i}.json", h) for i, h in enumerate(hosts)])


MIXED = merge(
    [
        (p.name, rep(load_any(p), host=rep(load_any(p).host, hostname=p.stem)))
        for p in (SAMPLES / "snapshots" / n for n in ("ibm-gx3d-h100-8gpu.json", "hgx-a100-8gpu-8nic.json"))
    ]
    + [("c.json", rep(synth.h200_base(), host=rep(synth.h200_base().host, hostname="c")))]
)


@pytest.mark.parametrize(
    ("cluster", "ranks", "env", "version"),
    [
        (synth.h200_cluster(2, 1), None, [], None),
        (synth.h200_cluster(3, 1), "0,1,2,3", [], None),
        (synth.h200_cluster(40, 6), None, [], "2.18.3"),
        (synth.h200_cluster(40, 6), "one-process", ["NCCL_P2P_LEVEL=SYS"], None),
        (_rack(6, [7, 7, 7, 8, 8, 7]), None, [], None),
        (_rack(4, [7, 7, 7, 7]), None, ["NCCL_MNNVL_ENABLE=0"], None),
        (MIXED, None, [], None),
        (MIXED, "containers", [], None),
    ],
    ids=["2-hosts", "3-hosts-ranks", "40-hosts-2.18", "40-one-process", "rack", "rack-mnnvl-off", "mixed", "mixed-c"],
)
def test_nccl_by_group_is_every_host_predicted_alone(
    cluster: Snapshot, ranks: str | None, env: list[str], version: str | None
) -> None:
    e = parse_env(env)
    p = predict_groups(cluster, e, ranks, version)
    before = _as_before(cluster, e, ranks, version).to_json()
    assert p.report().to_json() == before
    assert p.report_json() == before
    assert len(p.parts) == len(p.grouping.groups) < len(cluster.members) or len(cluster.members) <= 3
