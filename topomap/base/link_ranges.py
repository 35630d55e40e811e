"""NVLink figures as ranges over the parts a GPU could be (issue 30 item 1), from the parts table.

A known part's ``count`` links carry one figure (:meth:`~topomap.base.parts.GpuPart.bundle`). A GPU
whose model is not known could be any part able to report that many links: its figure is the range
from the slowest such part to the fastest (``NV18``: 200 GB/s on an H800 to 900 on a B200), narrowed
by what the source does record (compute capability, NVLink generation, a printed per-link rate).
"""

from __future__ import annotations

from dataclasses import dataclass

from topomap.base.parts import SIGNALLING, GpuPart, nvlink_parts, printed_rate

#: Two rates within this fraction are the same printed figure (nvidia-smi rounds 26.5625 to 26.562).
_SAME = 0.005


@dataclass(frozen=True)
class LinkRange:
    """``count`` links per direction, GB/s, over every candidate part: ``low`` from ``slowest``, ``high``
    from ``fastest`` (the same part and figure when all agree)."""

    count: int
    low: float
    high: float
    slowest: GpuPart
    fastest: GpuPart
    parts: tuple[GpuPart, ...]

    @property
    def exact(self) -> bool:
        return abs(self.high - self.low) <= self.high * 1e-9


def candidates(
    count: int, cc: str | None = None, generation: int | None = None, rate: float | None = None
) -> tuple[GpuPart, ...]:
    """The parts that can report ``count`` links (a degraded part reports fewer than it has), of this
    compute capability, NVLink generation and data rate per link where given."""
    return tuple(
        p
        for p in nvlink_parts()
        if 0 < count <= p.full_links
        and (cc is None or p.cc == cc)
        and (generation is None or p.nvlink_generation == generation)
        and (rate is None or p.gbps_per_link == rate)
    )


def link_range(
    count: int, cc: str | None = None, generation: int | None = None, rate: float | None = None
) -> LinkRange | None:
    """``count`` links of a GPU whose model is not known: from the slowest candidate part to the
    fastest (:func:`candidates`); None when no part can report that many."""
    figures = [(p, b) for p in candidates(count, cc, generation, rate) if (b := p.bundle(count)) is not None]
    if not figures:
        return None
    slowest = min(figures, key=lambda x: x[1][0])
    fastest = max(figures, key=lambda x: x[1][1])
    return LinkRange(count, slowest[1][0], fastest[1][1], slowest[0], fastest[0], tuple(p for p, _ in figures))


@dataclass(frozen=True)
class PrintedRate:
    """A per-link rate a source printed, read against the table: the data rate per direction it
    stands for, the NVLink generation, and whether the printed figure was the signalling rate."""

    printed: float
    data_gbps: float
    generation: int | None
    signalling: bool


def read_printed_rate(printed: float, part: GpuPart | None = None, generation: int | None = None) -> PrintedRate:
    """What a printed per-link rate (``nvidia-smi nvlink -s``, NVML's link speed, a file's) is: the
    part's (or, the part unknown, the parts') data rate where it is that rate or its signalling rate
    (26.562 → 25 on NVLink 4); the generation where one fits; where it matches no known rate (or
    several data rates), taken as printed, a data rate."""
    pool = [part] if part is not None and part.has_nvlink else list(nvlink_parts())
    found: set[tuple[float, int, bool]] = set()
    for p in pool:
        gen, data, signal = p.nvlink_generation, p.gbps_per_link, printed_rate(p)
        if gen is None or data is None or signal is None or (generation is not None and gen != generation):
            continue
        if SIGNALLING.get(gen, 1.0) != 1.0 and _close(printed, signal):
            found.add((data, gen, True))
        elif _close(printed, data):
            found.add((data, gen, False))
    rates = {d for d, _, _ in found}
    if len(rates) != 1:
        return PrintedRate(printed, printed, generation, False)
    gens = {g for _, g, _ in found}
    return PrintedRate(printed, rates.pop(), gens.pop() if len(gens) == 1 else generation, any(s for *_, s in found))


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= b * _SAME
