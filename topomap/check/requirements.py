"""Requirements files: the rules (one msgspec struct each), reading them with the line of every
option, and their JSON Schema. Evaluating them is ``topomap.check.evaluate``; the names they use are
checked by ``topomap.check.names``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from topomap.base.links import PathClass
from topomap.files.yamlfile import YamlDoc, YamlError, convert, load_yaml, read_yaml

#: How a model pattern matches, in words (the requirements schema and the evidence of a failed rule).
MODEL_RULE = (
    "GPU model, case-insensitive. A glob (* ? [) matches the whole name with or without its leading "
    "NVIDIA/Tesla/GeForce/Quadro: H100* and *H100* match 'NVIDIA H100 80GB HBM3'. Without glob characters, "
    "whole words of the name in order: H100, 'h100 80gb', 'RTX 4090' match; H10 does not."
)


class RequirementsError(YamlError):
    """A requirements-file mistake: one line with the file, line and a hint."""


class _Rule(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    host: str | None = None  # a flow host; default: every lot


class GpusRule(_Rule):
    min_count: int = 1
    model: Annotated[str, msgspec.Meta(description=MODEL_RULE)] | None = None  # check_names.model_matches
    min_memory_gb: float | None = None  # as sold: an "80 GB" card passes 80
    min_memory_gib: float | None = None  # read as the card's sold size too (kept for old files)


class VersionRule(_Rule):
    min: str


# "xgmi": AMD's Infinity Fabric only; "gpu-link": any GPU link, NVLink or XGMI (issue 35)
LinkClass = Literal["nvlink", "xgmi", "gpu-link", "PIX", "PXB", "PHB", "NODE", "SYS"]


class GpuLinksRule(_Rule):
    steps: list[str] | None = None
    min: LinkClass = "nvlink"  # NVLink, or PCIe P2P at least as good as this class


class GpuGroupsRule(_Rule):
    """``groups`` disjoint groups of ``k`` GPUs for a pattern (as `topomap place` picks them), each
    pair of a group on NVLink, or on P2P within ``min`` (8 GPUs in two NVLink islands: k 8 fails,
    k 4 × groups 2 passes)."""

    k: int
    groups: int = 1
    min: LinkClass = "nvlink"
    pattern: Literal["tp", "ring"] = "tp"


class GdrNicRule(_Rule):
    steps: list[str] | None = None
    max_path: PathClass = "PXB"
    min_gbit_s: float | None = None


class SameNumaRule(_Rule):
    steps: list[str]


class ArrowBandwidthRule(_Rule):
    min_gbps: float
    medium: str | None = None
    from_step: str | None = None
    to_step: str | None = None


class ArrowTimeRule(_Rule):
    max_seconds: float
    medium: str | None = None
    from_step: str | None = None
    to_step: str | None = None


class PlanTotalRule(_Rule):
    """The flow's work (its `work:` block) done within ``max_minutes`` on this lot, by the best
    arrangement `topomap plan` finds, or with exactly ``cards`` cards."""

    max_minutes: float
    cards: int | None = None


class FabricReadyRule(_Rule):
    """Every GPU's NVLink fabric registered: state completed, clique id set (no options)."""


class CollectiveBusbwRule(_Rule):
    """The expected bus bandwidth of one NCCL collective (what `topomap nccl LOT --perf` gives, issue 32) is
    at least ``min_gbps``; ``hosts``: on that many identical hosts of a one-host lot."""

    collective: Literal["all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv", "broadcast", "reduce"]
    min_gbps: float
    hosts: int | None = None


class ClusterRule(_Rule):
    """Rules about the whole cluster (topomap.check.cluster_rules): set one or more to true."""

    every_host_passes: bool = False  # every host passes the file's other rules, no error finding
    one_nvlink_clique: bool = False  # every host's GPUs in one NVLink domain (cluster UUID, clique)
    rails_consistent: bool = False  # rail i (GPU i's nearest NIC) the same NIC on every host


RULES: dict[str, type[_Rule]] = {
    "gpus": GpusRule,
    "driver": VersionRule,
    "cuda": VersionRule,
    "gpu_links": GpuLinksRule,
    "gpu_groups": GpuGroupsRule,
    "gdr_nic": GdrNicRule,
    "same_numa": SameNumaRule,
    "arrow_bandwidth": ArrowBandwidthRule,
    "arrow_time": ArrowTimeRule,
    "fabric_ready": FabricReadyRule,
    "plan_total": PlanTotalRule,
    "cluster": ClusterRule,
    "collective_busbw": CollectiveBusbwRule,
}
FLOW_RULES = {"arrow_bandwidth", "arrow_time", "same_numa", "plan_total"}


@dataclass
class Requirement:
    name: str
    rule: _Rule
    line: int
    origin: str = ""  # the requirements file
    lines: dict[str, int] = field(default_factory=dict)  # option path ("steps[1]", "host") → line

    def where(self, option: str | None = None) -> str:
        """``file:line`` of the rule, or of one of its options (``steps[1]``, ``from_step``)."""
        line = self.line
        if option is not None:
            line = self.lines.get(option, self.lines.get(option.split("[")[0], self.line))
        return f"{self.origin or 'requirements'}:{line}"


# --- reading -------------------------------------------------------------------------------------


def read_requirements(path: str | Path) -> tuple[list[Requirement], bool]:
    """Rules from a requirements file or a flow file's ``requirements:``; second value: is it a flow."""
    doc = read_yaml(path, "requirements file", RequirementsError)
    return requirements_from_doc(doc)


def parse_requirements(text: str, origin: str) -> tuple[list[Requirement], bool]:
    return requirements_from_doc(load_yaml(text, origin, "requirements file", RequirementsError))


def requirements_from_doc(doc: YamlDoc) -> tuple[list[Requirement], bool]:
    raw = doc.data
    is_flow = isinstance(raw, dict) and "flow" in raw
    if not isinstance(raw, dict) or "requirements" not in raw:
        raise RequirementsError(
            f"{doc.origin}:1: no `requirements:` list",
            hint="write `requirements:` followed by rules such as `- gpus: {min_count: 8}`",
        )
    extra = set(raw) - (
        {"requirements", "description"}
        | ({"flow", "hosts", "work", "steps", "arrows", "description"} if is_flow else set())
    )
    if extra:
        key = sorted(extra)[0]
        raise RequirementsError(
            f"{doc.origin}:{doc.line('$.' + key)}: unknown key `{key}`",
            hint="a requirements file holds `requirements:` and `description:`",
        )
    items = raw["requirements"]
    if not isinstance(items, list) or not items:
        raise RequirementsError(f"{doc.origin}:{doc.line('$.requirements')}: `requirements` must be a non-empty list")
    out: list[Requirement] = []
    for i, item in enumerate(items):
        where = f"$.requirements[{i}]"
        line = doc.line(where)
        if not isinstance(item, dict) or len(item) != 1:
            raise RequirementsError(
                f"{doc.origin}:{line}: rule {i + 1} must be one `name: {{options}}` entry",
                hint=f"rules: {', '.join(RULES)}",
            )
        ((name, opts),) = item.items()
        if name not in RULES:
            close = difflib.get_close_matches(str(name), list(RULES), n=1)
            raise RequirementsError(
                f"{doc.origin}:{line}: unknown rule `{name}`",
                hint=f"did you mean `{close[0]}`?" if close else f"rules: {', '.join(RULES)}",
            )
        typ = RULES[name]
        fields = list(typ.__struct_fields__)
        rule = convert(
            doc, opts if opts is not None else {}, typ, f"{where}.{name}", _fields_of(fields), exc=RequirementsError
        )
        if isinstance(rule, VersionRule) and not re.fullmatch(r"\d+(\.\d+)*", rule.min):
            raise RequirementsError(f"{doc.origin}:{line}: {name} min {rule.min!r} is not a version like 12.2")
        prefix = f"{where}.{name}."
        options = {k[len(prefix) :]: v for k, v in doc.lines.items() if k.startswith(prefix)}
        out.append(Requirement(name=str(name), rule=rule, line=line, origin=doc.origin, lines=options))
    return out, is_flow


def _fields_of(fields: list[str]) -> Callable[[str], list[str]]:
    return lambda _at: fields


def requirements_json_schema() -> dict[str, Any]:
    """JSON Schema of a requirements file: a list of one-key rule entries."""
    defs: dict[str, Any] = {}
    items = []
    for name, typ in RULES.items():
        sub = msgspec.json.schema(typ)
        defs.update(sub.pop("$defs", {}))
        items.append({"type": "object", "properties": {name: sub}, "required": [name], "additionalProperties": False})
    return {
        "title": "topomap.requirements/1",
        "type": "object",
        "properties": {"description": {"type": "string"}, "requirements": {"type": "array", "items": {"anyOf": items}}},
        "required": ["requirements"],
        "$defs": defs,
    }
