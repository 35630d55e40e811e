"""Benchmarks for the work after the probe, at DESIGN.md's scale (128 hosts x 8 GPUs).

Run: python bench/run.py   (from the repository root, after `pip install -e .`)
Prints seconds per stage and per-item costs. No GPU needed: hosts are copies of a real sample.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from topomap.diff import diff_snapshots  # noqa: E402
from topomap.flow import bind, parse_flow  # noqa: E402
from topomap.graph import build, route  # noqa: E402
from topomap.mapping import gpus_of, map_flow  # noqa: E402
from topomap.model import encode_snapshot, load_snapshot  # noqa: E402

HOSTS = 128


def timed(label: str, fn, n: int = 1):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t
    per = f"  ({dt / n * 1e6:,.0f} µs each over {n})" if n > 1 else ""
    print(f"{label:44} {dt:8.3f} s{per}")
    return out


def main() -> int:
    base = load_snapshot(ROOT / "samples" / "snapshots" / "ibm-gx3d-h100-8gpu.json")
    tmp = Path(tempfile.mkdtemp())
    files = []
    for h in range(HOSTS):
        s = msgspec.structs.replace(base, host=msgspec.structs.replace(base.host, hostname=f"node{h:03d}"))
        f = tmp / f"node{h:03d}.json"
        f.write_bytes(encode_snapshot(s))
        files.append(f)
    snaps = timed(f"load + validate {HOSTS} snapshots", lambda: [load_snapshot(f) for f in files], HOSTS)
    from topomap.merge import merge

    cluster = timed(f"merge {HOSTS} snapshots", lambda: merge([(str(f), s) for f, s in zip(files, snaps)]))
    blob = encode_snapshot(cluster)
    timed(
        f"encode + decode the merged cluster ({len(blob) / 2**20:.1f} MiB)",
        lambda: msgspec.json.decode(encode_snapshot(cluster)),
    )
    topos = timed(f"build {HOSTS} topology graphs", lambda: [build(s) for s in snaps], HOSTS)
    t0 = topos[0]
    pairs = [(p.a, p.b) for p in base.pairs]
    timed(f"route every pair of one host ({len(pairs)})", lambda: [route(t0, a, b) for a, b in pairs], len(pairs))
    hosts = "\n".join(f"  n{h}: null" for h in range(HOSTS))
    steps = "\n".join(f"  s{h}: {{kind: compute, on: n{h}:gpus}}" for h in range(HOSTS))
    arrows = "\n".join(
        f"  - {{from: s{h}, to: s{h + 1}, pattern: all-to-all, volume: 1 GiB}}" for h in range(HOSTS - 1)
    )
    text = f"flow: bench\nhosts:\n{hosts}\nsteps:\n{steps}\narrows:\n{arrows}\n"
    flow = timed("parse a 128-host flow file", lambda: parse_flow(text, "bench.yaml"))
    bound = {f"n{h}": topos[h] for h in range(HOSTS)}
    timed("bind placements and expand arrows", lambda: bind(flow, gpus_of(bound)))
    fmap = timed(f"map {len(flow.arrows)} arrows", lambda: map_flow(flow, bound), len(flow.arrows))
    media = {a.medium for a in fmap.arrows}
    timed("diff two hosts (index matching)", lambda: diff_snapshots(snaps[0], snaps[1]))
    timed("diff two hosts (structure matching)", lambda: diff_snapshots(snaps[0], snaps[1], "structure"))
    print(f"media seen: {sorted(media)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
