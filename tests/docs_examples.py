"""The examples of a Markdown page, and running them (issue 33 item 9).

In a fenced block (bare, ``console``, ``sh``, ``shell`` or ``bash``), a line ``$ topomap …`` is an
example (a line ending in ``\\`` goes on on the next; a ``# comment`` is not part of it); the lines
after it, up to the next ``$`` line or the end of the block, are what it prints (stdout and stderr,
as a terminal shows them). A line ``…`` (or ``...``) alone stands for lines left out; otherwise
the output must match line for line.

A block with a ``$`` line that is not one topomap command is refused (it could not be checked), so
every example shown is one that runs. Commands run in a scratch folder where ``samples``, ``tests``,
``deploy`` and ``docs`` are the repository's (``docs/examples/`` holds the inputs only a page needs: a
UTF-16 paste, a flow with a typo), so a file an example writes (``-o report.html``) lands there.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from topomap.cli import app

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(?P<indent> {0,3})```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
GAP = {"…", "..."}
#: Fences whose ``$`` lines are examples (a ``text`` block shows a file, such as a golden, as it is).
SHELLS = {"", "console", "sh", "shell", "bash"}
LINKED = ("samples", "tests", "deploy", "docs")  # the repository folders examples name


@dataclass(frozen=True)
class Example:
    """One ``$ topomap …`` line of a page and the output shown under it."""

    page: str
    line: int  # 1-based, in the page
    argv: list[str]
    shown: list[str]

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def examples(path: Path, root: Path = ROOT) -> list[Example]:
    """Every example of the Markdown page ``path``; ValueError for a ``$`` line that is not topomap."""
    text = path.read_text()
    page = str(path.relative_to(root))
    out: list[Example] = []
    for m in FENCE.finditer(text):
        if m.group("lang") not in SHELLS:
            continue
        body = m.group("body").splitlines()
        first = text.count("\n", 0, m.start("body")) + 1
        starts = [i for i, line in enumerate(body) if line.startswith("$ ")]
        if not starts:
            continue
        if starts[0] != 0:
            raise ValueError(f"{page}:{first}: a block with examples starts with its first `$ topomap` line")
        for k, i in enumerate(starts):
            cmd, j = body[i][2:], i
            while cmd.endswith("\\") and j + 1 < len(body):  # a command continued on the next line
                j += 1
                cmd = cmd[:-1] + " " + body[j].strip()
            if not cmd.startswith("topomap ") or any(c in cmd for c in ("|", ">", "&&", ";", "$(")):
                raise ValueError(f"{page}:{first + i}: `$ {cmd}`: an example is one topomap command, no shell")
            end = starts[k + 1] if k + 1 < len(starts) else len(body)
            out.append(Example(page, first + i, shlex.split(cmd, comments=True)[1:], body[j + 1 : end]))
    return out


def scratch(folder: Path) -> Path:
    """``folder`` with the repository's sample folders linked in: where examples run."""
    for name in LINKED:
        link = folder / name
        if not link.exists():
            link.symlink_to(ROOT / name)
    return folder


def run(example: Example, folder: Path) -> list[str]:
    """The lines ``example`` prints, run in ``folder`` (see :func:`scratch`), as piped output is:
    no colour, no width (piped output is never wrapped)."""
    old = Path.cwd()
    os.chdir(folder)
    try:
        res = CliRunner().invoke(app, example.argv, env={"NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200"})
    finally:
        os.chdir(old)
    if res.exit_code == 4 or (res.exception is not None and not isinstance(res.exception, SystemExit)):
        raise AssertionError(f"{example.where}: internal error: {res.output}")
    return [line.rstrip() for line in res.output.splitlines()]


def differs(shown: list[str], got: list[str]) -> str | None:
    """Where ``got`` does not print what ``shown`` shows (``…`` lines: any lines); None when it does."""
    parts: list[list[str]] = [[]]
    for line in shown:
        if line.strip() in GAP:
            parts.append([])
        else:
            parts[-1].append(line.rstrip())
    at = 0
    for k, part in enumerate(parts):
        if not part:
            continue
        if k == 0:  # before the first gap: the output's first lines
            if got[: len(part)] != part:
                return _first_difference(part, got[: len(part)])
            at = len(part)
            continue
        found = next((i for i in range(at, len(got) - len(part) + 1) if got[i : i + len(part)] == part), None)
        if found is None:
            return f"not in the output after line {at}: {part[0]!r} (and the {len(part) - 1} line(s) after it)"
        at = found + len(part)
    if parts[-1] and len(parts) > 1 and at != len(got):
        return f"the output goes on after the last line shown: {got[at]!r}"
    if len(parts) == 1 and at != len(got):
        return f"the output goes on after the last line shown ({len(got) - at} more; end the block with …)"
    return None


def _first_difference(shown: list[str], got: list[str]) -> str:
    for i, (a, b) in enumerate(zip(shown, got)):
        if a != b:
            return f"line {i + 1}: shown {a!r}, printed {b!r}"
    return f"shown {len(shown)} line(s), printed {len(got)}"
