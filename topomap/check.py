"""Requirements → a verdict per rule, with evidence.

A requirements file (YAML) is a list of rules; they may also sit in a flow file under
``requirements:``::

    requirements:
      - gpus: {min_count: 8, model: "*H100*", min_memory_gib: 80}
      - driver: {min: "535"}
      - cuda: {min: "12.2"}
      - gpu_links: {steps: [shards], min: nvlink}     # or min: PXB (P2P at least as good as PXB)
      - gdr_nic: {max_path: PXB, min_gbit_s: 200}    # every GPU has a GPUDirect-capable NIC that near
      - same_numa: {steps: [convert]}                # the GPUs of each step share a NUMA node
      - arrow_bandwidth: {min_gbps: 20, medium: network}
      - arrow_time: {max_seconds: 2}
      - fabric_ready: {}                             # NVLink fabric registered: state completed, clique set

A rule that the snapshot cannot answer is UNKNOWN, which does not pass: a rental is not gated
on a guess.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec

from topomap.errors import TopomapError
from topomap.graph import Topology, snapshot_pair
from topomap.links import PCIE_CLASSES, class_rank
from topomap.mapping import FlowMap
from topomap.model import Gpu
from topomap.yamlfile import YamlDoc, YamlError, convert, load_yaml, read_yaml

Status = Literal["pass", "fail", "unknown"]


class RequirementsError(YamlError):
    """A requirements-file mistake: one line with the file, line and a hint."""


class _Rule(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    host: str | None = None  # a flow host; default: every lot


class GpusRule(_Rule):
    min_count: int = 1
    model: str | None = None  # glob, case-insensitive: "*H100*"
    min_memory_gib: float | None = None


class VersionRule(_Rule):
    min: str


class GpuLinksRule(_Rule):
    steps: list[str] | None = None
    min: str = "nvlink"  # "nvlink" or a PCIe class: PIX, PXB, PHB, NODE, SYS


class GdrNicRule(_Rule):
    steps: list[str] | None = None
    max_path: str = "PXB"
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


class FabricReadyRule(_Rule):
    """Every GPU's NVLink fabric registered: state completed, clique id set (no options)."""


RULES: dict[str, type[_Rule]] = {
    "gpus": GpusRule,
    "driver": VersionRule,
    "cuda": VersionRule,
    "gpu_links": GpuLinksRule,
    "gdr_nic": GdrNicRule,
    "same_numa": SameNumaRule,
    "arrow_bandwidth": ArrowBandwidthRule,
    "arrow_time": ArrowTimeRule,
    "fabric_ready": FabricReadyRule,
}
FLOW_RULES = {"arrow_bandwidth", "arrow_time", "same_numa"}


@dataclass
class Requirement:
    name: str
    rule: _Rule
    line: int


@dataclass
class RuleResult:
    rule: str
    lot: str
    status: Status
    description: str
    evidence: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "lot": self.lot,
            "status": self.status,
            "description": self.description,
            "evidence": self.evidence,
        }


@dataclass
class CheckResult:
    results: list[RuleResult]

    @property
    def passed(self) -> bool:
        return all(r.status == "pass" for r in self.results)

    def verdict(self) -> str:
        failed = [r for r in self.results if r.status == "fail"]
        unknown = [r for r in self.results if r.status == "unknown"]
        n = len(self.results)
        if not failed and not unknown:
            return f"PASS: {n} of {n} rules pass"
        bits = []
        if failed:
            bits.append(f"{len(failed)} fail")
        if unknown:
            bits.append(f"{len(unknown)} cannot be told from the snapshot")
        return f"FAIL: {', '.join(bits)} (of {n} rules)"


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
            import difflib

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
        if isinstance(rule, GpuLinksRule) and rule.min != "nvlink" and rule.min not in PCIE_CLASSES:
            raise RequirementsError(
                f"{doc.origin}:{line}: gpu_links min {rule.min!r}", hint="use nvlink or one of PIX, PXB, PHB, NODE, SYS"
            )
        if isinstance(rule, GdrNicRule) and rule.max_path not in PCIE_CLASSES:
            raise RequirementsError(
                f"{doc.origin}:{line}: gdr_nic max_path {rule.max_path!r}", hint="use one of PIX, PXB, PHB, NODE, SYS"
            )
        if isinstance(rule, VersionRule) and not re.fullmatch(r"\d+(\.\d+)*", rule.min):
            raise RequirementsError(f"{doc.origin}:{line}: {name} min {rule.min!r} is not a version like 12.2")
        out.append(Requirement(name=str(name), rule=rule, line=line))
    return out, is_flow


def _fields_of(fields: list[str]) -> Callable[[str], list[str]]:
    return lambda _at: fields


# --- evaluation ----------------------------------------------------------------------------------


@dataclass
class Lot:
    """One machine to check: its name (flow host or file), topology, and the flow's GPUs on it."""

    name: str
    topo: Topology
    step_gpus: dict[str, list[str]] = field(default_factory=dict)  # step → gpu ids on this lot


def check(reqs: list[Requirement], lots: list[Lot], fmap: FlowMap | None) -> CheckResult:
    results: list[RuleResult] = []
    for req in reqs:
        if req.name in FLOW_RULES and fmap is None:
            raise TopomapError(f"rule `{req.name}` (line {req.line}) needs a flow", hint="pass --flow FLOW")
        if req.name in ("arrow_bandwidth", "arrow_time"):
            assert fmap is not None
            results.append(_arrows(req, fmap))
            continue
        targets = [lot for lot in lots if req.rule.host in (None, lot.name)]
        if req.rule.host is not None and not targets:
            raise TopomapError(f"rule `{req.name}` (line {req.line}): no lot named {req.rule.host!r}")
        for lot in targets:
            results.append(_EVAL[req.name](req, lot))
    return CheckResult(results)


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def _versions(req: Requirement, lot: Lot) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, VersionRule)
    sw = lot.topo.snapshot.software
    have = sw.driver_version if req.name == "driver" else sw.cuda_driver_version
    desc = f"{req.name} ≥ {rule.min}"
    if have is None:
        return RuleResult(req.name, lot.name, "unknown", desc, [f"{req.name} version not recorded by this source"])
    ok = _version(have) >= _version(rule.min)
    return RuleResult(req.name, lot.name, "pass" if ok else "fail", desc, [f"{req.name} {have}"])


def _gpus(req: Requirement, lot: Lot) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, GpusRule)
    bits = [f"≥ {rule.min_count} GPUs"]
    if rule.model:
        bits.append(f"model {rule.model}")
    if rule.min_memory_gib:
        bits.append(f"≥ {rule.min_memory_gib:g} GiB each")
    desc = ", ".join(bits)
    gpus = lot.topo.snapshot.gpus
    good: list[Gpu] = []
    unknown: list[str] = []
    bad: list[str] = []
    for g in gpus:
        why = []
        if rule.model:
            if g.name is None:
                unknown.append(f"gpu{g.index}: model not recorded")
                continue
            if not fnmatch.fnmatch(g.name.lower(), rule.model.lower()):
                why.append(f"model {g.name}")
        if rule.min_memory_gib:
            if g.memory_total_bytes is None:
                unknown.append(f"gpu{g.index}: memory not recorded")
                continue
            if g.memory_total_bytes / 2**30 < rule.min_memory_gib:
                why.append(f"{g.memory_total_bytes / 2**30:.0f} GiB")
        if why:
            bad.append(f"gpu{g.index}: {', '.join(why)}")
        else:
            good.append(g)
    evidence = [f"{len(good)} of {len(gpus)} GPUs qualify", *bad[:8], *unknown[:4]]
    if len(good) >= rule.min_count:
        return RuleResult("gpus", lot.name, "pass", desc, evidence)
    if len(good) + len(unknown) >= rule.min_count:
        return RuleResult("gpus", lot.name, "unknown", desc, evidence)
    return RuleResult("gpus", lot.name, "fail", desc, evidence)


def _gpu_set(lot: Lot, steps: list[str] | None) -> list[str]:
    if steps:
        missing = [s for s in steps if s not in lot.step_gpus]
        if missing and not lot.step_gpus:
            raise TopomapError(f"rule names steps {', '.join(steps)} but no --flow was given", hint="pass --flow FLOW")
        out = sorted({g for s in steps for g in lot.step_gpus.get(s, [])})
        return out
    if lot.step_gpus:
        return sorted({g for gs in lot.step_gpus.values() for g in gs})
    return [f"gpu{g.index}" for g in lot.topo.snapshot.gpus]


def _gpu_links(req: Requirement, lot: Lot) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, GpuLinksRule)
    gpus = _gpu_set(lot, rule.steps)
    desc = "GPUs pairwise on NVLink" if rule.min == "nvlink" else f"GPUs pairwise NVLink or P2P within {rule.min}"
    if rule.steps:
        desc += f" (steps {', '.join(rule.steps)})"
    bad, unknown = [], []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            p = snapshot_pair(lot.topo, a, b)
            if p is None or p.path is None:
                unknown.append(f"{a}–{b}: path unknown")
                continue
            if p.path.startswith("NV"):
                continue
            if rule.min == "nvlink":
                bad.append(f"{a}–{b}: {p.path} (no NVLink)")
                continue
            if class_rank(p.path) > class_rank(rule.min):
                bad.append(f"{a}–{b}: {p.path} (beyond {rule.min})")
            elif p.p2p is not None and p.p2p.read is not None and (p.p2p.read != "OK" or p.p2p.write != "OK"):
                bad.append(f"{a}–{b}: {p.path} but P2P read {p.p2p.read}, write {p.p2p.write}")
            elif p.p2p is None or p.p2p.read is None:
                unknown.append(f"{a}–{b}: {p.path}, P2P status not recorded")
    pairs = len(gpus) * (len(gpus) - 1) // 2
    evidence = [f"{pairs - len(bad) - len(unknown)} of {pairs} pairs qualify", *bad[:10], *unknown[:5]]
    status: Status = "fail" if bad else "unknown" if unknown else "pass"
    return RuleResult("gpu_links", lot.name, status, desc, evidence)


def _gdr_nic(req: Requirement, lot: Lot) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, GdrNicRule)
    snap = lot.topo.snapshot
    desc = f"every GPU has a GPUDirect-capable NIC within {rule.max_path}"
    if rule.min_gbit_s:
        desc += f" at ≥ {rule.min_gbit_s:g} Gb/s"
    bad, unknown, good = [], [], []
    for gid in _gpu_set(lot, rule.steps):
        best: tuple[int, str, Any] | None = None
        for n in snap.nics:
            if not n.rdma or n.gdr is False:
                continue
            p = snapshot_pair(lot.topo, gid, f"nic{n.index}")
            if p is None or p.path is None:
                continue
            r = class_rank(p.path)
            if best is None or r < best[0]:
                best = (r, p.path, n)
        if best is None:
            bad.append(f"{gid}: no RDMA NIC recorded")
            continue
        r, path, nic = best
        if r > class_rank(rule.max_path):
            bad.append(f"{gid}: nearest NIC {nic.name} is {path}")
            continue
        if rule.min_gbit_s:
            if nic.speed_gbit_s is None:
                unknown.append(f"{gid}: NIC {nic.name} ({path}) speed not recorded")
                continue
            if nic.speed_gbit_s < rule.min_gbit_s:
                bad.append(f"{gid}: NIC {nic.name} ({path}) runs at {nic.speed_gbit_s:g} Gb/s")
                continue
        good.append(f"{gid}: {nic.name} {path}")
    status: Status = "fail" if bad else "unknown" if unknown else "pass"
    return RuleResult("gdr_nic", lot.name, status, desc, [*bad[:8], *unknown[:4], *good[:8]])


def _same_numa(req: Requirement, lot: Lot) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, SameNumaRule)
    snap = lot.topo.snapshot
    desc = f"GPUs of step(s) {', '.join(rule.steps)} share a NUMA node"
    gpus = {f"gpu{g.index}": g for g in snap.gpus}
    bad, unknown, evidence = [], [], []
    for step in rule.steps:
        ids = lot.step_gpus.get(step, [])
        if not ids:
            continue
        nodes = {gid: gpus[gid].numa_node for gid in ids}
        if any(v is None for v in nodes.values()):
            unknown.append(f"{step}: NUMA node of {', '.join(k for k, v in nodes.items() if v is None)} unknown")
        elif len(set(nodes.values())) > 1:
            bad.append(f"{step}: " + ", ".join(f"{k} on NUMA {v}" for k, v in nodes.items()))
        else:
            evidence.append(f"{step}: all on NUMA {next(iter(nodes.values()))}")
    status: Status = "fail" if bad else "unknown" if unknown else "pass"
    return RuleResult("same_numa", lot.name, status, desc, [*bad, *unknown, *evidence])


def _fabric(req: Requirement, lot: Lot) -> RuleResult:
    desc = "NVLink fabric ready (state completed, clique set)"
    bad, unknown = [], []
    for g in lot.topo.snapshot.gpus:
        f = g.fabric
        if f is None:
            unknown.append(f"gpu{g.index}: fabric not recorded")
        elif f.state != "completed":
            bad.append(f"gpu{g.index}: fabric {f.state or 'unknown'}")
        elif not f.clique_id:
            bad.append(f"gpu{g.index}: fabric completed but clique id 0 (never registered)")
        elif f.status not in (None, "success"):
            bad.append(f"gpu{g.index}: fabric status {f.status}")
    status: Status = "fail" if bad else "unknown" if unknown else "pass"
    ok = len(lot.topo.snapshot.gpus) - len(bad) - len(unknown)
    return RuleResult("fabric_ready", lot.name, status, desc, [f"{ok} GPU(s) ready", *bad[:8], *unknown[:4]])


def _arrows(req: Requirement, fmap: FlowMap) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, (ArrowBandwidthRule, ArrowTimeRule))
    arrows = [
        a
        for a in fmap.arrows
        if a.medium != "local"
        and (rule.medium is None or a.medium == rule.medium)
        and (rule.from_step is None or a.src_step == rule.from_step)
        and (rule.to_step is None or a.dst_step == rule.to_step)
    ]
    bad, unknown = [], []
    if isinstance(rule, ArrowBandwidthRule):
        desc = f"every {rule.medium or ''} arrow ≥ {rule.min_gbps:g} GB/s".replace("  ", " ")
        for a in arrows:
            if a.bandwidth_gbps is None:
                unknown.append(f"{a.src} → {a.dst}: bandwidth unknown ({a.medium})")
            elif a.bandwidth_gbps < rule.min_gbps:
                bad.append(f"{a.src} → {a.dst}: {a.bandwidth_gbps:g} GB/s {a.bandwidth_source} over {a.medium}")
    else:
        desc = f"every {rule.medium or ''} arrow done in ≤ {rule.max_seconds:g} s".replace("  ", " ")
        for a in arrows:
            if a.seconds is None:
                unknown.append(f"{a.src} → {a.dst}: time unknown (no volume or bandwidth)")
            elif a.seconds > rule.max_seconds:
                bad.append(f"{a.src} → {a.dst}: {a.seconds:.3g} s over {a.medium}")
    status: Status = "fail" if bad else "unknown" if unknown else "pass"
    ok = len(arrows) - len(bad) - len(unknown)
    if not arrows:
        return RuleResult(req.name, fmap.flow.name, status, desc, ["no arrow of the flow matches this rule"])
    return RuleResult(
        req.name, fmap.flow.name, status, desc, [f"{ok} of {len(arrows)} arrows qualify", *bad[:10], *unknown[:5]]
    )


_EVAL = {
    "gpus": _gpus,
    "driver": _versions,
    "cuda": _versions,
    "gpu_links": _gpu_links,
    "gdr_nic": _gdr_nic,
    "same_numa": _same_numa,
    "fabric_ready": _fabric,
}


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
