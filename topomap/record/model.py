"""The run record: what one command used while it ran (``topomap.run/1``).

A run record holds observations only: every number in it was read while the command ran
(NVML, psutil, the kernel's rusage) or is the machine snapshot taken just before. Series are
stored column-wise (one list per quantity, aligned with ``t_s``) to keep files small; a value
that could not be read at a sample is ``null``. Units are in the field names.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Any

import msgspec

from topomap.base.errors import TopomapError
from topomap.files.budget import check_json_values
from topomap.files.inputs import MAX_SNAPSHOT_BYTES, read_bytes
from topomap.model.snapshot import I64_MAX, I64_MIN, Problem, Snapshot

RUN_SCHEMA = "topomap.run/1"
RUN_SCHEMA_VERSION = 1
_RUN_RE = re.compile(r"^topomap\.run/(\d+)$")


class _R(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base: strict decoding, keyword construction."""


class GpuProcess(_R, kw_only=True):
    """A process NVML listed on a card (nvmlDeviceGetComputeRunningProcesses)."""

    pid: int
    name: str | None = None
    in_command_tree: bool  # the pid belonged to the recorded command's process tree when seen
    peak_memory_bytes: int | None = None  # largest usedGpuMemory seen; None where NVML hides it
    first_seen_s: float
    last_seen_s: float


class GpuSeries(_R, kw_only=True):
    """One card (a GPU, or a MIG device ``gpu<i>/mig<k>``) sampled through NVML."""

    id: str  # "gpu0", "gpu0/mig3"
    index: int  # NVML index of the GPU (the parent for a MIG device)
    uuid: str | None = None
    name: str | None = None
    memory_total_bytes: int | None = None
    visible_to_command: bool | None = None  # by CUDA_VISIBLE_DEVICES; None when it could not be resolved
    visibility_note: str | None = None
    lost_at_s: float | None = None  # NVML said GPU_IS_LOST at this time; later samples are null
    t_s: list[float] = []  # seconds since the command started
    memory_used_bytes: list[int | None] = []  # nvmlDeviceGetMemoryInfo().used
    util_gpu_pct: list[int | None] = []  # nvmlDeviceGetUtilizationRates().gpu (% of time a kernel ran)
    util_memory_pct: list[int | None] = []  # ...().memory (% of time device memory was read/written)
    pcie_rx_bytes_s: list[int | None] = []  # nvmlDeviceGetPcieThroughput(RX) KiB/s × 1024; sampled ≤ 1/s
    pcie_tx_bytes_s: list[int | None] = []
    nvlink_rx_bytes_s: list[float | None] = []  # Δ NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX (KiB) / Δt
    nvlink_tx_bytes_s: list[float | None] = []
    processes: list[GpuProcess] = []


class HostSeries(_R, kw_only=True):
    """The host side, from psutil: the command's process tree, and whole-host disk and network."""

    cpu_count: int | None = None  # logical CPUs (psutil.cpu_count)
    memory_total_bytes: int | None = None  # psutil.virtual_memory().total
    t_s: list[float] = []
    tree_cpu_pct: list[float | None] = []  # sum over the tree, 100 = one CPU fully busy
    tree_rss_bytes: list[int | None] = []  # sum of resident set sizes over the tree
    tree_processes: list[int | None] = []
    disk_read_bytes: list[int | None] = []  # whole host, cumulative since the command started
    disk_write_bytes: list[int | None] = []
    net_rx_bytes: list[int | None] = []  # whole host, all interfaces, cumulative since start
    net_tx_bytes: list[int | None] = []
    cpu_user_s: float | None = None  # kernel rusage of the command and the children it waited for
    cpu_system_s: float | None = None
    max_rss_bytes: int | None = None  # rusage ru_maxrss: largest single process of the tree


class Sampling(_R, kw_only=True):
    """How sampling went and what it cost (measured in the recorder itself)."""

    interval_s: float  # requested
    samples: int = 0  # readings taken (more than the stored points when thinned)
    mean_interval_s: float | None = None  # achieved
    sample_cost_mean_s: float | None = None  # wall time of one sample (NVML + psutil)
    sample_cost_max_s: float | None = None
    recorder_cpu_s: float | None = None  # CPU time the recorder itself used while the command ran
    overhead_pct: float | None = None  # recorder CPU / (duration × 1 CPU) × 100
    probe_s: float | None = None  # the machine snapshot, taken before the command started
    gpu_sampled: bool = False
    gpu_note: str | None = None  # why no GPU was sampled, when none was
    thinned: int = 1  # a long run: points end this many times the interval apart; merged ones keep the max


class Run(_R, kw_only=True):
    schema: str = RUN_SCHEMA
    tool: str  # "topomap 0.1.0"
    label: str | None = None
    command: list[str]
    cwd: str | None = None
    hostname: str | None = None
    environment: dict[str, str] = {}  # variables that decide placement and communication
    versions: dict[str, str] = {}  # python, platform, driver, CUDA, NVML
    started_at: str  # ISO-8601 UTC
    ended_at: str | None = None
    duration_s: float | None = None  # wall clock, command start to exit (monotonic clock)
    exit_status: int | None = None  # the command's exit code; 128+N when killed by signal N
    signal: str | None = None  # the signal that ended the command, e.g. "SIGTERM"
    interrupted_by: str | None = None  # the signal topomap received and forwarded, if any
    sampling: Sampling
    gpus: list[GpuSeries] = []
    host: HostSeries = msgspec.field(default_factory=HostSeries)
    snapshot: Snapshot | None = None
    problems: list[Problem] = []
    notes: list[str] = []


class RunError(TopomapError):
    """A run record that cannot be read; one line naming the file and field."""


def _check_schema(value: object, where: str) -> None:
    if not isinstance(value, str):
        raise RunError(f"{where}: missing or invalid `schema` (expected {RUN_SCHEMA!r})")
    m = _RUN_RE.match(value)
    if not m:
        raise RunError(f"{where}: not a topomap run record (schema {value!r}, expected {RUN_SCHEMA!r})")
    if int(m.group(1)) != RUN_SCHEMA_VERSION:
        raise RunError(
            f"{where}: run schema {value} is not the one this topomap reads ({RUN_SCHEMA})",
            hint="use the topomap version that wrote it",
        )


def decode_run(data: bytes, where: str = "<run>") -> Run:
    """Validate JSON bytes into a Run; errors name ``where`` and the JSON path of the bad field."""
    check_json_values(data, where, "run record", RunError)  # before decoding (topomap.files.budget)
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as err:
        raise RunError(f"{where}: not valid JSON ({err})") from err
    except RecursionError as err:
        raise RunError(f"{where}: JSON nested deeper than any run record") from err
    if not isinstance(raw, dict):
        raise RunError(f"{where}: a run record is a JSON object, got {type(raw).__name__}")
    _check_schema(raw.get("schema"), where)
    _bounded(raw, where)
    try:
        run = msgspec.convert(raw, Run)
    except msgspec.ValidationError as err:
        raise RunError(f"{where}: {err}") from err
    except RecursionError as err:
        raise RunError(f"{where}: nested deeper than any run record") from err
    for i, g in enumerate(run.gpus):
        _aligned(g, f"{where}: gpus[{i}]")
    _aligned(run.host, f"{where}: host")
    return run


def _bounded(raw: dict[str, Any], where: str) -> None:
    """Every integer fits in 64 bits and every number is finite, as in a snapshot (issue 24: a memory
    figure of 10^400 made `show`, `render` and `diff` overflow). One pass over the decoded JSON."""
    stack: list[tuple[Any, str]] = [(raw, "")]
    while stack:
        node, at = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            kind = type(value)
            if kind is int:
                if I64_MIN <= value <= I64_MAX:
                    continue
                digits = len(str(abs(value)))
                bad = f"{value if digits <= 24 else f'an integer of {digits} digits'} does not fit in 64 bits"
            elif kind is float:
                if math.isfinite(value):
                    continue
                bad = f"{value} is not a finite number"
            elif kind is dict or kind is list:
                stack.append((value, f"{at}[{key}]" if isinstance(key, int) else f"{at}.{key}" if at else key))
                continue
            else:
                continue
            field = f"{at}[{key}]" if isinstance(key, int) else f"{at}.{key}" if at else key
            raise RunError(f"{where}: {field}: {bad}", hint="was the record edited?")


def _aligned(series: GpuSeries | HostSeries, where: str) -> None:
    """Series are stored column-wise: every list field holds one value per time in ``t_s``."""
    n = len(series.t_s)
    for name in series.__struct_fields__:
        value = getattr(series, name)
        if name != "t_s" and name != "processes" and isinstance(value, list) and len(value) != n:
            raise RunError(f"{where}.{name}: {len(value)} values for {n} times in t_s", hint="was the record edited?")
    if any(b < a for a, b in itertools.pairwise(series.t_s)):
        raise RunError(f"{where}.t_s: times go backwards", hint="was the record edited?")


def load_run(path: str | Path) -> Run:
    """Read and validate a run record file (a regular file of bounded size: a device, a FIFO
    or a huge file is refused before it is read)."""
    return decode_run(read_bytes(path, "run record", MAX_SNAPSHOT_BYTES, RunError), str(path))


def encode_run(run: Run) -> bytes:
    """Deterministic, indented JSON with a trailing newline."""
    return msgspec.json.format(msgspec.json.encode(run, order="deterministic"), indent=2) + b"\n"


def run_to_builtins(run: Run) -> Any:
    return msgspec.to_builtins(run, order="deterministic")
