"""The README's section "Judge a lot before you rent it": every command it shows is run and prints what
the README says it prints (a block with "…" shows some lines of the output, in order; one without shows
all of it). So the section cannot drift from the code."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topomap.cli import app

ROOT = Path(__file__).resolve().parents[1]
TITLE = "## Judge a lot before you rent it"


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(TITLE)
    end = text.find("\n## ", start + len(TITLE))
    return text[start:end]


def _examples() -> list[tuple[str, list[str]]]:
    """(command, the lines the README shows after it) for every `$ ` line of the section's code blocks."""
    out: list[tuple[str, list[str]]] = []
    for block in _section().split("```")[1::2]:
        for chunk in block.split("\n$ ")[1:] if block.startswith("\n$ ") else []:
            command, _, rest = chunk.partition("\n")
            out.append((command, rest.rstrip("\n").split("\n") if rest.strip() else []))
    return out


EXAMPLES = _examples()


def test_the_section_shows_commands() -> None:
    assert len(EXAMPLES) >= 7


@pytest.mark.parametrize(("command", "shown"), EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_every_command_prints_what_the_readme_shows(
    command: str, shown: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    argv = shlex.split(command)
    if argv[0] == "cat":
        assert (ROOT / argv[1]).read_text().rstrip("\n").split("\n") == shown
        return
    assert argv[0] == "topomap"
    res = CliRunner().invoke(app, argv[1:], env={"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"})
    got = [line.rstrip() for line in (res.stdout + res.stderr).rstrip("\n").split("\n")]
    if "…" not in shown:
        assert got == shown
        return
    at = 0
    for line in (x for x in shown if x != "…"):
        assert line in got[at:], f"not in the output (in order): {line!r}"
        at = got.index(line, at) + 1
