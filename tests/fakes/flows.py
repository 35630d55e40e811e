"""Flow files for tests, built from the flow's own types instead of YAML typed inline.

A test that needs a flow says what is in it::

    text = flow_yaml(
        {"m": step("input", "lot:memory"), "a": step("compute", "lot:gpu0")},
        [arrow("m", "a", "1 GiB")],
    )
    fmap = map_text(text, {"lot": build(snap)})          # parsed, bound and mapped
    path = write_flow(tmp_path / "f.yaml", {...}, [...], hosts={"lot": SNAP}, work=WorkSpec(count=8))

Steps, arrows and the work block are :mod:`topomap.flow.spec`'s own Structs (``StepSpec``,
``ArrowSpec``, ``WorkSpec``), so a field the reader does not know is a type error here, not a
surprise in a test. The YAML written leaves out every field at its default: it parses to the
same flow as the file a person would write. The named flows at the end are the ones several tests
share (a GPU pair, one arrow between two hosts, every GPU pair of a host, …).

A test whose YAML is itself under test (a line number in an error, a spelling refused, malformed
YAML) keeps its text inline.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import yaml

from topomap.flow import Flow, FlowMap, bind, gpus_of, map_flow, parse_flow
from topomap.flow.spec import ArrowSpec, AssemblySpec, LimitsSpec, Pattern, SplitSpec, StepKind, StepSpec, WorkSpec
from topomap.graph import Topology

__all__ = [
    "ArrowSpec",
    "AssemblySpec",
    "LimitsSpec",
    "SplitSpec",
    "StepSpec",
    "WorkSpec",
    "all_gpu_pairs",
    "arrow",
    "cross_host",
    "flow_yaml",
    "gpu_pair",
    "map_text",
    "mapped",
    "one_arrow",
    "replicas_across",
    "step",
    "write_flow",
]

Hosts = Mapping[str, "str | Path | None"]


def step(
    kind: StepKind, on: str | list[str], *, label: str | None = None, note: str | None = None, nccl: bool = False
) -> StepSpec:
    """One step: its kind and where it runs (``lot:gpu0``, ``lot:gpus``, ``lot:memory``, a list …)."""
    return StepSpec(kind=kind, on=on, label=label, note=note, nccl=nccl)


def arrow(
    src: str | list[str],
    dst: str | list[str],
    volume: str | None = None,
    *,
    pattern: Pattern = "auto",
    label: str | None = None,
    both_ways: bool = False,
    nccl: bool = False,
) -> ArrowSpec:
    """One arrow of the file (``from``/``to`` are step names, ``volume`` a size such as ``1 GiB``)."""
    return ArrowSpec(src=src, dst=dst, volume=volume, pattern=pattern, label=label, both_ways=both_ways, nccl=nccl)


def _plain(value: Any) -> Any:
    """A Struct as the builtins YAML writes, without the fields left at their default."""
    if isinstance(value, msgspec.Struct):
        out: dict[str, Any] = {}
        for f in msgspec.structs.fields(value):
            v = getattr(value, f.name)
            if f.default is not msgspec.NODEFAULT and v == f.default:
                continue
            if f.default_factory is not msgspec.NODEFAULT and v == f.default_factory():
                continue
            out[f.encode_name] = _plain(v)
        return out
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def flow_yaml(
    steps: Mapping[str, StepSpec],
    arrows: Sequence[ArrowSpec] = (),
    *,
    hosts: Hosts | None = None,
    name: str = "f",
    work: WorkSpec | Mapping[str, Any] | None = None,
    description: str | None = None,
    requirements: Any = None,
    nccl_env: Mapping[str, str | int | bool] | None = None,
    nccl_processes: str | None = None,
    nccl_version: str | None = None,
) -> str:
    """The YAML text of a flow: ``hosts`` default to one host ``lot`` with no snapshot (``lot: null``);
    a host's snapshot is a path (absolute, or relative to where the file is written). ``work`` as a
    mapping is written as given, every key (for a test of how a field is spelt, e.g. its default)."""
    doc: dict[str, Any] = {"flow": name}
    if description is not None:
        doc["description"] = description
    doc["hosts"] = {h: (str(p) if p is not None else None) for h, p in (hosts or {"lot": None}).items()}
    if work is not None:
        doc["work"] = _plain(work) if isinstance(work, WorkSpec) else dict(work)
    doc["steps"] = _plain(dict(steps))
    if arrows:
        doc["arrows"] = _plain(list(arrows))
    if requirements is not None:
        doc["requirements"] = requirements
    if nccl_env:
        doc["nccl_env"] = dict(nccl_env)
    if nccl_processes is not None:
        doc["nccl_processes"] = nccl_processes
    if nccl_version is not None:
        doc["nccl_version"] = nccl_version
    text: str = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, allow_unicode=True, width=10_000)
    return text


def write_flow(path: Path, steps: Mapping[str, StepSpec], arrows: Sequence[ArrowSpec] = (), **kw: Any) -> Path:
    """:func:`flow_yaml` written to ``path`` (its folder made); the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(flow_yaml(steps, arrows, **kw))
    return path


def mapped(flow: Flow, topos: Mapping[str, Topology | None]) -> FlowMap:
    """A parsed flow bound to already built topologies and mapped: every arrow's medium, route, bandwidth."""
    bind(flow, gpus_of(dict(topos)))
    return map_flow(flow, dict(topos))


def map_text(text: str, topos: Mapping[str, Topology | None], origin: str = "t.yaml") -> FlowMap:
    """:func:`mapped` of a flow's YAML text (``origin`` names it in messages)."""
    return mapped(parse_flow(text, origin), topos)


# --- named flows several tests share ---------------------------------------------------------


def gpu_pair(memory: str = "lot:memory", *, name: str = "pair", hosts: Hosts | None = None) -> str:
    """Host memory (``memory``) to gpu0, then gpu0 to gpu1, 1 GiB each: steps m, a, b on host lot."""
    return flow_yaml(
        {"a": step("compute", "lot:gpu0"), "b": step("compute", "lot:gpu1"), "m": step("input", memory)},
        [arrow("m", "a", "1 GiB"), arrow("a", "b", "1 GiB")],
        name=name,
        hosts=hosts,
    )


def cross_host(
    src: str = "gpu0", dst: str | None = None, volume: str | None = None, *, name: str = "t", hosts: Hosts | None = None
) -> str:
    """One arrow over the network: step x on ``a:<src>`` to step y on ``b:<dst>`` (``dst``: ``src``);
    hosts a and b have no snapshot unless ``hosts`` names them."""
    return flow_yaml(
        {"x": step("compute", f"a:{src}"), "y": step("compute", f"b:{dst or src}")},
        [arrow("x", "y", volume)],
        name=name,
        hosts=hosts or {"a": None, "b": None},
    )


def all_gpu_pairs(gpus: Sequence[str], *, name: str = "p") -> str:
    """One compute step ``s<gpu>`` per GPU of host lot and one arrow for every unordered pair, in order."""
    return flow_yaml(
        {f"s{g}": step("compute", f"lot:{g}") for g in gpus},
        [arrow(f"s{a}", f"s{b}") for a, b in itertools.combinations(gpus, 2)],
        name=name,
    )


def replicas_across(
    a: str = "node-a",
    b: str = "node-b",
    *,
    steps: tuple[str, str] = ("a", "b"),
    volume: str | None = "1 GiB",
    label: str | None = None,
    name: str = "spread",
    hosts: Hosts | None = None,
) -> str:
    """Every GPU of host ``a`` sends to every GPU of host ``b`` (``HOST:gpus`` each, one arrow of the file)."""
    first, second = steps
    return flow_yaml(
        {first: step("compute", f"{a}:gpus"), second: step("compute", f"{b}:gpus")},
        [arrow(first, second, volume, label=label)],
        name=name,
        hosts=hosts or {a: None, b: None},
    )


def one_arrow(
    src: str,
    dst: str,
    volume: str | None = None,
    *,
    kinds: tuple[StepKind, StepKind] = ("input", "output"),
    name: str = "t",
    hosts: Hosts | None = None,
) -> str:
    """One arrow from step a on ``src`` to step b on ``dst`` (placements such as ``lot:gpu0``,
    ``lot:memory``); an input and an output unless ``kinds`` says otherwise."""
    return flow_yaml(
        {"a": step(kinds[0], src), "b": step(kinds[1], dst)}, [arrow("a", "b", volume)], name=name, hosts=hosts
    )
