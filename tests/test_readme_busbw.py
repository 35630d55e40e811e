"""The README's "Expected bus bandwidth" section kept true: every command it shows runs and prints the lines
shown under it, and the figures it states about tests/data/real-nccl-tests are what the model gives."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.nccl_lots import DATA, accuracy
from topomap.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Expected bus bandwidth")
    return text[start : text.index("\n## ", start + 1)]


def _examples() -> list[tuple[str, list[str]]]:
    """Each fenced block that starts with ``$ topomap …``: the command and the output lines shown."""
    out = []
    for block in _section().split("```")[1::2]:
        lines = block.strip("\n").splitlines()
        if lines and lines[0].startswith("$ topomap "):
            out.append((lines[0][2:], [x for x in lines[1:] if x.strip() and x.strip() != "…"]))
    return out


def _norm(line: str) -> str:
    return " ".join(line.split())


def test_the_section_shows_examples() -> None:
    assert len(_examples()) >= 3


@pytest.mark.parametrize(("command", "shown"), _examples())
def test_each_example_prints_what_the_readme_shows(command: str, shown: list[str]) -> None:
    r = runner.invoke(app, shlex.split(command)[1:])
    assert r.exit_code == 0, r.output
    got = {_norm(line) for line in r.output.splitlines()}
    for line in shown:
        assert _norm(line) in got, f"{command}: the README shows a line the command does not print: {line}"


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
