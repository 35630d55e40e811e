"""The probe on AMD GPUs through the fake ``amdsmi`` (issue 35): what it reads, a host with both vendors'
GPUs, the fault matrix (every AMD SMI call × every status code and foreign failure: no traceback, every
fault a problem record), and the import failure of a binding without ``libamd_smi.so``."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FIXED_NOW
from tests.fakes import machines
from tests.fakes.amd_machine import mi300x_8, two_hives_64gb
from tests.fakes.amdsmi import FakeAmdSmi
from tests.fakes.cuda import FakeCuda
from tests.fakes.faults import FOREIGN, HANG, MISSING, Fault, Faulty
from tests.fakes.machine import FakeMachine
from tests.fakes.nvml import FakeNvml
from tests.fakes.sysfs import write_sysfs
from topomap.graph.build import build
from topomap.graph.evidence import gpu_link
from topomap.model.codec import decode_snapshot, encode_snapshot
from topomap.model.snapshot import Snapshot
from topomap.probe import probe
from topomap.probe.amd_join import _amd_on_bus
from topomap.probe.amdsmi_calls import STATUS_NAMES
from topomap.probe.sysfs import PciFunction, SysfsResult

DEVICE = 1


def amd_only(amd: object = None) -> FakeMachine:
    """A ROCm host: no NVIDIA driver, no libcuda, eight MI300X."""
    return FakeMachine(
        name="mi300x", gpus=[], roots=[], init_error=12, cuda_missing_library=True, amd=amd or mi300x_8()
    )


def amd_devices(fn: str, args: tuple[object, ...]) -> tuple[int, ...]:
    return tuple(a.index for a in args if type(a).__name__ == "amdsmi_processor_handle")  # type: ignore[attr-defined]


def run(m: FakeMachine, root: Path, fault: Fault | None = None, hang: bool = False) -> tuple[Snapshot, Faulty, float]:
    assert m.amd is not None
    lib = Faulty(FakeAmdSmi(m.amd), amd_devices, fault)
    t = time.monotonic()
    try:
        out = probe(
            nvml_lib=FakeNvml(m),
            cuda_driver=FakeCuda(m),
            amdsmi_lib=lib,
            sysfs_root=str(root),
            env={},
            now=FIXED_NOW,
            call_timeout_s=0.1 if hang else 15.0,
            budget_s=1.0 if hang else 60.0,
        )
    finally:
        lib.release.set()
    return out.snapshot, lib, time.monotonic() - t


@pytest.fixture(scope="module")
def mi300x_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mi300x")
    write_sysfs(amd_only(), root)
    return root


def test_an_mi300x_host_is_read_through_amd_smi(mi300x_root: Path) -> None:
    s, _, _ = run(amd_only(), mi300x_root)
    assert [g.name for g in s.gpus] == ["AMD Instinct MI300X"] * 8
    assert {g.vendor for g in s.gpus} == {"amd"}
    assert s.gpus[0].pci_bus_id == "0000:0c:00.0" and s.gpus[7].pci_bus_id == "0000:df:00.0"
    assert [g.numa_node for g in s.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert s.gpus[3].memory_total_bytes == 192 * 10**9
    assert s.gpus[0].pcie is not None and (s.gpus[0].pcie.gen_max, s.gpus[0].pcie.width_max) == (5, 16)
    assert s.software.driver_version == "6.8.5"
    gpu_pairs = [p for p in s.pairs if p.a.startswith("gpu") and p.b.startswith("gpu")]
    assert len(gpu_pairs) == 28 and {p.path for p in gpu_pairs} == {"XGMI"}
    assert {(p.xgmi.hops, p.xgmi.hops_reported, p.xgmi.weight, p.xgmi.links) for p in gpu_pairs if p.xgmi} == {
        (1, 1, 15, 1)
    }
    link = gpu_link(build(s), "gpu0", "gpu5")
    assert (link.medium, link.via, link.nvlink.bandwidth.gbps, link.nvlink.bandwidth.source) == (
        "gpu-link",
        "xgmi",
        64.0,
        "spec",
    )
    # NVML and CUDA are absent (a ROCm host): one problem each, AMD SMI none
    assert [p.source for p in s.problems if p.source == "amdsmi"] == []


def test_two_xgmi_hives_cross_sockets_over_pcie(tmp_path: Path) -> None:
    m = amd_only(two_hives_64gb())
    write_sysfs(m, tmp_path)
    s, _, _ = run(m, tmp_path)
    pairs = {(p.a, p.b): p for p in s.pairs}
    assert pairs[("gpu0", "gpu3")].path == "XGMI" and pairs[("gpu4", "gpu7")].path == "XGMI"
    assert pairs[("gpu0", "gpu4")].path == "SYS" and pairs[("gpu0", "gpu4")].link_weight == 72
    assert gpu_link(build(s), "gpu0", "gpu4").via != "xgmi"


def test_a_host_with_both_vendors_gets_both(tmp_path: Path) -> None:
    m = dataclasses.replace(machines.consumer_pair(), amd=two_hives_64gb())
    write_sysfs(m, tmp_path)
    s, _, _ = run(m, tmp_path)
    assert [g.vendor for g in s.gpus] == [None, None] + ["amd"] * 8
    assert s.gpus[0].name == "NVIDIA GeForce RTX 4090" and s.gpus[2].name == "AMD Instinct MI210"
    assert [g.index for g in s.gpus] == list(range(10))
    pairs = {(p.a, p.b): p for p in s.pairs}
    assert pairs[("gpu2", "gpu3")].path == "XGMI"
    assert pairs[("gpu0", "gpu2")].path != "XGMI"  # an NVIDIA and an AMD GPU share no GPU link


def _kinds() -> list[str]:
    return [f"amdsmi:{c}" for c in sorted(STATUS_NAMES)] + sorted(FOREIGN) + [HANG, MISSING]


# Optional answers whose absence is normal and not a problem (NOT_SUPPORTED on this GPU).
_OPTIONAL = {"amdsmi_get_minmax_bandwidth_between_processors", "amdsmi_get_gpu_driver_info"}


def test_the_fault_matrix(tmp_path: Path) -> None:
    """Every AMD SMI call the probe makes (read from a clean run's log) × every status code, the foreign
    failures, a hang and a missing function: a valid snapshot, the call recorded on its GPU or pair."""
    small = dataclasses.replace(mi300x_8(), gpus=mi300x_8().gpus[:3])
    m = amd_only(small)
    write_sysfs(m, tmp_path)
    _base, log, _ = run(m, tmp_path)
    calls = sorted({fn for fn, _ in log.log})
    assert {"amdsmi_init", "amdsmi_shut_down", "amdsmi_topo_get_link_weight", "amdsmi_is_P2P_accessible"} <= set(calls)
    kinds = _kinds()
    combos = {(c, kinds[(i * 7) % len(kinds)]) for i, c in enumerate(calls)}
    combos |= {(calls[(i * 5) % len(calls)], k) for i, k in enumerate(kinds)}
    wrong: list[str] = []
    for call, kind in sorted(combos):
        fault = Fault(call, kind, DEVICE)
        try:
            s, _, took = run(m, tmp_path, fault, hang=kind == HANG)
        except Exception as err:  # the probe must never raise
            wrong.append(f"{fault}: probe raised {type(err).__name__}: {err}")
            continue
        if decode_snapshot(encode_snapshot(s)) != s:
            wrong.append(f"{fault}: snapshot does not round-trip")
        mine = [p for p in s.problems if p.source == "amdsmi" and p.call == call]
        quiet = call in _OPTIONAL and kind in ("amdsmi:2", "amdsmi:3")
        if not mine and not quiet and not any("time budget" in p.error for p in s.problems):
            wrong.append(f"{fault}: no problem recorded")
        for p in mine:
            if p.target is not None and f"gpu{DEVICE}" not in p.target:
                wrong.append(f"{fault}: recorded on {p.target}")
            if "unusable answer" in p.error:
                wrong.append(f"{fault}: reached the safety net: {p.error}")
        if kind == HANG and took > 3.0:
            wrong.append(f"{fault}: hang not cut ({took:.1f} s)")
    assert not wrong, "\n".join(wrong[:30])
    assert len(combos) >= len(calls) + len(kinds) - 5


def test_init_failure_is_one_problem_and_the_probe_goes_on(tmp_path: Path) -> None:
    m = amd_only(dataclasses.replace(mi300x_8(), init_error=34))  # DRIVER_NOT_LOADED
    write_sysfs(m, tmp_path)
    s, _, _ = run(m, tmp_path)
    assert [(p.call, p.error) for p in s.problems if p.source == "amdsmi"] == [
        ("amdsmi_init", "DRIVER_NOT_LOADED (34)")
    ]
    assert s.gpus == []


def test_a_binding_without_its_library_prints_nothing_into_the_snapshot(tmp_path: Path) -> None:
    """amdsmi's wrapper prints two lines and raises KeyError('libamd_smi.so') when the library is
    missing (amdsmi 7.0.2, amdsmi_wrapper.py): the probe's stdout stays JSON, the failure one problem."""
    pkg = tmp_path / "site" / "amdsmi"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "print('/opt/rocm/lib/libamd_smi.so: cannot open shared object file: No such file or directory')\n"
        "print('Unable to find libamd_smi.so library try installing amd-smi-lib from your package manager')\n"
        "_libraries = {}\n"
        "amdsmi_init = _libraries['libamd_smi.so'].amdsmi_init\n"
    )
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from topomap.probe.amdsmi import probe_amdsmi; r = probe_amdsmi();"
        "import json; print(json.dumps([[p.call, p.error] for p in r.problems]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "site")], capture_output=True, text=True, timeout=60, check=True
    )
    problems = json.loads(out.stdout)
    assert len(problems) == 1 and problems[0][0] == "import amdsmi"
    assert "cannot load libamd_smi.so (KeyError: 'libamd_smi.so')" in problems[0][1]


def _fn(bus: str, vendor: str, cls: int) -> PciFunction:
    return PciFunction(bus, ["pci0000:00", bus], vendor, "0x74a1", cls, 0, "0-15", 5, 16, 5, 16, None)


def test_amd_smi_is_asked_where_the_bus_shows_an_amd_gpu() -> None:
    """An Instinct is a processing accelerator (class 0x12), a Radeon a display (0x03); an AMD NIC or
    bridge does not make the probe ask AMD SMI (and an NVIDIA host records no AMD SMI problem)."""
    r = SysfsResult()
    r.functions["0000:0c:00.0"] = _fn("0000:0c:00.0", "0x1002", 0x120000)
    assert _amd_on_bus(r)
    r.functions = {"0000:03:00.0": _fn("0000:03:00.0", "0x1002", 0x030000)}
    assert _amd_on_bus(r)
    r.functions = {
        "0000:00:18.0": _fn("0000:00:18.0", "0x1022", 0x060000),
        "0000:05:00.0": _fn("0000:05:00.0", "0x10de", 0x030200),
    }
    assert not _amd_on_bus(r)


def test_an_nvidia_host_never_asks_amd_smi(tmp_path: Path) -> None:
    m = machines.consumer_pair()
    write_sysfs(m, tmp_path)
    out = probe(nvml_lib=FakeNvml(m), cuda_driver=FakeCuda(m), sysfs_root=str(tmp_path), env={}, now=FIXED_NOW)
    assert not [p for p in out.snapshot.problems if p.source == "amdsmi"]
    assert {g.vendor for g in out.snapshot.gpus} == {None}
