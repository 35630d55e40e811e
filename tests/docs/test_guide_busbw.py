"""The guide "Expected bus bandwidth" (docs/guides/busbw.md; the README's section until the README was
cut to its first five minutes, issue 33 item 9) kept true: every command it shows runs and prints the
lines shown under it, and the figures it states about tests/data/real-nccl-tests are what the model
gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.docs_examples import examples
from tests.nccl_lots import DATA, accuracy
from topomap.cli import app

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guides" / "busbw.md"
runner = CliRunner()


def _section() -> str:
    text = PAGE.read_text()
    assert text.startswith("# Expected bus bandwidth")
    return text


def _examples() -> list[tuple[list[str], list[str]]]:
    """Each ``$ topomap …`` example of the page: its argv and the output lines shown (``…`` left out)."""
    return [(ex.argv, [x for x in ex.shown if x.strip() and x.strip() != "…"]) for ex in examples(PAGE, ROOT)]


def _norm(line: str) -> str:
    return " ".join(line.split())


def test_the_section_shows_examples() -> None:
    assert len(_examples()) >= 3


@pytest.mark.parametrize(("argv", "shown"), _examples(), ids=[" ".join(a) for a, _ in _examples()])
def test_each_example_prints_what_the_page_shows(argv: list[str], shown: list[str]) -> None:
    r = runner.invoke(app, argv)
    assert r.exit_code == 0, r.output
    got = {_norm(line) for line in r.output.splitlines()}
    for line in shown:
        assert _norm(line) in got, f"{' '.join(argv)}: the page shows a line the command does not print: {line}"


def test_the_stated_accuracy_is_the_models() -> None:
    rows = accuracy()
    healthy = [r for r in rows if r["status"] == "healthy" and r["expected"] is not None]
    within = [r for r in healthy if 0.8 <= float(r["ratio"]) <= 1.2]
    held = [r for r in healthy if r["set"] == "held out"]
    tuned = [r for r in healthy if r["set"] == "tuned on"]
    under = [r for r in rows if r["status"] == "underperforming"]
    files = [p for p in DATA.iterdir() if p.suffix in (".txt", ".log")]
    text = _norm(_section())
    assert f"holds {len(files)} nccl-tests outputs" in text
    assert f"on {len(within)} of the {len(healthy)} healthy runs with a figure" in text
    assert f"({sum(r in within for r in held)} of {len(held)} held out" in text
    assert f"and {sum(r in within for r in tuned)} of {len(tuned)} tuned on)" in text
    assert f"the {len(under)} known-underperforming runs are all `far-below`" in text
    assert all(r["verdict"] == "far-below" for r in under)
    assert not any(r["verdict"] == "far-below" for r in rows if r["status"] == "healthy")
