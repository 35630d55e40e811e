"""`plan -o gantt.png` / `.svg`: the command in a fresh interpreter (median wall and CPU time of N
runs) and the drawing alone in-process (CPU time, imports excluded), for the current gantt.py and,
with --old FILE, an older copy of it (`git show REV:topomap/render/gantt.py > /tmp/old_gantt.py`).
CPU time is the steadier figure on a machine shared with other work.

Run: python bench/gantt.py [--runs N] [--old /tmp/old_gantt.py]   (from the repository root)
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FLOW = "samples/flows/uneven-documents.yaml"


def command(fmt: str, runs: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of the whole command."""
    out = Path(tempfile.gettempdir()) / f"topomap-bench-gantt.{fmt}"
    wall, cpu = [], []
    for _ in range(runs + 1):  # the first run warms the byte-code and font caches
        r0, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run([sys.executable, "-m", "topomap", "plan", FLOW, "--cards", "2", "-o", str(out)],
                       cwd=ROOT, capture_output=True, check=True)  # fmt: skip
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall.append(time.perf_counter() - t)
        cpu.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    return statistics.median(wall[1:]), statistics.median(cpu[1:])


def drawing(module_path: Path, fmt: str, runs: int) -> float:
    from topomap.api import bind_snapshots
    from topomap.flow import read_flow
    from topomap.plan import plan_flow

    spec = importlib.util.spec_from_file_location(f"gantt_{abs(hash(module_path))}", module_path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    f = read_flow(ROOT / FLOW)
    result = plan_flow(f, bind_snapshots(f, []), [2])
    mod.gantt_image(result, fmt)  # imports matplotlib once
    times = []
    for _ in range(runs):
        t = time.process_time()
        mod.gantt_image(result, fmt)
        times.append(time.process_time() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--old", type=Path)
    args = ap.parse_args()
    for fmt in ("png", "svg"):
        new = drawing(ROOT / "topomap" / "render" / "gantt.py", fmt, args.runs)
        wall, cpu = command(fmt, args.runs)
        line = f"{fmt}: command {wall:.2f} s wall, {cpu:.2f} s CPU; drawing {new:.3f} s CPU"
        if args.old:
            old = drawing(args.old, fmt, args.runs)
            line += f" (old drawing {old:.3f} s, ×{old / new:.1f})"
        print(line)


if __name__ == "__main__":
    main()
