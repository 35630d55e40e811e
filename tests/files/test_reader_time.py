"""Every reader's time is linear in its input (issue 36 item 6: a 100 KB NCCL log line of spaces took
44 s, and 60,000 spaces inserted in a real log 12.7 s of CPU against 0.25 s for the log: `_RAY_REPEAT`'s
`\\s*\\[repeated…\\]\\s*$` through `re.sub` and `_CHANNEL`'s `\\S.*?)\\s*$` were quadratic in a run of blanks).

For every input kind :mod:`topomap.files.kind` knows (and the nccl --log reader, and the durations CSV of
a flow's work) a real file is read as the CLI reads it (the kind sniffed, then the reader), then single-
line variants of it: a run of spaces, of tabs, of one letter, inserted in its middle line, and the whole
file joined into one line; each at 256 KiB and at 1 MiB. A linear reader takes about four times as long
for four times the bytes; the test allows eight (``GROWTH``), and the 1 MiB variant at most ``SLACK``
times the file's own time per byte (both ratios, never an absolute time). A reader that refuses a
variant is timed the same way: a refusal must be linear too.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from topomap.base.errors import TopomapError
from topomap.check import read_requirements
from topomap.files.inputs import decode_text, read_bytes
from topomap.files.kind import DESCRIPTIONS, file_kind
from topomap.flow import read_flow
from topomap.flow.work import read_durations_csv
from topomap.importers import load_any
from topomap.importers.bandwidth import load_measurements
from topomap.importers.nccl_tests import parse_nccl_tests
from topomap.nccl.logread import read_log
from topomap.record import load_run

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SAMPLES = ROOT / "samples"
MIB = 1 << 20
#: Time for 4× the bytes, over the time for 1×: linear is 4 (less with a fixed start); quadratic 16.
GROWTH = 8.0
#: The 1 MiB variant's time per byte over the real file's own: linear is 1 or less (the file's time has
#: the reader's fixed cost in it); quadratic in the line's length is hundreds. A linear reader of a small
#: real file (amd-smi's topology table joined into one line: ×4.0 for ×4 the bytes) reads 10–12× on a
#: loaded machine, so the backstop sits at 20: ``GROWTH`` is what tells linear from quadratic.
SLACK = 20.0


def _log(path: Path) -> object:
    return read_log(decode_text(read_bytes(path, "NCCL log", 64 * MIB), str(path)), str(path))


def _tests(path: Path) -> object:
    return parse_nccl_tests(decode_text(read_bytes(path, "nccl-tests results", 64 * MIB), str(path)), str(path))


READERS: dict[str, tuple[Path, Callable[[Path], object]]] = {
    "snapshot": (SAMPLES / "snapshots" / "hgx-h200-8gpu-10nic.json", load_any),
    "run": (SAMPLES / "records" / "one-card.json", load_run),
    "nvidia-smi (topo -m)": (DATA / "real-topologies" / "nvidia-smi" / "hgx-h200-8gpu-10nic-nchc-nano4.txt", load_any),
    "nvidia-smi (-q)": (DATA / "fixtures" / "nvidia-smi-q-2gpu-h100-pcie.txt", load_any),
    "nvidia-smi (--query-gpu)": (
        DATA / "real-topologies" / "nvidia-smi" / "l40s-8gpu-query-gpu-pcie-mlperf-v4.txt",
        load_any,
    ),
    "nccl-xml": (DATA / "real-topologies" / "nccl-xml" / "aws-p5-48xlarge.xml", load_any),
    "hwloc-xml": (DATA / "real-topologies" / "hwloc" / "nvidia-dgx2h.xml", load_any),
    "lstopo": (DATA / "real-topologies" / "lstopo" / "nvidia-dgx2h-console-v.txt", load_any),
    "nccl-log": (DATA / "real-nccl-logs" / "h200-vm-fulldump-gdrdma-nccltests256.log", load_any),
    "nccl-log (nccl --log)": (DATA / "real-nccl-logs" / "a100-interleaved-dumps-fastvideo256.log", _log),
    "measurements (nvbandwidth)": (DATA / "fixtures" / "nvbandwidth-v0.8-2gpu-h100.txt", load_measurements),
    "measurements (nvbandwidth -j)": (DATA / "fixtures" / "nvbandwidth-v0.8-2gpu-h100.json", load_measurements),
    "measurements (p2pBandwidthLatencyTest)": (
        DATA / "real-topologies" / "bandwidth" / "a100-sxm4-80gb-8gpu-p2pBandwidthLatencyTest-distserve3.txt",
        load_measurements,
    ),
    "flow": (SAMPLES / "flows" / "tensor-parallel.yaml", read_flow),
    "requirements": (SAMPLES / "requirements" / "tensor-parallel.yaml", read_requirements),
    "durations CSV": (SAMPLES / "flows" / "uneven-documents.csv", lambda p: read_durations_csv(p, str(p))),
    "lot": (SAMPLES / "lots" / "two-host-ib.yaml", load_any),
    "nccl-tests": (DATA / "real-nccl-tests" / "h100-hgx-2node-ib-nccltests309.txt", _tests),
    "amd-smi (rocm-smi --showtopo)": (
        DATA / "real-topologies" / "amd" / "rocm-smi" / "amd-8gpu-64gb-two-xgmi-hives-weight72.txt",
        load_any,
    ),
}


def test_every_input_kind_has_a_reader_here() -> None:
    kinds = {name.split(" (")[0] for name in READERS}
    assert set(DESCRIPTIONS) <= kinds, set(DESCRIPTIONS) - kinds


def _variant(text: str, how: str, size: int) -> str:
    lines = text.split("\n")
    mid = len(lines) // 2
    line = lines[mid]
    if how == "joined":
        one = " ".join(lines) + " "
        return (one * (size // len(one) + 1))[:size]
    pad = {"spaces": " ", "tabs": "\t", "letters": "x"}[how] * size
    lines[mid] = line[: len(line) // 2] + pad + line[len(line) // 2 :]
    return "\n".join(lines)


class _Late(BaseException):
    pass


def _late(signum: int, frame: object) -> None:
    raise _Late


def _time(reader: Callable[[Path], object], path: Path, limit_s: float, runs: int = 2) -> float:
    """The fastest of ``runs`` reads (the kind sniffed first, as the CLI does); fails past ``limit_s``."""
    best = float("inf")
    old = signal.signal(signal.SIGALRM, _late)
    try:
        for _ in range(runs):
            signal.setitimer(signal.ITIMER_REAL, limit_s)
            t = time.perf_counter()
            try:
                file_kind(path)
                reader(path)
            except TopomapError:
                pass  # a refusal is timed as well
            except _Late:
                pytest.fail(f"{path.name}: still reading after {limit_s:.0f} s")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            best = min(best, time.perf_counter() - t)
    finally:
        signal.signal(signal.SIGALRM, old)
    return best


Timed = tuple[float, float, dict[int, float]]


def _growth(reader: Callable[[Path], object], text: str, how: str, own: float, folder: Path, name: str) -> Timed:
    """The time for 1 MiB of padding over the time for 256 KiB, and the 1 MiB variant's time per byte
    over the file's own."""
    times = {}
    for size in (MIB // 4, MIB):
        p = folder / name
        p.write_text(_variant(text, how, size))
        times[size] = _time(reader, p, max(20.0, SLACK * own * size * 4))
    return times[MIB] / max(times[MIB // 4], 1e-4), times[MIB] / (len(text) + MIB) / own, times


@pytest.mark.parametrize("how", ["spaces", "tabs", "letters", "joined"])
@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_one_line_variant_of_a_real_file_reads_in_linear_time(kind: str, how: str, tmp_path: Path) -> None:
    source, reader = READERS[kind]
    text = source.read_text()
    own = _time(reader, source, 60, runs=3) / len(text)
    for _ in range(2):  # a shared machine: a second measurement before a verdict of superlinear
        growth, per_byte, times = _growth(reader, text, how, own, tmp_path, source.name)
        linear = (growth <= GROWTH or times[MIB] < 0.1) and per_byte <= SLACK
        if linear:
            break
    assert growth <= GROWTH or times[MIB] < 0.1, f"{kind} {how}: ×{growth:.1f} for ×4 the bytes ({times})"
    assert per_byte <= SLACK, f"{kind} {how}: {per_byte:.1f}× the file's own time per byte ({times})"


LOG = DATA / "real-nccl-logs" / "a100-leonardo-2gpu-p2p-level-nvl-nccltests331.log"
NVB = DATA / "fixtures" / "nvbandwidth-v0.8-2gpu-h100.txt"
P2P = READERS["measurements (p2pBandwidthLatencyTest)"][0]


def _measured(path: Path) -> object:
    return load_measurements(path)


#: (file, reader, a line kind's marker, where after it the blanks go, what to append to the line).
LINE_KINDS = [
    (LOG, _log, " via ", " via ", " [repeated 3x across cluster]"),
    (LOG, _log, "set by environment to", "set by environment to ", ""),
    (LOG, _log, "#  Rank", "#  Rank  0 Group  0", ""),
    (LOG, _log, " NCCL INFO ", " NCCL INFO ", " [repeated 3x across cluster]"),
    (NVB, _measured, "Device 0:", "Device 0: NVI", ""),
    (NVB, _measured, "memcpy CE", "GPU(column)", ""),
    (P2P, _measured, "Device: 0", "Device: 0, NVI", ""),
]


_IDS = [f"{s.suffix}:{m.strip()}" for s, _, m, _, _ in LINE_KINDS]


@pytest.mark.parametrize(("source", "reader", "marker", "after", "tail"), LINE_KINDS, ids=_IDS)
def test_each_hot_line_kind_with_a_blank_run_reads_in_linear_time(
    source: Path, reader: Callable[[Path], object], marker: str, after: str, tail: str, tmp_path: Path
) -> None:
    """The line kinds whose patterns were quadratic in a run of blanks (a lazy group before ``\\s*$`` or
    two ``\\s*`` side by side): the NCCL log's channel line, environment line, nccl-tests' rank table
    and Ray's ``[repeated Nx across cluster]``; nvbandwidth's device and matrix title lines (found by
    inserting 64 KiB of blanks in every line of every real file); p2pBandwidthLatencyTest's device line."""
    lines = source.read_text().split("\n")
    k = next(i for i, line in enumerate(lines) if marker in line)
    for _ in range(2):  # a shared machine: a second measurement before a verdict of superlinear
        times = {}
        for size in (MIB // 4, MIB):
            edited = list(lines)
            cut = edited[k].index(after) + len(after)
            edited[k] = edited[k][:cut] + " " * size + edited[k][cut:] + (" " * size + tail if tail else "")
            p = tmp_path / source.name
            p.write_text("\n".join(edited))
            times[size] = _time(reader, p, 30, runs=3)
        growth = times[MIB] / max(times[MIB // 4], 1e-4)
        if growth <= GROWTH or times[MIB] < 0.1:
            break
    assert growth <= GROWTH or times[MIB] < 0.1, f"{marker}: ×{growth:.1f} for ×4 the bytes ({times})"
