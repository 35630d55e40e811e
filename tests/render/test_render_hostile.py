"""Names are data (issue 14): quotes, angle brackets, newlines, control and terminal escape characters
in host, step, NIC and GPU names never break out of DOT, SVG, GraphML, HTML or JSON."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.cli import app
from topomap.importers import load_any
from topomap.model.codec import save_snapshot

EVIL = 'x"]; evil [label="pwned"]; <script>alert(1)</script> & \\" \\l\n}\x1b[31mRED\x07\x00'
# RDMA device names are at most 64 characters (IB_DEVICE_NAME_MAX), and import refuses longer ones
EVIL_NIC = 'x"]; e [label="p"]; <b>i</b> & \\" \\l\n}\x1b[31mR\x07\x00'
ESC_BYTES = ("\x1b", "\x07", "\x00")
runner = CliRunner()
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")


@pytest.fixture
def evil_files(tmp_path: Path) -> tuple[Path, Path]:
    """A snapshot whose host, NIC and GPU names are hostile, and a flow whose name, steps and labels are."""
    s = load_any(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json")
    s = msgspec.structs.replace(
        s,
        host=msgspec.structs.replace(s.host, hostname="host" + EVIL),
        nics=[msgspec.structs.replace(n, name=f"nic{n.index}" + EVIL_NIC) for n in s.nics],
        gpus=[msgspec.structs.replace(g, name="gpu" + EVIL) for g in s.gpus],
    )
    snap = tmp_path / "evil.json"
    save_snapshot(s, snap)
    doc = {
        "flow": "f" + EVIL,
        "hosts": {"a": str(snap), "b": str(snap)},
        "steps": {
            "s" + EVIL: {"kind": "input", "on": "a:memory", "label": "l" + EVIL},
            "t" + EVIL: {"kind": "compute", "on": "a:gpus"},
            "u": {"kind": "compute", "on": "b:gpu1"},
        },
        "arrows": [
            {"from": "s" + EVIL, "to": "t" + EVIL, "label": "a" + EVIL, "volume": "1 GiB"},
            {"from": "t" + EVIL, "to": "u", "label": "n" + EVIL, "volume": "1 GiB"},
        ],
    }
    flow = tmp_path / "evil.yaml"
    flow.write_text(json.dumps(doc))  # JSON is YAML; \u001b escapes carry the control characters
    return snap, flow


def _no_raw_controls(data: str) -> None:
    for c in ESC_BYTES:
        assert c not in data, repr(c)


def _dot_nodes(dot_text: str) -> int:
    return len(re.findall(r"^\s*n\d+ \[", dot_text, re.M))


@needs_dot
@pytest.mark.parametrize("hardware", ["used", "all"])
def test_dot_and_svg_of_a_hostile_flow(evil_files: tuple[Path, Path], tmp_path: Path, hardware: str) -> None:
    _, flow = evil_files
    d, s = tmp_path / "f.dot", tmp_path / "f.svg"
    for out in (d, s):
        r = runner.invoke(app, ["render", "--flow", str(flow), "--hardware", hardware, "-o", str(out)])
        assert r.exit_code == 0, r.output
    dot_text = d.read_text()
    _no_raw_controls(dot_text)
    svg = s.read_text()
    _no_raw_controls(svg)
    root = ET.fromstring(svg)  # well-formed
    svg_ns = "{http://www.w3.org/2000/svg}"
    assert not list(root.iter(svg_ns + "script")) and not list(root.iter("script"))
    titles = [t.text or "" for t in root.iter(svg_ns + "title")]
    assert all(re.fullmatch(r"topomap|flow|n\d+|cluster_n\d+|n\d+(&#45;&gt;|->)n\d+", t) for t in titles), titles
    nodes = [g for g in root.iter(svg_ns + "g") if g.get("class") == "node"]
    assert len(nodes) == _dot_nodes(dot_text)  # no node injected through a name
    shown = "\n".join(t.text or "" for t in root.iter(svg_ns + "text"))
    assert "<script>alert(1)</script>" in shown  # the name is shown as text


@needs_dot
def test_pipeline_view_of_a_hostile_flow(evil_files: tuple[Path, Path], tmp_path: Path) -> None:
    _, flow = evil_files
    out = tmp_path / "p.svg"
    assert runner.invoke(app, ["render", "--flow", str(flow), "--view", "pipeline", "-o", str(out)]).exit_code == 0
    svg = out.read_text()
    _no_raw_controls(svg)
    root = ET.fromstring(svg)
    nodes = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "node"]
    assert len(nodes) == 3


@needs_dot
def test_machine_diagram_of_a_hostile_snapshot(evil_files: tuple[Path, Path], tmp_path: Path) -> None:
    snap, _ = evil_files
    out = tmp_path / "m.svg"
    assert runner.invoke(app, ["render", str(snap), "-o", str(out)]).exit_code == 0
    svg = out.read_text()
    _no_raw_controls(svg)
    ET.fromstring(svg)


def test_graphml_of_a_hostile_snapshot_is_valid_xml(evil_files: tuple[Path, Path], tmp_path: Path) -> None:
    """Issue 14: control characters in names made the GraphML output invalid XML."""
    snap, _ = evil_files
    out = tmp_path / "g.graphml"
    assert runner.invoke(app, ["render", str(snap), "-o", str(out)]).exit_code == 0
    data = out.read_text(encoding="utf-8")
    _no_raw_controls(data)
    root = ET.fromstring(data)
    values = [d.text or "" for d in root.iter("{http://graphml.graphdrawing.org/xmlns}data")]
    assert any("\\x1b[31mRED" in v and "<script>" in v for v in values)  # kept, written visibly


def test_node_link_json_of_a_hostile_snapshot(evil_files: tuple[Path, Path], tmp_path: Path) -> None:
    snap, _ = evil_files
    out = tmp_path / "g.json"
    assert runner.invoke(app, ["render", str(snap), "-o", str(out)]).exit_code == 0
    raw = out.read_text()
    _no_raw_controls(raw)  # JSON writes \u001b
    nodes = json.loads(raw)["nodes"]
    assert any("\x1b[31mRED" in str(v) for n in nodes for v in n.values())  # the name itself, intact


def test_map_json_of_a_hostile_flow_round_trips(evil_files: tuple[Path, Path]) -> None:
    _, flow = evil_files
    r = runner.invoke(app, ["map", str(flow), "--json"])
    assert r.exit_code == 0, r.output
    _no_raw_controls(r.stdout)
    data = json.loads(r.stdout)
    assert {a["label"] for a in data["arrows"]} == {"a" + EVIL, "n" + EVIL}
    assert data["arrows"][0]["from_step"] == "s" + EVIL


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@needs_dot
def test_html_report_of_a_hostile_flow(evil_files: tuple[Path, Path], tmp_path: Path) -> None:
    _, flow = evil_files
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["report", str(flow), "-o", str(out)])
    assert r.exit_code == 0, r.output
    page = out.read_text(encoding="utf-8")
    _no_raw_controls(page)
    p = _Tags()
    p.feed(page)
    assert "script" not in p.tags and "evil" not in p.tags
    visible = "".join(p.text)
    assert "<script>alert(1)</script>" in visible  # shown, as text
    assert "\\x1b[31mRED" in visible  # the escape written visibly, not sent to a terminal
    assert visible.count("pwned") >= 3


@pytest.mark.parametrize("detail", [[], ["--all"]])
def test_map_text_of_a_hostile_flow_sends_no_escape_to_the_terminal(
    evil_files: tuple[Path, Path], detail: list[str]
) -> None:
    _, flow = evil_files
    doc = json.loads(flow.read_text())
    doc["steps"]["u"]["label"] = "[bold red]markup[/]"
    doc["arrows"][1]["label"] = "[link=http://x]click[/link]"
    flow.write_text(json.dumps(doc))
    r = runner.invoke(app, ["map", str(flow), *detail])
    assert r.exit_code == 0, r.output
    _no_raw_controls(r.stdout)
    assert "\\x1b[31mRED" in r.stdout  # written visibly
    assert "[link=http://x]click[/link]" in r.stdout  # names are never rich markup


def test_diff_and_check_text_of_hostile_names_send_no_escape_to_the_terminal(
    evil_files: tuple[Path, Path], tmp_path: Path
) -> None:
    """diff (with --flow) and check print lot, host and step names: escaped like every other view."""
    snap, flow = evil_files
    other = tmp_path / "lot\x1b[31m.json"  # a file name is a lot name
    other.write_bytes(snap.read_bytes().replace(b'"numa_node": 1', b'"numa_node": 0'))
    r = runner.invoke(app, ["diff", str(snap), str(other), "--flow", str(flow)])
    assert r.exit_code in (0, 1, 3), r.output
    _no_raw_controls(r.output)
    from topomap.render.verdict_view import _text

    assert _text("\nNot compared: a\x1bb\nc").plain == "\nNot compared: a\\x1bb\\x0ac"  # layout newline kept
    reqs = tmp_path / "reqs.yaml"
    reqs.write_text(json.dumps({"requirements": [{"gpus": {"min_count": 2, "host": "a"}}]}))
    r = runner.invoke(app, ["check", str(reqs), "--flow", str(flow)])
    assert r.exit_code in (0, 1, 3), r.output
    _no_raw_controls(r.output)
