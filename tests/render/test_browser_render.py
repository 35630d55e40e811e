"""The pictures and the report checked the way people see them: in a real headless Chromium.

Every sample flow's diagrams (machine and pipeline views) and a hostile-named flow are put on one
page; a script measures every text element as the browser laid it out. The test asserts the page
raised no error, every step name and arrow label is visible text inside its picture, and each
picture's size is within bounds. The reports are opened the same way (a checking script is added
to a copy: the report itself has none). Skipped only when no Chromium is installed (CI installs it).

Regenerate the README pictures from the renderer: ``TOPOMAP_DOCS=1 python -m pytest
tests/render/test_browser_render.py -k docs`` (writes docs/*.png and docs/*.svg).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from topomap.api import bind_snapshots
from topomap.flow import read_flow
from topomap.flow.mapping import map_flow
from topomap.render.dot import pipe, topology_dot
from topomap.render.flowdot import flow_on_machine_dot, flow_pipeline_dot

BROWSER = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)
needs_browser = pytest.mark.skipif(
    BROWSER is None or shutil.which("dot") is None, reason="Chromium or Graphviz `dot` not installed"
)
FLOWS = sorted((SAMPLES / "flows").glob("*.yaml"))
DOCS = Path(__file__).resolve().parents[2] / "docs"
MAX_PX = (1500, 1500)  # a picture must fit a laptop screen at 100 %

CHECK = """
<script>
const errors = [];
window.addEventListener('error', e => errors.push(String(e.message)));
function visibleTexts(root, box) {
  const out = [];
  for (const t of root.querySelectorAll('text')) {
    const b = t.getBoundingClientRect();
    const style = getComputedStyle(t);
    const inside = b.left >= box.left - 1 && b.right <= box.right + 1
      && b.top >= box.top - 1 && b.bottom <= box.bottom + 1;
    if (b.width > 0 && b.height > 0 && inside && style.visibility !== 'hidden' && style.display !== 'none'
        && parseFloat(style.opacity || '1') > 0) out.push(t.textContent);
  }
  return out;
}
function check(doc) {
  const pictures = [];
  for (const fig of doc.querySelectorAll('[data-picture]')) {
    const svg = fig.querySelector('svg');
    const box = svg.getBoundingClientRect();
    pictures.push({name: fig.dataset.picture, width: box.width, height: box.height, texts: visibleTexts(svg, box)});
  }
  const svgs = [...doc.querySelectorAll('svg')].map(s => {
    const box = s.getBoundingClientRect();
    return {width: box.width, height: box.height, texts: visibleTexts(s, box)};
  });
  const parserErrors = doc.querySelectorAll('parsererror').length;
  return {pictures, svgs, parserErrors, bodyText: doc.body.innerText};
}
window.addEventListener('load', () => {
  const pre = document.createElement('pre');
  pre.id = 'topomap-result';
  pre.textContent = JSON.stringify(Object.assign(check(document), {errors}));
  document.body.appendChild(pre);
});
</script>
"""


def chromium(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    assert BROWSER is not None
    cmd = [
        BROWSER,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp / 'chromium-profile'}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def page_result(page: Path, tmp: Path) -> dict[str, object]:
    r = chromium("--dump-dom", page.as_uri(), tmp=tmp)
    m = re.search(r'<pre id="topomap-result">(.*?)</pre>', r.stdout, re.S)
    assert m, f"no result from the page; stderr: {r.stderr[-2000:]}"
    result: dict[str, object] = json.loads(html.unescape(m.group(1)))
    return result


def _svg(text: str) -> str:
    return text[text.find("<svg") :]


def _lines(text: str) -> list[str]:
    return [x for x in text.split("\n") if x]


@needs_browser
def test_every_flow_diagram_in_the_browser(tmp_path: Path) -> None:
    expected: dict[str, tuple[list[str], list[str]]] = {}
    figures = []
    for flow in FLOWS:
        f = read_flow(flow)
        topos = bind_snapshots(f, [])
        fmap = map_flow(f, topos)
        labels = sorted({line for a in fmap.arrows if a.label for line in _lines(a.label)})
        for view, dot_text in (
            ("machine", flow_on_machine_dot(fmap, topos)),
            ("pipeline", flow_pipeline_dot(fmap)),
        ):
            name = f"{flow.stem}/{view}"
            expected[name] = (list(f.steps), labels)
            svg = pipe(dot_text, "svg").decode()
            figures.append(f'<figure data-picture="{html.escape(name)}">{_svg(svg)}</figure>')
    page = tmp_path / "diagrams.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">'
        + "".join(figures)
        + CHECK
        + "</body></html>",
        encoding="utf-8",
    )
    result = page_result(page, tmp_path)
    assert result["errors"] == [] and result["parserErrors"] == 0
    pictures = {p["name"]: p for p in result["pictures"]}  # type: ignore[attr-defined]
    assert set(pictures) == set(expected)
    for name, (steps, labels) in expected.items():
        p = pictures[name]
        assert 100 <= p["width"] <= MAX_PX[0] and 100 <= p["height"] <= MAX_PX[1], (name, p["width"], p["height"])
        shown = set(p["texts"])
        for st in steps:
            assert st in shown, (name, st)
        for label in labels:
            assert label in shown, (name, label)


def _report_page(report: Path, out: Path) -> None:
    text = report.read_text(encoding="utf-8")
    assert "<script" not in text
    out.write_text(text.replace("</body>", CHECK + "</body>"), encoding="utf-8")


@needs_browser
@pytest.mark.parametrize("flow", ["tensor-parallel"])
def test_report_in_the_browser(flow: str, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from topomap.cli import app

    report = tmp_path / "report.html"
    r = CliRunner().invoke(app, ["report", str(SAMPLES / "flows" / f"{flow}.yaml"), "-o", str(report)])
    assert r.exit_code == 0, r.output
    page = tmp_path / "checked.html"
    _report_page(report, page)
    result = page_result(page, tmp_path)
    assert result["errors"] == [] and result["parserErrors"] == 0
    svgs = result["svgs"]
    assert isinstance(svgs, list) and len(svgs) == 1
    assert 100 <= svgs[0]["width"] <= 1200  # fits the page (max-width 1180 px)
    fmap = map_flow(
        read_flow(SAMPLES / "flows" / f"{flow}.yaml"), bind_snapshots(read_flow(SAMPLES / "flows" / f"{flow}.yaml"), [])
    )
    shown = set(svgs[0]["texts"])
    body = str(result["bodyText"])
    for st in fmap.flow.steps:
        assert st in shown and st in body
    for a in fmap.arrows:
        if a.label:
            assert a.label in body
    # a screenshot of the page is a real picture, not a blank one
    png = tmp_path / "shot.png"
    chromium(f"--screenshot={png}", "--window-size=1280,1600", report.as_uri(), tmp=tmp_path)
    assert png.exists() and png.stat().st_size > 20_000


def _screenshot(svg_text: str, out: Path, tmp: Path) -> tuple[int, int]:
    """The SVG as the browser draws it, at its own size (CSS px), into ``out``."""
    m = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg_text)
    assert m
    w, h = round(float(m.group(1)) * 4 / 3) + 2, round(float(m.group(2)) * 4 / 3) + 2
    page = tmp / (out.stem + ".html")
    page.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"></head>'
        f'<body style="margin:0;background:#fff">{_svg(svg_text)}</body></html>',
        encoding="utf-8",
    )
    chromium(f"--screenshot={out}", f"--window-size={w},{h}", "--hide-scrollbars", page.as_uri(), tmp=tmp)
    return w, h


# Opt-in (not collected by default, so a normal run skips nothing): TOPOMAP_DOCS=1 redraws docs/*.png.
if os.environ.get("TOPOMAP_DOCS"):

    @needs_browser
    def test_regenerate_docs_pictures(tmp_path: Path) -> None:
        """The README's pictures, drawn by the renderer and photographed by the browser."""
        from topomap.graph import build
        from topomap.importers import load_any

        jobs = []
        for flow, view, name in (
            ("two-host-pipeline", "machine", "two-host-pipeline"),
            ("doc-conversion", "pipeline", "doc-conversion-pipeline"),
            ("tensor-parallel", "machine", "tensor-parallel"),
        ):
            f = read_flow(SAMPLES / "flows" / f"{flow}.yaml")
            topos = bind_snapshots(f, [])
            fmap = map_flow(f, topos)
            jobs.append((name, flow_pipeline_dot(fmap) if view == "pipeline" else flow_on_machine_dot(fmap, topos)))
        jobs.append(
            ("ibm-gx3d-h100-8gpu", topology_dot([build(load_any(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"))]))
        )
        for name, dot_text in jobs:
            svg = pipe(dot_text, "svg").decode()
            if name == "ibm-gx3d-h100-8gpu":
                (DOCS / f"{name}.svg").write_text(svg, encoding="utf-8")
            w, _ = _screenshot(svg, DOCS / f"{name}.png", tmp_path)
            assert w <= 2000
