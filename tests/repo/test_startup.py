"""Start-up: each command imports only what it uses (issues 14, 18). Timings are in bench/startup.py
(goals: --version <= 3x `python -c pass`, show and matrix <= 8x, map and render <= 12x); here the
imports behind them are checked, from `python -X importtime` of the real entry point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = "samples/snapshots/ibm-gx3d-h100-8gpu.json"
FLOW = "samples/flows/two-host-pipeline.yaml"
# Libraries a command must not import unless it needs them. pydantic: no command needs it, and
# typer 0.29 imports it for every option (~50 ms), hence typer <0.29 in pyproject.toml.
HEAVY = {"networkx", "pynvml", "cuda.bindings", "yaml", "graphviz", "matplotlib", "numpy", "psutil", "pydantic"}
COMMAND_MODULES = {
    f"topomap.cli.{m}" for m in ("snapshots", "flows", "plan", "verdicts", "measure", "record", "report")
}


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


def loaded(*args: str) -> set[str]:
    """The modules in sys.modules after the real entry point ran ``args`` (importtime does not list
    a module imported through importlib, as the command modules are)."""
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['topomap', *{args!r}]\n"
        "try:\n    runpy.run_module('topomap', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "print('\\n'.join(sys.modules), file=sys.stderr)"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    return set(r.stderr.splitlines())


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("--help",),
        ("matrix", SAMPLE),
        ("matrix", "--json", SAMPLE),
        ("show", "--json", SAMPLE),
        ("import", SAMPLE),
    ],
    ids=["version", "help", "matrix", "matrix-json", "show-json", "import"],
)
def test_light_commands_import_no_heavy_library(args: tuple[str, ...]) -> None:
    assert imported(*args) & HEAVY == set()


def test_show_imports_no_heavy_library() -> None:
    """`show` asks the evidence functions, which walk the graph as it was built (topomap.graph.light):
    no path search, so no networkx (issue 34: networkx was most of show's start-up)."""
    assert imported("show", SAMPLE) & HEAVY == set()


def test_a_view_that_searches_paths_still_gets_networkx() -> None:
    """`map` routes arrows (a shortest path over PCIe): Topology.graph gives networkx's graph."""
    assert "networkx" in imported("map", FLOW)


def test_the_probe_command_help_does_not_load_the_bindings() -> None:
    assert imported("probe", "--help") & {"pynvml", "cuda.bindings"} == set()


def test_version_answers_without_the_command_line_library() -> None:
    """--version is the start-up floor: no typer, no rich, no msgspec, no command module."""
    assert loaded("--version") & {"typer", "rich", "msgspec", "topomap.cli.wiring", *COMMAND_MODULES} == set()


@pytest.mark.parametrize(
    "args",
    [("matrix", SAMPLE), ("matrix", "--json", SAMPLE), ("show", "--json", SAMPLE), ("import", SAMPLE)],
    ids=["matrix", "matrix-json", "show-json", "import"],
)
def test_commands_without_the_graph_import_neither_networkx_nor_rich(args: tuple[str, ...]) -> None:
    """The matrix and the snapshot's JSON need no graph (networkx) and no terminal tables (rich)."""
    assert imported(*args) & {"networkx", "rich"} == set()


@pytest.mark.parametrize(
    ("args", "module"),
    [
        (("matrix", SAMPLE), "snapshots"),
        (("show", SAMPLE), "snapshots"),
        (("map", FLOW), "flows"),
        (("render", SAMPLE, "-o", "OUT.dot"), "flows"),
    ],
    ids=["matrix", "show", "map", "render"],
)
def test_a_command_loads_only_its_own_command_module(args: tuple[str, ...], module: str, tmp_path: Path) -> None:
    """typer builds only the commands of that module, not all of them."""
    args = tuple(str(tmp_path / a) if a == "OUT.dot" else a for a in args)
    assert loaded(*args) & COMMAND_MODULES == {f"topomap.cli.{module}"}


@pytest.mark.parametrize("args", [("map", FLOW), ("render", SAMPLE, "-o", "OUT.dot")], ids=["map", "render"])
def test_map_and_render_load_the_graph_but_no_chart_probe_or_sampler(args: tuple[str, ...], tmp_path: Path) -> None:
    modules = imported(*(str(tmp_path / a) if a == "OUT.dot" else a for a in args))
    assert "networkx" in modules
    assert modules & {"matplotlib", "numpy", "psutil", "pynvml", "cuda.bindings", "pydantic"} == set()
