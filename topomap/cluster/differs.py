"""What differs between two values of one cluster fact, in words: the items (per GPU, per NIC, per GPU
pair) that differ, each beside the usual value (``topomap cluster``'s outliers, the views' groups)."""

from __future__ import annotations

from collections.abc import Callable

Show = Callable[[object], str]


def differs_text(value: object, common: object, show: Show, whose: str = "most hosts") -> str:
    """What differs from the common value: the items (per GPU, per NIC, per GPU pair) that differ,
    where the value is a tuple of records keyed by their first field (by all but their last where
    the first repeats: an NVLink record is (gpuA, gpuB, links)); else the whole value. ``whose``
    names who has the common value ("most hosts", "the 594 alike")."""
    if _records(value) and _records(common):
        mine, usual = _keyed(value), _keyed(common)  # type: ignore[arg-type]
        lines = []
        for k in [*mine, *(k for k in usual if k not in mine)]:
            a, b = mine.get(k), usual.get(k)
            if a == b:
                continue
            name = "–".join(map(str, k)) if isinstance(k, tuple) else k
            here = show((a,)) if a is not None else f"{name} absent"
            there = show((b,)) if b is not None else f"no {name}"
            lines.append(f"{here} ({whose}: {there})")
        if lines:
            return "; ".join(lines)
    return f"{show(value)} ({whose}: {show(common)})"


def _keyed(records: tuple[tuple[object, ...], ...]) -> dict[object, tuple[object, ...]]:
    """Records by their first field, or by all but their last where the first repeats."""
    firsts = [r[0] for r in records]
    if len(set(firsts)) == len(firsts):
        return {r[0]: r for r in records}
    return {r[:-1]: r for r in records}


def _records(v: object) -> bool:
    return isinstance(v, tuple) and bool(v) and all(isinstance(r, tuple) and r for r in v)
