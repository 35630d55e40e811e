"""`topomap measure` against the fake CUDA driver: bookkeeping, verification, hangs, OOM, lost GPUs."""

from __future__ import annotations

import dataclasses
import functools
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_probe
from tests.fakes import machines
from tests.fakes.cuda import FakeCudaMemory
from tests.fakes.machine import FakeMachine
from topomap.base.errors import TopomapError
from topomap.measure.run import MeasureOptions, MeasureOutcome, NoGpuError, measure, parse_pairs, parse_size, plan
from topomap.model.measured import degraded_links, measured_bandwidth, unusable_pairs
from topomap.model.snapshot import Snapshot

MIB = 2**20


def _opts(**kw: Any) -> MeasureOptions:
    base = dict(size_bytes=MIB, repetitions=2, samples=3, warmup=1, latency_copies=4, timeout_s=10.0)
    base.update(kw)
    return MeasureOptions(**base)  # type: ignore[arg-type]


def _run(m: FakeMachine, tmp: Path, opts: MeasureOptions, **faults: Any) -> MeasureOutcome:
    snap = run_probe(m, tmp / "root").snapshot
    return measure(snap, opts, driver_factory=functools.partial(FakeCudaMemory, m, **faults), start_method="fork")


def _find(snap: Snapshot, kind: str, src: str, dst: str, direction: str = "one-way") -> Any:
    return [m for m in snap.measurements if (m.kind, m.src, m.dst, m.direction) == (kind, src, dst, direction)]


def test_hgx_pair_and_host_bookkeeping(tmp_path: Path) -> None:
    progress: list[tuple[int, int, str]] = []
    snap = run_probe(machines.hgx_h100(), tmp_path / "root").snapshot
    out = measure(
        snap,
        _opts(pairs=[(0, 1)], size_bytes=4 * MIB),
        driver_factory=functools.partial(FakeCudaMemory, machines.hgx_h100()),
        start_method="fork",
        progress=lambda d, t, label: progress.append((d, t, label)),
    )
    s = out.snapshot
    # 8 GPUs × (own node + remote node) host jobs, plus one pair job
    assert out.jobs == 17 and out.failed == 0
    assert progress[0] == (0, 17, "gpu0 ↔ host") and progress[-1] == (17, 17, "done")
    h2d = _find(s, "h2d", "host", "gpu0")
    assert {m.host_numa_node for m in h2d} == {0, 1}  # own node and the remote one
    local = next(m for m in h2d if m.host_numa_node == 0)
    assert local.verified is True and local.samples == 3 and local.repetitions == 2 and local.size_bytes == 4 * MIB
    assert local.min_gbps is not None and local.max_gbps is not None
    assert local.min_gbps <= local.median_gbps <= local.max_gbps and local.min_gbps < local.max_gbps
    # Gen5 x16 = 63 GB/s nominal; the fake delivers ~85% less a per-copy overhead
    assert 48 < local.median_gbps < 56
    peer = _find(s, "d2d", "gpu0", "gpu1")
    assert len(peer) == 1 and peer[0].route == "peer" and peer[0].verified is True
    assert 18 * 25 * 0.8 < peer[0].median_gbps < 18 * 25 * 0.91  # NV18 through NVSwitch
    both = _find(s, "d2d", "gpu0", "gpu1", "both-way")[0]
    assert both.median_gbps == pytest.approx(2 * peer[0].median_gbps, rel=0.05)
    lat = _find(s, "latency", "gpu1", "gpu0")[0]
    assert lat.median_us is not None and lat.median_gbps is None and lat.repetitions == 4
    got = measured_bandwidth(s, "gpu0", "gpu1")
    assert got is not None and got[0] == peer[0].median_gbps and got[1].origin == "topomap measure"
    assert measured_bandwidth(s, "gpu0", "gpu2") is None  # not measured: unknown, not 0
    assert out.memory_per_gpu_bytes == 2 * 4 * MIB and out.pinned_host_bytes == 3 * 4 * MIB
    assert not degraded_links(s) and not [f for f in s.findings if f.source == "measure"]


def test_staged_pair_when_peer_access_is_refused(tmp_path: Path) -> None:
    s = _run(machines.consumer_pair(), tmp_path, _opts(remote_numa=False)).snapshot
    d2d = _find(s, "d2d", "gpu0", "gpu1")[0]
    assert d2d.route == "staged" and d2d.verified is True
    assert any("cuDeviceCanAccessPeer = 0" in n for n in d2d.notes)
    # staged copies are not a link: never flagged as degraded
    assert not any("gpu0 → gpu1" in line for line in degraded_links(s))


def test_wrong_data_marks_the_pair_unusable(tmp_path: Path) -> None:
    out = _run(
        machines.hgx_h100(),
        tmp_path,
        _opts(pairs=[(0, 4), (0, 1)], remote_numa=False),
        corrupt_pairs=frozenset({frozenset({0, 4})}),
    )
    s = out.snapshot
    bad = [f for f in s.findings if f.kind == "p2p-corrupt"]
    assert len(bad) == 1 and bad[0].subject == "gpu0-gpu4" and bad[0].severity == "error"
    assert "NCCL_P2P_DISABLE=1" in bad[0].text and "ACS/IOMMU" in bad[0].text
    assert "gpu0 → gpu4" in bad[0].text and "gpu4 → gpu0" in bad[0].text
    assert all("byte " in e for e in bad[0].evidence)
    assert _find(s, "d2d", "gpu0", "gpu4")[0].verified is False
    assert measured_bandwidth(s, "gpu0", "gpu4") is None  # a figure of wrong data is never shown
    assert measured_bandwidth(s, "gpu0", "gpu1") is not None
    assert set(unusable_pairs(s)) == {frozenset({"gpu0", "gpu4"})}


def test_hanging_pair_is_killed_and_the_rest_still_measured(tmp_path: Path) -> None:
    out = _run(
        machines.hgx_h100(),
        tmp_path,
        _opts(pairs=[(0, 1), (2, 3)], remote_numa=False, timeout_s=1.0),
        hang_pairs=frozenset({frozenset({0, 1})}),
    )
    s = out.snapshot
    hang = [f for f in s.findings if f.kind == "measure-hang"]
    assert [f.subject for f in hang] == ["gpu0-gpu1"] and "unusable" in hang[0].text
    assert not _find(s, "d2d", "gpu0", "gpu1")
    assert _find(s, "d2d", "gpu2", "gpu3")[0].verified is True  # a fresh worker carried on
    assert out.failed == 1 and frozenset({"gpu0", "gpu1"}) in unusable_pairs(s)


def test_out_of_memory_on_one_gpu(tmp_path: Path) -> None:
    out = _run(machines.hgx_h100(), tmp_path, _opts(pairs=[(0, 3), (1, 2)], remote_numa=False), free_bytes={3: MIB})
    s = out.snapshot
    oom = [f for f in s.findings if f.kind == "measure-oom"]
    assert [f.subject for f in oom] == ["gpu3"] and "--size" in oom[0].text
    skipped = [f for f in s.findings if f.kind == "measure-skipped"]
    assert [f.subject for f in skipped] == ["gpu0-gpu3"]
    assert _find(s, "d2d", "gpu1", "gpu2") and not _find(s, "h2d", "host", "gpu3")


def test_gpu_lost_mid_run(tmp_path: Path) -> None:
    out = _run(
        machines.hgx_h100(), tmp_path, _opts(pairs=[(1, 2), (2, 5)], remote_numa=False), lost_after_copies={2: 3}
    )
    s = out.snapshot
    lost = [f for f in s.findings if f.kind == "gpu-lost"]
    assert [f.subject for f in lost] == ["gpu2"] and "CUDA_ERROR_UNKNOWN" in lost[0].evidence[0]
    assert {f.subject for f in s.findings if f.kind == "measure-skipped"} == {"gpu1-gpu2", "gpu2-gpu5"}
    assert _find(s, "h2d", "host", "gpu3") and not _find(s, "h2d", "host", "gpu2")


def test_no_gpu_is_a_no_gpu_error(tmp_path: Path) -> None:
    snap = run_probe(machines.no_driver(), tmp_path / "root").snapshot
    with pytest.raises(NoGpuError):
        plan(snap, MeasureOptions())
    m = machines.hgx_h100()
    snap = run_probe(m, tmp_path / "r2").snapshot
    broken = dataclasses.replace(m, cuda_init_error=802)  # Fabric Manager not running
    with pytest.raises(NoGpuError, match="CUDA_ERROR_SYSTEM_NOT_READY"):
        measure(snap, _opts(), driver_factory=functools.partial(FakeCudaMemory, broken), start_method="fork")


def test_snapshot_of_another_cuda_view_is_refused(tmp_path: Path) -> None:
    m = machines.hgx_h100()
    snap = run_probe(m, tmp_path / "root").snapshot
    swapped = dataclasses.replace(m, cuda_order=[1, 0, 2, 3, 4, 5, 6, 7])
    with pytest.raises(TopomapError, match="is not gpu0"):
        measure(snap, _opts(), driver_factory=functools.partial(FakeCudaMemory, swapped), start_method="fork")


def test_mig_instance_uuid_from_cuda13_is_the_same_gpu_by_bus_id(tmp_path: Path) -> None:
    """cuda-bindings 13 gives a MIG instance's own UUID: the GPU is checked by bus id (issue 25 item 11)."""
    m = machines.hgx_h100()
    m.gpus[0] = dataclasses.replace(m.gpus[0], mig=(1, 1))
    snap = run_probe(m, tmp_path / "root").snapshot
    fake = functools.partial(FakeCudaMemory, m, mig_uuids=True)
    out = measure(snap, _opts(), driver_factory=fake, start_method="fork")
    assert out.jobs > 0 and out.failed == 0


def test_spawned_worker_runs_the_fake_too(tmp_path: Path) -> None:
    """The CLI's start method: a fresh interpreter gets the driver factory by reference."""
    out = _run_spawn(tmp_path)
    assert _find(out.snapshot, "d2d", "gpu0", "gpu1")[0].route == "staged"


def _run_spawn(tmp: Path) -> MeasureOutcome:
    m = machines.consumer_pair()
    snap = run_probe(m, tmp / "root").snapshot
    return measure(
        snap, _opts(remote_numa=False), driver_factory=functools.partial(FakeCudaMemory, m), start_method="spawn"
    )


def test_sizes_and_pairs_parse(tmp_path: Path) -> None:
    assert parse_size("64MiB") == 64 * MIB and parse_size("64") == 64 * MIB and parse_size("1GB") == 10**9
    assert parse_pairs("0-1,gpu3-2,1-0") == [(0, 1), (2, 3)]
    with pytest.raises(TopomapError, match="at least 4 KiB"):
        parse_size("1k")
    with pytest.raises(TopomapError, match="not a pair"):
        parse_pairs("0-0")
    snap_opts = MeasureOptions(pairs=[(0, 9)])
    with pytest.raises(TopomapError, match="gpu9"):
        plan(run_probe(machines.consumer_pair(), tmp_path / "root").snapshot, snap_opts)


def test_remote_numa_gap_is_a_finding() -> None:
    from topomap.measure.findings import remote_gaps
    from topomap.model.snapshot import Measurement

    def h2d(gbps: float, node: int) -> Measurement:
        return Measurement(kind="h2d", src="host", dst="gpu0", route="host", method="m", origin="topomap measure",
                           size_bytes=MIB, median_gbps=gbps, host_numa_node=node)  # fmt: skip

    # remote is the buffer's node against the GPU's own (gpu0 is on node 0 here), not a note's words
    snap = run_probe(machines.hgx_h100(), Path(tempfile.mkdtemp()) / "root").snapshot
    assert next(g for g in snap.gpus if g.index == 0).numa_node == 0
    gap = remote_gaps(snap, [h2d(50.0, 0), h2d(30.0, 1)])
    assert len(gap) == 1 and gap[0].subject == "gpu0" and "60% of the 50.0 GB/s from its own node 0" in gap[0].text
    assert remote_gaps(snap, [h2d(50.0, 0), h2d(45.0, 1)]) == []  # 90%: within REMOTE_GAP


def test_a_rerun_of_some_pairs_keeps_the_others(tmp_path: Path) -> None:
    m = machines.hgx_h100()
    snap = run_probe(m, tmp_path / "root").snapshot
    fake = functools.partial(FakeCudaMemory, m)
    first = measure(snap, _opts(pairs=[(0, 1), (2, 3)], remote_numa=False), driver_factory=fake, start_method="fork")
    again = measure(first.snapshot, _opts(pairs=[(0, 1)], remote_numa=False), driver_factory=fake, start_method="fork")
    s = again.snapshot
    assert len(_find(s, "d2d", "gpu2", "gpu3")) == 1  # kept from the first run
    assert len(_find(s, "d2d", "gpu0", "gpu1")) == 1  # replaced, not doubled
    assert len(_find(s, "h2d", "host", "gpu5")) == 1
    assert len(s.measurements) == len(first.snapshot.measurements)


def test_peer_access_is_released_after_each_pair(tmp_path: Path) -> None:
    """A GPU holding one peer mapping at a time still measures every pair over the peer path."""
    out = _run(machines.hgx_h100(), tmp_path, _opts(pairs=[(0, 1), (0, 2), (0, 3)], remote_numa=False), max_peers=1)
    assert {m.route for m in out.snapshot.measurements if m.kind == "d2d"} == {"peer"}
