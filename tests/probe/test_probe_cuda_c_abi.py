"""The CUDA probe through the real cuda-bindings, over a fake ``libcuda.so.1`` compiled here with the
system C compiler (tests/fakes/libcuda_c.py), against the same machine through the Python fake.

The bindings find the library by the system search and read LD_LIBRARY_PATH at process start,
so each probe runs in a child Python. CI runs this file on the lowest and the newest cuda-bindings
the ranges allow (issue 25's version matrix); the child inherits PYTHONPATH, so it loads the same
bindings as the test.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import machines
from tests.fakes.cuda import FakeCuda
from tests.fakes.libcuda_c import build, compiler
from tests.fakes.machine import FakeMachine
from topomap.measure.spin import TIMEOUT_NS
from topomap.probe.cuda import CudaResult, probe_cuda

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler (cc/gcc) to build the fake libcuda.so.1")

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import dataclasses, json, os, sys
from topomap.probe.cuda import probe_cuda
from topomap.probe.guarded import CallRunner, using
import cuda.bindings
with using(CallRunner(call_s=float(sys.argv[1]), total_s=None)):
    r = probe_cuda()
d = dataclasses.asdict(r)
d["peers"] = {f"{a}-{b}": dataclasses.asdict(v) for (a, b), v in r.peers.items()}
d["problems"] = [{"call": p.call, "target": p.target, "error": p.error} for p in r.problems]
d["bindings"] = getattr(cuda.bindings, "__version__", "?")
sys.stdout.write(json.dumps(d))
sys.stdout.flush()
os._exit(0)  # a driver call left sleeping in C must not hold the exit
"""


def _plain(r: CudaResult) -> dict[str, Any]:
    d = dataclasses.asdict(r)
    d["peers"] = {f"{a}-{b}": dataclasses.asdict(v) for (a, b), v in r.peers.items()}
    d["problems"] = [{"call": p.call, "target": p.target, "error": p.error} for p in r.problems]
    return d


def _child(lib: Path | None, tmp: Path, call_s: float = 15.0, env: dict[str, str] | None = None) -> dict[str, Any]:
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    run_env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **(env or {})}
    run_env["LD_LIBRARY_PATH"] = str(lib if lib is not None else tmp / "empty")
    (tmp / "empty").mkdir(exist_ok=True)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(call_s)], env=run_env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return dict(json.loads(out.stdout))


MACHINES: dict[str, Callable[[], FakeMachine]] = {
    "hgx_h100": machines.hgx_h100,
    "a100_pcie_reordered": lambda: dataclasses.replace(machines.a100_pcie(), cuda_order=[1, 0, 2, 3, 4, 5, 6, 7]),
    "consumer_pair": machines.consumer_pair,
    "gb200_tray": machines.gb200_tray,
    "old_driver": machines.old_driver,  # the driver lacks cuDeviceGetP2PAttribute
    "fabric_manager_down": lambda: dataclasses.replace(machines.hgx_h100(), cuda_init_error=802),
}


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_real_bindings_over_compiled_libcuda_agree_with_python_fake(tmp_path: Path, name: str) -> None:
    m = MACHINES[name]()
    got = _child(build(m, tmp_path / "lib"), tmp_path)
    want = _plain(probe_cuda(FakeCuda(m)))
    assert got.pop("bindings") != "?"
    problems_got, problems_want = got.pop("problems"), want.pop("problems")
    assert got == want
    assert [(p["call"], p["target"]) for p in problems_got] == [(p["call"], p["target"]) for p in problems_want]


def test_hgx_h100_facts_through_real_bindings(tmp_path: Path) -> None:
    got = _child(build(machines.hgx_h100(), tmp_path / "lib"), tmp_path)
    assert got["available"] and got["driver_version"] == "12.4" and len(got["devices"]) == 8
    assert got["devices"][0]["pci_bus_id"] == "0000:18:00.0" and got["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert got["devices"][0]["uuid"] == machines.hgx_h100().gpus[0].uuid
    assert got["peers"]["0-7"] == {"can_access_peer": True, "performance_rank": 0, "access_supported": True,
                                   "native_atomics": True}  # fmt: skip


def test_a_function_the_driver_lacks_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    got = _child(build(machines.old_driver(), tmp_path / "lib"), tmp_path)
    assert got["available"] and len(got["devices"]) == 2
    assert got["peers"]["0-1"]["can_access_peer"] is True and got["peers"]["0-1"]["performance_rank"] is None
    assert {p["call"] for p in got["problems"]} == {"cuDeviceGetP2PAttribute"}


def test_no_libcuda_is_recorded_and_the_probe_goes_on(tmp_path: Path) -> None:
    got = _child(None, tmp_path)
    assert not got["available"] and got["devices"] == []
    assert [p["call"] for p in got["problems"]] == ["cuDriverGetVersion"]


def test_a_wedged_driver_call_is_cut_because_the_bindings_release_the_gil(tmp_path: Path) -> None:
    """Issue 25 item 5: with the GIL held through the C call, the probe's wait could not return
    until the driver did (20 s here); released, the 1 s limit cuts it."""
    lib = build(machines.hgx_h100(), tmp_path / "lib")
    start = time.monotonic()
    got = _child(
        lib, tmp_path, call_s=1.0, env={"FAKE_CUDA_SLEEP_FN": "cuDeviceGetCount", "FAKE_CUDA_SLEEP_MS": "20000"}
    )
    assert time.monotonic() - start < 15.0
    assert got["available"] and got["devices"] == []
    cut = [p for p in got["problems"] if p["call"] == "cuDeviceGetCount"]
    assert len(cut) == 1 and "1" in cut[0]["error"]


SPIN_CHILD = """
import ctypes, json, os, sys
from cuda.bindings import driver as cu
from topomap.measure.copies import Session
from topomap.measure.spin import Latches
s = Session(cu)
latches = Latches(s)
latch = latches.get(0)
if latch is None:
    sys.stdout.write(json.dumps({"unheld": latches.unheld}))
else:
    s.context(0)
    stream = s.call("cuStreamCreate", 0, 1)
    latch.hold(s, stream)
    got = (ctypes.c_uint64 * 8)()
    ctypes.CDLL("libcuda.so.1").fake_last_launch(got)
    flag = ctypes.c_int.from_address(latch.host).value
    latch.release()
    sys.stdout.write(json.dumps({"got": list(got), "host": latch.host, "device": int(latch.device),
                                 "flag_while_held": flag, "flag_after": ctypes.c_int.from_address(latch.host).value,
                                 "stream": int(stream)}))
sys.stdout.flush()
os._exit(0)
"""


def test_the_blocking_kernel_through_real_bindings_reaches_the_driver_intact(tmp_path: Path) -> None:
    """Issue 25 item 9 on the real bindings: the PTX goes to cuModuleLoadData as NUL-terminated text,
    the entry is found by name, and cuLaunchKernel receives the mapped flag's device address and
    the timeout through kernelParams (an array of pointers handed over as an address)."""
    lib = build(machines.hgx_h100(), tmp_path / "lib")
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "LD_LIBRARY_PATH": str(lib)}
    out = subprocess.run([sys.executable, "-c", SPIN_CHILD], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout)
    assert "got" in res, res
    latch_ptr, timeout, grid, block, stream, image_ok, entry_ok, launches = res["got"]
    assert (image_ok, entry_ok, launches) == (1, 1, 1)
    assert latch_ptr == res["device"] == res["host"]  # the kernel reads the flag the host writes
    assert timeout == TIMEOUT_NS and (grid, block) == (1, 1) and stream == res["stream"]
    assert (res["flag_while_held"], res["flag_after"]) == (0, 1)
