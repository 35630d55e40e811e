"""What kind of file this is, from its content (never its name): the one place every command asks.

Kinds: ``snapshot`` and ``run`` (topomap's own JSON), ``nvidia-smi`` (topo -m / -p2p / nvlink / -q
text, --query-gpu CSV, and `ibstat` appended to them), ``nccl-xml``, ``hwloc-xml``, ``measurements``
(nvbandwidth, p2pBandwidthLatencyTest), ``flow``, ``requirements`` and ``lot`` (a declared lot: YAML whose
top level has ``lot:``). ``None``: none of these.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from topomap.base.errors import TopomapError
from topomap.files.inputs import decode_text, read_head

Kind = Literal[
    "snapshot",
    "run",
    "nvidia-smi",
    "nccl-xml",
    "hwloc-xml",
    "lstopo",
    "nccl-log",
    "amd-smi",
    "measurements",
    "flow",
    "requirements",
    "lot",
    "nccl-tests",
]
Topology = Literal["nvidia-smi", "nccl-xml", "hwloc-xml", "lstopo", "nccl-log", "amd-smi"]
#: How much of a file tells its kind: every test here reads no further (the NCCL dump is sought in the
#: first 2 MB, nvidia-smi's lines in the first 400).
HEAD_BYTES = 4 * 1024 * 1024

DESCRIPTIONS: dict[Kind, str] = {
    "nvidia-smi": "an `nvidia-smi` output (a topology)",
    "nccl-xml": "an NCCL topology XML (a topology)",
    "hwloc-xml": "an hwloc XML (a topology)",
    "lstopo": "`lstopo` text (a topology)",
    "nccl-log": "an NCCL INFO log with its topology dump (a topology)",
    "amd-smi": "an AMD tool's output: `rocm-smi`, `amd-smi` or `rocminfo` (a topology)",
    "snapshot": "a topomap snapshot (JSON)",
    "run": "a topomap run record (JSON, from `topomap record`)",
    "measurements": "measured bandwidth (nvbandwidth or p2pBandwidthLatencyTest output)",
    "flow": "a flow file (YAML)",
    "requirements": "a requirements file (YAML)",
    "lot": "a declared lot (YAML: a lot as a catalogue describes it)",
    "nccl-tests": "nccl-tests results (all_reduce_perf or another *_perf output)",
}

_GPU_LINE = re.compile(r"^GPU (\d+): (.*)$")
_HWLOC_OBJECT = re.compile(r"^(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<object\s[^>]*\btype=", re.DOTALL)
_NCCL_DUMP = re.compile(  # NCCL's topology dump: its header, or a CPU line where the header was cut
    r"NCCL INFO (?:=== System : max(?:Bw|Width)|CPU/[0-9A-Fa-f-]+ \(-?\d+/-?\d+/-?\d+\)\s*$)", re.MULTILINE
)
_LSTOPO = re.compile(  # lstopo's root line, then a CPU-side object indented under it
    r"^(?:Machine|System) \(.*\)\s*$(?:\n.*){0,40}?^\s+(?:Package|NUMANode|Socket|Core|HostBridge)\b", re.MULTILINE
)
_YAML_FLOW = re.compile(r"^flow\s*:", re.MULTILINE)
_YAML_REQUIREMENTS = re.compile(r"^requirements\s*:", re.MULTILINE)
_YAML_LOT = re.compile(r"^lot\s*:", re.MULTILINE)


def topology_format(text: str) -> Topology | None:
    """Which topology importer reads this text, by its content."""
    head = text.lstrip("\ufeff \t\r\n")[:4096]
    if head.startswith("<"):
        if "<topology" in head or _HWLOC_OBJECT.search(head):  # a whole topology, or one object's subtree
            return "hwloc-xml"
        if "<system" in head or re.search(r"<(cpu|pci|nic|net)\b", head):  # a dump, or a part of one (NICs only)
            return "nccl-xml"
        return None
    if looks_like_amd(text):  # asked first: an RCCL log is not one, and rocm-smi has no NCCL dump
        return "amd-smi"
    if looks_like_nvidia_smi(text):
        return "nvidia-smi"
    if _NCCL_DUMP.search(text[:2_000_000]):
        return "nccl-log"
    return "lstopo" if _LSTOPO.search(text[:65536]) else None


_AMD_MARKS = re.compile(  # rocm-smi's banner and spacers, amd-smi's tables and GPU table, rocminfo's agents
    r"ROCm System Management Interface|=+ (?:Weight|Hops|Link Type) between two GPUs =+"
    r"|^GPU\[\d+\]\s*: \(Topology\) Numa Node:|^(?:LINK TYPE|WEIGHT|ACCESS|HOPS|NUMA BW) TABLE:\s*$"
    r"|^\| AMD-SMI |^LINK METRIC TABLE:|^HSA Agents\s*$|^GPU: \d+\s*\n\s+(?:BDF|ASIC|BUS|UUID):",
    re.MULTILINE,
)


def looks_like_amd(text: str) -> bool:
    """An AMD tool's output (issue 35): rocm-smi, amd-smi (text) or rocminfo, by their own marks."""
    if " NCCL INFO " in text[:65536]:
        return False  # an RCCL log: `topomap nccl --log` reads it
    return bool(_AMD_MARKS.search(text[:200_000]))


def looks_like_query(text: str) -> bool:
    """`nvidia-smi -q` output."""
    head = text[:20000]
    return "==NVSMI LOG==" in head or ("Attached GPUs" in head and "Product Name" in head)


_CSV_CELL = re.compile(r"^[a-z][a-z0-9_.]*(?:\s*\[[^\]]*\])?$")
#: Columns of `nvidia-smi --query-gpu` whose header marks a CSV topomap reads (the importer has the rest).
_CSV_CORE = {"index", "name", "gpu_name", "uuid", "gpu_uuid", "pci.bus_id", "gpu_bus_id", "memory.total",
             "driver_version", "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current",
             "pcie.link.width.max", "pci.device_id"}  # fmt: skip


def looks_like_query_csv(text: str) -> bool:
    """`nvidia-smi --query-gpu=… --format=csv` output: its header line (``index, name, memory.total
    [MiB]``) followed by a row, or the command line itself (``noheader`` output has no header)."""
    lines = text[:65536].splitlines()[:400]
    for k, line in enumerate(lines):
        if "--query-gpu" in line and "csv" in line:
            return True
        cells = [c.strip() for c in line.split(",")]
        if not all(_CSV_CELL.match(c) for c in cells):
            continue
        names = {c.split("[")[0].strip() for c in cells}
        if names & _CSV_CORE and names != {"index"}:
            rest = [x for x in lines[k + 1 : k + 3] if x.strip()]
            if rest and not _CSV_CELL.match(rest[0].split(",")[0].strip()):
                return True
    return False


_IBSTAT_CA = re.compile(r"^CA '[^'\s]{1,64}'\s*$")


def looks_like_ibstat(text: str) -> bool:
    """`ibstat` output (a ``CA 'mlx5_0'`` line, then its ``CA type:`` or ``Number of ports:``), or
    `ibv_devinfo`'s (``hca_id: mlx5_0``, then ``transport:``)."""
    lines = text[:65536].splitlines()
    ca = ("CA type:", "Number of ports:")
    return any(
        (_IBSTAT_CA.match(x) and any(y.strip().startswith(ca) for y in lines[k + 1 : k + 3]))
        or (x.startswith("hca_id:") and any(y.strip().startswith("transport:") for y in lines[k + 1 : k + 2]))
        for k, x in enumerate(lines)
    )


def looks_like_nvidia_smi(text: str) -> bool:
    """`nvidia-smi topo -m` / `-p2p` matrices, `nvidia-smi -L`-style GPU lines with UUIDs, `-q`, or
    `--query-gpu … --format=csv`; or `ibstat` (read appended to one of these, refused alone)."""
    if looks_like_query(text) or looks_like_query_csv(text) or looks_like_ibstat(text):
        return True
    for line in text[:HEAD_BYTES].splitlines()[:400]:  # not every line of a 64 MiB paste, for 400
        toks = line.split()
        if len(toks) >= 2 and toks[0] == "GPU0" and (toks[1] in ("X", "GPU1") or "CPU" in toks):
            return True
        if toks[:1] == ["GPU0"] and len(toks) == 1:
            return True
        if "UUID" in line and _GPU_LINE.match(line.strip()):
            return True
    return False


def measurement_tool(text: str) -> Literal["nvbandwidth", "p2pBandwidthLatencyTest"] | None:
    """``nvbandwidth``, ``p2pBandwidthLatencyTest`` or None, from the content."""
    head = text.lstrip("\ufeff \t\r\n")[:8192]
    if head.startswith("{"):  # JSON: nvbandwidth -j, or something else (a snapshot is not a measurement)
        return "nvbandwidth" if '"nvbandwidth"' in head else None
    if "nvbandwidth Version" in head or "Running host_to_device" in text or "Running device_to_device" in text:
        return "nvbandwidth"
    if "P2P (Peer-to-Peer) GPU Bandwidth Latency Test" in head or "Bandwidth Matrix (GB/s)" in text:
        return "p2pBandwidthLatencyTest"
    return None


#: nccl-tests' result table header, its run header, or its start line (src/common.cu)
_NCCL_TESTS = re.compile(
    r"^\W*#\s*size\s+count\s+type\b.*\balgbw\s+busbw|nThread \d+ nGpus \d+ minBytes \d+|"
    r"^\W*#\s*Collective test starting: \w+_perf",
    re.MULTILINE,
)
_RESULT_ROW = re.compile(
    r"^\W*(?:\[\d+,\d+\]<stdout>:|\[\d+\])?\s*\d+\s+\d+\s+(?:float|half|bfloat16|double|int8|uint8|int32|int64)\s",
    re.MULTILINE,
)


def looks_like_nccl_tests(text: str) -> bool:
    """An nccl-tests output (issue 32): its table or run header, or three result rows (an excerpt of the table)."""
    head = text[:2_000_000]
    return bool(_NCCL_TESTS.search(head)) or len(_RESULT_ROW.findall(head[:65536])) >= 3


def yaml_kind(text: str) -> Literal["flow", "requirements", "lot"] | None:
    """A flow, requirements file or declared lot, by its top-level keys: a `flow:` key makes a flow, whatever
    comes first (a flow may carry its own `requirements:`, above or below it); then `requirements:`; a
    top-level `lot:` (and neither of those) makes a declared lot."""
    head = text[:65536]
    if _YAML_FLOW.search(head):
        return "flow"
    if _YAML_REQUIREMENTS.search(head):
        return "requirements"
    return "lot" if _YAML_LOT.search(head) else None


def json_kind(head: str) -> Literal["snapshot", "run"] | None:
    """topomap's own JSON: a run record (asked first: a record holds a snapshot) or a snapshot."""
    if not head.startswith("{"):
        return None
    if '"topomap.run/' in head:
        return "run"
    if '"topomap.snapshot/' in head[:65536]:
        return "snapshot"
    return None


def emptiness(text: str) -> str | None:
    """Why a file holds nothing to read ("is empty", "holds only blank lines"), or None (issue 30 item 9:
    said so, not "unknown format")."""
    if text == "":
        return "is empty (0 bytes)"
    if not text.strip(" \t\r\n\ufeff\x00"):
        return "holds only blank space"
    return None


#: topomap's own ``--json`` outputs, by the top-level keys that only they have: (keys, what, the command
#: that takes what it was made from). A snapshot carries ``"schema": "topomap.snapshot/1"`` first.
_OWN_JSON: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"arrows", "flow", "summary"}), "`topomap map --json` output"),
    (frozenset({"verdict", "summary", "rules"}), "`topomap check --json` output"),
    (frozenset({"pairs", "nics", "features", "rules"}), "`topomap nccl --json` output"),
    (frozenset({"commands", "gpus", "pattern", "ranks"}), "`topomap place --json` output"),
    (frozenset({"changes", "not_compared", "match"}), "`topomap diff --json` output"),
    (frozenset({"cells", "ids", "nic_legend"}), "`topomap matrix --json` output"),
)


def json_what(head: str, keys: list[str] | None = None) -> tuple[str, str]:
    """What a JSON that is not a snapshot looks like, and (the hint) which command takes it: a run record
    of another version, measured bandwidth, one of topomap's own ``--json`` outputs, a JSON Schema, or
    an object of something else (its first keys named). ``keys``: its top-level keys where the caller
    decoded them (else the keys seen in ``head``)."""
    if '"topomap.run/' in head[:65536]:
        return "a topomap run record (from `topomap record`), not a snapshot", readers("run", "FILE")
    if '"nvbandwidth"' in head[:8192]:
        return "nvbandwidth's JSON output (measured bandwidth), not a snapshot", readers("measurements", "FILE")
    keys = keys if keys is not None else re.findall(r'"([^"\\]{1,40})"\s*:', head[:65536])
    top = set(keys)
    if {"source", "gpus"} <= top:  # a snapshot's own keys without its first one: cut or edited by hand
        return (
            "missing or invalid `schema` (expected 'topomap.snapshot/1'): it has a snapshot's other keys",
            "is the file complete? topomap writes snapshots whole, `schema` first",
        )
    for need, what in _OWN_JSON:
        if need <= top:
            return (
                f"{what}, not a snapshot",
                "give the snapshot it was made from (or the raw file, which commands import)",
            )
    if top & {"$schema", "$defs", "$id"}:
        return "a JSON Schema, not a snapshot", "`topomap schema snapshot` prints the schema snapshots follow"
    stripped = head.lstrip("\ufeff \t\r\n")
    shape = "a JSON array" if stripped.startswith("[") else "a JSON object"
    named = f" (keys {', '.join(dict.fromkeys(keys[:4]))}{', …' if len(set(keys)) > 4 else ''})" if keys else ""
    return (
        f'{shape}{named} without `"schema": "topomap.snapshot/1"`: not a topomap snapshot',
        "a snapshot comes from `topomap probe` or `topomap import FILE -o SNAP.json` (nvidia-smi text, NCCL or "
        "hwloc XML); every command also takes those raw files as they are",
    )


def sniff(text: str) -> Kind | None:
    """The kind of a file's text; topomap's JSON and topologies are asked before YAML."""
    head = text.lstrip("\ufeff \t\r\n")
    found = json_kind(head) or topology_format(text) or (measurement_tool(text) and "measurements") or yaml_kind(text)
    return found or ("nccl-tests" if looks_like_nccl_tests(text) else None)


def describe(text: str) -> str | None:
    """What a file is, in words, when it is a topology, snapshot or run record; None otherwise.

    For "wrong kind of file" messages: a paste given where a flow or requirements file was expected.
    """
    head = text.lstrip("\ufeff \t\r\n")
    found = json_kind(head) or topology_format(text)
    return DESCRIPTIONS[found] if found else None


def readers(kind: Kind, path: str) -> str:
    """The commands that read a file of ``kind``, as ``path`` would be given to them: the hint of
    every "this is a KIND; COMMAND takes …" error, so that it points at the command to use."""
    p = path if path and not path.startswith("-") and not any(c.isspace() for c in path) else "FILE"
    if kind == "flow":
        return (
            f"its arrows: topomap map {p}; its diagram: topomap render {p} -o OUT.svg; "
            "plan and report take it too (snapshots for its hosts after it)"
        )
    if kind == "requirements":
        return f"requirements are checked by topomap check {p} FLOW, or topomap check {p} SNAP"
    if kind == "run":
        return (
            f"a run record is read by topomap show {p}, and by render (-o OUT.svg), diff (with another run) "
            f"and plan FLOW --observed {p}"
        )
    if kind == "nccl-tests":
        return (
            f"against what the lot should reach: topomap nccl --tests {p} [SNAP]; kept in a snapshot: "
            f"topomap attach SNAP {p} -o OUT.json"
        )
    if kind == "measurements":
        return f"attach them to the snapshot of the machine they were measured on: topomap attach SNAP {p} -o OUT.json"
    return f"topomap show {p}; its diagram: topomap render {p} -o OUT.svg; a flow on it: topomap map FLOW {p}"


#: Each file's kind once told, by what identifies its content on disk (device, inode, size, mtime): a
#: command asks for a file's kind in several places (sorting its arguments, a misplaced one, the flow),
#: and the file is read and classified once.
_TOLD: dict[tuple[int, int, int, int], Kind | None] = {}


def file_kind(path: str | Path) -> Kind | None:
    """The kind of a file on disk, from its first :data:`HEAD_BYTES` (every test above reads no further:
    a 128 MiB file is not read whole to be named); None when it is none of the kinds or cannot be read
    (the loader the caller then uses says why). Told once per file as it is on disk."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _TOLD or not st.st_ino:  # (no inode numbers: nothing identifies the file, tell it again)
        _TOLD[key] = _tell(path)
    return _TOLD[key]


def _tell(path: str | Path) -> Kind | None:
    head = read_head(path, HEAD_BYTES)
    if not head:
        return None
    try:
        return sniff(decode_text(head, str(path)))
    except TopomapError:
        return None


def is_run_file(path: str | Path) -> bool:
    """A topomap run record (``topomap record``), of any version."""
    return file_kind(path) == "run"
