"""Reading a plan (issue 23): ties printed once, which units run on which card, card-minutes and
the fewest cards within a margin of the fastest, numbers never cut, and a Gantt image drawn
without pyplot. Flows: the project's samples (eight equal documents on the 8x RTX 4090 lot) and
AWS p4d.24xlarge's NCCL topology file (aws/aws-ofi-nccl)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES
from tests.fakes.flows import WorkSpec, arrow, step, write_flow
from topomap.cli import app

EIGHT = str(SAMPLES / "flows" / "eight-documents.yaml")
ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, columns: int = 100) -> str:
    res = CliRunner().invoke(app, ["plan", *args], env={"COLUMNS": str(columns), "TERM": "dumb", "NO_COLOR": "1"})
    assert res.exit_code == 0, res.output
    return res.output


def test_equal_arrangements_are_one_row_and_one_chart() -> None:
    out = _run(EIGHT, "--cards", "1,2")
    rows = [ln for ln in out.splitlines() if ln.startswith("  2 ")]
    assert rows == [rows[0]] and rows[0].startswith("  2 even-static (+2) ★")
    assert "tie: even-static, longest-first, shared-queue give equal figures on 2 card(s)" in out
    assert out.count("2 card(s), even-static (tie: longest-first, shared-queue): total 58 min") == 1
    assert "2 card(s), longest-first" not in out and "2 card(s), shared-queue" not in out
    doc = json.loads(_run(EIGHT, "--cards", "1,2", "--json"))
    assert doc["ties"] == [{"cards": 2, "arrangements": ["even-static", "longest-first", "shared-queue"]}]
    assert len(doc["arrangements"]) == 4  # the JSON keeps every arrangement


def test_the_gantt_says_which_units_run_on_which_card() -> None:
    out = _run(EIGHT, "--cards", "2")
    # the even split gives each card four consecutive documents; the queue alternates them
    even = "  units per card (even-static):\n    gpu0: u1, u2, u3, u4 (4 units)\n    gpu1: u5, u6, u7, u8 (4 units)"
    assert even in out
    assert "(longest-first, shared-queue):\n    gpu0: u1, u3, u5, u7 (4 units)\n    gpu1: u2, u4, u6, u8" in out


def test_card_minutes_and_fewest_cards_within_the_margin() -> None:
    # one card: 8 × 12 min + 10 min assembly = 106 min on 1 card; two cards: 58 min × 2 = 116 card-min
    out = _run(EIGHT, "--cards", "1,2")
    assert "fastest: 2 card(s), even-static: 58 min, 116 card-min" in out
    assert "fewest card-minutes: 1 card(s), one card: 106 min, 106 card-min" in out
    assert "fewest cards within 10 % of the fastest (--margin): 2 card(s)" in out
    # 106 min is within 100 % of 58 min: one card is enough at that margin
    assert "fewest cards within 100 % of the fastest (--margin): 1 card(s), one card" in _run(
        EIGHT, "--cards", "1,2", "--margin", "100"
    )
    doc = json.loads(_run(EIGHT, "--cards", "1,2", "--json", "--margin", "100"))
    assert doc["cheapest"]["cards"] == 1 and doc["cheapest"]["card_minutes"] == 106.0
    assert doc["fewest_cards_within_margin"]["margin"] == 1.0 and doc["fewest_cards_within_margin"]["cards"] == 1
    assert [a["card_minutes"] for a in doc["arrangements"]][:2] == [106.0, 116.0]


def test_margin_out_of_range_is_refused() -> None:
    res = CliRunner().invoke(app, ["plan", EIGHT, "--margin", "-5"])
    assert res.exit_code == 2 and "--margin -5: a percentage from 0 to 1000" in res.output


def test_table_numbers_are_never_cut_at_80_columns(tmp_path: Path) -> None:
    flow = write_flow(
        tmp_path / "p4d.yaml",
        {"data": step("input", "lot:memory"), "run": step("compute", "lot:gpu0")},
        [arrow("data", "run", "640 GiB")],
        name="p4d",
        hosts={"lot": REAL / "nccl-xml" / "aws-p4d-24xlarge.xml"},
        work=WorkSpec(count=8, duration="12 min"),
    )
    out = _run(str(flow), "--cards", "1,2,4", columns=80)
    table = out[: out.index("card-min: cards")]
    words = table.split()
    # every figure whole: one card loads 80 GiB per unit at 15.8 GB/s (5.45 s), 8 units: 43.62 s
    for whole in ("43.62", "≥43.62", "≥21.81", "96.7", "unknown", "1.00×"):
        assert whole in words, whole
    assert "…" not in table


def test_gantt_png_is_drawn_without_matplotlib_and_ties_are_one_panel(tmp_path: Path) -> None:
    out = tmp_path / "g.png"
    code = (
        "import sys\nfrom topomap.cli import app\n"
        f"sys.argv = ['topomap', 'plan', {EIGHT!r}, '--cards', '2', '-o', {str(out)!r}]\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "print('matplotlib' if 'matplotlib' in sys.modules else 'no matplotlib')"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip().endswith("no matplotlib"), r.stderr[-2000:]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    from topomap.render.gantt_png import BOTTOM, GAP, ROW, TOP

    # the three tied arrangements of two cards are one panel: two cards and the assembly
    with Image.open(out) as img:
        assert img.height == TOP + 24 + 3 * ROW + BOTTOM
    uneven = tmp_path / "u.png"
    res = CliRunner().invoke(app, ["plan", str(SAMPLES / "flows" / "uneven-documents.yaml"), "--cards", "2",
                                   "-o", str(uneven)])  # fmt: skip
    assert res.exit_code == 0
    with Image.open(uneven) as img:  # even-static, and longest-first tied with shared-queue: two panels
        assert img.height == TOP + 2 * (24 + 3 * ROW) + GAP + BOTTOM
