"""The placement search on inputs that explode a naive search (issue 36 item 2): `nvidia-smi topo -m`
pastes of 32, 64 and 128 GPUs whose pairs are drawn at random from mixed links (all of NV1–NV18 and
PIX…SYS; or only NV1, NV18, PIX and SYS, where many groups tie on the slowest link), `place --gpus K`
for several K, and `check` with `gpu_groups: {k: 16, groups: 2}` on 32 GPUs.

Run: python bench/place.py              (from the repository root)
     python bench/place.py --gpus 64    (one size)

Per case: wall seconds of the search (the graph and the pair ranks built before it, timed apart),
the steps it took of its limit, and whether it finished (exact) or stopped (the best group found,
its slowest link proven). Before issue 36, `--gpus 8` on the 64-GPU four-link matrix ran 93 s and
`--gpus 6` on the mixed one 31 s; the goal is seconds whatever the input.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from topomap.check import check, parse_requirements, snapshot_lots  # noqa: E402
from topomap.graph import build  # noqa: E402
from topomap.importers import import_text  # noqa: E402
from topomap.place.candidates import candidates  # noqa: E402
from topomap.place.search import SEARCH_LIMIT, build_space, search  # noqa: E402

ALL = [f"NV{k}" for k in range(1, 19)] + ["PIX", "PXB", "PHB", "NODE", "SYS"]
FOUR = ["NV1", "NV18", "PIX", "SYS"]


def topo_m(n: int, seed: int, codes: list[str]) -> str:
    rnd = random.Random(seed)
    m = [["X"] * n for _ in range(n)]
    for i, j in itertools.combinations(range(n), 2):
        m[i][j] = m[j][i] = rnd.choice(codes)
    rows = ["\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity"]
    rows += [f"GPU{i}\t" + "\t".join(" X " if c == "X" else c for c in m[i]) + "\t0-63\t0" for i in range(n)]
    return "\n".join(rows) + "\n\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n"


def place_cases(n: int) -> None:
    for name, codes in (("mixed", ALL), ("four links", FOUR)):
        t = time.perf_counter()
        topo = build(import_text(topo_m(n, n, codes), f"{n}-{name}.txt"))
        cands, _ = candidates(topo, set())
        space = build_space(topo, cands, "tp", False)
        built = time.perf_counter() - t
        for k in (4, 6, 8, 16):
            t = time.perf_counter()
            found = search(space, k)
            took = time.perf_counter() - t
            how = (
                "exact"
                if found.complete
                else "stopped (best found" + (", slowest proven)" if found.slowest_proven else ")")
            )
            print(f"  {n:4d} GPUs {name:10s} --gpus {k:2d}: {took:6.2f} s  {found.steps:>7,} steps  {how}"
                  f"   (graph and ranks {built:.2f} s)")  # fmt: skip


def groups_case() -> None:
    snap = import_text(topo_m(32, 5, ["NV1", "NV4", "NV18", "PIX", "PHB", "SYS"]), "32.txt")
    reqs, _ = parse_requirements("requirements:\n  - gpu_groups: {k: 16, groups: 2, min: PHB}\n", "r.yaml")
    t = time.perf_counter()
    result = check(reqs, snapshot_lots([("lot", snap)]), None).results[0]
    print(f"  check gpu_groups {{k: 16, groups: 2}} on 32 GPUs: {time.perf_counter() - t:.2f} s, {result.status}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, nargs="*", default=[32, 64, 128])
    args = ap.parse_args(argv)
    print(f"placement search (limit {SEARCH_LIMIT:,} steps)")
    for n in args.gpus:
        place_cases(n)
    groups_case()


if __name__ == "__main__":
    main()
