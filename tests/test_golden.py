"""Every command's output, byte for byte, against goldens in tests/data/golden (see tests/golden/cases.py)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.golden.cases import ROOT, cases
from topomap.cli import app

GOLDEN = ROOT / "tests" / "data" / "golden"
REGEN = os.environ.get("TOPOMAP_GOLDEN") == "1"
CASES = cases()


def _run(argv: list[str], tmp: Path) -> str:
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
    return text.replace(str(tmp), "TMP")


@pytest.mark.parametrize(("name", "argv"), CASES, ids=[c[0] for c in CASES])
def test_golden(name: str, argv: list[str], tmp_path: Path) -> None:
    got = _run(argv, tmp_path)
    path = GOLDEN / f"{name}.txt"
    if REGEN:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
        return
    assert path.exists(), f"no golden for {name}: run TOPOMAP_GOLDEN=1 python -m pytest tests/test_golden.py"
    assert got == path.read_text(), f"{name}: output changed; TOPOMAP_GOLDEN=1 regenerates, then review git diff"
