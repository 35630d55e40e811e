"""Reading a flow file: the YAML checked against the spec, placements' syntax, arrows' step names
and volumes, no cycles, then the work block in numbers — every mistake one line with file:line."""

from __future__ import annotations

from pathlib import Path

import networkx as nx

from topomap.files.yamlfile import YamlDoc, convert, load_yaml, read_yaml
from topomap.flow.expansion import check_step_pairs
from topomap.flow.ncclarrow import check_nccl
from topomap.flow.spec import (
    SIZE_HINT,
    AssemblySpec,
    Flow,
    FlowError,
    FlowSpec,
    LimitsSpec,
    SplitSpec,
    Step,
    StepSpec,
    WorkSpec,
    name_hint,
    names,
    parse_placement,
    parse_volume,
    size_problem,
)
from topomap.flow.work import quote_value, work_of

_FIELDS = {
    "$": list(FlowSpec.__struct_fields__),
    "step": ["kind", "on", "label", "note", "nccl"],
    "arrow": ["from", "to", "volume", "pattern", "label", "both_ways", "nccl"],
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
    """Parse and validate a flow file (steps, arrows, placements syntax, work). Hosts are bound later."""
    return flow_from_doc(read_yaml(path, "flow file", FlowError))


def parse_flow(text: str, origin: str) -> Flow:
    return flow_from_doc(load_yaml(text, origin, "flow file", FlowError))


def flow_from_doc(doc: YamlDoc) -> Flow:
    """The Flow of a parsed YAML document: steps and arrows checked, then the work block parsed once
    (durations, sizes, rates and the durations CSV) into ``flow.work``."""
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
    _read_steps(flow)
    _read_arrows(flow)
    check_step_pairs(flow)  # before the cycle check builds the graph of those pairs
    _check_cycles(flow)
    check_nccl(flow)
    flow.work = work_of(flow)
    return flow


# --- steps and their placements ----------------------------------------------------------------


def _read_steps(flow: Flow) -> None:
    """Each step's placements: syntax and hosts (the GPUs themselves are resolved when hosts are bound)."""
    spec, origin = flow.spec, flow.path
    for name, st in spec.steps.items():
        ons = st.on if isinstance(st.on, list) else [st.on]
        line = flow.line(f"$.steps.{name}.on")
        places = [parse_placement(on, spec.hosts, f"{origin}:{line}: step {name}") for on in ons]
        flow.steps[name] = Step(name=name, kind=st.kind, placements=places, label=st.label)


# --- arrows ------------------------------------------------------------------------------------


def _read_arrows(flow: Flow) -> None:
    """Arrows' step names and volumes (one volume per arrow of the file, in ``flow.volumes``)."""
    origin = flow.path
    for i, a in enumerate(flow.spec.arrows):
        where = f"$.arrows[{i}]"
        for s in names(a.src) + names(a.dst):
            if s not in flow.steps:
                raise FlowError(
                    f"{origin}:{flow.line(where)}: arrow {i + 1}: unknown step {s!r}",
                    hint=name_hint(s, list(flow.steps), "steps"),
                )
            if s in names(a.src) and s in names(a.dst):
                raise FlowError(f"{origin}:{flow.line(where)}: arrow {i + 1}: {s} → {s} points at itself")
        vol = None
        if a.volume is not None:
            vol = parse_volume(a.volume)
            if vol is None:
                raise FlowError(
                    f"{origin}:{flow.line(where + '.volume')}: arrow {i + 1}: volume {quote_value(a.volume)} "
                    f"{size_problem(a.volume)}",
                    hint=SIZE_HINT,
                )
        flow.volumes.append(vol)


def _check_cycles(flow: Flow) -> None:
    g = nx.DiGraph()
    g.add_nodes_from(flow.steps)
    for a in flow.spec.arrows:
        for s in names(a.src):
            for d in names(a.dst):
                g.add_edge(s, d)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return
    shown = " → ".join([u for u, _ in cycle] + [cycle[0][0]])
    raise FlowError(
        f"{flow.path}:{flow.line('$.arrows')}: the arrows form a cycle ({shown})",
        hint="a flow runs from inputs to outputs; data that goes both ways between two steps (an all-reduce) is "
        "one arrow with `both_ways: true`, repeated exchanges among replicas an `exchange` step",
    )
