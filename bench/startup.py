"""Start-up cost of topomap commands, as ratios to `python -c pass` measured in the same run.

Run: python bench/startup.py [--runs N]   (from the repository root, after `pip install -e .`)

Each command runs N times in a fresh interpreter (`python -m topomap ...`); the median wall
time is divided by the median of `python -c pass`. Bytecode caching is on for the children and
each command runs once before timing, as on a user's machine after the first run (with
PYTHONDONTWRITEBYTECODE set, as on some CI images, every run recompiles topomap's sources:
about 30 ms more for `show`). Goals (issue 14): --version ≤ 3x,
matrix and show of a sample ≤ 8x, map of a sample ≤ 12x. Also lists the heavy modules each
command imported (from `python -X importtime`), which is what makes a ratio high.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "samples/snapshots/ibm-gx3d-h100-8gpu.json"
FLOW = "samples/flows/two-host-pipeline.yaml"
HEAVY = ("networkx", "pynvml", "cuda.bindings", "yaml", "graphviz", "matplotlib", "rich", "psutil", "numpy")

# (label, arguments after `python`, goal as a ratio to `python -c pass`)
CASES: list[tuple[str, list[str], float | None]] = [
    ("python -c pass", ["-c", "pass"], None),
    ("topomap --version", ["-m", "topomap", "--version"], 3.0),
    ("topomap --help", ["-m", "topomap", "--help"], None),
    ("topomap matrix SAMPLE", ["-m", "topomap", "matrix", SAMPLE], 8.0),
    ("topomap show SAMPLE", ["-m", "topomap", "show", SAMPLE], 8.0),
    ("topomap map FLOW", ["-m", "topomap", "map", FLOW], 12.0),
]


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall_s(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return time.perf_counter() - t


def heavy_imports(args: list[str]) -> list[str]:
    r = subprocess.run(
        [sys.executable, "-X", "importtime", *args], cwd=ROOT, env=ENV, capture_output=True, text=True, check=False
    )
    names = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    return [m for m in HEAVY if m in names]


def measure(runs: int) -> list[tuple[str, float, float | None, list[str]]]:
    """(label, median seconds, goal, heavy modules) per case; the runs interleave the cases so
    a busy machine slows them alike."""
    times: dict[str, list[float]] = {label: [] for label, _, _ in CASES}
    for _label, args, _goal in CASES:  # warm-up: writes the bytecode caches, fills the OS file cache
        wall_s(args)
    for _ in range(runs):
        for label, args, _goal in CASES:
            times[label].append(wall_s(args))
    return [(label, statistics.median(times[label]), goal, heavy_imports(args)) for label, args, goal in CASES]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs per command (median taken)")
    opts = ap.parse_args()
    rows = measure(opts.runs)
    base = rows[0][1]
    print(f"{'command':28} {'median':>9} {'ratio':>7} {'goal':>6}  heavy imports")
    missed = 0
    for label, med, goal, heavy in rows:
        ok = "" if goal is None else ("ok" if med / base <= goal else "MISSED")
        missed += ok == "MISSED"
        goal_text = f"≤{goal:g}x" if goal else ""
        print(f"{label:28} {med * 1000:7.0f} ms {med / base:6.1f}x {goal_text:>6} {ok:6} {', '.join(heavy) or '-'}")
    print(f"(median of {opts.runs} runs each; ratio to `python -c pass` measured in this run)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
