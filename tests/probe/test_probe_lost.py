"""Issue 9 item 4: a GPU lost mid-probe is marked once and never queried again."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXED_NOW
from tests.fakes import machines
from tests.fakes.cuda import FakeCuda
from tests.fakes.machine import FakeMachine
from tests.fakes.nvml import FakeNvml
from tests.fakes.sysfs import write_sysfs
from topomap.model.codec import decode_snapshot, encode_snapshot
from topomap.model.snapshot import Snapshot
from topomap.probe import probe

LOST = 3
PAIR_CALLS = {"nvmlDeviceGetTopologyCommonAncestor", "nvmlDeviceGetP2PStatus"}


def probe_logged(m: FakeMachine, root: Path) -> tuple[Snapshot, FakeNvml]:
    write_sysfs(m, root)
    nv = FakeNvml(m)
    out = probe(nvml_lib=nv, cuda_driver=FakeCuda(m), sysfs_root=str(root), env={}, now=FIXED_NOW)
    return out.snapshot, nv


def calls_on(nv: FakeNvml, index: int) -> list[str]:
    return [fn for fn, i in nv.device_log if i == index]


def assert_lost_once(s: Snapshot) -> None:
    assert [g.index for g in s.gpus if g.lost] == [LOST]
    marks = [p for p in s.problems if "GpuIsLost" in p.error]
    assert [(p.target, p.error) for p in marks] == [
        (f"gpu{LOST}", "GpuIsLost (15): GPU fell off the bus; later calls skipped")
    ]
    assert decode_snapshot(encode_snapshot(s)) == s
    assert b'"lost":true' in encode_snapshot(s).replace(b" ", b"")


def test_gpu3_lost_mid_probe_is_marked_once_and_never_called_again(tmp_path: Path) -> None:
    """8x H100 NV18 with gpu3 lost mid-probe (during its own per-device calls)."""
    s, nv = probe_logged(machines.hgx_h100_gpu3_lost(after_calls=6), tmp_path)
    assert_lost_once(s)
    on3 = calls_on(nv, LOST)
    assert len(on3) == 7, on3  # six answered, the seventh said GPU_IS_LOST, then nothing
    assert not PAIR_CALLS & set(on3)  # not per pair either
    g3 = s.gpus[LOST]
    assert g3.uuid is not None and g3.nvlinks == [] and g3.fabric is None  # read before / unknown after
    assert all(g.nvlinks and g.fabric is not None for g in s.gpus if g.index != LOST)
    pairs3 = [p for p in s.pairs if f"gpu{LOST}" in (p.a, p.b) and p.b.startswith("gpu")]
    assert len(pairs3) == 7 and all(p.p2p is None for p in pairs3)  # NVML did not ask
    # its links were never read: NVLink unknown (path None), the PCIe class from sysfs kept
    assert all(p.path is None and p.pcie_path in ("PIX", "NODE", "SYS") for p in pairs3)
    assert not [p for p in s.problems if p.call == "path class"]


def test_gpu3_lost_during_the_pair_calls_is_found_with_one_call_each(tmp_path: Path) -> None:
    """Lost after its per-device calls: the pair call that fails cannot say which GPU fell off,
    so each of the two is asked once; gpu3 is marked, and no later pair asks it again."""
    clean = FakeNvml(machines.hgx_h100())
    _, clean = probe_logged(machines.hgx_h100(), tmp_path / "clean")
    per_device = [fn for fn in calls_on(clean, LOST) if fn not in PAIR_CALLS]
    s, nv = probe_logged(machines.hgx_h100_gpu3_lost(after_calls=len(per_device) + 2), tmp_path / "lost")
    assert_lost_once(s)
    on3 = calls_on(nv, LOST)
    first_fail = len(per_device) + 2  # position (0-based) of the call that said GPU_IS_LOST
    assert on3[first_fail + 1 :] == ["nvmlDeviceGetPciInfo"], on3[first_fail:]
    g3 = s.gpus[LOST]
    assert g3.nvlinks and g3.fabric is not None  # everything per-device was read before the loss
    assert all(p.path == "NV18" for p in s.pairs if f"gpu{LOST}" in (p.a, p.b) and p.b.startswith("gpu"))
