"""A small real workload for the shipped run records: one worker process per visible card.

Splits ITEMS items over the cards named in CUDA_VISIBLE_DEVICES (one worker each; no GPU is
used: the work is on the CPU), each worker holding a "model shard" of SHARD_MIB / cards in
memory. Writes one file per item and total.txt (a sum whose last digits depend on the order
of summation, i.e. on the arrangement) under $WORK_OUT. Each worker writes its pid to
$WORK_STATE/gpu<card>.pid so the sample maker's fake NVML can report it on that card.
"""

from __future__ import annotations

import math
import os
import sys
from multiprocessing import Process, Queue
from pathlib import Path

ITEMS = 8
SHARD_MIB = 512


def item_value(n: int) -> float:
    """A CPU-bound number per item; later items weigh more (values span seven orders of magnitude)."""
    return math.fsum(math.sin(k * (n + 1) * 1e-3) / (k + 1) for k in range(1_500_000)) * (n + 1) ** 7


def worker(card: str, items: list[int], cards: int, out: Path, state: Path, q: Queue) -> None:  # type: ignore[type-arg]
    (state / f"gpu{card}.pid").write_text(str(os.getpid()))
    shard = bytearray(SHARD_MIB * 2**20 // cards)
    for i in range(0, len(shard), 4096):
        shard[i] = 1  # touch every page: resident, as weights copied to a card would be
    partial = 0.0
    for n in items:
        v = item_value(n)
        (out / f"item-{n}.txt").write_text(f"item {n}: {v!r}\n")
        partial += v
    q.put(partial)


def main() -> int:
    cards = [c for c in os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",") if c.strip()]
    out, state = Path(os.environ["WORK_OUT"]), Path(os.environ["WORK_STATE"])
    out.mkdir(parents=True, exist_ok=True)
    q: Queue = Queue()  # type: ignore[type-arg]
    procs = [
        Process(target=worker, args=(c, list(range(k, ITEMS, len(cards))), len(cards), out, state, q))
        for k, c in enumerate(cards)
    ]
    for p in procs:
        p.start()
    partials = [q.get() for _ in procs]
    for p in procs:
        p.join()
    total = 0.0
    for v in partials:
        total += v
    (out / "total.txt").write_text(f"total over {ITEMS} items: {total!r}\n")
    return 0 if all(p.exitcode == 0 for p in procs) else 1


if __name__ == "__main__":
    sys.exit(main())
