"""The guide "Judge a lot before you rent it" (docs/guides/lots.md; the README's section until the
README was cut to its first five minutes, issue 33 item 9): every command it shows is run and prints
what the page says it prints (a block with "…" shows some lines of the output, in order; one without
shows all of it), and the sample lot it shows is the file itself. So the page cannot drift from the
code."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.docs_examples import examples
from topomap.cli import app

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guides" / "lots.md"
TITLE = "# Judge a lot before you rent it"


def _examples() -> list[tuple[list[str], list[str]]]:
    """(argv, the lines the page shows after it) for every `$ topomap` line of the page's code blocks."""
    assert PAGE.read_text().startswith(TITLE + "\n")
    return [(ex.argv, ex.shown) for ex in examples(PAGE, ROOT)]


EXAMPLES = _examples()


def test_the_section_shows_commands() -> None:
    assert len(EXAMPLES) >= 7


def test_the_sample_lot_shown_is_the_file() -> None:
    """The page shows samples/lots/two-host-ib.yaml by including it (a snippet), not a copy that could drift."""
    text = PAGE.read_text()
    assert '```yaml\n--8<-- "samples/lots/two-host-ib.yaml"\n```' in text
    assert (ROOT / "samples" / "lots" / "two-host-ib.yaml").read_text().startswith("# Two identical hosts")


@pytest.mark.parametrize(("argv", "shown"), EXAMPLES, ids=[" ".join(a) for a, _ in EXAMPLES])
def test_every_command_prints_what_the_page_shows(
    argv: list[str], shown: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    res = CliRunner().invoke(app, argv, env={"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"})
    got = [line.rstrip() for line in (res.stdout + res.stderr).rstrip("\n").split("\n")]
    if "…" not in shown:
        assert got == shown
        return
    at = 0
    for line in (x for x in shown if x != "…"):
        assert line in got[at:], f"not in the output (in order): {line!r}"
        at = got.index(line, at) + 1
