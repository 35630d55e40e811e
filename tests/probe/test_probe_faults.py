"""The fault matrix: every NVML and CUDA call the probe makes × every error it can raise.

Each combination must give a valid snapshot with the problem recorded against the device or
pair the failing call concerned (or be one of the documented optional features that are
silently absent), and never a crash. The call list is not written down here: it is read from
the log of a clean probe of each machine, so a call added to the probe joins the matrix.

By default a sample runs (each call once, each error once); TOPOMAP_FULL_FAULTS=1 runs all of it.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import FIXED_NOW
from tests.fakes import machines
from tests.fakes.cuda import FakeCuda
from tests.fakes.faults import (
    HANG,
    MISSING,
    Fault,
    Faulty,
    cuda_devices,
    cuda_kinds,
    nvml_devices,
    nvml_kinds,
)
from tests.fakes.machine import FakeMachine
from tests.fakes.nvml import FakeNvml
from tests.fakes.sysfs import write_sysfs
from topomap.model.codec import decode_snapshot, encode_snapshot
from topomap.model.snapshot import Problem, Snapshot
from topomap.probe import probe

FULL = os.environ.get("TOPOMAP_FULL_FAULTS") == "1"
DEVICE = 1  # the faults hit GPU 1 (NVML index 1, CUDA ordinal 1)
HANG_CALL_S = 0.1
HANG_BUDGET_S = 1.0


def hgx_with_mig_on_gpu1() -> FakeMachine:
    """8x H100 NV18 with MIG enabled on GPU 1, so the MIG calls are in the matrix too. The
    default (sampled) run takes the first socket's half (4 GPUs, 4 NICs) to stay fast."""
    m = machines.hgx_h100()
    gpus = list(m.gpus)
    gpus[DEVICE] = dataclasses.replace(gpus[DEVICE], mig=(1, 1))
    if FULL:
        return dataclasses.replace(m, gpus=gpus)
    return dataclasses.replace(m, gpus=gpus[:4], nics=m.nics[:4], roots=m.roots[:2])


MACHINES: dict[str, Callable[[], FakeMachine]] = {
    "hgx-h100-mig": hgx_with_mig_on_gpu1,
    "old-driver": machines.old_driver,
}

# Optional features: their absence is normal and not a problem (nvml-cuda.md §2.3).
_ABSENT = ("nvml:NOT_SUPPORTED", "nvml:FUNCTION_NOT_FOUND", "nvml:DEPRECATED", MISSING)
_OPTIONAL = {
    "nvmlSystemGetCudaDriverVersion_v2",  # v1 is asked next
    "nvmlDeviceGetNumaNodeId",  # only Grace-class GPUs are NUMA nodes
    "nvmlDeviceGetMigMode",  # no MIG on this GPU
    "nvmlDeviceGetNvLinkRemoteDeviceType",  # older drivers
    "nvmlDeviceGetGpuFabricInfoV",  # pre-Hopper: fabric not supported
    "nvmlDeviceGetFieldValues",  # link count / speed fields: the per-link walk still runs
}
_END_OF_LINKS = ("nvml:NOT_SUPPORTED", "nvml:INVALID_ARGUMENT", "nvml:FUNCTION_NOT_FOUND")


def tolerated(library: str, fault: Fault) -> bool:
    """True when the failure means "feature absent" and no problem is expected."""
    if library != "nvml":
        return False
    if fault.call in _OPTIONAL and fault.kind in _ABSENT:
        return True
    if fault.call == "nvmlDeviceGetNvLinkState" and fault.kind in _END_OF_LINKS:
        return True  # no NVLink on this GPU, or past its last link: the walk ends there
    return fault.call == "nvmlDeviceGetMigDeviceHandleByIndex" and fault.kind == "nvml:NOT_FOUND"  # empty slot


@dataclasses.dataclass
class Run:
    snapshot: Snapshot
    nvml: Faulty
    cuda: Faulty
    seconds: float


def run(m: FakeMachine, root: Path, library: str | None = None, fault: Fault | None = None) -> Run:
    nv = Faulty(FakeNvml(m), nvml_devices, fault if library == "nvml" else None)
    cu = Faulty(FakeCuda(m), cuda_devices, fault if library == "cuda" else None)
    hang = fault is not None and fault.kind == HANG
    t = time.monotonic()
    try:
        out = probe(
            nvml_lib=nv,
            cuda_driver=cu,
            sysfs_root=str(root),
            env={},
            now=FIXED_NOW,
            call_timeout_s=HANG_CALL_S if hang else 15.0,
            budget_s=HANG_BUDGET_S if hang else 60.0,
        )
    finally:
        nv.release.set()
        cu.release.set()
    return Run(out.snapshot, nv, cu, time.monotonic() - t)


@dataclasses.dataclass
class Setup:
    machine: FakeMachine
    root: Path
    baseline: Run
    calls: dict[str, dict[str, bool]]  # library → call → concerns a device


_SETUPS: dict[str, Setup] = {}


def setup(name: str, tmp_path_factory: pytest.TempPathFactory) -> Setup:
    if name not in _SETUPS:
        m = MACHINES[name]()
        root = tmp_path_factory.mktemp(name)
        write_sysfs(m, root)
        base = run(m, root)
        calls: dict[str, dict[str, bool]] = {}
        for library, proxy in (("nvml", base.nvml), ("cuda", base.cuda)):
            seen: dict[str, bool] = {}
            for fn, devices in proxy.log:
                if not devices or DEVICE in devices:
                    seen[fn] = seen.get(fn, False) or bool(devices)
            calls[library] = seen
        _SETUPS[name] = Setup(m, root, base, calls)
    return _SETUPS[name]


def combinations(calls: list[str], kinds: list[str], every_kind: bool) -> list[tuple[str, str]]:
    """All (call, kind) pairs, or a sample: each call once, and with ``every_kind`` each kind once too."""
    if FULL:
        return [(c, k) for c in calls for k in kinds]
    picked = {(c, kinds[(i * 7) % len(kinds)]) for i, c in enumerate(calls)}
    if every_kind:
        picked |= {(calls[(i * 5) % len(calls)], k) for i, k in enumerate(kinds)}
    return sorted(picked)


_MENTIONS = re.compile(rf"(?<![0-9])(gpu|cuda){DEVICE}(?![0-9])")


def _key(p: Problem) -> tuple[str, str, str | None, str]:
    return (p.source, p.call, p.target, p.error)


def judge(library: str, fault: Fault, device_call: bool, base: Run, got: Run) -> list[str]:
    """What is wrong with this combination's outcome (empty: right)."""
    wrong: list[str] = []
    if fault.kind == MISSING:  # the binding lacks the wrapper: one problem on no device
        device_call = False
    s = got.snapshot
    if decode_snapshot(encode_snapshot(s)) != s:
        wrong.append("snapshot does not round-trip")
    new = Counter(_key(p) for p in s.problems) - Counter(_key(p) for p in base.snapshot.problems)
    added = [Problem(source=a, call=b, target=c, error=d) for a, b, c, d in new.elements()]
    for p in added:
        if "unusable answer" in p.error:
            wrong.append(f"reached the safety net: {p}")
        if device_call and p.target is not None and not _MENTIONS.search(p.target):
            wrong.append(f"problem on the wrong device: {p.target}: {p.call}: {p.error}")
        if device_call and p.target is None and not (_MENTIONS.search(p.error) or "time budget" in p.error):
            wrong.append(f"problem on no device: {p.call}: {p.error}")
    own = [  # the failing call's record (one the machine's own quirks already give counts too)
        p
        for p in s.problems
        if p.source == library and p.call == fault.call and (not device_call or _MENTIONS.search(p.target or ""))
    ]
    if fault.kind == HANG:
        own += [p for p in added if "time budget" in p.error]
    own_new = [p for p in own if p in added]
    if not tolerated(library, fault) and not own:
        wrong.append("no problem recorded for the failing call")
    if fault.kind == MISSING and len(own_new) > 1:
        wrong.append(f"a missing wrapper recorded {len(own_new)} times")
    if fault.kind == HANG:
        if not any("timed out after" in p.error or "time budget" in p.error for p in added):
            wrong.append("hang not recorded as timed out")
        if got.seconds > HANG_BUDGET_S + 2 * HANG_CALL_S + 1.0:
            wrong.append(f"hang not cut: probe took {got.seconds:.1f} s")
    if library == "nvml" and fault.kind == "nvml:GPU_IS_LOST" and device_call:
        wrong += _lost_once(got)
    return wrong


def _lost_once(got: Run) -> list[str]:
    """GPU_IS_LOST on a call for one GPU: marked lost once, never called again."""
    wrong: list[str] = []
    s = got.snapshot
    marks = [p for p in s.problems if "GpuIsLost" in p.error]
    lost = [g.index for g in s.gpus if g.lost]
    if lost and (lost != [DEVICE] or len(marks) != 1):
        wrong.append(f"lost GPUs {lost} with {len(marks)} GpuIsLost records")
    if lost:
        first = next(k for k, (fn, devs) in enumerate(got.nvml.log) if DEVICE in devs and fn == marks[0].call)
        # one more call per device is allowed only when the loss came from a pair call
        later = [fn for fn in got.nvml.calls_after(first, DEVICE) if fn != "nvmlShutdown"]
        if later:
            wrong.append(f"gpu{DEVICE} called after it was lost: {later}")
    return wrong


def _matrix(library: str, machine: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, list[str]]:
    st = setup(machine, tmp_path_factory)
    calls = st.calls[library]
    kinds = nvml_kinds() if library == "nvml" else cuda_kinds()
    combos = combinations(sorted(calls), kinds, every_kind=machine == "old-driver")  # the small machine
    failures: list[str] = []
    for call, kind in combos:
        fault = Fault(call, kind, DEVICE)
        try:
            got = run(st.machine, st.root, library, fault)
        except Exception as err:  # the probe must never raise
            failures.append(f"{machine}: {fault}: probe raised {type(err).__name__}: {err}")
            continue
        failures += [f"{machine}: {fault}: {w}" for w in judge(library, fault, calls[call], st.baseline, got)]
    return len(combos), failures


@pytest.mark.parametrize("machine", sorted(MACHINES))
@pytest.mark.parametrize("library", ["nvml", "cuda"])
def test_fault_matrix(library: str, machine: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    count, failures = _matrix(library, machine, tmp_path_factory)
    print(f"{library} on {machine}: {count} combinations{' (full)' if FULL else ' (sample)'}")
    assert count >= len(setup(machine, tmp_path_factory).calls[library])
    assert not failures, f"{len(failures)} of {count} combinations wrong:\n" + "\n".join(failures[:40])


def test_the_matrix_covers_the_calls_that_used_to_bypass_the_choke_point(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    calls = setup("hgx-h100-mig", tmp_path_factory).calls["nvml"]
    bypassed = {
        "nvmlInit",
        "nvmlShutdown",
        "nvmlDeviceGetFieldValues",
        "nvmlDeviceGetNvLinkState",
        "nvmlDeviceGetMigDeviceHandleByIndex",
    }
    assert bypassed <= set(calls)
    assert {"cuInit", "cuDeviceCanAccessPeer", "cuDeviceGetP2PAttribute"} <= set(
        setup("hgx-h100-mig", tmp_path_factory).calls["cuda"]
    )


def test_a_generic_exception_from_a_gpu_name_is_one_problem_on_that_gpu(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    st = setup("hgx-h100-mig", tmp_path_factory)
    got = run(st.machine, st.root, "nvml", Fault("nvmlDeviceGetName", "UnicodeDecodeError", 3))
    s = got.snapshot
    assert s.gpus[3].name is None and s.gpus[2].name == "NVIDIA H100 80GB HBM3"
    bad = [p for p in s.problems if p.call == "nvmlDeviceGetName"]
    assert [(p.target, p.error.split(":")[0]) for p in bad] == [("gpu3", "UnicodeDecodeError")]
    assert s.gpus[3].uuid is not None and s.gpus[3].nvlinks  # the rest of gpu3 was still read


def test_a_hung_call_is_cut_and_the_gpu_is_not_asked_again(tmp_path_factory: pytest.TempPathFactory) -> None:
    st = setup("hgx-h100-mig", tmp_path_factory)
    got = run(st.machine, st.root, "nvml", Fault("nvmlDeviceGetMemoryInfo", HANG, 2))
    s = got.snapshot
    hung = [p for p in s.problems if "timed out" in p.error]
    assert [(p.call, p.target) for p in hung] == [("nvmlDeviceGetMemoryInfo", "gpu2")]
    assert hung[0].error == f"timed out after {HANG_CALL_S:g} s; later calls for gpu2 skipped"
    assert s.gpus[2].memory_total_bytes is None and s.gpus[3].memory_total_bytes is not None
    first = next(k for k, (fn, devs) in enumerate(got.nvml.log) if fn == "nvmlDeviceGetMemoryInfo" and 2 in devs)
    assert got.nvml.calls_after(first, 2) == []
    assert got.seconds < 2.0


def test_overall_budget_stops_calls_and_says_so_once(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A P2P call that hangs for every pair: each pair is cut, then the budget ends NVML."""
    st = setup("hgx-h100-mig", tmp_path_factory)
    m, tmp_path = st.machine, st.root
    nv = Faulty(FakeNvml(m), nvml_devices, Fault("nvmlDeviceGetP2PStatus", HANG, 0))
    t = time.monotonic()
    try:
        out = probe(
            nvml_lib=nv, cuda_driver=FakeCuda(m), sysfs_root=str(tmp_path), env={}, call_timeout_s=0.2, budget_s=0.5
        )
    finally:
        nv.release.set()
    assert time.monotonic() - t < 2.0
    problems = out.snapshot.problems
    budget = [p for p in problems if "time budget" in p.error]
    assert len([p for p in budget if p.source == "nvml"]) == 1
    assert budget[0].target is None and "0.5 s is spent" in budget[0].error
    cut = [p.target for p in problems if "timed out" in p.error]
    assert cut and cut == [f"gpu0-gpu{j}" for j in range(1, len(cut) + 1)]  # each pair once, in order
    assert all(
        p.error == "timed out after 0.2 s; later calls for " + (p.target or "") + " skipped"
        for p in problems
        if "timed out" in p.error
    )
    assert out.gpu_count == len(m.gpus)  # the per-GPU facts read before the budget ran out are kept


def test_init_and_shutdown_go_through_the_choke_point(tmp_path: Path) -> None:
    m = machines.consumer_pair()
    write_sysfs(m, tmp_path)
    got = run(m, tmp_path, "nvml", Fault("nvmlInit", "TimeoutError"))
    assert [(p.call, p.error) for p in got.snapshot.problems if p.source == "nvml"] == [
        ("nvmlInit", "TimeoutError: driver did not answer")
    ]
    assert len(got.snapshot.gpus) == 2  # from sysfs
    got = run(m, tmp_path, "nvml", Fault("nvmlShutdown", "Exception"))
    assert [p.call for p in got.snapshot.problems if p.source == "nvml"] == ["nvmlShutdown"]
    assert got.snapshot.gpus[0].name == "NVIDIA GeForce RTX 4090"


class _AbsurdNvml(FakeNvml):
    """Answers no NVML gives: a billion devices."""

    def nvmlDeviceGetCount(self) -> int:
        super().nvmlDeviceGetCount()
        return 10**9


class _GarbageNvml(FakeNvml):
    """A CUDA version that is not a number: the reader's own code fails, not the call."""

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return "twelve"  # type: ignore[return-value]


def test_absurd_and_garbage_answers_are_problems_not_crashes(tmp_path_factory: pytest.TempPathFactory) -> None:
    st = setup("old-driver", tmp_path_factory)
    m, root = st.machine, st.root
    out = probe(nvml_lib=_AbsurdNvml(m), cuda_driver=FakeCuda(m), sysfs_root=str(root), env={}, now=FIXED_NOW)
    s = out.snapshot
    assert [p.error for p in s.problems if p.call == "nvmlDeviceGetCount"] == [
        "implausible device count 1000000000; NVML's device list not used"
    ]
    assert len(s.gpus) == len(m.gpus)  # from sysfs, quickly
    out = probe(nvml_lib=_GarbageNvml(m), cuda_driver=FakeCuda(m), sysfs_root=str(root), env={}, now=FIXED_NOW)
    s = out.snapshot
    assert [p.error for p in s.problems if p.call == "nvmlSystem*"] == [
        "unusable answer: ValueError: invalid literal for int() with base 10: 'twelve'"
    ]
    assert s.software.driver_version == m.driver  # read before the bad answer
    assert [g.name for g in s.gpus] == ["NVIDIA H100 PCIe"] * 2  # the devices are still read
