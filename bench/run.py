"""Scale benchmark: the work after the probe on synthetic clusters of 16, 128, 512 and 1024
hosts × 8 GPUs (bench/synth.py), stage by stage, with time and growth per stage.

Run: python bench/run.py                    (from the repository root, after `pip install -e .`)
     python bench/run.py --hosts 16 128     (other sizes; --repeat N keeps the fastest of N runs)
     python bench/run.py --no-scale         (without the 1,024 / 10,000-host run of bench/scale.py)
     python bench/run.py --no-views         (without the views of bench/views.py)
     python bench/run.py --no-limits        (without bench/memory.py and bench/place.py)

After this table, bench/scale.py runs merge, the cluster report and a flow bound to the merged
cluster at 1,024 and 10,000 hosts, each stage in its own process, with time and peak memory; then
bench/perf.py times `topomap nccl CLUSTER --perf` at 16 and 1,024 hosts; then bench/views.py runs
each view of a merged cluster (show, matrix, cluster, nccl, check, diff, place, report) at 512,
1,024 and 10,000 hosts, alike and with 1 % of the hosts differing, each a real
`python -m topomap` process: wall and CPU seconds, peak memory, lines printed, growth.

Stages: load the per-host snapshots; merge them (with the consistency checks); map a flow of
10,000 arrows over the merged cluster (parse, bind, map); diff two clusters (the second with
changes); render the collapsed cluster diagram (DOT text, then SVG when Graphviz is installed).
"(skipped)": SVG without Graphviz.
Growth is the time ratio to the previous size beside the host ratio: "×8.3 / ×8" is about
linear. Goal (issue 14): at 1024 hosts each stage under 2 s, render under 5 s.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import msgspec  # noqa: E402
import synth  # noqa: E402

from topomap.model.codec import encode_snapshot, load_snapshot

ARROWS = 10_000
SIZES = (16, 128, 512, 1024)
GOAL_S = {"render: svg": 5.0}
MERGED_BIND_MAX = 1024  # hosts (binding to a merged file was quadratic before the cluster was indexed once)
T = TypeVar("T")


REPEAT = [1]  # runs per stage; the fastest is kept (a shared machine only ever adds time)


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    best = float("inf")
    for _ in range(REPEAT[0]):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def stages(hosts: int, work: Path, arrows: int = ARROWS) -> dict[str, float | None]:
    """Seconds per stage for one cluster size (None: stage skipped)."""
    from topomap.api import bind_snapshots
    from topomap.diff import diff_clusters
    from topomap.flow import map_flow, read_flow
    from topomap.graph import build
    from topomap.model.merge import merge
    from topomap.model.snapshot import hosts_of
    from topomap.render import dot as dotr

    out: dict[str, float | None] = {}
    files = synth.write_hosts(hosts, work / "hosts")
    out["load"], snaps = timed(lambda: [load_snapshot(f) for f in files])
    out["merge"], cluster = timed(lambda: merge([(str(f), s) for f, s in zip(files, snaps)]))
    cluster_file = work / "cluster.json"
    cluster_file.write_bytes(encode_snapshot(cluster))
    flow_file = work / "flow.yaml"
    flow_file.write_text(synth.flow_text(hosts, arrows))
    out["map: parse flow"], flow = timed(lambda: read_flow(flow_file))
    per_host = [f"{synth.host_name(i)}={f}" for i, f in enumerate(files)]
    out["map: bind hosts"], topos = timed(lambda: bind_snapshots(flow, per_host))
    # Binding the flow to the merged file reloads it per flow host (topomap.api.bind_snapshots): only
    # measured where that finishes in reasonable time.
    out["map: bind merged file"] = (
        timed(lambda: bind_snapshots(flow, [str(cluster_file)]))[0] if hosts <= MERGED_BIND_MAX else None
    )
    out["map: map arrows"], fmap = timed(lambda: map_flow(flow, topos))
    print(f"{hosts} hosts: {len(fmap.arrows)} arrows mapped", file=sys.stderr, flush=True)
    other = _changed(cluster)
    out["diff two clusters"], _ = timed(lambda: diff_clusters(cluster, other, "index"))
    out["render: build graphs"], built = timed(lambda: [build(h) for h in hosts_of(cluster)])

    def dot_text() -> str:
        drawn, names = dotr.group_identical(built)
        return dotr.topology_dot(drawn, names=names)

    out["render: dot text"], text = timed(dot_text)
    if shutil.which("dot"):
        out["render: svg"], _ = timed(lambda: dotr.pipe(text, "svg"))
    else:
        out["render: svg"] = None
    return out


def _changed(cluster: Any) -> Any:
    """The same cluster with every 50th host's GPU links cut from 18 to 12 and one host gone."""
    members = []
    for i, m in enumerate(cluster.members[:-1]):
        if i % 50 == 0:
            pairs = [msgspec.structs.replace(p, nvlinks=12, path="NV12") if p.nvlinks else p for p in m.pairs]
            m = msgspec.structs.replace(m, pairs=pairs)
        members.append(m)
    return msgspec.structs.replace(cluster, members=members)


def table(results: dict[int, dict[str, float | None]]) -> str:
    sizes = sorted(results)
    names = list(results[sizes[0]])
    head = f"{'stage':22}" + "".join(f"{f'{n} hosts':>16}" for n in sizes)
    rows = [head, "-" * len(head)]
    for name in names:
        cells = []
        for k, n in enumerate(sizes):
            v = results[n][name]
            if v is None:
                cells.append(f"{'(skipped)':>16}")
                continue
            cell = f"{v:7.3f} s"
            prev = results[sizes[k - 1]][name] if k else None
            if prev:
                cell += f" ×{v / prev:<4.1f}"
            else:
                cell += " " * 6
            cells.append(f"{cell:>16}")
        rows.append(f"{name:22}" + "".join(cells))
    if len(sizes) > 1:
        ratios = " ".join(f"×{b / a:g}" for a, b in itertools.pairwise(sizes))
        rows.append(f"growth: time ratio to the previous size; host ratios {ratios}")
    return "\n".join(rows)


def verdict(results: dict[int, dict[str, float | None]]) -> list[str]:
    """Stages over the goal at the largest size measured, if that is 1024 hosts or more."""
    n = max(results)
    if n < 1024:
        return []
    return [
        f"{name}: {v:.2f} s at {n} hosts (goal {GOAL_S.get(name, 2.0):g} s)"
        for name, v in results[n].items()
        if v is not None and v > GOAL_S.get(name, 2.0)
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="topomap scale benchmark (seconds per stage, growth per size)")
    ap.add_argument("--hosts", type=int, nargs="+", default=list(SIZES), help="cluster sizes (hosts × 8 GPUs)")
    ap.add_argument("--arrows", type=int, default=ARROWS, help="arrows in the mapped flow")
    ap.add_argument("--repeat", type=int, default=3, help="runs per stage, fastest kept")
    ap.add_argument("--no-scale", action="store_true", help="skip bench/scale.py (1,024 and 10,000 hosts)")
    ap.add_argument("--no-views", action="store_true", help="skip bench/views.py (the views at 512 to 10,000 hosts)")
    ap.add_argument(
        "--no-limits", action="store_true", help="skip bench/memory.py and bench/place.py (maxima, searches)"
    )
    opts = ap.parse_args(argv)
    REPEAT[0] = max(1, opts.repeat)
    results: dict[int, dict[str, float | None]] = {}
    with tempfile.TemporaryDirectory(prefix="topomap-bench-") as tmp:
        for n in sorted(opts.hosts):
            results[n] = stages(n, Path(tmp) / str(n), opts.arrows)
    print(table(results))
    over = verdict(results)
    for line in over:
        print(f"over the goal: {line}")
    scale_rc = 0
    if not opts.no_scale:
        import scale  # bench/scale.py: its own processes per stage

        print()
        scale_rc = scale.main([])
        import perf  # bench/perf.py: `topomap nccl CLUSTER --perf` at 1,024 hosts (issue 32)

        print()
        scale_rc |= perf.main(["--hosts", "16", "1024"])
    views_rc = 0
    if not opts.no_views:
        import views  # bench/views.py: each view of a cluster in its own process

        print()
        views_rc = views.main([])
    if not opts.no_limits:
        import memory  # bench/memory.py: peak memory at every documented maximum (issue 36)
        import place  # bench/place.py: the placement search on inputs that explode a naive one

        print()
        memory.main([])
        print()
        place.main([])
    return 1 if over or scale_rc or views_rc else 0


if __name__ == "__main__":
    sys.exit(main())
