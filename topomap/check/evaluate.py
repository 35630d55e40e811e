"""Requirements → a verdict per rule, with evidence.

A requirements file (YAML) is a list of rules; they may also sit in a flow file under
``requirements:``::

    requirements:
      - gpus: {min_count: 8, model: "*H100*", min_memory_gib: 80}
      - driver: {min: "535"}
      - cuda: {min: "12.2"}
      - gpu_links: {steps: [shards], min: nvlink}     # or min: PXB (P2P at least as good as PXB)
      - gdr_nic: {max_path: PXB, min_gbit_s: 200}    # every GPU has a GPUDirect-capable NIC that near
      - same_numa: {steps: [convert]}                # the GPUs of these steps share one NUMA node
      - arrow_bandwidth: {min_gbps: 20, medium: network}
      - arrow_time: {max_seconds: 2}
      - fabric_ready: {}                             # NVLink fabric registered: state completed, clique set
      - plan_total: {max_minutes: 60}                # the flow's work done within 60 min (topomap plan)

A rule that the snapshot cannot answer is UNKNOWN (exit status 3), which does not pass: a rental
is not gated on a guess; each UNKNOWN names the command whose output would answer it. A rule that
applies to nothing (gpu_links on a one-GPU lot) fails. Every fact comes from
``topomap.graph.evidence``, the functions map, show and diff ask too. Memory sizes are compared
the way vendors sell them (decimal GB): an 80 GB card, which reports 81559 MiB, passes 80.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from topomap.base.errors import TopomapError
from topomap.base.links import class_rank
from topomap.base.units import fmt_gbps, fmt_span
from topomap.check.names import check_names, model_matches
from topomap.check.rules import (
    FLOW_RULES,
    MODEL_RULE,
    RULES,
    ArrowBandwidthRule,
    ArrowTimeRule,
    GdrNicRule,
    GpuLinksRule,
    GpusRule,
    PlanTotalRule,
    Requirement,
    RequirementsError,
    SameNumaRule,
    VersionRule,
    parse_requirements,
    read_requirements,
    requirements_from_doc,
    requirements_json_schema,
)
from topomap.flow.mapping import FlowMap, MappedArrow
from topomap.flow.spec import Flow
from topomap.graph import Topology, natural_key
from topomap.graph.evidence import gpu_usable, nearest_nic, nvlink, pcie_p2p, pcie_path_class
from topomap.model.facts import SETTLE, fabric_ready, gpu_memory, gpu_model_name
from topomap.model.snapshot import Gpu

__all__ = [  # the rules and their reading live in check_rules; these names stay importable from here
    "FLOW_RULES",
    "RULES",
    "CheckResult",
    "Lot",
    "Requirement",
    "RequirementsError",
    "RuleResult",
    "check",
    "flow_lots",
    "parse_requirements",
    "read_requirements",
    "requirements_from_doc",
    "requirements_json_schema",
]

Status = Literal["pass", "fail", "unknown"]
Verdict = Literal["pass", "fail", "unknown"]
#: Exit status of `topomap check` per verdict.
EXIT_STATUS: dict[Verdict, int] = {"pass": 0, "fail": 1, "unknown": 3}


@dataclass
class RuleResult:
    rule: str
    lot: str
    status: Status
    description: str
    evidence: list[str] = field(default_factory=list)  # complete; views may shorten, JSON never does
    summary: str = ""  # the deciding fact in one line: "4 GPUs < 8"
    settle: list[str] = field(default_factory=list)  # for UNKNOWN: commands whose output would answer it

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "lot": self.lot,
            "status": self.status,
            "description": self.description,
            "summary": self.summary,
            "evidence": self.evidence,
            "settle": self.settle,
        }


@dataclass
class CheckResult:
    results: list[RuleResult]

    @property
    def passed(self) -> bool:
        return all(r.status == "pass" for r in self.results)

    @property
    def status(self) -> Verdict:
        """FAIL when any rule fails, else UNKNOWN when any cannot be told, else PASS."""
        if any(r.status == "fail" for r in self.results):
            return "fail"
        if any(r.status == "unknown" for r in self.results):
            return "unknown"
        return "pass"

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.status]

    def verdict(self) -> str:
        failed = [r for r in self.results if r.status == "fail"]
        unknown = [r for r in self.results if r.status == "unknown"]
        n = len(self.results)
        if not failed and not unknown:
            return f"PASS: {n} of {n} rules pass"
        if failed:
            text = f"FAIL: {len(failed)} of {n} rules fail"
            if unknown:
                text += f", {len(unknown)} cannot be told from the snapshot"
            return text
        return f"UNKNOWN: {len(unknown)} of {n} rules cannot be told from the snapshot (none fails)"


# --- evaluation ----------------------------------------------------------------------------------


@dataclass
class Lot:
    """One machine to check: its name (flow host or file), topology, and the flow's GPUs on it."""

    name: str
    topo: Topology
    step_gpus: dict[str, list[str]] = field(default_factory=dict)  # step → gpu ids on this lot


def flow_lots(flow: Flow, topos: dict[str, Topology | None]) -> list[Lot]:
    """One lot per flow host with a snapshot, knowing which of its GPUs each step uses."""
    lots: list[Lot] = []
    for host, topo in topos.items():
        if topo is None:
            continue
        steps: dict[str, list[str]] = {}
        for st in flow.steps.values():
            ids = [p.gpu for p in st.placements if p.host == host and p.kind == "gpu" and p.gpu]
            if ids:
                steps[st.name] = ids
        lots.append(Lot(name=host, topo=topo, step_gpus=steps))
    return lots


def check(
    reqs: list[Requirement],
    lots: list[Lot],
    fmap: FlowMap | None,
    topos: dict[str, Topology | None] | None = None,
) -> CheckResult:
    """Evaluate each rule on each lot (``topos``: the flow's bound hosts, for plan rules)."""
    for req in reqs:
        if req.name in FLOW_RULES and fmap is None:
            raise TopomapError(f"{req.where()}: rule `{req.name}` needs a flow", hint="pass --flow FLOW")
    check_names(reqs, fmap.flow if fmap is not None else None, [lot.name for lot in lots])
    results: list[RuleResult] = []
    for req in reqs:
        if req.name in ("arrow_bandwidth", "arrow_time"):
            assert fmap is not None
            results.append(_arrows(req, fmap))
            continue
        if req.name == "plan_total":
            assert fmap is not None
            bound: dict[str, Topology | None] = dict(topos) if topos is not None else {}
            if topos is None:
                bound.update({lot.name: lot.topo for lot in lots})
            results.append(_plan_total(req, fmap, bound))
            continue
        targets = [lot for lot in lots if req.rule.host in (None, lot.name)]  # check_names: the host is a lot
        for lot in targets:
            results.append(_EVAL[req.name](req, lot))
    return CheckResult(results)


def _result(
    req: Requirement,
    lot: str,
    desc: str,
    ok: list[str],
    bad: list[str],
    unknown: list[str],
    settle: list[str],
    counted: str,
) -> RuleResult:
    """FAIL when anything fails, else UNKNOWN when anything cannot be told, else PASS; the evidence
    lists failures first, then unknowns, then what qualifies — all of it."""
    status: Status = "fail" if bad else "unknown" if unknown else "pass"
    summary = counted
    if len(bad) == 1:
        summary = bad[0]
    elif not bad and len(unknown) == 1:
        summary = unknown[0]
    return RuleResult(
        req.name, lot, status, desc, [counted, *bad, *unknown, *ok], summary, sorted(set(settle)) if unknown else []
    )


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def _versions(req: Requirement, lot: Lot) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, VersionRule)
    sw = lot.topo.snapshot.software
    have = sw.driver_version if req.name == "driver" else sw.cuda_driver_version
    desc = f"{req.name} ≥ {rule.min}"
    if have is None:
        return RuleResult(
            req.name,
            lot.name,
            "unknown",
            desc,
            [f"{req.name} version not recorded by this source"],
            f"{req.name} version not recorded by this source",
            [SETTLE["driver"]],
        )
    ok = _version(have) >= _version(rule.min)
    summary = f"{req.name} {have} {'≥' if ok else '<'} {rule.min}"
    return RuleResult(req.name, lot.name, "pass" if ok else "fail", desc, [f"{req.name} {have}"], summary)


def _sold_gb(memory_bytes: int) -> float:
    """Memory as vendors sell it, in decimal GB: 81559 MiB → 85.5 GB, which an "80 GB" card is."""
    return memory_bytes / 1e9


def _gpus(req: Requirement, lot: Lot) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, GpusRule)
    need_gb = rule.min_memory_gb if rule.min_memory_gb is not None else rule.min_memory_gib
    bits = [f"≥ {rule.min_count} GPUs"]
    if rule.model:
        bits.append(f"model {rule.model}")
    if need_gb:
        bits.append(f"≥ {need_gb:g} GB each (as sold)")
    desc = ", ".join(bits)
    topo = lot.topo
    sorted_out: dict[Status, list[str]] = {"pass": [], "fail": [], "unknown": []}
    settle: list[str] = []
    wrong_model = False
    for g in topo.snapshot.gpus:
        gid = f"gpu{g.index}"
        alive = gpu_usable(topo, gid)
        if not alive.yes:
            sorted_out["fail"].append(f"{gid}: not counted: {alive.why()}")
            continue
        status, text, why = _one_gpu(g, rule.model, need_gb)
        sorted_out[status].append(f"{gid}: {text}")
        settle += why
        wrong_model = wrong_model or (status == "fail" and text.startswith("model "))
    good, bad, unknown = sorted_out["pass"], sorted_out["fail"], sorted_out["unknown"]
    n_good, n_unknown = len(good), len(unknown)
    verdict: Status
    if n_good >= rule.min_count:
        verdict, summary = "pass", f"{n_good} GPUs qualify ≥ {rule.min_count}"
    elif n_good + n_unknown >= rule.min_count:
        verdict, summary = "unknown", f"{n_good} GPUs qualify, {n_unknown} cannot be told; {rule.min_count} needed"
    else:
        verdict, summary = "fail", f"{n_good} GPUs qualify < {rule.min_count} needed"
    seen = _models_seen(topo, rule.model) if verdict == "fail" and wrong_model else []
    if seen:
        summary += f"; {seen[0]}"
    return RuleResult(
        "gpus",
        lot.name,
        verdict,
        desc,
        [summary, *seen, *bad, *unknown, *good],
        summary,
        sorted(set(settle)) if verdict == "unknown" else [],
    )


def _one_gpu(g: Gpu, model: str | None, need_gb: float | None) -> tuple[Status, str, list[str]]:
    """One GPU against the gpus rule: its status, the line saying why, and what would settle it."""
    why: list[str] = []
    unsure: list[str] = []
    settle: list[str] = []
    name, derived = gpu_model_name(g)
    named = (name or "model not recorded") + (" (derived from the PCI device id)" if derived and name else "")
    if model:
        if name is None:
            unsure.append("model not recorded")
            settle.append(SETTLE["gpu_model"])
        elif not model_matches(model, name):
            why.append(f"model {named}")
    mem = gpu_memory(g)
    have = mem.total_bytes
    if need_gb:
        if have is None:
            unsure.append("memory not recorded")
            settle.append(SETTLE["gpu_memory"])
        elif mem.derived and abs(_sold_gb(have) - need_gb) <= need_gb * 0.03:
            unsure.append(f"memory {mem.source}: too close to {need_gb:g} GB to tell")
            settle.append(SETTLE["gpu_memory"])
        elif _sold_gb(have) < need_gb * 0.99:
            what = f"{have / 2**20:.0f} MiB" + (f" ({mem.source})" if mem.derived else "")
            why.append(f"{what} = {_sold_gb(have):.1f} GB < {need_gb:g} GB")
    if why:
        return "fail", ", ".join(why), []
    if unsure:
        return "unknown", ", ".join(unsure), settle
    if need_gb and have is not None:
        named += f", {have / 2**20:.0f} MiB" + (f" ({mem.source})" if mem.derived else "")
    return "pass", named, []


def _models_seen(topo: Topology, pattern: str | None) -> list[str]:
    """For a failed model rule: the models the lot has, counted, and how the pattern was matched."""
    if pattern is None:
        return []
    counts: dict[str, int] = {}
    for g in topo.snapshot.gpus:
        name, derived = gpu_model_name(g)
        key = (name or "model not recorded") + (" (derived from the PCI device id)" if derived and name else "")
        counts[key] = counts.get(key, 0) + 1
    seen = ", ".join(f"{k} ×{n}" for k, n in counts.items()) or "no GPU"
    return [
        f"models seen: {seen}",
        f"model {pattern!r}: {MODEL_RULE}",
    ]


def _gpu_set(lot: Lot, steps: list[str] | None) -> list[str]:
    if steps:  # check_names: every step is one of the flow's
        return sorted({g for s in steps for g in lot.step_gpus.get(s, [])}, key=natural_key)
    if lot.step_gpus:
        return sorted({g for gs in lot.step_gpus.values() for g in gs}, key=natural_key)
    return [f"gpu{g.index}" for g in lot.topo.snapshot.gpus]


def _gpu_links(req: Requirement, lot: Lot) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, GpuLinksRule)
    gpus = _gpu_set(lot, rule.steps)
    desc = "GPUs pairwise on NVLink" if rule.min == "nvlink" else f"GPUs pairwise NVLink or P2P within {rule.min}"
    if rule.steps:
        desc += f" (steps {', '.join(rule.steps)})"
    if len(gpus) < 2:
        why = f"applies to no GPU pair: {len(gpus)} GPU(s) in scope"
        return RuleResult("gpu_links", lot.name, "fail", desc, [why], why)
    ok, bad, unknown, settle = [], [], [], []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            nv = nvlink(lot.topo, a, b)
            if nv.usable.yes:
                ok.append(f"{a}–{b}: NV{nv.links}")
                continue
            if rule.min == "nvlink":
                if nv.usable.value == "unknown":
                    unknown.append(f"{a}–{b}: NVLink unknown: {'; '.join(nv.usable.reasons)}")
                    settle.append(nv.usable.settle or SETTLE["nvlink"])
                else:
                    bad.append(f"{a}–{b}: no usable NVLink: {nv.usable.why()}")
                continue
            cls = pcie_path_class(lot.topo, a, b)
            if cls is None:
                unknown.append(f"{a}–{b}: PCIe path unknown")
                settle.append(SETTLE["path"])
                continue
            if class_rank(cls) > class_rank(rule.min):
                bad.append(f"{a}–{b}: {cls} (beyond {rule.min})")
                continue
            p2p = pcie_p2p(lot.topo, a, b)
            if p2p.no and not p2p.assumed:
                bad.append(f"{a}–{b}: {cls} but {p2p.why()}")
            elif p2p.assumed or p2p.value == "unknown":
                unknown.append(f"{a}–{b}: {cls}, P2P status not recorded")
                settle.append(SETTLE["p2p"])
            else:
                ok.append(f"{a}–{b}: {cls}, {p2p.why()}")
            if nv.usable.value == "unknown" and bad and bad[-1].startswith(f"{a}–{b}"):
                bad[-1] += f" (NVLink unknown: {SETTLE['nvlink']})"
    pairs = len(gpus) * (len(gpus) - 1) // 2
    return _result(req, lot.name, desc, ok, bad, unknown, settle, f"{len(ok)} of {pairs} pairs qualify")


def _gdr_nic(req: Requirement, lot: Lot) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, GdrNicRule)
    desc = f"every GPU has a GPUDirect-capable NIC within {rule.max_path}"
    if rule.min_gbit_s:
        desc += f" at ≥ {rule.min_gbit_s:g} Gb/s"
    gpus = _gpu_set(lot, rule.steps)
    if not gpus:
        return RuleResult("gdr_nic", lot.name, "fail", desc, ["applies to no GPU"], "applies to no GPU")
    ok, bad, unknown, settle = [], [], [], []
    for gid in gpus:
        alive = gpu_usable(lot.topo, gid)
        if not alive.yes:
            bad.append(f"{gid}: {alive.why()}")
            continue
        choice = nearest_nic(lot.topo, gid)
        nic = choice.nic
        if nic is None:
            bad.append(f"{gid}: {choice.gdr.why()}")
            continue
        if choice.path is None:
            unknown.append(f"{gid}: {choice.gdr.why()}")
            settle.append(choice.gdr.settle or SETTLE["nic"])
            continue
        if class_rank(choice.path) > class_rank(rule.max_path):
            bad.append(f"{gid}: nearest usable NIC {nic.name} is {choice.path}")
            continue
        if choice.gdr.no:
            bad.append(f"{gid}: {choice.gdr.why()}")
            continue
        if rule.min_gbit_s:
            if nic.speed_gbit_s is None:
                unknown.append(f"{gid}: NIC {nic.name} ({choice.path}) speed not recorded")
                settle.append(SETTLE["nic_speed"])
                continue
            if nic.speed_gbit_s < rule.min_gbit_s:
                bad.append(f"{gid}: NIC {nic.name} ({choice.path}) runs at {nic.speed_gbit_s:g} Gb/s")
                continue
        ok.append(f"{gid}: {nic.name} {choice.path}")
    return _result(req, lot.name, desc, ok, bad, unknown, settle, f"{len(ok)} of {len(gpus)} GPUs qualify")


def _same_numa(req: Requirement, lot: Lot) -> RuleResult:
    """All the GPUs of the listed steps, together, on one NUMA node (the node the source records
    for each GPU). One step alone: its GPUs share a node; for steps apart, write one rule each."""
    rule = req.rule
    assert isinstance(rule, SameNumaRule)
    desc = f"GPUs of step(s) {', '.join(rule.steps)} share one NUMA node"
    placed = [(step, gid) for step in rule.steps for gid in lot.step_gpus.get(step, [])]
    if not placed:
        why = "applies to no GPU: the steps place nothing on this lot's GPUs"
        return RuleResult("same_numa", lot.name, "fail", desc, [why], why)
    nodes = {(step, gid): _numa_label(lot, gid) for step, gid in placed}
    lines = [f"{step}: {gid} on {node or 'an unknown NUMA node'}" for (step, gid), node in nodes.items()]
    missing = [gid for (_, gid), node in nodes.items() if node is None]
    known = {node for node in nodes.values() if node is not None}
    if len(known) > 1:  # two known nodes already differ, whatever the unknown ones are
        spread = f"on {len(known)} NUMA nodes: {', '.join(sorted(known))}"
        return _result(req, lot.name, desc, [], lines, [], [], spread)
    if missing:
        why = f"NUMA node of {', '.join(dict.fromkeys(missing))} not recorded by this source"
        return _result(req, lot.name, desc, lines, [], [why], [SETTLE["numa"]], why)
    return _result(req, lot.name, desc, lines, [], [], [], f"all {len(placed)} GPU(s) on {known.pop()}")


def _numa_label(lot: Lot, gid: str) -> str | None:
    """The NUMA node the source records for a GPU, in words; None when it records none."""
    g = lot.topo.gpu(gid)
    return None if g is None or g.numa_node is None else f"NUMA {g.numa_node}"


def _fabric(req: Requirement, lot: Lot) -> RuleResult:
    desc = "NVLink fabric ready (state completed, clique set)"
    ok, bad, unknown, settle = [], [], [], []
    gpus = lot.topo.snapshot.gpus
    if not gpus:
        return RuleResult("fabric_ready", lot.name, "fail", desc, ["applies to no GPU"], "applies to no GPU")
    for g in gpus:
        gid = f"gpu{g.index}"
        ans = fabric_ready(lot.topo.snapshot, g)
        if ans.yes:
            ok.append(f"{gid}: {ans.why()}")
        elif ans.no:
            bad.append(f"{gid}: {ans.why()}")
        else:
            unknown.append(f"{gid}: {ans.why()}")
            settle.append(ans.settle or SETTLE["fabric"])
    return _result(req, lot.name, desc, ok, bad, unknown, settle, f"{len(ok)} of {len(gpus)} GPU(s) ready")


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
        and (rule.host is None or rule.host in (_host_of(a.src), _host_of(a.dst)))
    ]
    lot = rule.host or fmap.flow.name
    where = f" to or from {rule.host}" if rule.host else ""
    ok, bad, unknown, settle = [], [], [], []
    if isinstance(rule, ArrowBandwidthRule):
        desc = f"every {rule.medium or ''} arrow{where} ≥ {rule.min_gbps:g} GB/s".replace("  ", " ")
        for a in arrows:
            name = f"{a.src}→{a.dst}"
            if a.medium == "unknown":
                unknown.append(f"{name}: medium unknown ({'; '.join(a.notes[:1])})")
                settle.append(a.settle or SETTLE["nvlink"])
            elif a.bandwidth_gbps is None:
                unknown.append(f"{name}: bandwidth unknown ({a.medium})")
            elif a.bandwidth_gbps >= rule.min_gbps:
                ok.append(f"{name}: {_bw(a)}")
            elif a.lower_bound:
                unknown.append(f"{name}: {_bw(a)} (a lower bound), which does not settle ≥ {rule.min_gbps:g}")
                settle.append(SETTLE["nvlink_links"])
            else:
                bad.append(f"{name}: {_bw(a)} < {rule.min_gbps:g} over {a.medium}")
    else:
        desc = f"every {rule.medium or ''} arrow{where} done in ≤ {rule.max_seconds:g} s".replace("  ", " ")
        for a in arrows:
            name = f"{a.src}→{a.dst}"
            if a.seconds is None:
                unknown.append(f"{name}: time unknown (no volume or bandwidth)")
            elif a.seconds <= rule.max_seconds:
                ok.append(f"{name}: {a.seconds:.3g} s" + (" at most" if a.lower_bound else ""))
            elif a.lower_bound:
                unknown.append(f"{name}: at most {a.seconds:.3g} s (the bandwidth is a lower bound)")
                settle.append(SETTLE["nvlink_links"])
            else:
                bad.append(f"{name}: {a.seconds:.3g} s > {rule.max_seconds:g} s over {a.medium}")
    if not arrows:
        why = "applies to nothing: no arrow of the flow matches this rule"
        return RuleResult(req.name, lot, "fail", desc, [why], why)
    return _result(req, lot, desc, ok, bad, unknown, settle, f"{len(ok)} of {len(arrows)} arrows qualify")


def _host_of(end: str) -> str:
    """The flow host of an arrow end's label (``lot:gpu0``, ``workstation``)."""
    return end.partition(":")[0]


def _bw(a: MappedArrow) -> str:
    return ("≥ " if a.lower_bound else "") + f"{fmt_gbps(a.bandwidth_gbps)} GB/s {a.bandwidth_source}"


def _plan_total(req: Requirement, fmap: FlowMap, topos: dict[str, Topology | None]) -> RuleResult:
    """The plan's total (a calculation from the flow's work block and the mapped arrows) against a limit."""
    from topomap.plan import plan_flow

    rule = req.rule
    assert isinstance(rule, PlanTotalRule)
    limit = rule.max_minutes * 60
    desc = f"the flow's work done in ≤ {rule.max_minutes:g} min" + (f" on {rule.cards} cards" if rule.cards else "")
    plan = plan_flow(fmap.flow, topos, [rule.cards] if rule.cards else None)
    fitting = [a for a in plan.arrangements if a.fit.verdict != "does not fit"]
    if not fitting:
        why = "no arrangement fits in the cards' memory: " + plan.arrangements[0].fit.reason
        return RuleResult(req.name, plan.lot, "fail", desc, [why], why)
    best = min(fitting, key=lambda a: (a.total_s, a.k))
    what = f"{best.k} card(s), {best.kind}: {fmt_span(best.total_s)} (calculated from the flow's work block)"
    evidence = [what, *plan.warnings]
    if best.total_s > limit:
        return RuleResult(req.name, plan.lot, "fail", desc, evidence, f"best plan {what} > {rule.max_minutes:g} min")
    unsure = []
    if not best.transfers_complete:
        unsure.append("some transfer time is unknown and left out of the total")
    if best.fit.verdict == "unknown" and best.fit.needed_bytes is not None:
        unsure.append(f"memory fit unknown: {best.fit.reason}")
    elif best.fit.needed_bytes is None:
        evidence.append("memory fit not checked: the work block gives no memory per task")
    if unsure:
        summary = f"{what}, but {unsure[0]}"
        return RuleResult(req.name, plan.lot, "unknown", desc, [*evidence, *unsure], summary, [SETTLE["gpu_memory"]])
    return RuleResult(req.name, plan.lot, "pass", desc, evidence, f"best plan {what} ≤ {rule.max_minutes:g} min")


_EVAL = {
    "gpus": _gpus,
    "driver": _versions,
    "cuda": _versions,
    "gpu_links": _gpu_links,
    "gdr_nic": _gdr_nic,
    "same_numa": _same_numa,
    "fabric_ready": _fabric,
}
