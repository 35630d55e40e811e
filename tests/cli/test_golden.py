"""Every command's output, byte for byte, against goldens in tests/data/golden (see tests/golden/cases.py).

``TOPOMAP_GOLDEN=1`` rewrites the goldens of the commands that exit as their case states and fails
the others (a regeneration must not change an exit status unseen); ``TOPOMAP_GOLDEN=2`` rewrites
those too. A golden no case produces is an orphan, and fails the run until it is removed.
"""

from __future__ import annotations

import os
import shlex
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.golden.cases import EXITS, ROOT, cases
from topomap.cli import app

GOLDEN = ROOT / "tests" / "data" / "golden"
REGEN = os.environ.get("TOPOMAP_GOLDEN", "")
CASES = cases()
HOW = "TOPOMAP_GOLDEN=1 python -m pytest -q tests/cli/test_golden.py"


def _run(argv: list[str], tmp: Path) -> tuple[int, str]:
    """(exit status, the golden text: the command line, its status, stdout, stderr, the files it wrote)."""
    args = [str(tmp / ("out" + a[3:])) if a.startswith("OUT.") else a for a in argv]
    old = Path.cwd()
    os.chdir(ROOT)
    try:
        res = CliRunner().invoke(app, args, env={"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"})
    finally:
        os.chdir(old)
    text = f"$ topomap {shlex.join(argv)}\nexit {res.exit_code}\n--- stdout\n{res.stdout}--- stderr\n{res.stderr}"
    for a in argv:
        if a.startswith("OUT."):
            p = tmp / ("out" + a[3:])
            text += f"--- {a}\n" + (p.read_text() if p.exists() else "(not written)\n")
    return res.exit_code, text.replace(str(tmp), "TMP")


def _golden_exit(path: Path) -> int | None:
    """The exit status a golden file records (its second line), None when there is none."""
    if not path.exists():
        return None
    lines = path.read_text().split("\n", 2)
    return int(lines[1][5:]) if len(lines) > 1 and lines[1].startswith("exit ") else None


def regenerate(path: Path, name: str, code: int, got_code: int, got: str, mode: str) -> str | None:
    """Write ``got`` to the golden ``path`` under ``TOPOMAP_GOLDEN=mode``; the refusal, when ``mode`` is
    "1" and the command exited ``got_code`` where its case states ``code``, instead (nothing written)."""
    if got_code != code and mode != "2":
        return (
            f"{name}: exits {got_code} where its case states {code} (the golden has {_golden_exit(path)}): "
            f"not rewritten. If the change is meant, state exit {got_code} for it in tests/golden/cases.py, "
            "or ask twice: TOPOMAP_GOLDEN=2 rewrites it anyway"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(got)
    return None


@pytest.mark.parametrize(("name", "argv", "code"), [(*c, c.exit) for c in CASES], ids=[c.name for c in CASES])
def test_golden(name: str, argv: list[str], code: int, tmp_path: Path) -> None:
    got_code, got = _run(argv, tmp_path)
    path = GOLDEN / f"{name}.txt"
    if REGEN in ("1", "2"):
        refused = regenerate(path, name, code, got_code, got, REGEN)
        if refused:
            pytest.fail(refused)
        return
    assert path.exists(), f"no golden for {name}: run {HOW}"
    assert got_code == code, f"{name}: exits {got_code}, its case states {code} (tests/golden/cases.py)"
    assert got == path.read_text(), f"{name}: output changed; {HOW} regenerates, then review git diff"


def test_a_regeneration_that_changes_an_exit_status_is_refused_unless_asked_twice(tmp_path: Path) -> None:
    path = tmp_path / "plan-x.txt"
    path.write_text("$ topomap plan x.yaml\nexit 0\n--- stdout\nplan\n")
    new = "$ topomap plan x.yaml\nexit 2\n--- stdout\n--- stderr\nerror\n"
    refused = regenerate(path, "plan-x", 0, 2, new, "1")
    assert refused is not None and refused.startswith("plan-x: exits 2 where its case states 0 (the golden has 0)")
    assert "TOPOMAP_GOLDEN=2" in refused and path.read_text().startswith("$ topomap plan x.yaml\nexit 0\n")
    assert regenerate(path, "plan-x", 2, 2, new, "1") is None and path.read_text() == new  # the case says 2
    path.write_text("old")
    assert regenerate(path, "plan-x", 0, 2, new, "2") is None and path.read_text() == new  # asked twice


def test_a_case_states_its_exit_in_itself_or_in_exits_or_exits_0() -> None:
    from tests.golden.cases import Case, _case

    plain = _case(("show-x", ["show", "x"]))
    assert plain == ("show-x", ["show", "x"]) and plain.exit == 0 and (plain.name, plain.argv) == tuple(plain)
    assert _case(("show-x", ["show", "x"], 2)).exit == 2 and _case(Case("x", [], 3)).exit == 3
    some = next(iter(EXITS))
    assert _case((some, ["x"])).exit == EXITS[some] != 0
    assert all(code != 0 for code in EXITS.values())  # 0 is every other case's, unstated


def test_every_case_has_its_own_golden() -> None:
    """Two cases of one name would write one file, and one of them would go unchecked."""
    twice = sorted(n for n, k in Counter(c.name for c in CASES).items() if k > 1)
    assert not twice, f"case names used twice: {', '.join(twice)}"


def test_no_orphaned_goldens() -> None:
    """A golden no case produces pins nothing: a case renamed or dropped must take its golden along."""
    names = {c.name for c in CASES}
    orphans = sorted(p.name for p in GOLDEN.glob("*.txt") if p.stem not in names)
    assert not orphans, f"{len(orphans)} golden(s) no case produces (git rm them): {', '.join(orphans)}"


def test_every_stated_exit_names_a_case() -> None:
    """An entry of EXITS that names no case is stale: the case it was for is gone or renamed."""
    stale = sorted(set(EXITS) - {c.name for c in CASES})
    assert not stale, f"EXITS in tests/golden/cases.py names no case: {', '.join(stale)}"
