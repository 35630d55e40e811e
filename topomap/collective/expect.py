"""The busbw each collective should reach at large messages on a lot, with its range, the algorithm NCCL
likely picks for the release, the bottleneck in words and where its number comes from.

Why a bound model and not NCCL's tuning model: ``ncclTopoTuneModel`` (src/graph/tuning.cc) ranks
algorithms from the channel search's per-channel speeds; it is not calibrated as an absolute predictor (a
maintainer thread shows its tree estimate well below the measured figure, and its NVLS figure for 8x H100
is far above the ~480 GB/s measured). So the figure here is the tightest of the bounds the collective's
data crosses — the fabric or PCIe inside each host, the NICs between hosts, each GPU's own PCIe link — at
NCCL's own link constants times efficiencies from maintainers' statements; NCCL's release history decides
which algorithm applies (NVLS 2.17, NVLSTree 2.18, PAT 2.23, multi-node NVLink 2.20), and on two nodes the
tree's "aberration" (kiskra-nvidia, nccl-tests#309: an ideal case for the tree) is the default figure,
with the ring's below it in the range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Final

from topomap.collective.bound import Bound, Origin, tightest, unknown
from topomap.collective.consts import (
    BASE_LAT_US,
    FILL_POWER,
    FILL_US,
    HW_LAT_US,
    NVLS_GAIN,
    NVLS_TREE_SINCE,
    PAT_SINCE,
    TREE_CHAIN,
    since,
)
from topomap.collective.host import NVLS_SETTLE
from topomap.collective.lot import LotPlan, one_clique
from topomap.importers.nccl_tests_id import bus_factor

COLLECTIVES: Final = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv", "broadcast", "reduce")


@dataclass(frozen=True)
class Expectation:
    """What one collective should reach: busbw in GB/s (None when a fact it needs is not recorded), its
    range, NCCL's likely algorithm, the bottleneck and its origin, and what settles an unknown."""

    collective: str
    hosts: int
    gpus_per_host: int
    ranks: int
    busbw_gbps: float | None
    low_gbps: float | None
    high_gbps: float | None
    algorithm: str | None
    bottleneck: str
    bottleneck_kind: str
    origin: Origin
    settle: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    assumed: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    latency_us: float = 0.0
    tier: str = "nvlink"  # where the latency is paid: nvlink, pci or net
    ring_gbps: float | None = None  # the ring's own figure where NCCL may pick another algorithm (or the ring)

    def busbw_at(self, size_bytes: int) -> float | None:
        """busbw at one message size (latency-bound below the peak): S ÷ (latency + S ÷ algbw), × the bus
        factor; None when the peak is not known."""
        if self.busbw_gbps is None or size_bytes <= 0:
            return None
        factor = bus_factor(self.collective, self.ranks)
        if factor <= 0:
            return None
        algbw = self.busbw_gbps / factor
        fill = FILL_US * (size_bytes / 2**20) ** FILL_POWER
        seconds = (self.latency_us + fill) * 1e-6 + size_bytes / (algbw * 1e9)
        return float(factor * size_bytes / seconds / 1e9)

    def to_json(self) -> dict[str, Any]:
        r = _round
        return {
            "collective": self.collective,
            "hosts": self.hosts,
            "gpus_per_host": self.gpus_per_host,
            "ranks": self.ranks,
            "busbw_gbps": r(self.busbw_gbps),
            "low_gbps": r(self.low_gbps),
            "high_gbps": r(self.high_gbps),
            "algorithm": self.algorithm,
            "bottleneck": self.bottleneck,
            "bottleneck_kind": self.bottleneck_kind,
            "origin": self.origin,
            "settle": list(self.settle),
            "missing": list(self.missing),
            "assumed": list(self.assumed),
            "notes": list(self.notes),
        }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


@dataclass
class _Parts:
    """The figures of the job's tiers, taken over its host shapes (the slowest host decides)."""

    ring: Bound | None
    nvls: Bound | None
    nvls_can: str
    nvls_why: str
    p2p: Bound | None
    net: Bound | None
    single: Bound | None
    mnnvl: bool
    notes: list[str] = field(default_factory=list)


def _parts(p: LotPlan) -> _Parts:
    rings = [s.intra.ring for s in p.shapes if s.intra.ring is not None]
    p2ps = [s.intra.p2p for s in p.shapes if s.intra.p2p is not None]
    cans = {s.intra.nvls_can for s in p.shapes}
    can = "no" if "no" in cans else "unknown" if "unknown" in cans else "yes" if cans == {"yes"} else "no"
    why = next((s.intra.nvls_why for s in p.shapes if s.intra.nvls_can == can), "")
    nvls_b = [s.intra.nvls for s in p.shapes if s.intra.nvls is not None]
    nets = [s.network.node for s in p.shapes if s.network is not None]
    singles = [s.network.single for s in p.shapes if s.network is not None]
    return _Parts(
        tightest(rings) if rings else None,
        tightest(nvls_b) if nvls_b and can == "yes" else None,
        can,
        why,
        tightest(p2ps) if p2ps else None,
        tightest(nets) if nets else None,
        tightest(singles) if singles else None,
        one_clique(p),
    )


def expect(p: LotPlan, collective: str) -> Expectation:
    """The expected busbw of ``collective`` on the planned job."""
    parts = _parts(p)
    nodes = 1 if parts.mnnvl else p.hosts
    algo_env = (p.env.get("NCCL_ALGO") or "").lower()
    if collective == "all_reduce":
        figure, algo, alt = _all_reduce(p, parts, nodes, algo_env)
    elif collective == "alltoall":
        figure, algo, alt = _alltoall(p, parts, nodes), "p2p", None
    elif collective == "sendrecv":
        figure = _tight(parts.p2p, parts.single if nodes > 1 else None)
        algo, alt = "p2p", None
    else:
        figure = _tight(parts.ring, parts.net if nodes > 1 else None)
        algo = "ring"
        if (
            collective in ("all_gather", "reduce_scatter")
            and nodes > 1
            and p.gpus_per_host == 1
            and since(p.version, PAT_SINCE)
        ):
            algo = "ring (PAT at small sizes)"
        alt = None
    return _finish(p, parts, collective, figure, algo, alt, nodes)


def _tight(*bounds: Bound | None) -> Bound:
    found = [b for b in bounds if b is not None]
    return tightest(found) if found else unknown("unknown", "no GPU to run on", ("GPUs",), ())


def _all_reduce(p: LotPlan, parts: _Parts, nodes: int, algo_env: str) -> tuple[Bound, str, Bound | None]:
    """All-reduce: NVLS on one NVSwitch domain where available, else a ring; on two nodes a tree (NVLSTree
    with NVLS, 2.18+) whose intra-node chain and 2(n−1)/n × the NICs bound it, the ring's figure the low
    end; on more nodes the NICs bound both NCCL's ring and its NVLSTree."""
    ring_only = "ring" in algo_env and "tree" not in algo_env and "nvls" not in algo_env
    nvls_ok = parts.nvls is not None and "^nvls" not in algo_env and not ring_only
    ringfig = _tight(parts.ring, parts.net if nodes > 1 else None)
    if nodes == 1:
        if nvls_ok and parts.nvls is not None:
            return parts.nvls, "NVLS", ringfig
        if parts.nvls_can == "unknown" and parts.ring is not None and parts.ring.kind == "nvlink" and not ring_only:
            return _nvls_unknown(parts.ring, parts.nvls_why), "NVLS or ring", None
        return ringfig, "ring", None
    if ring_only:
        return ringfig, "ring", None
    nvls_tree = nvls_ok and since(p.version, NVLS_TREE_SINCE)
    if nodes == 2:
        inside = parts.nvls if nvls_tree else parts.ring
        if not nvls_ok and parts.nvls_can == "unknown" and parts.ring is not None and parts.ring.kind == "nvlink":
            inside = _nvls_unknown(parts.ring, parts.nvls_why)  # NVLSTree or a plain tree: not told
        chain = inside.scaled(TREE_CHAIN, f"the intra-node part of the tree: {inside.words}") if inside else None
        n = p.ranks
        net = (
            parts.net.scaled(2 * (n - 1) / n, f"{parts.net.words}, × 2(n−1)/n for the two-node tree")
            if parts.net
            else None
        )
        tree = _tight(chain, net)
        return tree, "NVLSTree" if nvls_tree else "tree", ringfig
    if nvls_tree and parts.nvls is not None:
        return _tight(parts.nvls, parts.net), "NVLSTree", None
    if parts.nvls_can == "unknown" and parts.ring is not None and parts.ring.kind == "nvlink":
        return _tight(_nvls_unknown(parts.ring, parts.nvls_why), parts.net), "NVLSTree or ring", None
    return ringfig, "ring", None


def _nvls_unknown(ring: Bound, why: str) -> Bound:
    """NVLS may or may not run: the ring's figure the low end, NVLS's the high end, no single figure."""
    gain = max(NVLS_GAIN.values())
    return Bound(
        "nvls",
        None,
        ring.low,
        None if ring.high is None else ring.high * gain,
        f"the NVLink fabric, with NVLS or without it ({why})",
        ring.origin,
        (*ring.missing, f"whether NVLS runs: {why}"),
        (*ring.settle, *NVLS_SETTLE),
        least=ring.gbps,
    )


def _alltoall(p: LotPlan, parts: _Parts, nodes: int) -> Bound:
    """Each GPU sends (n−k)/n of its data off its host; busbw = the host's network × (n−1) ÷ (k (n−k))."""
    inside = parts.ring
    if nodes == 1 or parts.net is None:
        return _tight(inside)
    n, k = p.ranks, max(p.gpus_per_host, 1)
    share = (n - 1) / (k * (n - k)) if n > k else 1.0
    net = parts.net.scaled(share, f"{parts.net.words}, × (n−1)/(k(n−k)) of each GPU's data crossing it")
    return _tight(inside, net)


def _finish(
    p: LotPlan, parts: _Parts, collective: str, figure: Bound, algo: str, alt: Bound | None, nodes: int
) -> Expectation:
    low, high = figure.low, figure.high
    notes = list(p.notes)
    if alt is not None and alt.low is not None and (low is None or alt.low < low):
        low = alt.low if figure.known else low
        notes.append(
            f"NCCL may run the ring instead ({_fmt(alt.gbps)} GB/s): NCCL_ALGO=Ring gives the network's own figure"
        )
    if parts.mnnvl:
        notes.append("every GPU is in one multi-node NVLink clique: the hosts' GPUs talk over NVLink (MNNVL)")
    tier = "net" if nodes > 1 else ("nvlink" if figure.kind in ("nvlink", "nvls") else "pci")
    return Expectation(
        collective,
        p.hosts,
        p.gpus_per_host,
        p.ranks,
        figure.gbps,
        low,
        high,
        algo if p.ranks > 1 else None,
        figure.words,
        figure.kind,
        figure.origin,
        figure.settle,
        figure.missing,
        figure.assumed,
        tuple(notes),
        _latency(collective, algo, p.ranks, nodes, tier),
        tier,
        alt.gbps if alt is not None else (figure.gbps if algo == "ring" else None),
    )


def _latency(collective: str, algo: str, ranks: int, nodes: int, tier: str) -> float:
    """NCCL's latency model (tuning.cc, Simple protocol) for the algorithm, in µs."""
    key = algo.split(" ")[0] if algo.split(" ")[0] in BASE_LAT_US else "ring"
    intra_tier = "nvlink" if tier == "nvlink" or tier == "net" else "pci"
    base, intra_lat, net_lat = BASE_LAT_US[key], HW_LAT_US[intra_tier][key], HW_LAT_US["net"][key]
    if key in ("NVLS", "NVLSTree"):
        return base + HW_LAT_US["nvlink"]["NVLS"] + (2 * math.log2(max(nodes, 1)) * net_lat if nodes > 1 else 0)
    if key == "tree":
        ppn = max(ranks // max(nodes, 1), 1)
        return base + 2 * ((ppn - 1) * intra_lat + math.log2(max(nodes, 1)) * net_lat)
    if key == "p2p":
        return base + (net_lat if nodes > 1 else intra_lat)
    steps = 2 * (ranks - 1) if collective == "all_reduce" else max(ranks - 1, 1)
    inter = (2 * (nodes - 1) if collective == "all_reduce" else nodes - 1) if nodes > 1 else 0
    return base + (steps - inter) * intra_lat + inter * net_lat


def _fmt(v: float | None) -> str:
    return "?" if v is None else f"{v:.0f}"


def expect_all(p: LotPlan, collectives: tuple[str, ...] = COLLECTIVES) -> list[Expectation]:
    return [expect(p, c) for c in collectives]


def with_note(e: Expectation, note: str) -> Expectation:
    return replace(e, notes=(*e.notes, note))
