"""The documentation site (issue 33 item 9): it builds with `mkdocs build --strict`, its reference
pages are what scripts/docs_reference.py generates from the code, and every `$ topomap …` example
on every page, and in the README, prints what the page shows (tests/docs_examples.py says how an
example is read)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_examples import ROOT, differs, examples, run, scratch

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]  # the README's examples run too


def _generator() -> object:
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "scripts" / "docs_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_pages_are_generated_from_the_code() -> None:
    gen = _generator()
    for name, make in gen.PAGES.items():  # type: ignore[attr-defined]
        page = DOCS / "reference" / name
        assert page.exists() and page.read_text() == make(), (
            f"{page.relative_to(ROOT)} is out of date: python scripts/docs_reference.py rewrites it"
        )
    listed = {p.name for p in (DOCS / "reference").glob("*.md")}
    assert listed == set(gen.PAGES), "docs/reference/ holds only generated pages"  # type: ignore[attr-defined]


def test_the_commands_reference_lists_every_command_and_option() -> None:
    from tests.golden.cases import cases  # noqa: F401  (the CLI imports as the goldens do)
    from topomap.cli.entry import COMMANDS

    text = (DOCS / "reference" / "commands.md").read_text()
    for name in COMMANDS:
        assert f"\n## {name}\n" in text and f"topomap {name} [OPTIONS]" in text
    assert "| `--nics` | flag |" in text and "| `-o`, `--output` | TEXT |" in text
    codes = (DOCS / "reference" / "exit-codes.md").read_text()
    assert "Exit 0 pass, 1 fail, 3 unknown (cannot be told), 2 error." in codes  # check's own help


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_example_prints_what_the_page_shows(page: Path, tmp_path: Path) -> None:
    """The examples of one page run in order in one scratch folder (a file one writes, the next reads)."""
    folder = scratch(tmp_path)
    wrong = []
    for ex in examples(page):
        why = differs(ex.shown, run(ex, folder))
        if why:
            wrong.append(f"{ex.where}: $ topomap {' '.join(ex.argv)}: {why}")
    assert not wrong, "\n".join(wrong)


def test_the_readme_shows_three_examples_and_links_every_page() -> None:
    """The README is what a newcomer needs first (issue 33 item 9): short, three examples that run,
    and a link to every page of the site."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    assert len(examples(ROOT / "README.md")) == 3
    for page in DOCS.rglob("*.md"):  # the generated reference pages: at least their commands page
        if page.parent.name != "reference" or page.name == "commands.md":
            assert f"](docs/{page.relative_to(DOCS)}" in readme, f"the README links no docs/{page.relative_to(DOCS)}"


def test_the_examples_are_read_as_the_pages_mean_them(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "text\n\n```console\n$ topomap schema nosuch   # a comment\nerror line\n…\n$ topomap \\\n  show x.json\n```\n"
        "\n```sh\ntopomap probe -o lot.json\n```\n"
    )
    ex = examples(page, tmp_path)
    assert [(e.line, e.argv, e.shown) for e in ex] == [
        (4, ["schema", "nosuch"], ["error line", "…"]),
        (7, ["show", "x.json"], []),
    ]
    assert differs(["a", "…", "d"], ["a", "b", "c", "d"]) is None
    assert differs(["a", "…"], ["a", "b"]) is None and differs(["…", "c"], ["a", "b", "c"]) is None
    assert differs(["a"], ["a", "b"]) is not None and differs(["a", "…", "x"], ["a", "b"]) is not None
    page.write_text("```\n$ ls samples\nflows\n```\n")
    with pytest.raises(ValueError, match="an example is one topomap command"):
        examples(page, tmp_path)


def test_mkdocs_builds_the_site_strictly_offline(tmp_path: Path) -> None:
    """Every page in the nav, every link and anchor resolving, no warning (strict; `--quiet` would
    hide the warnings from strict mode too), nothing fetched."""
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's banner about its successor
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "site" / "reference" / "commands" / "index.html").exists()
    assert (tmp_path / "site" / "two-host-pipeline.png").exists()
