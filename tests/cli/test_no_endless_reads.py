"""Every file argument of every command refuses a device that never ends (/dev/zero) and a FIFO
that never gets a writer: one line naming the path, exit 2, in seconds (issue 14: the size check
must come before the read, and an open must not block).

Found after the first round: `show`, `map` and `diff` first ask "is this a run record?", and that
question read the whole file with no limit, so `show /dev/zero` ran out of memory (exit 4) and
`show FIFO` blocked forever.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SNAP = str(ROOT / "samples" / "snapshots" / "dgx1-v100.json")
REQS = str(ROOT / "samples" / "requirements" / "tensor-parallel.yaml")
FLOW = str(ROOT / "samples" / "flows" / "two-host-pipeline.yaml")

# X marks the file argument under test; the other arguments are good files.
COMMANDS: list[list[str]] = [
    ["show", "X"],
    ["show", "X", "--json"],
    ["matrix", "X"],
    ["import", "X", "-o", "OUT"],
    ["merge", "X", SNAP, "-o", "OUT"],
    ["merge", SNAP, "X", "-o", "OUT"],
    ["cluster", "X"],
    ["map", "X"],
    ["map", FLOW, "--probe", "X"],
    ["render", "X", "-o", "OUT.svg"],
    ["diff", "X", SNAP],
    ["diff", SNAP, "X"],
    ["check", "X", "--probe", SNAP],
    ["check", REQS, "--probe", "X"],
    ["plan", "X"],
    ["attach", SNAP, "X", "-o", "OUT"],
    ["attach", "X", SNAP, "-o", "OUT"],
    ["report", "X", "-o", "OUT.html"],
]


def _limit_memory() -> None:  # a read without a limit fails here fast instead of eating the machine
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _run(args: list[str], bad: str, out: Path) -> subprocess.CompletedProcess[str]:
    argv = [bad if a == "X" else a.replace("OUT", str(out)) for a in args]
    if "--probe" in argv and argv[argv.index("--probe") + 1] == bad and args[0] == "map":
        argv[argv.index("--probe") + 1] = f"node-a={bad}"
    return subprocess.run(
        [sys.executable, "-m", "topomap", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=_limit_memory,
        check=False,
    )


@pytest.fixture(scope="module")
def fifo(tmp_path_factory: pytest.TempPathFactory) -> str:
    p = tmp_path_factory.mktemp("fifo") / "pipe"
    os.mkfifo(p)
    return str(p)


@pytest.mark.parametrize("args", COMMANDS, ids=[f"{a[0]}-arg{a.index('X')}" for a in COMMANDS])
@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_never_ending_input_is_refused(args: list[str], kind: str, fifo: str, tmp_path: Path) -> None:
    bad = "/dev/zero" if kind == "device" else fifo
    r = _run(args, bad, tmp_path / "out")
    assert r.returncode == 2, (args, r.returncode, r.stderr[-500:])
    assert r.stderr.count("\n") == 1 and bad in r.stderr, r.stderr
    assert "character device" in r.stderr or "FIFO" in r.stderr, r.stderr
    assert not any(tmp_path.iterdir()), "no output written"
