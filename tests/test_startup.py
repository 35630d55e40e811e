"""Start-up: each command imports only what it uses (issue 14). Timings are in bench/startup.py;
here the imports themselves are checked, from `python -X importtime` of the real entry point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "samples/snapshots/ibm-gx3d-h100-8gpu.json"
# Libraries a command must not import unless it needs them. pydantic: no command needs it, and
# typer 0.29 imports it for every option (~50 ms), hence typer <0.29 in pyproject.toml.
HEAVY = {"networkx", "pynvml", "cuda.bindings", "yaml", "graphviz", "matplotlib", "numpy", "psutil", "pydantic"}


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


def test_show_imports_only_the_graph_library() -> None:
    """`show` asks the evidence functions, which walk the graph (networkx); nothing else heavy."""
    assert imported("show", SAMPLE) & HEAVY == {"networkx"}


def test_the_probe_command_help_does_not_load_the_bindings() -> None:
    assert imported("probe", "--help") & {"pynvml", "cuda.bindings"} == set()
