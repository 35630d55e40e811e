from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.fakes.cuda import FakeCuda
from tests.fakes.machine import FakeMachine
from tests.fakes.nvml import FakeNvml
from tests.fakes.sysfs import write_sysfs
from topomap.probe import ProbeOutcome, probe

# Real outputs of real machines, kept in the repository with their origins (README.md there).
REAL = Path(__file__).resolve().parent / "data" / "real-topologies"
SAMPLES = Path(__file__).resolve().parents[1] / "samples"
FIXED_NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def run_probe(
    m: FakeMachine,
    root: Path,
    env: dict[str, str] | None = None,
    old_bindings: bool = False,
) -> ProbeOutcome:
    """Probe a fake machine: fake NVML, fake CUDA, and its sysfs tree under ``root``."""
    write_sysfs(m, root)
    return probe(
        nvml_lib=FakeNvml(m, old_bindings=old_bindings),
        cuda_driver=FakeCuda(m),
        sysfs_root=str(root),
        env=env or {},
        now=FIXED_NOW,
    )


@pytest.fixture
def real() -> Path:
    return REAL
