"""The time NCCL takes for a flow's collectives (issue 32), at the busbw `topomap nccl LOT --perf` expects
(:mod:`topomap.collective`):

- an ``exchange`` step over GPUs is an all-reduce among its placements: each card moves 2(k−1)/k × its
  data (the volume of the arrows into the step, else the work's ``split.exchange``) at the expected
  all-reduce busbw at that message size;
- an arrow marked ``nccl: true`` is a send/receive between its two GPUs, its volume at the expected
  send/recv busbw.

A figure the snapshots cannot give leaves the time unknown, with what is missing and what settles it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from topomap.base.units import fmt_bytes, fmt_gbps, fmt_seconds
from topomap.collective.expect import Expectation, expect
from topomap.collective.lot import plan_parts
from topomap.flow.ncclarrow import nccl_env, nccl_marked
from topomap.flow.spec import Flow, FlowArrow, Placement
from topomap.graph import Topology
from topomap.importers.nccl_tests_id import bus_factor


@dataclass(frozen=True)
class CollectiveTime:
    """One collective of the flow: what it is, over which ranks, its data and the expected time."""

    what: str  # "exchange step reduce" or "nccl arrow shards → allreduce (lot:gpu0 → lot:gpu1)"
    collective: str  # all_reduce or sendrecv
    ranks: int
    hosts: int
    volume_bytes: int | None
    busbw_gbps: float | None  # the expected busbw at this volume
    peak_gbps: float | None  # the expected busbw at large messages (`--perf`)
    seconds: float | None
    low_gbps: float | None = None  # the range of the peak where the model is uncertain
    high_gbps: float | None = None
    algorithm: str | None = None
    bottleneck: str = ""
    origin: str = "model"
    missing: tuple[str, ...] = ()
    settle: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def text(self) -> str:
        """``exchange step reduce: all_reduce over 8 ranks on 1 host, 256 MiB per card at 180 GB/s busbw (ring,
        model: …) → 2.6 ms``."""
        on = f"{self.hosts} host" + ("s" if self.hosts != 1 else "")
        head = f"{self.what}: {self.collective} over {self.ranks} ranks on {on}"
        vol = f", {fmt_bytes(self.volume_bytes)} per card" if self.volume_bytes is not None else ""
        if self.busbw_gbps is None:
            missing = "; ".join(self.missing) or "not known"
            settle = f"; {', '.join(self.settle)} settles it" if self.settle else ""
            return f"{head}{vol}: time unknown, busbw unknown ({missing}{settle})"
        algo = f"{self.algorithm}, " if self.algorithm else ""
        figure = f" at {fmt_gbps(self.busbw_gbps)} GB/s busbw ({algo}{self.origin}: {self.bottleneck})"
        if self.seconds is None:
            return f"{head}{figure}: time unknown (the volume is not declared)"
        return f"{head}{vol}{figure} → {fmt_seconds(self.seconds)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "collective": self.collective,
            "ranks": self.ranks,
            "hosts": self.hosts,
            "volume_bytes": self.volume_bytes,
            "busbw_gbps": None if self.busbw_gbps is None else round(self.busbw_gbps, 1),
            "expected_busbw_gbps": None if self.peak_gbps is None else round(self.peak_gbps, 1),
            "low_gbps": None if self.low_gbps is None else round(self.low_gbps, 1),
            "high_gbps": None if self.high_gbps is None else round(self.high_gbps, 1),
            "seconds": self.seconds,
            "algorithm": self.algorithm,
            "bottleneck": self.bottleneck,
            "origin": self.origin,
            "missing": list(self.missing),
            "settle": list(self.settle),
        }


_Key = tuple[tuple[str, tuple[int, ...]], ...]


class _Expect:
    """Expectations of one flow, each (hosts, GPUs, collective) planned once."""

    def __init__(self, flow: Flow, topos: dict[str, Topology | None]) -> None:
        self.flow, self.topos = flow, topos
        self.memo: dict[tuple[_Key, str], Expectation | str] = {}

    def of(self, places: list[Placement], collective: str) -> Expectation | str:
        """The expectation over ``places`` (GPUs), or why there is none."""
        by_host: dict[str, list[int]] = {}
        for p in places:
            index = (p.gpu or "").removeprefix("gpu")
            if p.kind != "gpu" or not index.isdigit():
                return f"{p.label()} is not a GPU"
            by_host.setdefault(p.host, []).append(int(index))
        key = (tuple((h, tuple(sorted(ix))) for h, ix in sorted(by_host.items())), collective)
        if key not in self.memo:
            self.memo[key] = self._plan(key[0], collective)
        return self.memo[key]

    def _plan(self, key: _Key, collective: str) -> Expectation | str:
        parts = []
        for host, indexes in key:
            topo = self.topos.get(host)
            if topo is None:
                return f"{host} has no snapshot"
            parts.append((topo.snapshot, list(indexes)))
        spec = self.flow.spec
        mode = "per-host" if spec.nccl_processes == "per-host" else "per-gpu"
        return expect(plan_parts(parts, mode=mode, version=spec.nccl_version, env=nccl_env(self.flow)), collective)


def _timed(
    what: str, collective: str, places: list[Placement], e: Expectation | str, volume: int | None
) -> CollectiveTime:
    hosts = len({p.host for p in places})
    if isinstance(e, str):
        return CollectiveTime(what, collective, len(places), hosts, volume, None, None, None, missing=(e,))
    at = e.busbw_at(volume) if volume else None
    busbw = at if at is not None else e.busbw_gbps
    seconds = None
    if busbw and volume:
        seconds = round(bus_factor(collective, e.ranks) * volume / (busbw * 1e9), 6)
    return CollectiveTime(
        what, collective, e.ranks, e.hosts, volume, busbw, e.busbw_gbps, seconds, e.low_gbps, e.high_gbps,
        e.algorithm, e.bottleneck, e.origin, e.missing, e.settle, e.notes,
    )  # fmt: skip


def _step_volume(flow: Flow, step: str) -> int | None:
    """Each card's data in an exchange step: the largest known arrow into it, else the work's split."""
    vols = [a.volume_bytes for a in flow.arrows if a.dst_step == step and a.src_step != step]
    known = [v for v in vols if v is not None]
    if known:
        return max(known)
    split = flow.work.split if flow.work is not None else None
    return split.exchange_bytes if split is not None else None


def collective_times(flow: Flow, topos: dict[str, Topology | None]) -> list[CollectiveTime]:
    """Every exchange step over two or more GPUs, then every ``nccl: true`` arrow between two GPUs."""
    ex = _Expect(flow, topos)
    out: list[CollectiveTime] = []
    for name, st in flow.steps.items():
        places = st.placements
        if st.kind != "exchange" or len(places) < 2 or any(p.kind != "gpu" for p in places):
            continue
        out.append(
            _timed(f"exchange step {name}", "all_reduce", places, ex.of(places, "all_reduce"), _step_volume(flow, name))
        )
    for a in flow.arrows:
        if a.src_step == a.dst_step or not _gpu_pair(a) or not nccl_marked(flow, a):
            continue
        what = f"nccl arrow {a.src_step} → {a.dst_step} ({a.src.label()} → {a.dst.label()})"
        places = [a.src, a.dst]
        out.append(_timed(what, "sendrecv", places, ex.of(places, "sendrecv"), a.volume_bytes))
    return out


def _gpu_pair(a: FlowArrow) -> bool:
    return a.src.kind == "gpu" and a.dst.kind == "gpu" and a.src.label() != a.dst.label()
