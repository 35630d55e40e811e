"""The blocking kernel of issue 25 item 9: the timed copies are enqueued behind a spin kernel, so the
timed window holds GPU work only. The fake driver keeps a CPU clock (each asynchronous call costs
ENQUEUE_S) and runs work queued behind a spin kernel only once the host sets its latch; a stream
waited on while its latch is unset spins to its timeout, which the fake counts."""

from __future__ import annotations

import ctypes

from tests.fakes import machines
from tests.fakes.cuda import ENQUEUE_S, FakeCudaMemory
from topomap.measure.copies import Session
from topomap.measure.jobs import HostSpec, PairSpec, Settings, run_host, run_pair
from topomap.measure.spin import PTX, TIMEOUT_NS

MIB = 2**20
SETTINGS = Settings(size_bytes=MIB, repetitions=4, samples=2, warmup=1, latency_copies=20)


def _run(ptx_error: int | None = None) -> tuple[FakeCudaMemory, list]:  # type: ignore[type-arg]
    cu = FakeCudaMemory(machines.hgx_h100(), ptx_error=ptx_error)
    s = Session(cu)
    figs = run_host(cu, s, HostSpec(ordinal=0, node=0), SETTINGS) + run_pair(cu, s, PairSpec(0, 1), SETTINGS)
    s.close()
    return cu, figs


def test_every_timed_window_is_held_and_released_before_the_wait() -> None:
    cu, figs = _run()
    assert cu.launches, "no spin kernel was launched"
    assert cu.spin_timeouts == 0  # the latch was always set before the host waited
    assert all(timeout == TIMEOUT_NS for _st, _latch, timeout in cu.launches)
    assert all(latch in cu.mapped for _st, latch, _t in cu.launches)  # the flag is device-mapped
    # one launch per timed window: h2d, d2h, both-way, latency per sample; pair: 2 one-way, both, 2 latency
    assert len(cu.launches) == SETTINGS.samples * (4 + 5)
    assert all(f.verified for f in figs)
    assert not [n for f in figs for n in f.notes if "no blocking kernel" in n]


def test_small_copy_latency_is_the_gpus_not_the_cpus_enqueue_rate() -> None:
    _cu, held = _run()
    _cu2, unheld = _run(ptx_error=222)  # CUDA_ERROR_UNSUPPORTED_PTX_VERSION: no kernel
    lat = [f for f in held if f.kind == "latency"]
    lat_unheld = [f for f in unheld if f.kind == "latency"]
    assert lat and all(max(f.us) < 1.0 for f in lat)  # ~0.5 µs per copy on the fake GPU
    assert lat_unheld and all(min(f.us) >= ENQUEUE_S * 1e6 for f in lat_unheld)  # bounded by the CPU
    assert all(any("no blocking kernel" in n and "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in n for n in f.notes)
               for f in unheld)  # fmt: skip


def test_the_ptx_is_a_nul_terminated_module_with_the_entry_and_its_two_parameters() -> None:
    text = PTX.decode()
    assert PTX.endswith(b"\0") and ".visible .entry topomap_spin(" in text
    assert text.count(".param .u64") == 2 and "%globaltimer" in text and "ld.volatile.global.u32" in text


def test_a_failed_launch_leaves_no_stream_held() -> None:
    class _NoLaunch(FakeCudaMemory):
        def cuLaunchKernel(self, *args: object) -> tuple[object, ...]:
            return (type(super().cuInit(0)[0]).CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,)

    cu = _NoLaunch(machines.hgx_h100())
    s = Session(cu)
    try:
        run_host(cu, s, HostSpec(ordinal=0, node=0), SETTINGS)
    except Exception as err:  # the job fails on that call, as any failed driver call fails it
        assert "cuLaunchKernel" in str(err)
    held = [st for st in cu.streams if st.held is not None]
    assert not held and cu.spin_timeouts == 0
    assert all(ctypes.c_int.from_address(a).value == 1 for a in cu.mapped if a in cu.blocks)
