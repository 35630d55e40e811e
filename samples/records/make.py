"""Record the two shipped sample runs (run from the repository root): `python samples/records/make.py`.

Origin, said in each record's notes: the workload (samples/records/work.py), its wall times,
exit statuses, host counters and outputs are real, recorded on the machine that ran this
script, which has no GPU. The GPU figures come from the fake NVML of the test suite
(tests/fakes/record_nvml.py) describing a 2x RTX 4090 machine (tests/fakes/machines.py
consumer_pair), driven by the real worker processes: each card reports the workers that
registered on it, with memory used = their resident memory + 300 MiB of context, utilisation =
their CPU use. Nothing is typed in by hand.

Two arrangements of the same command: one card (CUDA_VISIBLE_DEVICES=0) and two cards
(CUDA_VISIBLE_DEVICES=0,1).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import run_probe  # noqa: E402
from tests.fakes import machines  # noqa: E402
from tests.fakes.nvml import _Handle  # noqa: E402
from tests.fakes.record_nvml import ScriptedNvml  # noqa: E402
from topomap.files.atomic import atomic_write
from topomap.record import encode_run  # noqa: E402
from topomap.record.runner import RecordOptions, record  # noqa: E402

HERE = ROOT / "samples" / "records"
CONTEXT = 300 * 2**20
NOTE = (
    "GPU figures: fake NVML (tests/fakes/record_nvml.py, 2x RTX 4090 description) driven by the real "
    "worker processes (memory = their RSS + 300 MiB context, utilisation = their CPU use). Host figures, "
    "times, exit status and outputs: real, recorded without a GPU by samples/records/make.py."
)


class WorkerNvml(ScriptedNvml):
    """Each card reports the real worker process that wrote $WORK_STATE/gpu<card>.pid."""

    def __init__(self, state: Path) -> None:
        super().__init__(machines.consumer_pair())
        self.state = state
        self.cpu: dict[int, psutil.Process] = {}

    def _proc(self, card: int) -> psutil.Process | None:
        f = self.state / f"gpu{card}.pid"
        try:
            pid = int(f.read_text())
            if pid not in self.cpu:
                self.cpu[pid] = psutil.Process(pid)
                self.cpu[pid].cpu_percent()
            p = self.cpu[pid]
            return p if p.is_running() and p.status() != psutil.STATUS_ZOMBIE else None
        except (OSError, ValueError, psutil.Error):
            return None

    def nvmlDeviceGetMemoryInfo(self, h: _Handle, version: Any = None) -> Any:
        mem = super().nvmlDeviceGetMemoryInfo(h, version)
        p = self._proc(h.index)
        try:
            mem.used = p.memory_info().rss + CONTEXT if p is not None else 0
        except psutil.Error:
            mem.used = 0
        return mem

    def nvmlDeviceGetUtilizationRates(self, h: _Handle) -> Any:
        u = super().nvmlDeviceGetUtilizationRates(h)
        p = self._proc(h.index)
        try:
            u.gpu = min(100, round(p.cpu_percent())) if p is not None else 0
        except psutil.Error:
            u.gpu = 0
        u.memory = 0
        return u

    def nvmlDeviceGetComputeRunningProcesses(self, h: _Handle) -> list[Any]:
        self._check("nvmlDeviceGetComputeRunningProcesses", h)
        p = self._proc(h.index)
        if p is None:
            return []
        self.procs[h.index] = lambda: [(p.pid, p.memory_info().rss + CONTEXT)]
        return super().nvmlDeviceGetComputeRunningProcesses(h)


def make(label: str, cards: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        state.mkdir()
        out = HERE / "out" / label
        shutil.rmtree(out, ignore_errors=True)
        snapshot = run_probe(machines.consumer_pair(), Path(tmp) / "sysfs").snapshot
        snapshot.source.notes = ["fake machine: tests/fakes/machines.py consumer_pair, probed through the test fakes"]
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": cards, "WORK_OUT": str(out), "WORK_STATE": str(state)}
        opts = RecordOptions(
            interval_s=0.2, label=label, env=env, nvml_lib=WorkerNvml(state), snapshot=lambda: snapshot, notes=[NOTE]
        )
        run = record([sys.executable, "samples/records/work.py"], opts)
        run.command[0] = "python"  # the interpreter's path on the recording machine says nothing
        run.cwd = None
        if "packages_of" in run.versions:
            run.versions["packages_of"] = "python"
        atomic_write(HERE / f"{label}.json", encode_run(run))
        print(f"{label}: exit {run.exit_status} in {run.duration_s:.2f} s, {run.sampling.samples} samples")


if __name__ == "__main__":
    os.chdir(ROOT)
    make("one-card", "0")
    make("two-cards", "0,1")
