"""`topomap report`: one self-contained HTML page — diagram inline, every step and arrow, machines,
verdict when the flow has requirements, plan or the reason it is absent, nothing fetched from anywhere."""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.api import bind_snapshots
from topomap.cli import app
from topomap.flow import map_flow, read_flow
from topomap.render.report import ReportInputs, duration, report_html, shown

runner = CliRunner()
FLOWS = sorted((SAMPLES / "flows").glob("*.yaml"))
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")


class Page(HTMLParser):
    """Collects tags, external references and the visible text of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.external: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for k, v in attrs:
            if k in ("src", "href", "xlink:href") and v and not v.startswith("#"):
                self.external.append(v)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(text: str) -> Page:
    p = Page()
    p.feed(text)
    p.close()
    return p


@needs_dot
@pytest.mark.parametrize("flow", FLOWS, ids=lambda f: f.stem)
def test_report_is_self_contained_and_complete(flow: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["report", str(flow), "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text(encoding="utf-8")
    page = parse(text)
    assert "svg" in page.tags and "script" not in page.tags
    assert page.external == []  # opens offline
    assert not re.search(r"(src|href)=\"https?:", text) and "@import" not in text
    visible = "".join(page.text)
    fmap = map_flow(read_flow(flow), bind_snapshots(read_flow(flow), []))
    for st in fmap.flow.steps:
        assert st in visible
    for a in fmap.arrows:
        if a.label:
            assert a.label in visible
    for section in ("Flow diagram", "Arrows", "Machines", "Requirements check", "Plan", "Provenance"):
        assert section in visible
    assert "Shortest:" in visible or "plan: not available — " in visible
    for m in ("gpu-link", "host-memory", "network", "local"):
        assert f"{m}: {m}" not in visible


@needs_dot
def test_report_includes_check_verdict_when_the_flow_has_requirements(tmp_path: Path) -> None:
    flow = (SAMPLES / "flows" / "tensor-parallel.yaml").read_text()
    reqs = (SAMPLES / "requirements" / "tensor-parallel.yaml").read_text()
    rules = reqs[reqs.index("requirements:") :]
    f = tmp_path / "tp.yaml"
    f.write_text(flow.replace("../snapshots/", str(SAMPLES / "snapshots") + "/") + rules)
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["report", str(f), "-o", str(out)])
    assert r.exit_code == 0, r.output
    visible = "".join(parse(out.read_text()).text)
    assert "PASS: " in visible and "gpu_links" in visible and "gdr_nic" in visible
    out2 = tmp_path / "r2.html"
    lot = f"lot={SAMPLES / 'snapshots' / 'rtx4090-8gpu-all-sys.json'}"
    r = runner.invoke(app, ["report", str(f), "--probe", lot, "-o", str(out2)])
    assert r.exit_code == 0, r.output
    assert "FAIL: " in "".join(parse(out2.read_text()).text)


def test_report_refuses_bad_output_and_leaves_nothing(tmp_path: Path) -> None:
    flow = str(SAMPLES / "flows" / "two-host-pipeline.yaml")
    r = runner.invoke(app, ["report", flow, "-o", str(tmp_path / "nope" / "r.html")])
    assert r.exit_code == 2 and "does not exist" in r.output
    r = runner.invoke(app, ["report", flow, "-o", str(tmp_path / "r.pdf")])
    assert r.exit_code == 2 and "HTML" in r.output
    r = runner.invoke(app, ["report", flow])
    assert r.exit_code == 2 and "-o OUT.html" in r.output
    assert list(tmp_path.iterdir()) == []


def test_report_without_graphviz_says_so() -> None:
    flow = read_flow(SAMPLES / "flows" / "two-host-pipeline.yaml")
    topos = bind_snapshots(flow, [])
    inp = ReportInputs(fmap=map_flow(flow, topos), topos=topos, svg=None, svg_missing="Graphviz `dot` is not installed")
    text = report_html(inp)
    assert "diagram not drawn: Graphviz `dot` is not installed" in text
    assert "<svg" not in text and "activations" in text
    assert "plan: not available — " in text


def test_every_value_is_text_on_the_page() -> None:
    """Autoescaping is on: markup characters become entities, control characters are written visibly,
    None is —; only the template writes markup."""
    flow = read_flow(SAMPLES / "flows" / "two-host-pipeline.yaml")
    topos = bind_snapshots(flow, [])
    evil = '<b a="1">&\x1b[31m\x00\ud800'
    inp = ReportInputs(fmap=map_flow(flow, topos), topos=topos, svg=None, sources=[evil])
    text = report_html(inp)
    assert "<li>&lt;b a=&#34;1&#34;&gt;&amp;\\x1b[31m\\x00\\ud800</li>" in text
    assert "<b a=" not in text and "\x1b" not in text
    text.encode()  # a lone surrogate would not encode as UTF-8
    assert shown(None) == "—" and shown("a\tb\nc\x07") == "a\tb\nc\\x07"  # HTML whitespace kept


def test_duration() -> None:
    assert duration(0.0215) == "21.5 ms" and duration(9600) == "160 min" and duration(19200) == "5.3 h"
    assert duration(None) == "—"


@needs_dot
def test_report_is_byte_stable(tmp_path: Path) -> None:
    flow = str(SAMPLES / "flows" / "tensor-parallel.yaml")
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    assert runner.invoke(app, ["report", flow, "-o", str(a)]).exit_code == 0
    assert runner.invoke(app, ["report", flow, "-o", str(b)]).exit_code == 0
    assert a.read_bytes() == b.read_bytes()


@needs_dot
def test_report_includes_the_plan_when_the_work_can_be_planned(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["report", str(SAMPLES / "flows" / "eight-documents.yaml"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    visible = "".join(parse(out.read_text()).text)
    assert "Shortest:" in visible and "calculated" in visible and "one card" in visible
    assert "plan: not available" not in visible
