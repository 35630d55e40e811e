"""Which context's stream each copy runs on, what each copy is ordered after, and the worker's CPU
binding across jobs: measure's CUDA jobs run in-process against the fake driver, which records the
context that created every stream, the stream of every copy and memset, and cross-context waits."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.fakes import machines
from tests.fakes.cuda import FakeCudaMemory
from topomap.measure.copies import Session
from topomap.measure.jobs import WRITE_NOTE, HostSpec, PairSpec, Settings, run_host, run_pair

MIB = 2**20
SETTINGS = Settings(size_bytes=MIB, repetitions=2, samples=2, warmup=1, latency_copies=3)


def _session() -> tuple[FakeCudaMemory, Session]:
    cu = FakeCudaMemory(machines.hgx_h100())
    return cu, Session(cu)


def test_peer_copies_run_on_a_stream_of_the_source_context() -> None:
    cu, s = _session()
    figs = run_pair(cu, s, PairSpec(0, 1), SETTINGS)
    peer = [c for c in cu.copy_log if c.call == "cuMemcpyPeerAsync"]
    back = [c for c in peer if (c.src, c.dst) == (1, 0)]
    assert back and all(c.stream is not None and c.stream.ordinal == 1 for c in back)  # gpu1 pushes to gpu0
    forth = [c for c in peer if (c.src, c.dst) == (0, 1)]
    assert forth and all(c.stream is not None and c.stream.ordinal == 0 for c in forth)
    d2d = [f for f in figs if f.kind in ("d2d", "latency")]
    assert len(d2d) == 5 and all(WRITE_NOTE in f.notes for f in d2d)  # labelled: writes, not reads
    both = next(f for f in figs if f.direction == "both-way")
    assert both.verified and both.gbps and all(g > 0 for g in both.gbps)


def test_every_copy_is_ordered_after_the_memset_of_its_destination() -> None:
    cu, s = _session()
    run_pair(cu, s, PairSpec(0, 1), SETTINGS)
    run_host(cu, s, HostSpec(0, None), SETTINGS)
    assert cu.copy_log and all(c.after_fill for c in cu.copy_log)
    assert {f.call for f in cu.fill_log} == {"cuMemsetD8Async"}  # never the NULL stream
    # the host job zeroes its h2d destination on the very stream its first h2d copy then runs on
    first_h2d = next(c for c in cu.copy_log if c.call == "cuMemcpyHtoDAsync")
    last_fill = [f for f in cu.fill_log if f.stream is first_h2d.stream]
    assert last_fill and first_h2d.stream is not None and first_h2d.stream.ordinal == 0
    # a pair's destination is zeroed on its owner's stream; the source's stream waits across contexts
    on_gpu1 = [f for f in cu.fill_log if f.stream is not None and f.stream.ordinal == 1]
    assert on_gpu1  # gpu1's destination, zeroed on gpu1's stream while gpu0's stream copies into it


def test_the_fake_sees_a_null_stream_memset_race() -> None:
    """The check above can fail: a cuMemsetD8 (NULL stream) before a copy on a non-blocking stream is
    not ordered before it, as on a real GPU."""
    cu, s = _session()
    s.context(0)
    d = s.call("cuMemAlloc", 0, 64)
    h = s.call("cuMemHostAlloc", 0, 64, 1)
    st = s.call("cuStreamCreate", 0, 1)
    s.call("cuMemsetD8", 0, d, 0, 64)
    s.call("cuMemcpyHtoDAsync", 0, d, h, 64, st)
    assert cu.copy_log[-1].after_fill is False
    s.call("cuMemsetD8Async", 0, d, 0, 64, st)
    s.call("cuMemcpyHtoDAsync", 0, d, h, 64, st)
    assert cu.copy_log[-1].after_fill is True


def test_an_event_is_recorded_only_on_a_stream_of_its_own_context() -> None:
    cu, s = _session()
    s.context(1)
    st1 = s.call("cuStreamCreate", 1, 1)
    s.context(0)
    ev0 = s.call("cuEventCreate", 0, 0)
    assert int(cu.cuEventRecord(ev0, st1)[0]) != 0


def test_each_host_job_binds_from_the_worker_starting_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    mask = {"now": frozenset(range(8))}
    calls: list[frozenset[int]] = []

    def setaffinity(pid: int, cpus: Any) -> None:
        calls.append(frozenset(cpus))
        mask["now"] = frozenset(cpus)

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(mask["now"]), raising=False)
    monkeypatch.setattr(os, "sched_setaffinity", setaffinity, raising=False)
    cu, s = _session()  # the worker starts on CPUs 0-7
    quick = Settings(size_bytes=MIB, repetitions=1, samples=1, warmup=0, latency_copies=1, both_way=False)
    local = run_host(cu, s, HostSpec(0, 0, cpus=[0, 1, 2, 3]), quick)
    remote = run_host(cu, s, HostSpec(0, 1, cpus=[4, 5, 6, 7], remote=True), quick)
    assert calls == [frozenset({0, 1, 2, 3}), frozenset({4, 5, 6, 7})]  # node 1's CPUs, not node 0's ∩ node 1's
    assert not any("cpuset" in n for f in local + remote for n in f.notes)
    run_host(cu, s, HostSpec(0, None), quick)
    assert calls[-1] == frozenset(range(8))  # node unknown: back on the whole starting mask
    outside = run_host(cu, s, HostSpec(0, 2, cpus=[8, 9]), quick)
    assert any("none of the node's CPUs" in n for n in outside[0].notes) and calls[-1] == frozenset(range(8))
