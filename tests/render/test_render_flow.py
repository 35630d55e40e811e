"""Flow diagrams: flow first, hardware second — every node declared, arrows drawn once with their
labels, replicas bundled, unused hardware folded, hosts stacked, sizes a screen can show."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES
from tests.fakes.flows import arrow, flow_yaml, step
from topomap.api import bind_snapshots
from topomap.cli import app
from topomap.flow import Placement, parse_flow, read_flow
from topomap.flow.mapping import map_flow
from topomap.flow.spec import StepKind
from topomap.render.bundles import bundles, compress_places
from topomap.render.dot import pipe, topology_dot
from topomap.render.flowdot import flow_on_machine_dot, flow_pipeline_dot

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")
runner = CliRunner()
FLOWS = sorted((SAMPLES / "flows").glob("*.yaml"))
SNAP = SAMPLES / "snapshots"
SVG = "{http://www.w3.org/2000/svg}"
RAW_A = REAL / "nvidia-smi" / "hgx-h200-8gpu-10nic-nchc-nano4.txt"
RAW_B = REAL / "nvidia-smi" / "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt"


def undeclared(dot_text: str) -> set[str]:
    """Node ids an edge or rank group mentions that no statement declares."""
    declared = set(re.findall(r"^\s*(n\d+) \[", dot_text, re.M))
    mentioned = set(re.findall(r"\b(n\d+)\b(?= ->| \[dir| \[color| \[style| \[label)", dot_text))
    mentioned |= {x for pair in re.findall(r"\b(n\d+) -> (n\d+)\b", dot_text) for x in pair}
    for group in re.findall(r"\{ rank=same; ([^}]*)\}", dot_text):
        mentioned |= set(group.split())
    return mentioned - declared


def _fmap(flow: Path, probes: list[str] | None = None):  # type: ignore[no-untyped-def]
    f = read_flow(flow)
    topos = bind_snapshots(f, probes or [])
    return map_flow(f, topos), topos


def svg_size(svg: bytes) -> tuple[float, float]:
    root = ET.fromstring(svg)
    return float(root.get("width", "0").rstrip("pt")), float(root.get("height", "0").rstrip("pt"))


def texts(svg: bytes) -> str:
    return "\n".join(t.text or "" for t in ET.fromstring(svg).iter(SVG + "text"))


@pytest.mark.parametrize("flow", FLOWS, ids=lambda f: f.stem)
@pytest.mark.parametrize("hardware", ["used", "all"])
def test_every_mentioned_node_is_declared(flow: Path, hardware: str) -> None:
    fmap, topos = _fmap(flow)
    assert undeclared(flow_on_machine_dot(fmap, topos, hardware)) == set()
    assert undeclared(flow_pipeline_dot(fmap)) == set()


@pytest.mark.parametrize("hardware", ["used", "all"])
def test_raw_pastes_bound_to_hosts_draw_no_stray_nodes(hardware: str) -> None:
    """Issue 13: two hosts bound to nvidia-smi pastes drew stray ellipses n30…n35."""
    fmap, topos = _fmap(SAMPLES / "flows" / "two-host-pipeline.yaml", [f"node-a={RAW_A}", f"node-b={RAW_B}"])
    text = flow_on_machine_dot(fmap, topos, hardware)
    assert undeclared(text) == set()


@pytest.mark.parametrize("f", sorted(SNAP.glob("*.json")), ids=lambda f: f.stem)
def test_machine_diagrams_declare_every_node(f: Path) -> None:
    from topomap.graph import build
    from topomap.importers import load_any
    from topomap.model.snapshot import hosts_of

    topos = [build(h) for h in hosts_of(load_any(f))]
    assert undeclared(topology_dot(topos)) == set()
    assert undeclared(topology_dot([topos[0], topos[0], topos[0]])) == set()


def test_bundles_collapse_replicas_and_pairs() -> None:
    fmap, _ = _fmap(SAMPLES / "flows" / "tensor-parallel.yaml")
    groups = bundles(fmap)
    assert sum(g.count for g in groups) == len(fmap.arrows) == 52
    exchange = next(g for g in groups if g.src_step == g.dst_step == "allreduce")
    assert exchange.count == 28
    assert exchange.summary() == "28× gpu-link · nvswitch NV18 · 450 GB/s derived"  # the model from its PCI device id
    assert exchange.places() == "lot:gpu0–6 ↔ lot:gpu1–7"


def test_compress_places() -> None:
    gpus = [Placement("a", "gpu", f"gpu{n}") for n in (0, 1, 2, 5)]
    places = [*gpus, Placement("b", "memory"), Placement("a", "gpu", "gpu3")]
    assert compress_places(places) == "a:gpu0–3,5, b:memory"
    assert compress_places([Placement("ws", "host")]) == "ws"


def test_each_flow_arrow_drawn_once_with_its_label() -> None:
    fmap, topos = _fmap(SAMPLES / "flows" / "two-host-pipeline.yaml")
    text = flow_on_machine_dot(fmap, topos)
    flow_edges = [line for line in text.splitlines() if "dir=forward" in line]
    assert len(flow_edges) == 3  # tokens→stage1, stage1→stage2, stage2→logits: once each
    cross = next(e for e in flow_edges if "activations" in e)
    assert f"network · {fmap.arrows[1].via} NET" in cross and "25.0 GB/s spec · 512 MiB in 21.5 ms" in cross
    assert "NIC mlx5_0 → mlx5_7" in cross  # NICs by device name
    assert "#ef6c00" in cross  # network colour


def test_unused_hardware_folded_unless_all() -> None:
    fmap, topos = _fmap(SAMPLES / "flows" / "two-host-pipeline.yaml")
    used = flow_on_machine_dot(fmap, topos)
    assert "PCIe switch" not in used and "GPU3" not in used
    assert "not used by the flow: 7 GPU(s), 7 NIC(s)" in used
    full = flow_on_machine_dot(fmap, topos, "all")
    assert "PCIe switch" in full and "GPU3" in full
    assert "#b0b0b0" in full  # untouched hardware faded


def test_tensor_parallel_exchange_is_one_bundle_edge() -> None:
    fmap, topos = _fmap(SAMPLES / "flows" / "tensor-parallel.yaml")
    text = flow_on_machine_dot(fmap, topos)
    edges = [line for line in text.splitlines() if re.search(r"dir=(forward|both)\b", line)]
    assert len(edges) == 4
    assert sum("dir=both" in e for e in edges) == 1  # the exchange runs both ways
    assert sum("28× gpu-link · nvswitch NV18" in e for e in edges) == 1


@needs_dot
@pytest.mark.parametrize("flow", FLOWS, ids=lambda f: f.stem)
def test_flow_svg_fits_a_screen_and_shows_every_step_and_label(flow: Path) -> None:
    fmap, topos = _fmap(flow)
    for text in (flow_on_machine_dot(fmap, topos), flow_pipeline_dot(fmap)):
        svg = pipe(text, "svg")
        w, h = svg_size(svg)
        assert w <= 1100 and h <= 1100, (w, h)  # points; about a 1500 px screen at 96 dpi
        assert 0.4 <= w / h <= 2.5, (w, h)  # neither a strip nor a tower
        shown = texts(svg)
        for st in fmap.flow.steps:
            assert st in shown
        for a in fmap.arrows:
            if a.label:
                assert a.label in shown


def _chain(n: int, hosts: int = 1) -> str:
    """A flow of n steps in a chain over ``hosts`` hosts (IBM H100 snapshot each)."""
    snap = (SNAP / "ibm-gx3d-h100-8gpu.json").as_posix()
    steps = {}
    for i in range(n):
        kind: StepKind = "input" if i == 0 else "output" if i == n - 1 else "compute"
        steps[f"s{i}"] = step(kind, f"h{i * hosts // n}:" + ("memory" if kind != "compute" else f"gpu{i % 8}"))
    arrows = [arrow(f"s{i}", f"s{i + 1}", "1 GiB") for i in range(n - 1)]
    return flow_yaml(steps, arrows, name="chain", hosts={f"h{k}": snap for k in range(hosts)})


@needs_dot
def test_pipeline_view_wraps_into_a_grid() -> None:
    """Issue 13: the pipeline view was one 5637 × 107 px row."""
    flow = parse_flow(_chain(12), "chain.yaml")
    fmap = map_flow(flow, bind_snapshots(flow, []))
    w, h = svg_size(pipe(flow_pipeline_dot(fmap), "svg"))
    assert 0.5 <= w / h <= 2.5, (w, h)
    w, h = svg_size(pipe(flow_on_machine_dot(fmap, bind_snapshots(flow, [])), "svg"))  # one busy host: wraps too
    assert 0.5 <= w / h <= 2.5, (w, h)


@needs_dot
def test_hosts_stack_past_two() -> None:
    """Four hosts: two columns, the third host below the first — not one row of four."""
    flow = parse_flow(_chain(8, hosts=4), "chain.yaml")
    fmap = map_flow(flow, bind_snapshots(flow, []))
    root = ET.fromstring(pipe(flow_on_machine_dot(fmap, bind_snapshots(flow, [])), "svg"))
    boxes: dict[str, tuple[float, float]] = {}
    for g in root.iter(SVG + "g"):
        if g.get("class") != "cluster":
            continue
        label = next((t.text for t in g.iter(SVG + "text")), "") or ""
        ys = [float(y) for p in g.iter(SVG + "path") for y in re.findall(r"[-\d.]+,([-\d.]+)", p.get("d", ""))]
        xs = [float(x) for p in g.iter(SVG + "path") for x in re.findall(r"([-\d.]+),[-\d.]+", p.get("d", ""))]
        boxes[label] = (min(xs), min(ys))
    assert {"h0", "h1", "h2", "h3"} <= set(boxes)
    assert boxes["h2"][1] > boxes["h0"][1] and boxes["h3"][1] > boxes["h1"][1]  # below (SVG y grows down)


def test_render_cli_hardware_option(tmp_path: Path) -> None:
    out = tmp_path / "f.dot"
    flow = str(SAMPLES / "flows" / "two-host-pipeline.yaml")
    r = runner.invoke(app, ["render", "--flow", flow, "--hardware", "all", "-o", str(out)])
    assert r.exit_code == 0 and "PCIe switch" in out.read_text()
    r = runner.invoke(app, ["render", "--flow", flow, "--hardware", "some", "-o", str(out)])
    assert r.exit_code == 2 and "expected used or all" in r.output


def test_nics_named_by_device_name() -> None:
    from topomap.model.snapshot import Nic
    from topomap.render.hostdot import nic_name

    assert nic_name(Nic(index=0, name="mlx5_0")) == "mlx5_0"
    assert nic_name(Nic(index=1, name="0000:10:1b.0", netdevs=["ens5"])) == "ens5 (0000:10:1b.0)"
    assert nic_name(Nic(index=2, name="0000:10:1c.0")) == "0000:10:1c.0"  # nothing better known


def test_cluster_diagram_one_network_edge_per_host(tmp_path: Path) -> None:
    """Hosts stacked, each joined to the network by one labelled edge from its box (not one per NIC)."""
    out = tmp_path / "cluster.json"
    snaps = [f"{n}={SNAP / f}" for n, f in (("a", "ibm-gx3d-h100-8gpu.json"), ("b", "aws-p4d-24xlarge.json"))]
    assert runner.invoke(app, ["merge", *snaps, "-o", str(out)]).exit_code == 0
    dot_out = tmp_path / "c.dot"
    assert runner.invoke(app, ["render", str(out), "-o", str(dot_out)]).exit_code == 0
    text = dot_out.read_text()
    assert undeclared(text) == set()
    net_edges = [line for line in text.splitlines() if "ltail=cluster_" in line]
    assert len(net_edges) == 2
    assert any("8 RDMA NIC(s) · 200 Gb/s each" in e for e in net_edges)
    assert any("4 RDMA NIC(s)" in e for e in net_edges)


PASTES = sorted((REAL / "nvidia-smi").glob("*.txt"))


@pytest.mark.parametrize("lot", sorted(SNAP.glob("*.json")) + PASTES, ids=lambda f: f.stem)
def test_tensor_parallel_on_every_machine_declares_every_node(lot: Path) -> None:
    """The all-GPU flow bound to every sample and every raw paste: each view's DOT declares what it mentions."""
    flow = read_flow(SAMPLES / "flows" / "tensor-parallel.yaml")
    topos = bind_snapshots(flow, [f"lot={lot}"])
    fmap = map_flow(flow, topos)
    for hardware in ("used", "all"):
        assert undeclared(flow_on_machine_dot(fmap, topos, hardware)) == set(), hardware
    assert undeclared(flow_pipeline_dot(fmap)) == set()
    assert sum(g.count for g in bundles(fmap)) == len(fmap.arrows)


def test_flow_arrow_names_nics_by_device_name(tmp_path: Path) -> None:
    """A NIC known by bus id and netdev (NCCL XML of AWS p4d) is shown by its netdev on the arrow."""
    import msgspec

    from topomap.importers import load_any
    from topomap.model.codec import save_snapshot

    s = load_any(SNAP / "ibm-gx3d-h100-8gpu.json")
    nics = [msgspec.structs.replace(n, name=f"0000:{n.index + 16:02x}:00.0", netdevs=[f"ens{n.index}"]) for n in s.nics]
    snap = tmp_path / "s.json"
    save_snapshot(msgspec.structs.replace(s, nics=nics), snap)
    fmap, topos = _fmap(SAMPLES / "flows" / "two-host-pipeline.yaml", [f"node-a={snap}", f"node-b={snap}"])
    cross = next(line for line in flow_on_machine_dot(fmap, topos).splitlines() if "activations" in line)
    assert re.search(r"NIC ens\d \(0000:[0-9a-f]{2}:00\.0\) → ens\d \(0000:[0-9a-f]{2}:00\.0\)", cross), cross
