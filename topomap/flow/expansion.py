"""How many concrete arrows a flow becomes, counted before any is built, and the cap on them.

One arrow of a flow file joins every replica of its source steps to every replica of its target
steps (all-to-all), or replica to replica (pairwise); an ``exchange`` step on k GPUs joins each pair of
its replicas. An 8 KB flow whose one all-to-all arrow joins two lists of 100 steps on ``lot:gpus`` of a
16-GPU lot became 2.56 million arrows: `map` ran 84 s, reached 4.1 GB and ended in a MemoryError
(issue 36 item 1). Every count here is exact and made from the placements alone, so a flow past the
cap is refused in one line naming the file, the line and the arrow, before anything is built.

Why 65,536: it is the all-to-all of the largest host topomap reads (256 GPUs, ``gpus`` → ``gpus``),
and 6.5 times the ~10,000 arrows of the 10,000-host benchmark flow (bench/scale.py). Mapped on this
project's 2-core machine, 50,000 arrows took 6 s for `map` and 16 s and 0.4 GB for `map --json`.
"""

from __future__ import annotations

from typing import NoReturn

from topomap.flow.spec import Flow, FlowError, names

#: The most concrete arrows (between step replicas) one flow arrow, one exchange step, or the whole
#: flow may expand to.
MAX_ARROWS = 65_536
_HINT = (
    "topomap maps at most 65,536 arrows between replicas: split the arrow into fewer steps, or place "
    "the steps on fewer GPUs (one representative step stands for identical ones)"
)


def _ends(flow: Flow, i: int) -> str:
    """Arrow ``i`` (0-based) as a message names it: ``arrow 3 (a0, a1, … 100 steps → b0, …)``."""
    a = flow.spec.arrows[i]

    def side(x: str | list[str]) -> str:
        steps = names(x)
        shown = ", ".join(s[:40] for s in steps[:2])
        return shown + (f", … {len(steps):,} steps" if len(steps) > 2 else "")

    return f"arrow {i + 1} ({side(a.src)} → {side(a.dst)})"


def check_step_pairs(flow: Flow) -> None:
    """Each arrow's step pairs (``len(from) × len(to)``) within :data:`MAX_ARROWS`: every step has a
    replica, so an arrow has at least as many concrete arrows as step pairs. Asked when the file is
    read, before the cycle check builds a graph of those pairs."""
    total = 0
    for i, a in enumerate(flow.spec.arrows):
        pairs = len(names(a.src)) * len(names(a.dst))
        total += pairs
        if pairs > MAX_ARROWS or total > MAX_ARROWS:
            _refuse(flow, i, pairs, total, "step pairs")


def check_expansion(flow: Flow) -> None:
    """The concrete arrows of every flow arrow and exchange step, counted from the resolved placements
    (``flow.steps[…].placements``) before any is built; past :data:`MAX_ARROWS` for one of them or for
    the whole flow, a :class:`FlowError` naming the file, line and arrow (or step)."""
    total = 0
    for i, a in enumerate(flow.spec.arrows):
        count = 0
        for s in names(a.src):
            ks = len(flow.steps[s].placements)
            for d in names(a.dst):
                kd = len(flow.steps[d].placements)
                pairwise = a.pattern == "pairwise" or (a.pattern == "auto" and ks == kd and ks > 1)
                count += ks if pairwise else ks * kd
        total += count
        if count > MAX_ARROWS or total > MAX_ARROWS:
            _refuse(flow, i, count, total, "arrows between replicas")
    for st in flow.steps.values():
        k = len(st.placements)
        count = k * (k - 1) // 2 if st.kind == "exchange" else 0
        total += count
        if count > MAX_ARROWS or total > MAX_ARROWS:
            where = f"{flow.path}:{flow.line(f'$.steps.{st.name}')}: exchange step {st.name[:40]}"
            alone = f"exchanges among {k:,} replicas: {count:,} arrows between replicas"
            raise FlowError(f"{where} {alone}, {_past(count, total)}", hint=_HINT)


def _past(count: int, total: int) -> str:
    if count > MAX_ARROWS:
        return f"more than the {MAX_ARROWS:,} one arrow may expand to"
    return f"which brings the flow to {total:,}, more than the {MAX_ARROWS:,} in all"


def _refuse(flow: Flow, i: int, count: int, total: int, what: str) -> NoReturn:
    where = f"{flow.path}:{flow.line(f'$.arrows[{i}]')}: {_ends(flow, i)}"
    raise FlowError(f"{where} expands to {count:,} {what}, {_past(count, total)}", hint=_HINT)
