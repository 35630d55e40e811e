"""Start-up cost of topomap commands, as ratios to `python -c pass` measured in the same run.

Run: python bench/startup.py [--runs N]   (from the repository root, after `pip install -e .`)

Each command runs N times in a fresh interpreter (`python -m topomap ...`); the median wall
time is divided by the median of `python -c pass`. Bytecode caching is on for the children and
each command runs once before timing, as on a user's machine after the first run (with
PYTHONDONTWRITEBYTECODE set, as on some CI images, every run recompiles topomap's sources:
about 30 ms more for `show`). Goals (issues 14, 18): --version ≤ 3x,
matrix and show of a sample ≤ 8x, map and render of a sample ≤ 12x. Also lists the heavy modules
each command imported (from `python -X importtime`), which is what makes a ratio high, and the
CPU time ratio, steadier than wall time on a machine shared with other work.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "samples/snapshots/ibm-gx3d-h100-8gpu.json"
FLOW = "samples/flows/two-host-pipeline.yaml"
OUT = str(Path(tempfile.gettempdir()) / "topomap-startup-bench.dot")
HEAVY = ("typer", "networkx", "pynvml", "cuda.bindings", "yaml", "graphviz", "matplotlib", "rich", "psutil", "numpy")

# (label, arguments after `python`, goal as a ratio to `python -c pass`)
CASES: list[tuple[str, list[str], float | None]] = [
    ("python -c pass", ["-c", "pass"], None),
    ("topomap --version", ["-m", "topomap", "--version"], 3.0),
    ("topomap --help", ["-m", "topomap", "--help"], None),
    ("topomap matrix SAMPLE", ["-m", "topomap", "matrix", SAMPLE], 8.0),
    ("topomap show SAMPLE", ["-m", "topomap", "show", SAMPLE], 8.0),
    ("topomap map FLOW", ["-m", "topomap", "map", FLOW], 12.0),
    ("topomap render SAMPLE", ["-m", "topomap", "render", SAMPLE, "-o", OUT], 12.0),
]


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_once(args: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def heavy_imports(args: list[str]) -> list[str]:
    r = subprocess.run(
        [sys.executable, "-X", "importtime", *args], cwd=ROOT, env=ENV, capture_output=True, text=True, check=False
    )
    names = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    return [m for m in HEAVY if m in names]


def measure(runs: int) -> list[tuple[str, float, float, float | None, list[str]]]:
    """(label, median wall seconds, median CPU seconds, goal, heavy modules) per case; the runs
    interleave the cases so a busy machine slows them alike."""
    times: dict[str, list[tuple[float, float]]] = {label: [] for label, _, _ in CASES}
    for _label, args, _goal in CASES:  # warm-up: writes the bytecode caches, fills the OS file cache
        run_once(args)
    for _ in range(runs):
        for label, args, _goal in CASES:
            times[label].append(run_once(args))
    return [
        (
            label,
            statistics.median(w for w, _ in times[label]),
            statistics.median(c for _, c in times[label]),
            goal,
            heavy_imports(args),
        )
        for label, args, goal in CASES
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs per command (median taken)")
    opts = ap.parse_args()
    rows = measure(opts.runs)
    base, base_cpu = rows[0][1], rows[0][2]
    print(f"{'command':28} {'median':>9} {'ratio':>7} {'goal':>6}         {'cpu ratio':>9}  heavy imports")
    missed = 0
    for label, med, cpu, goal, heavy in rows:
        ok = "" if goal is None else ("ok" if med / base <= goal else "MISSED")
        missed += ok == "MISSED"
        goal_text = f"≤{goal:g}x" if goal else ""
        print(
            f"{label:28} {med * 1000:7.0f} ms {med / base:6.1f}x {goal_text:>6} {ok:6} {cpu / base_cpu:9.1f}x  "
            f"{', '.join(heavy) or '-'}"
        )
    print(f"(median of {opts.runs} runs each; ratios to `python -c pass` measured in this run)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
