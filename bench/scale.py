"""Scale past a thousand hosts (issue 22): merge, the cluster report and a flow bound to the merged
cluster at 1,024 and 10,000 hosts × 8 GPUs, each stage in its own process so its peak memory
(the process's maximum resident set size, from wait4) is its own.

Run: python bench/scale.py                   (1024 and 10000 hosts; also run by bench/run.py)
     python bench/scale.py --hosts 1024 4096

Stages (each a fresh Python process, as a command would be):
  merge    load the per-host snapshot files, merge them, write the cluster file (what
           `topomap merge hosts/*.json -o cluster.json` does; 256+ hosts: the packed file)
  cluster  read the cluster file, analyse it (topomap.cluster), render the page (`topomap cluster`)
  flow     parse a flow with one step on every host (bench/synth.py: ~10,000 GPU arrows; four steps
           per host pass the flow reader's cap of 200,000 YAML values at 10,000 hosts), bind it to the
           cluster file, map it (`topomap map flow.yaml --probe cluster.json`)
Goal: each stage under 10 s and 4 GiB at 10,000 hosts. Wall-clock seconds per step, then each
step's CPU seconds ("[CPU s]"; issue 34: merge's merge step and bind should grow at most 1.3×
faster than the hosts); the CPU seconds of each stage's whole process are listed too (on a shared
machine they are the fairer figure: a busy neighbour adds wall time, not CPU time). Growth: time
and memory ratio from the smaller size to the larger beside the host ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SIZES = (1024, 10_000)
STAGES = ("merge", "cluster", "flow")
GOAL_S = 10.0
GOAL_RSS = 4 * 2**30
ARROWS = 10_000
CPU: dict[tuple[str, str], float] = {}  # (stage, work folder) → CPU seconds of its process
WORK: dict[int, str] = {}  # hosts → work folder


def _clock() -> float:
    return time.perf_counter()


CPU_MARK = " [CPU s]"  # a step's CPU seconds (its own process's), beside its wall seconds


def run_stage(stage: str, work: Path) -> dict[str, float]:
    """One stage, in this process: seconds per step, wall and CPU (printed as JSON by the child)."""
    wall = _run_stage(stage, work)
    out: dict[str, float] = {}
    for step, value in wall.items():
        out[step] = value
        if step in _CPU:
            out[step + CPU_MARK] = _CPU[step]
    return out


_CPU: dict[str, float] = {}  # step → CPU seconds, filled by _Steps


class _Steps(dict[str, float]):
    """Step times as _run_stage records them: ``out[step], t = _clock() - t, _clock()`` also records
    the CPU seconds since the step before."""

    def __init__(self) -> None:
        super().__init__()
        self._cpu = time.process_time()

    def __setitem__(self, step: str, value: float) -> None:
        now = time.process_time()
        if step != "arrows":
            _CPU[step] = now - self._cpu
        self._cpu = now
        super().__setitem__(step, value)


def _run_stage(stage: str, work: Path) -> dict[str, float]:
    from topomap.model.codec import load_snapshot, save_snapshot

    out: dict[str, float] = _Steps()
    t = _clock()
    if stage == "merge":
        from topomap.model.merge import merge

        files = sorted((work / "hosts").glob("*.json"), key=os.fspath)
        snaps = [(str(f), load_snapshot(f)) for f in files]
        out["load host files"], t = _clock() - t, _clock()
        cluster = merge(snaps)
        out["merge"], t = _clock() - t, _clock()
        save_snapshot(cluster, work / "cluster.json")
        out["write (checked)"] = _clock() - t
    elif stage == "cluster":
        from topomap.cluster import analyse
        from topomap.importers import load_any
        from topomap.render.cluster_view import cluster_view

        merged = load_any(work / "cluster.json")
        out["read"], t = _clock() - t, _clock()
        report = analyse(merged)
        out["analyse"], t = _clock() - t, _clock()
        "\n".join(cluster_view(report))
        json.dumps(report.to_json())
        out["render text + json"] = _clock() - t
    else:
        from topomap.api import bind_snapshots
        from topomap.flow import map_flow, read_flow

        flow = read_flow(work / "flow.yaml")
        out["parse flow"], t = _clock() - t, _clock()
        topos = bind_snapshots(flow, [str(work / "cluster.json")])
        out["bind to cluster file"], t = _clock() - t, _clock()
        fmap = map_flow(flow, topos)
        out["map arrows"] = _clock() - t
        out["arrows"] = float(len(fmap.arrows))
    return out


def measure(stage: str, work: Path, timeout: float) -> tuple[dict[str, float], int, bool]:
    """Run one stage in a child process: its step times, its peak RSS in bytes (the child's own
    getrusage at its end; wait4's figure where it was stopped), and whether it finished."""
    cmd = [sys.executable, __file__, "--stage", stage, str(work)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            return {}, usage.ru_maxrss * 1024, False
        time.sleep(0.05)
    text = proc.stdout.read().decode()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        print(f"bench/scale.py: stage {stage} failed (exit {proc.returncode})", file=sys.stderr)
        return {}, usage.ru_maxrss * 1024, False
    times = json.loads(text)
    CPU[(stage, str(work))] = times.pop("cpu")
    return times, int(times.pop("peak rss")), True


def prepare(n: int, work: Path) -> None:
    """The per-host files and the flow (not timed)."""
    import synth

    synth.write_hosts(n, work / "hosts")
    (work / "flow.yaml").write_text(synth.flow_text(n, ARROWS, stages="a"))


Row = tuple[str, dict[int, float | None]]


def report(results: dict[int, dict[str, tuple[dict[str, float], int, bool]]]) -> tuple[str, list[str]]:
    sizes = sorted(results)
    rows: list[Row] = []
    over: list[str] = []
    for stage in STAGES:
        steps = [k for k in results[sizes[0]][stage][0] if k != "arrows"]
        steps = [k for k in steps if not k.endswith(CPU_MARK)] + [k for k in steps if k.endswith(CPU_MARK)]  # wall, CPU
        for step in steps:
            rows.append((f"{stage}: {step}", {n: results[n][stage][0].get(step) for n in sizes}))
        totals: dict[int, float | None] = {}
        for n in sizes:
            times, rss, done = results[n][stage]
            total = sum(v for k, v in times.items() if k != "arrows" and not k.endswith(CPU_MARK)) if done else None
            totals[n] = total
            if n >= SIZES[-1] and (total is None or total > GOAL_S or rss > GOAL_RSS):
                shown = "did not finish" if total is None else f"{total:.1f} s"
                over.append(f"{stage} at {n} hosts: {shown}, {rss / 2**30:.2f} GiB (goal {GOAL_S:g} s, 4 GiB)")
        rows.append((f"{stage}: TOTAL", totals))
        rows.append((f"{stage}: CPU s (whole process)", {n: CPU.get((stage, WORK.get(n, ""))) for n in sizes}))
        rows.append((f"{stage}: peak RSS (GiB)", {n: results[n][stage][1] / 2**30 for n in sizes}))
    width = max(len(name) for name, _ in rows) + 2
    head = f"{'stage':{width}}" + "".join(f"{f'{n} hosts':>14}" for n in sizes)
    head += f"{'growth':>10}" if len(sizes) > 1 else ""
    lines = [head, "-" * len(head)]
    for name, cells in rows:
        text = "".join(f"{'—' if v is None else f'{v:.3f}':>14}" for v in cells.values())
        a, b = cells[sizes[0]], cells[sizes[-1]]
        if len(sizes) > 1:
            text += f"{f'×{b / a:.1f}' if a and b else '':>10}"
        lines.append(f"{name:{width}}{text}")
    if len(sizes) > 1:
        lines.append(f"growth: the largest size over the smallest; host ratio ×{sizes[-1] / sizes[0]:.1f}")
    return "\n".join(lines), over


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="topomap at 1,024 and 10,000 hosts: time and peak memory per stage")
    ap.add_argument("--hosts", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds before a stage is stopped")
    ap.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)
    ap.add_argument("work", nargs="?", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.stage:
        out = run_stage(opts.stage, Path(opts.work))
        use = resource.getrusage(resource.RUSAGE_SELF)
        out["peak rss"] = float(use.ru_maxrss * 1024)  # Linux: KiB
        out["cpu"] = use.ru_utime + use.ru_stime  # the whole process, start-up and imports included
        print(json.dumps(out))
        return 0
    results: dict[int, dict[str, tuple[dict[str, float], int, bool]]] = {}
    with tempfile.TemporaryDirectory(prefix="topomap-scale-") as tmp:
        for n in sorted(opts.hosts):
            work = Path(tmp) / str(n)
            WORK[n] = str(work)
            print(f"{n} hosts: writing the host files…", file=sys.stderr, flush=True)
            prepare(n, work)
            results[n] = {}
            for stage in STAGES:
                results[n][stage] = measure(stage, work, opts.timeout)
                print(f"{n} hosts: {stage} {results[n][stage][0]}", file=sys.stderr, flush=True)
    text, over = report(results)
    print(text)
    for line in over:
        print(f"over the goal: {line}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
