"""Diagrams through the real Graphviz `dot`: parseable, complete, stable, injection-proof."""

from __future__ import annotations

import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from tests.fakes.flows import step, write_flow
from topomap.cli import app
from topomap.graph import build
from topomap.importers import load_any
from topomap.render.dot import pipe, topology_dot
from topomap.render.dotbuilder import DotBuilder, dot_string
from topomap.render.text import nic_words

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")
runner = CliRunner()
SAMPLE_FILES = sorted((SAMPLES / "snapshots").glob("*.json"))


def svg_texts(svg: bytes) -> list[str]:
    root = ET.fromstring(svg)
    return [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]


@needs_dot
@pytest.mark.parametrize("f", SAMPLE_FILES, ids=lambda f: f.stem)
def test_svg_parses_and_names_every_gpu_and_nic(f: Path) -> None:
    s = load_any(f)
    svg = pipe(topology_dot([build(s)]), "svg")
    texts = svg_texts(svg)
    for g in s.gpus:
        assert f"GPU{g.index}" in texts
    for n in s.nics:
        assert any(t.startswith(nic_words(n.name)) for t in texts), n.name  # "NIC mlx5_0", or "NIC0" itself


@needs_dot
def test_svg_is_byte_stable(tmp_path: Path) -> None:
    f = str(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json")
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    assert runner.invoke(app, ["render", f, "-o", str(a)]).exit_code == 0
    assert runner.invoke(app, ["render", f, "-o", str(b)]).exit_code == 0
    assert a.read_bytes() == b.read_bytes()


def test_nvlink_labels_and_media_colours() -> None:
    text = topology_dot([build(load_any(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"))])
    # every GPU has the same bundle to the NVSwitch fabric: said once on the hub, no 8 spokes, no 28 pair edges
    assert "every GPU (8): NV18 · 450 GB/s derived to it"  # the H100 from its PCI device id in text
    assert 'label="NV18 · 450 GB/s derived"' not in text
    assert "#2e7d32" in text and "#1565c0" in text and "#ef6c00" in text  # legend colours
    assert "imported from an NCCL topology XML" in text


@needs_dot
def test_hostile_names_cannot_inject(tmp_path: Path) -> None:
    s = load_any(SAMPLES / "snapshots" / "aws-p4d-24xlarge.json")
    evil = 'x"]; evil [label="pwned"]; <script>alert(1)</script> \\" \\l\n}'
    nics = [msgspec.structs.replace(n, name=evil + str(n.index)) for n in s.nics]
    host = msgspec.structs.replace(s.host, hostname=evil)
    s = msgspec.structs.replace(s, nics=nics, host=host)
    dot_text = topology_dot([build(s)])
    svg = pipe(dot_text, "svg")
    root = ET.fromstring(svg)  # still well-formed
    titles = {t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title")}
    import re

    assert all(re.fullmatch(r"topomap|n\d+|cluster_n\d+|n\d+&#45;&gt;n\d+|n\d+->n\d+", t) for t in titles), titles
    assert not list(root.iter("{http://www.w3.org/2000/svg}script")) and not list(root.iter("script"))
    assert any("<script>" in t for t in svg_texts(svg))  # shown as text, not markup


def test_labels_are_quoted_by_graphviz_and_shown_as_written() -> None:
    """The graphviz package quotes; dot_string keeps backslashes literal, makes control characters
    visible, keeps newlines as line breaks and never lets ``<…>`` become an HTML-like label."""
    assert dot_string("a\\l\x1b") == "a\\\\l\\\\x1b"
    b = DotBuilder()
    b.start("t", {}, {}, {})
    b.node("k", 'a"b\\c\nd\x00')
    b.node("j", "<b>x</b>")
    assert 'n0 [label="a\\"b\\\\c\\nd\\\\x00"]' in b.source()
    assert 'n1 [label="<b>x</b>"]' in b.source()


@needs_dot
def test_a_label_reads_in_the_picture_exactly_as_written() -> None:
    b = DotBuilder()
    b.start("t", {}, {}, {})
    b.node("k", 'a"b\\c\nd\x00<i>')
    assert svg_texts(pipe(b.source(), "svg")) == ['a"b\\c', "d\\x00<i>"]


def test_missing_dot_writes_dot_file_and_says_how_to_install(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path / "empty")}
    import subprocess
    import sys

    out = tmp_path / "m.svg"
    r = subprocess.run(
        [sys.executable, "-m", "topomap", "render", str(SAMPLE_FILES[0]), "-o", str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 2 and "install Graphviz" in r.stderr and r.stderr.count("\n") == 1
    assert not out.exists() and (tmp_path / "m.dot").read_text().startswith("digraph topomap {")


def test_graphml_and_node_link_json(tmp_path: Path) -> None:
    import json

    import networkx as nx

    f = str(SAMPLES / "snapshots" / "dgx1-v100.json")
    gm, js = tmp_path / "t.graphml", tmp_path / "t.json"
    assert runner.invoke(app, ["render", f, "-o", str(gm)]).exit_code == 0
    assert runner.invoke(app, ["render", f, "-o", str(js)]).exit_code == 0
    g = nx.read_graphml(gm)
    assert g.edges["gpu0", "gpu3"]["kind"] == "nvlink" and g.edges["gpu0", "gpu3"]["count"] == 2
    d = json.loads(js.read_text())
    assert {n["id"] for n in d["nodes"]} >= {f"gpu{i}" for i in range(8)}


def test_unknown_output_format_is_exit_2(tmp_path: Path) -> None:
    r = runner.invoke(app, ["render", str(SAMPLE_FILES[0]), "-o", str(tmp_path / "x.bmp")])
    assert r.exit_code == 2 and "unknown format" in r.stderr


def test_nvlink_pairs_without_a_hub_keep_their_labelled_edges() -> None:
    """DGX-1: a hybrid cube mesh of direct GPU-GPU bundles; each edge keeps its own label."""
    text = topology_dot([build(load_any(SAMPLES / "snapshots" / "dgx1-v100.json"))])
    assert "every GPU" not in text
    assert len(re.findall(r'label="NV\d · (≥ )?[\d.]+ GB/s \w+"', text)) >= 8


@needs_dot
def test_eight_gpu_machine_fits_a_screen() -> None:
    """Issue 13: the 8-GPU diagram was an unreadable strip; NUMA nodes now stack, the fabric hub sits below."""
    svg = pipe(topology_dot([build(load_any(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"))]), "svg")
    root = ET.fromstring(svg)
    w, h = float(root.get("width", "0").rstrip("pt")), float(root.get("height", "0").rstrip("pt"))
    assert w <= 800 and h <= 1100 and 0.5 <= w / h <= 1.5, (w, h)


def test_gpu_memory_is_the_same_fact_in_show_render_report_and_check(tmp_path: Path) -> None:
    """Issue 18: an imported H100 (no memory in the source) was "80 GB derived" in `check` and blank in
    `show`, `render` and `report`; every view now asks topomap.model.facts.gpu_memory."""
    from rich.console import Console

    from topomap.model.facts import gpu_memory
    from topomap.render.terminal import show

    f = SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"
    s = load_any(f)
    assert all(g.memory_total_bytes is None for g in s.gpus)
    mem = gpu_memory(s.gpus[0])
    assert mem.derived and mem.total_bytes == 80 * 2**30
    console = Console(width=200, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(show(s, build(s)))
    assert console.export_text().count("80 GiB (derived)") == len(s.gpus)
    assert topology_dot([build(s)]).count("\\n80 GiB (derived)") == len(s.gpus)
    out = tmp_path / "r.html"
    flow = write_flow(tmp_path / "f.yaml", {"a": step("compute", "lot:gpu0")}, hosts={"lot": f})
    assert runner.invoke(app, ["report", str(flow), "-o", str(out)]).exit_code == 0
    assert f"80 GiB each ({mem.source})" in out.read_text()
    reqs = tmp_path / "q.yaml"
    reqs.write_text("requirements:\n  - gpus: {min_count: 1, min_memory_gb: 80}\n")
    r = runner.invoke(app, ["check", str(reqs), "--probe", f"lot={f}"])
    assert "derived from the model" in r.stdout


def test_one_rule_for_control_characters_in_every_view() -> None:
    """render/text.py decides how a control character is shown: terminal, diagram labels (a newline
    stays a line break), GraphML (XML keeps tab, newline, return) and the report all write ESC as \\x1b."""
    from topomap.render.export import xml_safe
    from topomap.render.legend import html
    from topomap.render.report import shown
    from topomap.render.text import label_text, visible

    name = "a\x1b[31m\nb\t\x9b\ud800"
    assert visible(name) == "a\\x1b[31m\\x0ab\\x09\\x9b\\ud800"
    assert label_text(name) == "a\\x1b[31m\nb\\x09\\x9b\\ud800"
    assert dot_string(name) == "a\\\\x1b[31m\\nb\\\\x09\\\\x9b\\\\ud800"
    assert html(name) == "a\\x1b[31m<br/>b\\x09\\x9b\\ud800"
    assert xml_safe(name) == "a\\x1b[31m\nb\t\\x9b\\ud800"
    assert shown(name) == "a\\x1b[31m\nb\t\\x9b\\ud800"


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", str(SAMPLES / "flows" / "eight-documents.yaml"), "--cards", "2", "-o", "OUT.png"],
        ["render", str(SAMPLES / "records" / "two-cards.json"), "-o", "OUT.png"],
    ],
)
def test_charts_without_matplotlib_say_which_extra(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """matplotlib is the `plot` extra (issue 18: 173 MiB of a 247 MiB install the probe never needs):
    without it a chart is one line naming the extra, exit 2, nothing written."""
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    out = tmp_path / "c.png"
    r = runner.invoke(app, [str(out) if a == "OUT.png" else a for a in argv])
    assert r.exit_code == 2, r.output
    assert "needs matplotlib" in r.stderr and "pip install 'topomap[plot]'" in r.stderr
    assert "pip install -e '.[plot]' in the topomap checkout" in r.stderr  # as the README installs it
    assert "\n" not in r.stderr.rstrip("\n") and not out.exists()
