"""`topomap nccl CLUSTER --perf` on a 1,024-host cluster (issue 32): the expected busbw of every collective
over a merged cluster of N hosts × 8 GPUs (bench/synth.py: copies of the IBM gx3d H100 sample with a
little variety, so the cluster has a few host shapes), and `--hosts N` on one host.

Run: python bench/perf.py                   (16, 128 and 1024 hosts)
     python bench/perf.py --hosts 1024 4096

Per size: the whole command in a fresh interpreter (wall and CPU seconds: start-up, reading the packed
cluster file, the model, the text), and the model alone in-process (plan + every collective, the file
already read). Hosts alike but for their names are analysed once, so the model's cost follows the host
shapes, not the hosts; reading the file grows with the hosts. Goal: under 2 s for the command at 1,024
hosts.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SIZES = (16, 128, 1024)
GOAL_S = 2.0


def cluster_file(n: int, work: Path) -> Path:
    """The merged cluster of ``n`` synthetic hosts, written as `topomap merge` writes it (not timed)."""
    import synth

    from topomap.model.codec import load_snapshot, save_snapshot
    from topomap.model.merge import merge

    paths = synth.write_hosts(n, work / "hosts")
    cluster = merge([(str(p), load_snapshot(p)) for p in paths])
    out = work / "cluster.json"
    save_snapshot(cluster, out)
    return out


def command(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one `python -m topomap …` (its output discarded)."""
    r0, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([sys.executable, "-m", "topomap", *args], cwd=ROOT, capture_output=True, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - t, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime


def model(path: Path, hosts: int | None = None) -> tuple[float, int]:
    """Seconds of the model alone (plan + every collective) on an already-read snapshot; its host shapes."""
    from topomap.collective.expect import expect_all
    from topomap.collective.lot import plan
    from topomap.importers import load_any

    snap = load_any(path)
    t = time.perf_counter()
    p = plan(snap, hosts=hosts)
    found = expect_all(p)
    took = time.perf_counter() - t
    assert len(found) == 7 and p.hosts == (hosts or p.hosts)
    return took, len(p.shapes)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="topomap nccl --perf on large clusters")
    ap.add_argument("--hosts", type=int, nargs="+", default=list(SIZES))
    opts = ap.parse_args(argv)
    rows = []
    over = []
    with tempfile.TemporaryDirectory(prefix="topomap-bench-perf-") as tmp:
        one = ROOT / "samples" / "snapshots" / "ibm-gx3d-h100-8gpu.json"
        for n in sorted(opts.hosts):
            path = cluster_file(n, Path(tmp) / str(n))
            wall, cpu = command(["nccl", str(path), "--perf"])
            alone, shapes = model(path)
            hwall, hcpu = command(["nccl", str(one), "--perf", "--hosts", str(n)])
            halone, _ = model(one, n)
            rows.append((n, shapes, wall, cpu, alone, hwall, hcpu, halone))
            if n >= 1024 and wall > GOAL_S:
                over.append(f"{n} hosts: nccl --perf {wall:.2f} s > {GOAL_S} s")
    print("hosts  shapes  merged: command wall / cpu   model   --hosts N: command wall / cpu   model")
    for n, shapes, wall, cpu, alone, hwall, hcpu, halone in rows:
        print(
            f"{n:>5}  {shapes:>6}  {wall:>14.2f} s / {cpu:.2f} s  {alone * 1000:>5.0f} ms"
            f"  {hwall:>17.2f} s / {hcpu:.2f} s  {halone * 1000:>4.0f} ms"
        )
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        print(f"growth {a[0]} → {b[0]} hosts (×{b[0] / a[0]:g}): command ×{b[2] / a[2]:.1f}, model ×{b[4] / a[4]:.1f}")
    for line in over:
        print(f"over the goal: {line}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
