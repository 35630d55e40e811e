"""The NVML sampler of `topomap record` against the fake NVML with scripted curves."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pynvml
import pytest

from tests.fakes import machines
from tests.fakes.machine import GIB
from tests.fakes.record_nvml import ScriptedNvml
from topomap.model.snapshot import Problem
from topomap.probe.guarded import CallRunner
from topomap.probe.nvml_calls import NvmlCalls
from topomap.probe.nvml_errors import UNSUPPORTED, nvml_fault
from topomap.record.environment import mark_visibility
from topomap.record.model import Run, Sampling
from topomap.record.sampler import GpuSampler
from topomap.record.summary import card_summary, observed_for_plan


def _sample(fake: ScriptedNvml, steps: int, dt: float = 0.5, pids: set[int] | None = None) -> GpuSampler:
    s = GpuSampler(fake, pcie_period_s=0.0, pcie_cards_per_sample=8)
    assert s.open()
    for k in range(steps):
        fake.step = k
        s.sample(k * dt, pids or set())
    s.close()
    return s


def test_peak_memory_and_when_it_happened_on_each_card() -> None:
    m = machines.hgx_h100()
    m.gpus = m.gpus[:2]
    fake = ScriptedNvml(
        m,
        memory={
            0: [1 * GIB, 30 * GIB, 61 * GIB, 61 * GIB, 20 * GIB],
            1: [1 * GIB, 2 * GIB, 3 * GIB, 40 * GIB, 5 * GIB],
        },
        util={0: [(0, 0), (50, 10), (100, 40), (90, 30), (0, 0)], 1: [(0, 0), (0, 0), (20, 5), (80, 60), (0, 0)]},
    )
    s = _sample(fake, 5)
    c0, c1 = (card_summary(c.series) for c in s.cards)
    assert (c0.peak_memory_bytes, c0.peak_at_s) == (61 * GIB, 1.0)  # first time the peak is reached
    assert (c1.peak_memory_bytes, c1.peak_at_s) == (40 * GIB, 1.5)
    assert c0.memory_total_bytes == 80 * GIB
    assert c0.util_peak_pct == 100 and c0.util_mean_pct == 48.0
    assert c0.busy_s == 1.5 and c1.busy_s == 1.0  # intervals starting with utilisation > 0
    assert s.problems == [] or all(p.call == "nvmlDeviceGetPcieThroughput" for p in s.problems)


def test_pcie_and_nvlink_throughput_in_bytes_per_second() -> None:
    m = machines.hgx_h100()
    m.gpus = m.gpus[:1]
    fake = ScriptedNvml(
        m,
        memory={0: [GIB]},
        pcie={0: [(100, 200), (1000, 2000)]},  # KiB/s (tx, rx)
        nvlink={0: [(0, 0), (1024, 2048), (1024, 2048)]},  # cumulative KiB (tx, rx)
    )
    series = _sample(fake, 3).cards[0].series
    assert fake.nvlink_scopes == {0xFFFFFFFF}  # the sum over all links, not link 0 alone
    assert series.pcie_tx_bytes_s == [100 * 1024, 1000 * 1024, 1000 * 1024]
    assert series.pcie_rx_bytes_s == [200 * 1024, 2000 * 1024, 2000 * 1024]
    # no rate before the second reading; then Δ KiB × 1024 / 0.5 s; then nothing moved
    assert series.nvlink_tx_bytes_s == [None, 1024 * 1024 / 0.5, 0.0]
    assert series.nvlink_rx_bytes_s == [None, 2048 * 1024 / 0.5, 0.0]


def test_pcie_is_read_at_most_once_per_period() -> None:
    m = machines.hgx_h100()
    m.gpus = m.gpus[:1]
    fake = ScriptedNvml(m, memory={0: [GIB]}, pcie={0: [(1, 1)]})
    s = GpuSampler(fake, pcie_period_s=1.0)
    assert s.open()
    for k in range(5):
        s.sample(k * 0.4, set())
    assert s.cards[0].series.pcie_tx_bytes_s == [1024, None, None, 1024, None]  # at 0, 1.2 s


def test_a_gpu_lost_mid_run_is_marked_and_no_longer_asked() -> None:
    m = machines.hgx_h100()
    m.gpus = m.gpus[:2]
    fake = ScriptedNvml(m, memory={0: [GIB, 2 * GIB, 3 * GIB, 4 * GIB], 1: [5 * GIB, 6 * GIB, 7 * GIB, 8 * GIB]})
    s = GpuSampler(fake, pcie_period_s=0.0)
    assert s.open()
    # per sample: memory, utilisation, PCIe (unsupported: asked once), NVLink fields (idem), processes;
    # so 8 calls succeed over the first two samples and the third sample's first call finds it lost
    fake.m.lost_after = {1: 8}
    for k in range(4):
        fake.step = k
        s.sample(k * 1.0, set())
    g0, g1 = s.cards[0].series, s.cards[1].series
    assert g1.lost_at_s == 2.0
    assert g1.memory_used_bytes == [5 * GIB, 6 * GIB, None, None]
    assert g0.lost_at_s is None and g0.memory_used_bytes == [GIB, 2 * GIB, 3 * GIB, 4 * GIB]
    assert len(g1.t_s) == len(g0.t_s) == 4  # columns stay aligned
    lost = [p for p in s.problems if "GpuIsLost" in p.error]
    assert len(lost) == 1 and lost[0].target == "gpu1"


def test_mig_devices_are_sampled_as_their_own_cards() -> None:
    m = machines.hgx_h100()
    m.gpus = m.gpus[:1]
    m.gpus[0].mig = (1, 1)
    fake = ScriptedNvml(
        m,
        memory={0: [10 * GIB, 20 * GIB]},
        mig_memory={(0, 0): [GIB, 9 * GIB], (0, 3): [2 * GIB, 3 * GIB]},
    )
    s = _sample(fake, 2)
    ids = [c.series.id for c in s.cards]
    assert ids == ["gpu0", "gpu0/mig0", "gpu0/mig3"]
    mig0 = s.cards[1].series
    assert mig0.uuid is not None and mig0.uuid.startswith("MIG-")
    assert mig0.memory_total_bytes == 80 * GIB // 7
    assert mig0.memory_used_bytes == [GIB, 9 * GIB]
    assert mig0.util_gpu_pct == [None, None]  # NotSupported in MIG mode: unknown, not 0
    assert any(p.call == "nvmlDeviceGetUtilizationRates" and p.target == "gpu0" for p in s.problems)
    # a MIG device is visible only when CUDA_VISIBLE_DEVICES names its UUID
    mark_visibility([c.series for c in s.cards], {"CUDA_VISIBLE_DEVICES": mig0.uuid}, None)
    assert [c.series.visible_to_command for c in s.cards] == [False, True, None]


def test_processes_are_attributed_to_the_command_tree() -> None:
    m = machines.hgx_h100()
    m.gpus = m.gpus[:2]
    fake = ScriptedNvml(
        m,
        memory={0: [GIB], 1: [GIB]},
        procs={0: lambda: [(4242, 3 * GIB), (999, GIB)], 1: lambda: [(4243, None)]},
    )
    s = _sample(fake, 2, pids={4242, 4243})
    p0 = {p.pid: p for p in s.cards[0].series.processes}
    assert p0[4242].in_command_tree and p0[4242].peak_memory_bytes == 3 * GIB
    assert not p0[999].in_command_tree
    (p1,) = s.cards[1].series.processes
    assert p1.in_command_tree and p1.peak_memory_bytes is None  # NVML hid it: unknown
    assert card_summary(s.cards[0].series).command_memory_bytes == 3 * GIB


def test_no_driver_says_why_nothing_was_sampled() -> None:
    fake = ScriptedNvml(machines.no_driver())
    s = GpuSampler(fake)
    assert not s.open()
    assert s.note is not None and "NVML did not start" in s.note


def test_visibility_by_ordinal_uses_the_snapshot_or_says_it_assumed() -> None:
    m = machines.hgx_h100()
    m.gpus = m.gpus[:3]
    s = _sample(ScriptedNvml(m, memory={0: [GIB]}), 1)
    series = [c.series for c in s.cards]
    mark_visibility(series, {"CUDA_VISIBLE_DEVICES": "0,2"}, None)
    assert [x.visible_to_command for x in series] == [True, False, True]
    assert series[0].visibility_note is not None and "assumed" in series[0].visibility_note


def test_observed_for_plan_labels_its_figures() -> None:
    m = machines.hgx_h100()
    m.gpus = m.gpus[:1]
    s = _sample(ScriptedNvml(m, memory={0: [GIB, 7 * GIB]}, util={0: [(100, 0)]}), 3)
    run = Run(
        tool="t",
        command=["x"],
        started_at="2026-11-30T00:00:00Z",
        duration_s=10.0,
        exit_status=0,
        sampling=Sampling(interval_s=0.5, gpu_sampled=True),
        gpus=[s.cards[0].series],
    )
    obs = observed_for_plan(run, units=4)
    assert obs["source"] == "observed" and obs["unit_duration_s"] == 2.5
    assert obs["cards"]["gpu0"]["memory_peak_bytes"] == 7 * GIB
    assert obs["cards"]["gpu0"]["busy_s"] == 1.0


def test_old_driver_process_list_falls_back_to_v2() -> None:
    class OldDriver(ScriptedNvml):
        def nvmlDeviceGetComputeRunningProcesses(self, h: Any) -> list[Any]:
            raise pynvml.NVMLLibraryMismatchError("Unversioned function called ...")  # driver without _v3

        def nvmlDeviceGetComputeRunningProcesses_v2(self, h: Any) -> list[Any]:
            return super().nvmlDeviceGetComputeRunningProcesses(h)

    m = machines.hgx_h100()
    m.gpus = m.gpus[:1]
    s = _sample(OldDriver(m, memory={0: [GIB]}, procs={0: lambda: [(77, GIB)]}), 2, pids={77})
    (p,) = s.cards[0].series.processes
    assert p.pid == 77 and p.in_command_tree and p.peak_memory_bytes == GIB
    assert [x.error for x in s.problems if x.call == "nvmlDeviceGetComputeRunningProcesses"] == [
        "NVMLLibraryMismatchError: the driver lacks this version of the call"
    ]


def test_pcie_reads_take_turns_between_cards() -> None:
    m = machines.hgx_h100()
    m.gpus = m.gpus[:3]
    fake = ScriptedNvml(m, memory={0: [GIB]}, pcie={0: [(1, 1)], 1: [(2, 2)], 2: [(3, 3)]})
    s = GpuSampler(fake, pcie_period_s=0.5, pcie_cards_per_sample=1)
    assert s.open()
    for k in range(6):
        s.sample(k * 0.2, set())
    read = [[v is not None for v in c.series.pcie_tx_bytes_s] for c in s.cards]
    # one card per sample, longest waiting first; a card again only after 0.5 s
    assert read == [
        [True, False, False, True, False, False],
        [False, True, False, False, True, False],
        [False, False, True, False, False, True],
    ]
    assert fake.log.count("nvmlDeviceGetPcieThroughput") == 12  # 6 samples × (RX + TX) for one card each


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (lambda: pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION), "NoPermission (4)"),
        (
            lambda: ctypes.ArgumentError("argument 2: TypeError: wrong type"),
            "ArgumentError: argument 2: TypeError: wrong type",
        ),
        (lambda: pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED), "NotSupported (3)"),
    ],
)
def test_probe_and_sampler_say_the_same_of_the_same_nvml_error(error: Callable[[], BaseException], text: str) -> None:
    class Failing(ScriptedNvml):
        def nvmlDeviceGetUtilizationRates(self, h: Any) -> Any:
            raise error()

    m = machines.hgx_h100()
    m.gpus = m.gpus[:1]
    sampler = GpuSampler(Failing(m, memory={0: [GIB]}))
    assert sampler.open()
    sampler.sample(0.0, set())
    problems: list[Problem] = []
    probe = NvmlCalls(Failing(m), problems, CallRunner(total_s=None))
    gone = probe.call("nvmlDeviceGetUtilizationRates", "gpu0", None)
    said = [p.error for p in sampler.problems if p.call == "nvmlDeviceGetUtilizationRates"]
    assert said == [p.error for p in problems] == [text]
    assert sampler.cards[0].series.util_gpu_pct == [None]
    # one sentinel: "not supported here" is UNSUPPORTED in both, a failure is None
    assert (gone is UNSUPPORTED) == (text == "NotSupported (3)")
    assert nvml_fault(error(), pynvml.NVMLError).text == text
