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


# A test that writes into the checkout's root (a daemon's pid file left there was once committed:
# ctld.pid, issue 33 item 8) fails the run, naming what appeared; tests write under tmp_path.
_ROOT = Path(__file__).resolve().parents[1]
_CACHES = {".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache", "__pycache__"}
_AT_START: set[str] = set()


def pytest_sessionstart(session: pytest.Session) -> None:
    _AT_START.update(p.name for p in _ROOT.iterdir())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    stray = sorted({p.name for p in _ROOT.iterdir()} - _AT_START - _CACHES)
    if stray:
        print(f"\ntests wrote into the checkout's root (write under tmp_path instead): {', '.join(stray)}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
