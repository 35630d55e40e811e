"""One graph per distinct host shape (topomap/graph/build.py: Shapes): a flow bound to a packed
cluster builds each shape's graph once and shares it between the hosts of that shape. The answers
must be exactly those of building every host's graph on its own, also where hosts differ in one
per-host field (a downtrained GPU PCIe link, a NIC down, another driver)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import synth  # noqa: E402

import topomap.flow.binding as binding  # noqa: E402
from topomap.cli import app  # noqa: E402
from topomap.graph import FABRIC, Shapes, Topology, build  # noqa: E402
from topomap.model.codec import encode_snapshot, load_snapshot  # noqa: E402
from topomap.model.merge import merge  # noqa: E402
from topomap.model.pack import PACK_MIN_HOSTS, is_packed  # noqa: E402
from topomap.model.snapshot import PcieLink, Snapshot  # noqa: E402

rep = msgspec.structs.replace


def _host(base: Snapshot, i: int) -> Snapshot:
    """Host ``i``: the base sample under its own name and GPU UUIDs; n0001 has GPU0's link trained
    at x8 of x16, n0002 its first NIC down, n0003 another driver; the others are alike."""
    gpus = [rep(g, uuid=f"GPU-{i:04d}{g.index:04d}-0000-0000-0000-000000000000") for g in base.gpus]
    s = rep(base, host=rep(base.host, hostname=synth.host_name(i)), gpus=gpus)
    if i == 1:
        link = PcieLink(gen_current=5, width_current=8, gen_max=5, width_max=16)
        s = rep(s, gpus=[rep(g, pcie=link) if g.index == 0 else g for g in s.gpus])
    if i == 2:
        s = rep(s, nics=[rep(n, state="down") if n.index == 0 else n for n in s.nics])
    if i == 3:
        s = rep(s, software=rep(s.software, driver_version="535.104.05"))
    return s


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = load_snapshot(synth.BASE)
    merged = merge([(f"{i}.json", _host(base, i)) for i in range(PACK_MIN_HOSTS)])
    folder = tmp_path_factory.mktemp("shapes")
    path = folder / "cluster.json"
    path.write_bytes(encode_snapshot(merged))
    assert is_packed(path.read_bytes())
    flow = folder / "flow.yaml"
    # five hosts, two steps each: arrows between hosts (NICs) and inside each host (NVLink, PCIe)
    flow.write_text(synth.flow_text(5, 20 * 64, stages="ab"))
    return path, flow


class _OnePerHost:
    """Shapes as it was before: every host's graph built on its own."""

    def build(self, snap: Snapshot) -> Topology:
        return build(snap)


def _map_json(flow: Path, path: Path) -> dict[str, object]:
    res = CliRunner().invoke(app, ["map", str(flow), "--probe", str(path), "--json"])
    assert res.exit_code == 0, res.output
    out: dict[str, object] = json.loads(res.output)
    return out


def test_shared_graphs_give_the_answers_of_separate_builds(
    cluster: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, flow = cluster
    shared = _map_json(flow, path)
    with monkeypatch.context() as m:
        m.setattr(binding, "Shapes", _OnePerHost)
        separate = _map_json(flow, path)
    assert json.dumps(shared, sort_keys=True) == json.dumps(separate, sort_keys=True)
    text = json.dumps(shared)
    # the per-host differences reach the answer (the test would see a host given another's graph)
    assert "n0001" in text and "x8" in text  # the downtrained GPU0 link of n0001 is named
    assert "mlx5_0" in text


def test_hosts_of_one_shape_share_the_graph(cluster: tuple[Path, Path]) -> None:
    path, _ = cluster
    members = {m.host.hostname: m for m in load_snapshot(path).members}
    shapes = Shapes()
    topos = {name: shapes.build(members[name]) for name in ("n0000", "n0001", "n0002", "n0003", "n0004", "n0005")}
    # n0000, n0004 and n0005 differ only in name and GPU UUIDs: one shape; each other host its own
    assert len(shapes) == 4
    a, b, c = topos["n0000"], topos["n0004"], topos["n0005"]
    assert b.graph.adj is not None and b.graph._adj is a.graph._adj and c.graph._adj is a.graph._adj
    assert b.graph.edges["gpu0", FABRIC] is a.graph.edges["gpu0", FABRIC]  # the edge's facts, one dict
    assert [t.graph.nodes["host"]["label"] for t in (a, b, c)] == ["n0000", "n0004", "n0005"]
    assert b.snapshot is members["n0004"] and b.index is not a.index and b.notes is not a.notes
    assert topos["n0001"].graph._adj is not a.graph._adj  # the downtrained link: its own graph
    parent = next(iter(topos["n0001"].graph.adj["gpu0"]))
    assert topos["n0001"].graph.edges[parent, "gpu0"]["width"] == 8
    assert a.graph.edges[parent, "gpu0"]["width"] != 8
    # each host's graph equals the graph built from its snapshot alone, attributes and all
    for name, t in topos.items():
        alone = build(members[name]).graph
        assert dict(t.graph.nodes(data=True)) == dict(alone.nodes(data=True)), name
        assert sorted(map(repr, t.graph.edges(data=True))) == sorted(map(repr, alone.edges(data=True))), name
    assert b.index.legs is a.index.legs  # PCIe legs: decided by the shared nodes and edges alone
    assert topos["n0001"].index.legs is not a.index.legs
