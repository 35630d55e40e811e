"""The one comparison of two bandwidth figures (issue 30 item 1): every place in ``diff``, ``place``
and ``check`` that ranks figures or NVLink link counts asks :func:`compare_bandwidth`.

A figure is a range (:class:`~topomap.model.facts.Bandwidth`: exact, low = high; a lower bound over
parts not known, from the slowest part that could report its link count to the fastest). Two figures
rank only where their ranges do not overlap; otherwise the answer is "cannot tell", with the reason
and the command that settles it. A figure whose source is not the machine's (a static topology
file's placeholder, :data:`~topomap.model.facts.SOURCE_WORDS`) never ranks. Every other source is
treated alike: only the range decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from topomap.model.facts import SETTLE, SOURCE_WORDS, Bandwidth

Verdict = Literal["better-a", "better-b", "same", "cannot-tell"]

#: Two figures within this fraction of each other are the same figure (rounding in the sources).
SAME_FRACTION = 0.001


@dataclass(frozen=True)
class Comparison:
    """B against A: ``verdict``, the words that say why (both ranges where they decide), the command
    that settles a "cannot tell" (None where nothing would), and ``identical``: two inexact figures
    with the same range (equal in all both record, not confirmed equal)."""

    verdict: Verdict
    reason: str
    settle: str | None = None
    identical: bool = False

    @property
    def ranked(self) -> bool:
        return self.verdict in ("better-a", "better-b")

    @property
    def direction(self) -> Literal["better", "worse", "neutral", "unknown"]:
        """The verdict as diff says it for B: better, worse, neutral (same), unknown (cannot tell)."""
        return {"better-b": "better", "better-a": "worse", "same": "neutral"}.get(self.verdict, "unknown")  # type: ignore[return-value]


def compare_bandwidth(a: Bandwidth, b: Bandwidth, *, one_machine: bool = False) -> Comparison:
    """Rank figure B against figure A only where their ranges do not overlap.

    ``one_machine``: both are NVLink bundles of one machine whose per-link range is the same (the same
    evidence about the same GPUs: an NV12 and an NV6 of one unnamed box): they scale with their link
    counts, so the count ranks them. Across machines the same range may be two different parts (an
    H800's NV18 against an A100's NV12), and only the ranges decide."""
    if a.gbps is None or b.gbps is None:
        return _unknown(a, b)
    off = [x for x in (a, b) if x.source in SOURCE_WORDS]
    if off:
        which = "both figures" if len(off) == 2 else "A's figure" if off[0] is a else "B's figure"
        why = f"{a.range_text()} → {b.range_text()}: {which} {SOURCE_WORDS[off[0].source]}: not ranked"
        return Comparison("cannot-tell", why, _settle(a, b) or SETTLE["pcie_link_machine"])
    if one_machine and a.links and b.links and per_link_range(a) == per_link_range(b) and a.links != b.links:
        verdict: Verdict = "better-b" if b.links > a.links else "better-a"
        return Comparison(verdict, f"NV{a.links} → NV{b.links} links of one part ({a.range_text()} → {b.range_text()})")
    ha, hb = a.high, b.high
    if ha is not None and ha < b.gbps * (1 - SAME_FRACTION):
        return Comparison("better-b", f"{a.range_text()} → {b.range_text()}")
    if hb is not None and hb < a.gbps * (1 - SAME_FRACTION):
        return Comparison("better-a", f"{a.range_text()} → {b.range_text()}")
    if a.exact and b.exact:
        return Comparison("same", f"{a.range_text()} on both")
    identical = _close(a.gbps, b.gbps) and (ha == hb or (ha is not None and hb is not None and _close(ha, hb)))
    why = f"{a.range_text()} and {b.range_text()} overlap: either may be faster"
    if identical:
        why = f"{a.range_text()} on both: equal in what both record, not confirmed equal"
    return Comparison("cannot-tell", why, _settle(a, b), identical)


def meets(figure: Bandwidth, need_gbps: float) -> Comparison:
    """Whether a figure reaches ``need_gbps`` (a rule's minimum), by :func:`compare_bandwidth` against
    that exact figure: "better-b" where all of the range reaches it (a lower bound at the minimum
    reaches it too), "better-a" where none does, "cannot-tell" where the range spans it."""
    need = Bandwidth(need_gbps, "spec", "the minimum asked")
    cmp = compare_bandwidth(need, figure)
    if cmp.verdict in ("better-b", "better-a") or figure.gbps is None or figure.source in SOURCE_WORDS:
        return cmp
    if figure.gbps >= need_gbps * (1 - SAME_FRACTION):  # all of it at or above the minimum
        return Comparison("better-b", f"{figure.range_text()} ≥ {need_gbps:g} GB/s")
    return cmp


def _unknown(a: Bandwidth, b: Bandwidth) -> Comparison:
    if a.gbps is None and b.gbps is None:
        return Comparison("cannot-tell", "bandwidth unknown on both", _settle(a, b), identical=True)
    return Comparison("cannot-tell", f"bandwidth recorded on one lot only ({a.text()} → {b.text()})", _settle(a, b))


def _settle(a: Bandwidth, b: Bandwidth) -> str | None:
    """The commands that would settle either side, each once."""
    found = list(dict.fromkeys(x for x in (a.settle, b.settle) if x))
    return "; ".join(found) or None


def per_link_range(x: Bandwidth) -> tuple[float, float | None]:
    """A bundle's figure per link (low, high; high None when unbounded): two bundles of one machine
    with the same per-link range rest on the same evidence about the same part."""
    high, n = x.high, x.links or 1
    return round((x.gbps or 0.0) / n, 6), round(high / n, 6) if high is not None else None


def _close(x: float, y: float) -> bool:
    return abs(x - y) <= max(x, y) * SAME_FRACTION
