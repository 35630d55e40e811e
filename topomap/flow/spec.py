"""Flow files: the user's declared data flow, validated strictly, with line numbers in errors.

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

Placements (``on``): ``HOST:gpuN``, ``HOST:GPU-<uuid>``, ``HOST:<pci bus id>``, ``HOST:gpus`` (one
replica per GPU of the host), ``HOST:memory`` (optionally ``HOST:memory@numaN``),
``HOST:storage``, or a bare ``HOST`` (a host with no snapshot), or a list of these.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec

from topomap.files.yamlfile import YamlDoc, YamlError, convert, load_yaml, read_yaml

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


class ArrowSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, rename={"src": "from", "dst": "to"}):
    src: str | list[str]
    dst: str | list[str]
    volume: str | None = None  # "2 GiB", "500 MB"
    pattern: Pattern = "auto"
    label: str | None = None


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


# --- reading ---------------------------------------------------------------------------------

_FIELDS = {
    "$": list(FlowSpec.__struct_fields__),
    "step": ["kind", "on", "label", "note"],
    "arrow": ["from", "to", "volume", "pattern", "label"],
    "work": list(WorkSpec.__struct_fields__),
    "work.assembly": list(AssemblySpec.__struct_fields__),
    "work.limits": list(LimitsSpec.__struct_fields__),
    "work.split": list(SplitSpec.__struct_fields__),
}


def _known(where: str) -> list[str]:
    if ".work." in where and where.split(".work.")[1].split(".")[0] in ("assembly", "limits", "split"):
        return _FIELDS["work." + where.split(".work.")[1].split(".")[0]]
    kind = "step" if ".steps." in where else "arrow" if ".arrows[" in where else "work" if ".work" in where else "$"
    return _FIELDS[kind]


def read_flow(path: str | Path) -> Flow:
    """Parse and validate a flow file (steps, arrows, placements syntax). Hosts are bound later."""
    return flow_from_doc(read_yaml(path, "flow file", FlowError))


def parse_flow(text: str, origin: str) -> Flow:
    return flow_from_doc(load_yaml(text, origin, "flow file", FlowError))


def flow_from_doc(doc: YamlDoc) -> Flow:
    raw, origin = doc.data, doc.origin
    if not isinstance(raw, dict):
        raise FlowError(
            f"{origin}:1: a flow file is a mapping with `flow`, `hosts`, `steps` and `arrows`",
            hint="write `flow: NAME`, then `hosts:`, `steps:` and `arrows:` (README: writing a flow)",
        )
    steps = raw.get("steps")
    if isinstance(steps, dict):
        for name, value in steps.items():  # msgspec paths do not name dict keys: check each step
            convert(doc, value, StepSpec, f"$.steps.{name}", _known, exc=FlowError)
    spec = convert(doc, raw, FlowSpec, "$", _known, {"src": "from", "dst": "to"}, FlowError)
    flow = Flow(name=spec.flow, path=origin, spec=spec, lines=doc.lines)
    flow.host_files = dict(spec.hosts)
    _validate(flow)
    if spec.work is not None:
        from topomap.flow.work import work_of  # durations, sizes, rates and the CSV, with lines

        work_of(flow)
    return flow


def _line_for(path: str, lines: dict[str, int]) -> int:
    return YamlDoc("", None, lines).line(path)


# --- placements and arrows ----------------------------------------------------------------------

_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGTP]i?B|B)\s*$", re.I)
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}
_UNITS |= {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "PIB": 2**50}


def parse_volume(text: str) -> int | None:
    m = _SIZE.match(text)
    if not m:
        return None
    value = float(m.group(1)) * _UNITS[m.group(2).upper()]
    return int(value) if value < 1e21 else None  # past a zettabyte (or inf): not a transfer


_PLACE = re.compile(r"^(?P<host>[A-Za-z0-9_.-]+)(?::(?P<what>.+))?$")


def parse_placement(text: str) -> tuple[str, str | None]:
    m = _PLACE.match(text.strip())
    if not m:
        raise ValueError(text)
    return m.group("host"), m.group("what")


def name_hint(name: str, known: list[str], what: str) -> str:
    """The hint for an unknown name: the closest known one, then the known ones (at most 12)."""
    close = difflib.get_close_matches(name, known, n=1)
    listed = ", ".join(known[:12]) + (f", … ({len(known)} in all)" if len(known) > 12 else "")
    listing = f"{what}: {listed}" if known else f"there are no {what}"
    return f"did you mean {close[0]!r}? {listing}" if close else listing


def _validate(flow: Flow) -> None:
    """Placements' syntax and hosts, arrows' step names and volumes, and no cycles."""
    spec, origin, lines = flow.spec, flow.path, flow.lines
    for name, st in spec.steps.items():
        ons = st.on if isinstance(st.on, list) else [st.on]
        where = f"$.steps.{name}.on"
        places: list[Placement] = []
        for on in ons:
            try:
                host, what = parse_placement(on)
            except ValueError:
                raise FlowError(
                    f"{origin}:{_line_for(where, lines)}: step {name}: placement {on!r} is not HOST[:WHAT]",
                    hint="e.g. lotA:gpu3, lotA:gpus, lotA:memory, lotA:storage, workstation",
                ) from None
            if host not in spec.hosts:
                raise FlowError(
                    f"{origin}:{_line_for(where, lines)}: step {name}: unknown host {host!r}",
                    hint=name_hint(host, list(spec.hosts), "hosts") + " (declare new ones under `hosts:`)",
                )
            places.append(_placement(host, what, name, origin, _line_for(where, lines)))
        flow.steps[name] = Step(name=name, kind=st.kind, placements=places, label=st.label)
    for i, a in enumerate(spec.arrows):
        where = f"$.arrows[{i}]"
        for s in _names(a.src) + _names(a.dst):
            if s not in flow.steps:
                raise FlowError(
                    f"{origin}:{_line_for(where, lines)}: arrow {i + 1}: unknown step {s!r}",
                    hint=name_hint(s, list(flow.steps), "steps"),
                )
            if s in _names(a.src) and s in _names(a.dst):
                raise FlowError(f"{origin}:{_line_for(where, lines)}: arrow {i + 1}: {s} → {s} points at itself")
        vol = None
        if a.volume is not None:
            vol = parse_volume(a.volume)
            if vol is None:
                raise FlowError(
                    f"{origin}:{_line_for(where + '.volume', lines)}: arrow {i + 1}: volume {a.volume!r} is not a size",
                    hint="write e.g. 2 GiB, 500 MB, 1.5 TB (under a zettabyte)",
                )
        flow.volumes.append(vol)
    _check_cycles(flow)


def _names(x: str | list[str]) -> list[str]:
    return x if isinstance(x, list) else [x]


def bind(flow: Flow, gpus_of: dict[str, list[tuple[str, str | None, str | None]] | None]) -> None:
    """Resolve placements against the hosts' GPUs and expand arrows into concrete replicas.

    ``gpus_of`` maps each host to its GPUs as (id, uuid, bus id), or None for a host with no
    snapshot. A GPU the snapshot does not have is an error naming the flow line.
    """
    origin, lines = flow.path, flow.lines
    for name, st in flow.steps.items():
        resolved: list[Placement] = []
        line = _line_for(f"$.steps.{name}.on", lines)
        for p in st.placements:
            gpus = gpus_of.get(p.host)
            if p.kind != "gpu":
                resolved.append(p)
                continue
            if gpus is None:
                raise FlowError(
                    f"{origin}:{line}: step {name}: {p.host} has no snapshot, so its GPUs are unknown",
                    hint=f"bind it: --probe {p.host}=SNAPSHOT, or place the step on {p.host} itself",
                )
            if p.gpu == "*":
                resolved += [Placement(host=p.host, kind="gpu", gpu=g[0]) for g in gpus]
                continue
            match = _match_gpu(p.gpu or "", gpus)
            if match is None:
                have = ", ".join(g[0] for g in gpus) or "none"
                raise FlowError(
                    f"{origin}:{line}: step {name}: {p.host} has no GPU {p.gpu!r}",
                    hint=f"its snapshot has: {have}",
                )
            resolved.append(Placement(host=p.host, kind="gpu", gpu=match))
        if not resolved:
            raise FlowError(f"{origin}:{line}: step {name}: {st.placements[0].label()} has no GPU")
        st.placements = resolved
    flow.arrows = []
    for i, a in enumerate(flow.spec.arrows):
        for s in _names(a.src):
            for d in _names(a.dst):
                _connect(flow, flow.steps[s], flow.steps[d], a.pattern, flow.volumes[i], a.label)
    for st in flow.steps.values():
        if st.kind == "exchange" and len(st.placements) > 1:
            ps = st.placements
            for x, pa in enumerate(ps):
                for pb in ps[x + 1 :]:
                    flow.arrows.append(FlowArrow(st.name, st.name, pa, pb, None, "exchange", both_ways=True))


def _match_gpu(ref: str, gpus: list[tuple[str, str | None, str | None]]) -> str | None:
    from topomap.base.pciaddr import parse_bus_id

    for gid, uuid, bus in gpus:
        if ref == gid or (uuid and uuid.lower().startswith(ref.lower()) and ref.upper().startswith(("GPU-", "MIG-"))):
            return gid
        pb = parse_bus_id(ref)
        if pb is not None and bus and parse_bus_id(bus) == pb:
            return gid
    return None


def _placement(host: str, what: str | None, step: str, origin: str, line: int) -> Placement:
    if what is None:
        return Placement(host=host, kind="host")
    w = what.strip()
    if w in ("gpus", "gpu*", "all-gpus"):
        return Placement(host=host, kind="gpu", gpu="*")
    if w == "storage":
        return Placement(host=host, kind="storage")
    m = re.fullmatch(r"memory(?:@numa(\d+))?", w)
    if m:
        return Placement(host=host, kind="memory", numa=int(m.group(1)) if m.group(1) else None)
    if re.fullmatch(r"gpu\d+", w) or w.startswith(("GPU-", "MIG-")) or re.fullmatch(r"[0-9a-fA-F:.]{7,}", w):
        return Placement(host=host, kind="gpu", gpu=w)
    close = difflib.get_close_matches(w, ["gpus", "memory", "storage", "gpu0"], n=1, cutoff=0.6)
    raise FlowError(
        f"{origin}:{line}: step {step}: {host}:{what} names no GPU, memory or storage",
        hint=(f"did you mean {host}:{close[0]}? " if close else "")
        + "use gpuN, a GPU UUID, a PCI bus id, gpus, memory[@numaN] or storage",
    )


def _connect(flow: Flow, s: Step, d: Step, pattern: Pattern, vol: int | None, label: str | None) -> None:
    """Expand an arrow between two steps' replicas: fan-out, fan-in, pairwise or all-to-all."""
    ks, kd = len(s.placements), len(d.placements)
    if pattern == "auto":
        pattern = "pairwise" if ks == kd and ks > 1 else "all-to-all"
    if pattern == "pairwise":
        if ks != kd:
            raise FlowError(f"{flow.path}: arrow {s.name} → {d.name}: pairwise needs as many replicas on both sides")
        pairs = list(zip(s.placements, d.placements))
    else:
        pairs = [(a, b) for a in s.placements for b in d.placements]
    for a, b in pairs:
        flow.arrows.append(FlowArrow(s.name, d.name, a, b, vol, label))


def _check_cycles(flow: Flow) -> None:
    import networkx as nx

    lines = flow.lines
    g = nx.DiGraph()
    g.add_nodes_from(flow.steps)
    for a in flow.spec.arrows:
        for s in _names(a.src):
            for d in _names(a.dst):
                g.add_edge(s, d)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return
    names = " → ".join([u for u, _ in cycle] + [cycle[0][0]])
    raise FlowError(
        f"{flow.path}:{_line_for('$.arrows', lines)}: the arrows form a cycle ({names})",
        hint="a flow runs from inputs to outputs; model repeated exchanges as an `exchange` step",
    )


def flow_json_schema() -> dict[str, Any]:
    schema: dict[str, Any] = msgspec.json.schema(FlowSpec)
    schema["title"] = FLOW_SCHEMA
    return schema
