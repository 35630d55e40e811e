"""The flow file's shape and the Flow it becomes: the user's declared data flow, its work in numbers.

A flow file (YAML) names hosts (bound to snapshots in the file or on the command line), the
vocabulary of the work, steps placed on hardware, and arrows between steps::

    flow: document-conversion
    hosts:
      lot: ../snapshots/rtx4090-8gpu-all-sys.json   # a snapshot, relative to this file
      workstation: null                              # a host with no snapshot
    work: {unit: one document, delivers: a merged report, assembly: in input order, count: 8}
    steps:
      batch-a:  {kind: input, on: lot:memory}
      convert-a: {kind: compute, on: lot:gpu0}
      assemble: {kind: aggregate, on: workstation}
    arrows:
      - {from: batch-a, to: convert-a, volume: 2 GiB}
      - {from: [convert-a, convert-b], to: assemble}

An ``exchange`` step or an arrow between GPU steps may say ``nccl: true`` (NCCL moves its data):
then each GPU pair gets the transport NCCL would choose (``nccl_env:`` sets NCCL variables,
``nccl_processes:`` is ``per-gpu`` — one process per GPU, the default — or ``per-host``;
``nccl_version:`` names the NCCL release whose rules apply).

Placements (``on``): ``HOST:gpuN``, ``HOST:GPU-<uuid>``, ``HOST:<pci bus id>``, ``HOST:gpus`` (one
replica per GPU of the host), ``HOST:memory`` (optionally ``HOST:memory@numaN``),
``HOST:storage``, or a bare ``HOST`` (a host with no snapshot), or a list of these.

This module holds the types (the file's msgspec Structs, the Flow with its steps, placements and
arrows, the work block in numbers) and the small helpers both readers share (sizes, the hint for an unknown name).
Reading a file is :mod:`topomap.flow.reader`; the work block is :mod:`topomap.flow.work`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from topomap.base import units
from topomap.base.units import MAX_SIZE_BYTES, SIZE_RANGE, SIZE_SPELLINGS
from topomap.files.yamlfile import YamlDoc, YamlError

StepKind = Literal["input", "compute", "exchange", "aggregate", "output"]
Pattern = Literal["auto", "pairwise", "all-to-all"]
FLOW_SCHEMA = "topomap.flow/1"


class FlowError(YamlError):
    """A flow-file mistake: one line with the file, line and a hint."""


class StepSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    kind: StepKind
    on: str | list[str]
    label: str | None = None
    note: str | None = None
    nccl: bool = False  # an exchange step run as an NCCL collective: its GPU pairs get NCCL's transport


class ArrowSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, rename={"src": "from", "dst": "to"}):
    src: str | list[str]
    dst: str | list[str]
    volume: str | None = None  # "2 GiB", "500 MB"
    pattern: Pattern = "auto"
    label: str | None = None
    both_ways: bool = False  # an exchange in both directions (an all-reduce between two hosts): volume each way
    nccl: bool = False  # sent by NCCL: GPU pairs get NCCL's transport (topomap.flow.ncclarrow)


class AssemblySpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The final assembly step: its duration, where it runs, whether it waits for every unit."""

    duration: str | float | None = None  # "10 min"; a bare number is refused (no unit)
    on: str | None = None  # a flow host or step name, e.g. "workstation"
    waits_for_all: bool = True  # False: results are assembled as they arrive
    rule: str | None = None  # e.g. "concatenate in input order"


class LimitsSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Shared limits: storage read/write rate ("2 GB/s") and a cap on concurrent tasks (a licence)."""

    storage_read: str | None = None
    storage_write: str | None = None
    max_concurrent: int | None = None


class SplitSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One task split over several cards (coordinated): exchange rounds per task and each card's
    data per round (default: the volume of the flow's arrows into its `exchange` step)."""

    steps: int
    exchange: str | None = None  # "64 MiB" per card per round


class WorkSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    unit: str | None = None  # what one unit of computation is
    delivers: str | None = None  # what the work delivers
    assembly: str | AssemblySpec | None = None  # the assembly rule (text), or the assembly step
    count: int | None = None  # how many units
    duration: str | float | None = None  # e.g. "40 min" per unit
    durations: list[str | float] | None = None  # one duration per unit, in input order
    durations_csv: str | None = None  # CSV of per-unit durations, relative to the flow file
    cards_per_task: int = 1  # cards one task occupies
    memory_per_task: str | None = None  # memory one task needs (on one card, or over cards_per_task)
    duplicated_memory: str | None = None  # part of it every card holding the task keeps whole (replicated state)
    includes_transfers: bool = False  # durations already include the unit's input and output transfers
    volume_per: Literal["replica", "unit"] = "replica"  # an arrow's volume: per step replica, or per unit
    split: SplitSpec | None = None  # how one task splits over cards (coordinated arrangement)
    limits: LimitsSpec | None = None


class FlowSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    flow: str
    description: str | None = None
    hosts: dict[str, str | None] = {}
    work: WorkSpec | None = None
    steps: dict[str, StepSpec]
    arrows: list[ArrowSpec] = []
    requirements: Any = None  # checked by `topomap check` (check.py)
    nccl_env: dict[str, str | int | bool] = {}  # NCCL variables for the arrows and steps marked `nccl`
    nccl_processes: Literal["per-gpu", "per-host"] = "per-gpu"  # how NCCL's ranks map to processes
    nccl_version: str | None = None  # the NCCL release whose rules apply (default: the newest family)


@dataclass(frozen=True)
class Placement:
    """Where a step (replica) runs: a GPU, a host's memory or storage, or a snapshot-less host."""

    host: str
    kind: Literal["gpu", "memory", "storage", "host"]
    gpu: str | None = None  # "gpu3" once resolved
    numa: int | None = None  # memory@numaN

    def label(self) -> str:
        if self.kind == "gpu":
            return f"{self.host}:{self.gpu}"
        if self.kind == "memory":
            return f"{self.host}:memory" + (f"@numa{self.numa}" if self.numa is not None else "")
        if self.kind == "storage":
            return f"{self.host}:storage"
        return self.host

    def gpu_index(self) -> int | None:
        """The index of the one GPU this places on (``gpu3`` → 3, as binding names every GPU); None for
        another place or a GPU not yet resolved."""
        m = _GPU_ID.fullmatch(self.gpu) if self.kind == "gpu" and self.gpu is not None else None
        return int(m.group(1)) if m else None


@dataclass
class Step:
    name: str
    kind: StepKind
    placements: list[Placement]
    label: str | None = None


@dataclass
class FlowArrow:
    """One concrete arrow between two step replicas."""

    src_step: str
    dst_step: str
    src: Placement
    dst: Placement
    volume_bytes: int | None = None
    label: str | None = None
    both_ways: bool = False


# --- the work block in numbers (parsed by topomap.flow.work) ---------------------------------------


@dataclass(frozen=True)
class Unit:
    """One unit of work: its name and how long it occupies its card(s), in seconds (assumed)."""

    name: str
    seconds: float


@dataclass(frozen=True)
class Assembly:
    """The final assembly: seconds (assumed), where it runs, whether it waits for every unit."""

    seconds: float
    on: str | None = None
    waits_for_all: bool = True
    rule: str | None = None


@dataclass(frozen=True)
class Limits:
    storage_read_gbps: float | None = None  # GB/s, assumed by the user
    storage_write_gbps: float | None = None
    max_concurrent: int | None = None  # tasks at once (a licence, a quota)


@dataclass(frozen=True)
class Split:
    steps: int  # exchange rounds per task
    exchange_bytes: int | None  # each card's data per round; None: take it from the flow


@dataclass
class Work:
    """The work block in numbers. ``source`` says where the durations came from."""

    units: list[Unit]
    source: str
    cards_per_task: int = 1
    memory_per_task_bytes: int | None = None
    duplicated_bytes: int = 0
    includes_transfers: bool = False
    assembly: Assembly | None = None
    limits: Limits = field(default_factory=Limits)
    split: Split | None = None
    unit_label: str | None = None
    provenance: str = "assumed"  # of the durations: "assumed" (the flow) or "observed" (a recorded run)
    volume_per: str = "replica"  # "replica": arrows' volumes summed over replicas ÷ units; "unit": per unit
    notes: list[str] = field(default_factory=list)  # extra assumptions, e.g. what an observed run stands for


# --- the flow -----------------------------------------------------------------------------------


@dataclass
class Flow:
    name: str
    path: str
    spec: FlowSpec
    steps: dict[str, Step] = field(default_factory=dict)
    arrows: list[FlowArrow] = field(default_factory=list)  # filled by bind()
    host_files: dict[str, str | None] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    volumes: list[int | None] = field(default_factory=list)  # per arrow spec
    work: Work | None = None  # the `work:` block in numbers, parsed once when the file is read

    def line(self, where: str) -> int:
        """The flow file's line of a YAML path (``$.steps.convert.on``), for messages."""
        return YamlDoc("", None, self.lines).line(where)


# --- sizes and names ---------------------------------------------------------------

#: The hint of every size refused (:data:`topomap.base.units.SIZE_RANGE`).
SIZE_HINT = f"write e.g. 2 GiB, 500 MB, 1.5 TB ({SIZE_RANGE}): {SIZE_SPELLINGS}"


def parse_size(text: str) -> float | None:
    """ "2 GiB" → 2147483648.0 bytes, unbounded (``1 ZB`` is a size, only too large); None: not a size.
    The spellings are :mod:`topomap.base.units`' (a bare ``G`` is refused as ambiguous)."""
    return units.parse_size(text)


def size_problem(text: str) -> str | None:
    """Why ``text`` is refused as a size ("is not a size", "is larger than 1 EB …"); None when it is one."""
    return units.size_problem(text)


def parse_volume(text: str) -> int | None:
    """A size in bytes, at most :data:`topomap.base.units.MAX_SIZE_BYTES`; None otherwise (see :func:`size_problem`)."""
    value = parse_size(text)
    return int(value) if value is not None and value <= MAX_SIZE_BYTES else None


# --- placements -------------------------------------------------------------------

_PLACE = re.compile(r"^(?P<host>[A-Za-z0-9_.-]+)(?::(?P<what>.+))?$")
_GPU_INDEX = re.compile(r"gpu(\d+)", re.IGNORECASE)
_GPU_ID = re.compile(r"gpu(\d+)")  # a resolved placement's GPU, as topomap names it


def gpu_name(text: str) -> str | None:
    """A GPU named by its index — ``gpu3``, or ``GPU3`` as nvidia-smi spells it (any case) — as
    topomap names it (``gpu3``); None for anything else (a UUID, a bus id, a typo)."""
    m = _GPU_INDEX.fullmatch(text.strip())
    return f"gpu{int(m.group(1))}" if m else None


def parse_placement(on: str, hosts: Collection[str], where: str) -> Placement:
    """One placement, ``HOST[:WHAT]``: ``HOST:gpuN`` (``GPUN`` too), ``HOST:GPU-<uuid>``,
    ``HOST:<pci bus id>``, ``HOST:gpus``, ``HOST:memory[@numaN]``, ``HOST:storage`` or a bare
    ``HOST``, on one of ``hosts``. ``where`` starts every message (``f.yaml:7: step convert``)."""
    m = _PLACE.match(on.strip())
    if not m:
        raise FlowError(
            f"{where}: placement {on!r} is not HOST[:WHAT]",
            hint="e.g. lotA:gpu3, lotA:gpus, lotA:memory, lotA:storage, workstation",
        )
    host, what = m.group("host"), m.group("what")
    if host not in hosts:
        raise FlowError(
            f"{where}: unknown host {host!r}",
            hint=name_hint(host, list(hosts), "hosts") + " (declare new ones under `hosts:`)",
        )
    if what is None:
        return Placement(host=host, kind="host")
    w = what.strip()
    key = w.lower()
    if key in ("gpus", "gpu*", "all-gpus"):
        return Placement(host=host, kind="gpu", gpu="*")
    if key == "storage":
        return Placement(host=host, kind="storage")
    mem = re.fullmatch(r"memory(?:@numa(\d+))?", key)
    if mem:
        return Placement(host=host, kind="memory", numa=int(mem.group(1)) if mem.group(1) else None)
    gpu = gpu_name(w)
    if gpu is not None:
        return Placement(host=host, kind="gpu", gpu=gpu)
    if w.upper().startswith(("GPU-", "MIG-")) or re.fullmatch(r"[0-9a-fA-F:.]{7,}", w):
        return Placement(host=host, kind="gpu", gpu=w)
    close = difflib.get_close_matches(key, ["gpus", "memory", "storage", "gpu0"], n=1, cutoff=0.6)
    raise FlowError(
        f"{where}: {host}:{what} names no GPU, memory or storage",
        hint=(f"did you mean {host}:{close[0]}? " if close else "")
        + "use gpuN, a GPU UUID, a PCI bus id, gpus, memory[@numaN] or storage",
    )


def assembly_on(flow: Flow, on: str | None) -> str | None:
    """Where the work's assembly runs (``work.assembly.on``): a step's name, or a placement as a
    step takes one (a host, ``HOST:gpuN``, ``HOST:GPU3``, ``HOST:memory`` …), named as topomap names
    it (``lot:GPU3`` → ``lot:gpu3``). The GPU itself is checked when the host is bound."""
    if on is None or on in flow.spec.steps:
        return on
    where = f"{flow.path}:{flow.line('$.work.assembly.on')}: work: assembly"
    hosts = list(flow.spec.hosts)
    if on.partition(":")[0].strip() not in hosts:
        raise FlowError(
            f"{where} on {on!r}: no such host or step",
            hint=name_hint(on.partition(":")[0].strip(), hosts + list(flow.spec.steps), "hosts and steps"),
        )
    place = parse_placement(on, hosts, f"{where} on {on!r}")
    return f"{place.host}:gpus" if place.gpu == "*" else place.label()


def names(x: str | list[str]) -> list[str]:
    """The step names of one end of an arrow (one name or a list)."""
    return x if isinstance(x, list) else [x]


def name_hint(name: str, known: list[str], what: str) -> str:
    """The hint for an unknown name: the closest known one, then the known ones (at most 12)."""
    close = difflib.get_close_matches(name, known, n=1)
    listed = ", ".join(known[:12]) + (f", … ({len(known)} in all)" if len(known) > 12 else "")
    listing = f"{what}: {listed}" if known else f"there are no {what}"
    return f"did you mean {close[0]!r}? {listing}" if close else listing


#: The JSON Schema's description of a flow file: what the schema alone cannot say.
FLOW_DESCRIPTION = (
    "A topomap flow file (YAML): hosts, steps placed on hardware, arrows between steps, the work in numbers. "
    "A flow becomes at most 65,536 arrows between step replicas (each arrow, each exchange step and the "
    "whole flow; counted before any is built, a larger one is refused naming the arrow). Paths (hosts, "
    "work.durations_csv) are relative to the flow file; absolute and ../ paths are read too."
)


def flow_json_schema() -> dict[str, Any]:
    schema: dict[str, Any] = msgspec.json.schema(FlowSpec)
    schema["title"] = FLOW_SCHEMA
    schema["description"] = FLOW_DESCRIPTION
    return schema
