"""A bound on a collective's bus bandwidth: GB/s with its range, what it is in words, where its number
comes from, and — when a fact it needs is not recorded — what is missing and the command that settles it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from topomap.collective.consts import Efficiency

#: Where a figure's number comes from: NCCL's own constants or this model's efficiencies (``model``), or a
#: measurement of this machine (``measured``). Never ``spec``: every bound is a rate times an efficiency
#: (a NIC's line rate × its family's 0.96, × a share of the data), a range this model estimates, not a
#: datasheet figure (docs/design/honest-numbers.md).
Origin = Literal["model", "measured"]
BoundKind = Literal["nvlink", "nvls", "pcie-p2p", "shm", "network", "mnnvl", "unknown"]


@dataclass(frozen=True)
class Bound:
    """One bound, in busbw units (GB/s per rank), or unknown (``gbps`` None) with what would settle it."""

    kind: BoundKind
    gbps: float | None
    low: float | None
    high: float | None
    words: str
    origin: Origin = "model"
    missing: tuple[str, ...] = ()
    settle: tuple[str, ...] = ()
    assumed: tuple[str, ...] = ()
    least: float | None = None  # unknown: the lowest figure the missing facts allow (None: not bounded)

    @property
    def known(self) -> bool:
        return self.gbps is not None

    def scaled(self, factor: float, words: str | None = None) -> Bound:
        """The same bound times ``factor`` (range too)."""
        return replace(
            self,
            gbps=None if self.gbps is None else self.gbps * factor,
            low=None if self.low is None else self.low * factor,
            high=None if self.high is None else self.high * factor,
            least=None if self.least is None else self.least * factor,
            words=words or self.words,
        )

    def with_range(self, low: float | None, high: float | None) -> Bound:
        return replace(self, low=low, high=high)


def bound(kind: BoundKind, base: float, eff: Efficiency, words: str, origin: Origin = "model") -> Bound:
    """``base`` GB/s at efficiency ``eff``: the figure and its range."""
    return Bound(kind, base * eff.value, base * eff.low, base * eff.high, words, origin)


def unknown(kind: BoundKind, words: str, missing: tuple[str, ...], settle: tuple[str, ...]) -> Bound:
    return Bound(kind, None, None, None, words, "model", missing, settle)


#: an unknown tier that can lower the figure by at most this much does not make it unknown: the figure is
#: then the lower of the two, and what was not recorded is said under ``assumed``
SMALL_EFFECT = 0.9


def tightest(bounds: list[Bound]) -> Bound:
    """The bound that holds: the lowest known one; unknown when an unknown one could be lower — unless the
    missing facts allow nothing under :data:`SMALL_EFFECT` of the lowest known figure (its ``least``), where
    the figure is the lower of the two. The range: the lowest of the lows and of the highs; what is missing
    and settles it, gathered from every bound that still matters."""
    known = [b for b in bounds if b.known]
    if known:
        floor = min(b.gbps for b in known if b.gbps is not None)
        harmless = [b for b in bounds if not b.known and b.least is not None and b.least >= SMALL_EFFECT * floor]
        if harmless:
            return _settled(known, harmless, [b for b in bounds if not b.known and b not in harmless])
    missing = tuple(dict.fromkeys(m for b in bounds for m in b.missing))
    settle = tuple(dict.fromkeys(s for b in bounds for s in b.settle))
    assumed = tuple(dict.fromkeys(a for b in bounds for a in b.assumed))
    if not known:
        return _all_unknown(bounds, missing, settle, assumed)
    low_one = min(known, key=lambda b: b.gbps or 0.0)
    lows = [b.low for b in known if b.low is not None]
    highs = [b.high for b in [*known, *(b for b in bounds if not b.known)] if b.high is not None]
    best = replace(
        low_one,
        low=min(lows) if lows else low_one.low,
        high=min(highs) if highs else low_one.high,
        missing=missing,
        settle=settle,
        assumed=assumed,
    )
    if any(not b.known for b in bounds):
        leasts = [b.least for b in bounds if not b.known]
        least = min(leasts) if all(x is not None for x in leasts) else None  # type: ignore[type-var]
        return replace(best, gbps=None, low=None, least=None if least is None else min(least, best.gbps or least))
    return best


def _all_unknown(
    bounds: list[Bound], missing: tuple[str, ...], settle: tuple[str, ...], assumed: tuple[str, ...]
) -> Bound:
    """No tier's figure is known: the range still holds for every part the facts allow — no higher than
    the lowest tier's high (the bottleneck named is that tier), no lower than the lowest of the lows
    (none where a tier has no low)."""
    if not bounds:
        return unknown("unknown", "nothing recorded", missing, settle)
    highs = [b.high for b in bounds if b.high is not None]
    lows = [b.low for b in bounds]
    leasts = [b.least for b in bounds]
    first = min(bounds, key=lambda b: b.high if b.high is not None else float("inf"))
    return replace(
        first,
        low=min(x for x in lows if x is not None) if all(x is not None for x in lows) else None,
        high=min(highs) if highs else None,
        least=min(x for x in leasts if x is not None) if all(x is not None for x in leasts) else None,
        missing=missing,
        settle=settle,
        assumed=assumed,
    )


def _settled(known: list[Bound], harmless: list[Bound], rest: list[Bound]) -> Bound:
    """Known bounds with unknown ones that cannot matter much: each unknown counts at its lowest figure."""
    note = f"not recorded, within {1 - SMALL_EFFECT:.0%} of the figure: "
    as_known = [
        replace(
            b,
            gbps=b.least,
            low=b.least if b.low is None else b.low,
            missing=(),
            settle=(),
            assumed=(*b.assumed, *(note + m for m in b.missing)),
        )
        for b in harmless
    ]
    return tightest([*known, *as_known, *rest])
