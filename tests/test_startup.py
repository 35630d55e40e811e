"""Start-up: each command imports only what it uses (issue 14). Timings are in bench/startup.py;
here the imports themselves are checked, from `python -X importtime` of the real entry point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "samples/snapshots/ibm-gx3d-h100-8gpu.json"
# Libraries a command must not import unless it needs them.
HEAVY = {"networkx", "pynvml", "cuda.bindings", "yaml", "graphviz", "matplotlib", "numpy", "psutil"}


def imported(*args: str) -> set[str]:
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "topomap", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize(
    "args",
    [("--version",), ("--help",), ("matrix", SAMPLE), ("matrix", "--json", SAMPLE), ("show", "--json", SAMPLE)],
    ids=["version", "help", "matrix", "matrix-json", "show-json"],
)
def test_light_commands_import_no_heavy_library(args: tuple[str, ...]) -> None:
    assert imported(*args) & HEAVY == set()


def test_show_never_imports_the_driver_bindings_or_drawing_libraries() -> None:
    """`show` draws the machine tree from the graph (networkx) and its view module imports the
    flow checks (yaml): both reported to the view's owner; the bindings and drawing stay out."""
    assert imported("show", SAMPLE) & {"pynvml", "cuda.bindings", "graphviz", "matplotlib", "numpy"} == set()


def test_the_probe_command_help_does_not_load_the_bindings() -> None:
    assert imported("probe", "--help") & {"pynvml", "cuda.bindings"} == set()
