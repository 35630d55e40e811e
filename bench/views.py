"""The views of a merged cluster at 512, 1,024 and 10,000 hosts (issue 34): `show`, `matrix`, `nccl`,
`check`, `diff`, `place`, `cluster` and `report`, each a real `python -m topomap …` process, on a cluster
of identical 8 × H200 hosts (samples/snapshots/hgx-h200-8gpu-10nic.json, bench/synth.py
``h200_cluster``) and on the same cluster with 1 % of its hosts differing (a lost GPU, a NIC down, an
older driver, a GPU's PCIe link trained at x8, an NVLink bundle at NV12, in turn).

Run: python bench/views.py                      (512, 1024 and 10000 hosts; also run by bench/run.py)
     python bench/views.py --hosts 512 1024     (other sizes; --views show nccl for some views)
     python bench/views.py --json               (the --json form of each view too)

Per view and cluster: wall seconds, CPU seconds (user + system of the process: start-up and imports
included; on a machine shared with others the fairer figure), peak resident memory (the child's
maximum RSS from wait4) and the lines of text it printed. Growth: the CPU ratio from the smallest
size to each larger one beside the host ratio ("×1.9 / ×19.5": the view's cost barely grows with
the hosts). Goals (issue 34): at 10,000 hosts every view under 5 s CPU and 2 GiB; at 512 hosts
(4,096 GPUs) `show` under 2 s; the text of 10,000 identical hosts on one screen (+ what differs).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SIZES = (512, 1024, 10_000)
KINDS = ("alike", "1% differ")
GOAL_CPU_S = 5.0
GOAL_RSS = 2 * 2**30
GOAL_SHOW_4096_GPUS_S = 2.0
SCREEN = 60  # lines: one screen, before what differs

REQS = """requirements:
  - gpus: {min_count: 8}
  - gpu_links: {min: nvlink}
  - gdr_nic: {max_path: PXB}
  - driver: {min: "550"}
  - cluster: {every_host_passes: true, rails_consistent: true}
"""


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    rss: int  # bytes
    lines: int
    rc: int  # the exit status; -1: stopped at the time limit


def views(work: Path, kind: str, json_out: bool) -> dict[str, list[str]]:
    """Each view's arguments on the cluster of ``kind`` in ``work``."""
    c = str(work / f"{_tag(kind)}.json")
    other = str(work / f"{_tag(kind)}-b.json")
    out = {
        "show": ["show", c],
        "matrix": ["matrix", c],
        "cluster": ["cluster", c],
        "nccl": ["nccl", c],
        "check": ["check", str(work / "reqs.yaml"), c],
        "diff": ["diff", c, other],
        "place": ["place", c, "--gpus", "4"],
        "report": ["report", str(work / "flow.yaml"), f"--probe={c}", "-o", str(work / "report.html")],
    }
    if json_out:
        out.update({f"{k} --json": [*v, "--json"] for k, v in out.items() if k != "report"})
    return out


def _tag(kind: str) -> str:
    return "alike" if kind == "alike" else "differ"


def prepare(n: int, work: Path) -> None:
    """The two clusters of ``n`` hosts (and each one's B side for diff), the rules and the flow."""
    import synth

    from topomap.model.codec import save_snapshot

    work.mkdir(parents=True, exist_ok=True)
    for kind in KINDS:
        odd = 0 if kind == "alike" else max(1, n // 100)
        save_snapshot(synth.h200_cluster(n, odd), work / f"{_tag(kind)}.json")
        save_snapshot(synth.h200_cluster(n, odd, shift=1), work / f"{_tag(kind)}-b.json")
    (work / "reqs.yaml").write_text(REQS)
    (work / "flow.yaml").write_text(synth.flow_text(n, 64, stages="a", name=synth.h200_name))


def run(args: list[str], timeout: float) -> Run:
    """One command in its own process: wall, CPU, peak RSS, lines printed, exit status."""
    with tempfile.TemporaryFile() as out:
        t = time.perf_counter()
        env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "topomap", *args], stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT, env=env
        )
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                rc = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                proc.kill()
                _pid, status, usage = os.wait4(proc.pid, 0)
                rc = -1
                break
            time.sleep(0.02)
        wall = time.perf_counter() - t
        out.seek(0)
        lines = sum(1 for _ in out)
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, lines, rc)


def table(results: dict[tuple[int, str, str], Run], sizes: list[int], names: list[str]) -> tuple[str, list[str]]:
    """Rows per view and kind: wall / CPU / RSS / lines per size, CPU growth beside the host ratio."""
    head = f"{'view':20}{'cluster':11}" + "".join(f"{f'{n} hosts: wall / CPU s / GiB / lines':>44}" for n in sizes)
    head += "   growth (CPU)"
    lines = [head, "-" * len(head)]
    over: list[str] = []
    for name in names:
        for kind in KINDS:
            cells = []
            for n in sizes:
                r = results.get((n, kind, name))
                if r is None:
                    cells.append(f"{'—':>44}")
                    continue
                if r.rc == -1:
                    cells.append(f"{f'stopped at {r.wall:.0f} s ({r.cpu:.1f} CPU s)':>44}")
                else:
                    cells.append(f"{f'{r.wall:.2f} / {r.cpu:.2f} / {r.rss / 2**30:.2f} / {r.lines}':>44}")
            first = results.get((sizes[0], kind, name))
            growth = []
            for n in sizes[1:]:
                r = results.get((n, kind, name))
                if first and r and r.rc != -1 and first.rc != -1:
                    growth.append(f"×{r.cpu / first.cpu:.1f} / ×{n / sizes[0]:.1f}")
            lines.append(f"{name:20}{kind:11}" + "".join(cells) + "   " + ", ".join(growth))
            big = results.get((max(sizes), kind, name))
            if (
                big is not None
                and max(sizes) >= 10_000
                and (big.rc == -1 or big.cpu > GOAL_CPU_S or big.rss > GOAL_RSS)
            ):
                over.append(f"{name} ({kind}) at {max(sizes)} hosts: {big.cpu:.1f} CPU s, {big.rss / 2**30:.2f} GiB")
            if big is not None and kind == "alike" and not name.endswith("--json") and big.lines > SCREEN:
                over.append(f"{name} of {max(sizes)} identical hosts: {big.lines} lines (one screen: {SCREEN})")
            show = results.get((512, kind, name))
            if name == "show" and show is not None and show.wall > GOAL_SHOW_4096_GPUS_S:
                over.append(f"show ({kind}) at 512 hosts (4,096 GPUs): {show.wall:.2f} s (goal 2 s)")
    lines.append(
        "cells: wall s / CPU s (the whole process) / peak RSS GiB / lines printed; growth: CPU over the "
        "smallest size's, beside the host ratio"
    )
    return "\n".join(lines), over


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="topomap's cluster views at 512 to 10,000 hosts")
    ap.add_argument("--hosts", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--views", nargs="+", help="some of: show matrix cluster nccl check diff place report")
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    ap.add_argument("--json", action="store_true", help="the --json form of each view too")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a view is stopped")
    ap.add_argument("--work", help="keep the clusters in this folder (default: a temporary one)")
    opts = ap.parse_args(argv)
    sizes = sorted(opts.hosts)
    results: dict[tuple[int, str, str], Run] = {}
    names: list[str] = []
    with tempfile.TemporaryDirectory(prefix="topomap-views-") as tmp:
        base = Path(opts.work) if opts.work else Path(tmp)
        for n in sizes:
            work = base / str(n)
            if not (work / "flow.yaml").exists():
                print(f"{n} hosts: writing the clusters…", file=sys.stderr, flush=True)
                prepare(n, work)
            for kind in opts.kinds:
                for name, args in views(work, kind, opts.json).items():
                    if opts.views and name.split()[0] not in opts.views:
                        continue
                    if name not in names:
                        names.append(name)
                    r = results[(n, kind, name)] = run(args, opts.timeout)
                    print(f"{n} hosts, {kind}: {name}: {r}", file=sys.stderr, flush=True)
    text, over = table(results, sizes, names)
    print(text)
    for line in over:
        print(f"over the goal: {line}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
