"""The rules about one lot's machine: versions, GPUs (count, model, memory), GPU links, GPUDirect
NICs, GPUs of steps on one NUMA node, NVLink fabric ready. Each asks ``topomap.graph.evidence``
(path facts) and ``topomap.model.facts`` (device facts), the functions map, show and diff ask too,
and first ``topomap.model.source_facts``: what the lot's source cannot carry (NICs in a `topo -p2p`
paste, every GPU in `nvlink --status -i 0`) is UNKNOWN with the command that carries it, never FAIL.

Memory sizes are compared the way vendors sell them (decimal GB): an 80 GB card, which reports
81559 MiB, passes 80.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from topomap.base.links import class_rank, nic_bandwidth_gbps
from topomap.base.units import fmt_bytes
from topomap.check.names import model_matches
from topomap.check.perf_rules import collective_busbw
from topomap.check.requirements import (
    MODEL_RULE,
    GdrNicRule,
    GpuGroupsRule,
    GpuLinksRule,
    GpusRule,
    Requirement,
    SameNumaRule,
    VersionRule,
)
from topomap.check.results import Finding, Lot, RuleResult, Status, tally
from topomap.graph import Topology, natural_key
from topomap.graph.evidence import (
    gpu_usable,
    memory_node,
    nearest_nic,
    nvlink,
    p2p_unrecorded,
    pcie_p2p,
    pcie_path_class,
)
from topomap.model.facts import fabric_ready, gpu_memory, gpu_model_name, nic_gdr
from topomap.model.filled_facts import named, nic_speed
from topomap.model.origins import origin_note
from topomap.model.ranking import meets
from topomap.model.snapshot import Gpu, Snapshot
from topomap.model.source_facts import Fact, SourceFacts, settle, source_facts
from topomap.place import PlaceError, place_gpus


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def _versions(req: Requirement, lot: Lot) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, VersionRule)
    sw = lot.topo.snapshot.software
    have = sw.driver_version if req.name == "driver" else sw.cuda_driver_version
    desc = f"{req.name} ≥ {rule.min}"
    if have is None:
        fact = Fact.DRIVER if req.name == "driver" else Fact.CUDA
        facts = _facts(lot)
        why = f"{req.name} version not recorded by this source"
        if not facts.knows(fact):
            why += f" ({facts.why_not(fact)})"
        return RuleResult(req.name, lot.name, "unknown", desc, [why], why, [settle(fact)])
    ok = _version(have) >= _version(rule.min)
    summary = f"{req.name} {have} {'≥' if ok else '<'} {rule.min}"
    return RuleResult(req.name, lot.name, "pass" if ok else "fail", desc, [f"{req.name} {have}"], summary)


def _sold_gb(memory_bytes: int) -> float:
    """Memory as vendors sell it, in decimal GB: 81559 MiB → 85.5 GB, which an "80 GB" card is."""
    return memory_bytes / 1e9


def _model_text(g: Gpu, snap: Snapshot | None = None) -> str:
    """The GPU's model as the evidence names it, saying when it was derived (or declared)."""
    name, derived = gpu_model_name(g)
    text = named(snap, "gpus.name", name) if name else "model not recorded"
    return text + (" (derived from the PCI device id)" if derived and name else "")


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
    findings: list[Finding] = []
    to_settle: list[str] = []
    wrong_model = False
    for g in topo.snapshot.gpus:
        gid = f"gpu{g.index}"
        alive = gpu_usable(topo, gid)
        if not alive.yes:
            findings.append(Finding(gid, "fail", f"not counted: {alive.why()}"))
            continue
        status, text, why, other_model = _one_gpu(g, rule.model, need_gb, topo.snapshot)
        findings.append(Finding(gid, status, text))
        to_settle += why
        wrong_model = wrong_model or other_model
    n_good = sum(f.status == "pass" for f in findings)
    n_unknown = sum(f.status == "unknown" for f in findings)
    facts = _facts(lot)
    verdict: Status
    if n_good >= rule.min_count:
        verdict, summary = "pass", f"{n_good} GPUs qualify ≥ {rule.min_count}"
    elif n_good + n_unknown >= rule.min_count:
        verdict, summary = "unknown", f"{n_good} GPUs qualify, {n_unknown} cannot be told; {rule.min_count} needed"
    elif not facts.knows(Fact.GPU_COUNT):  # `nvlink --status -i 0`: one GPU of a node, not a one-GPU node
        verdict = "unknown"
        summary = f"{n_good} of the {len(findings)} GPUs listed qualify; {facts.why_not(Fact.GPU_COUNT)}"
        to_settle += [settle(Fact.GPU_COUNT)]
    else:
        verdict, summary = "fail", f"{n_good} GPUs qualify < {rule.min_count} needed"
    seen = _models_seen(topo, rule.model) if verdict == "fail" and wrong_model else []
    if seen:
        summary += f"; {seen[0]}"
    lines = [f.line for status in ("fail", "unknown", "pass") for f in findings if f.status == status]
    keep = sorted(set(to_settle)) if verdict == "unknown" else []
    return RuleResult("gpus", lot.name, verdict, desc, [summary, *seen, *lines], summary, keep, findings)


def _one_gpu(
    g: Gpu, model: str | None, need_gb: float | None, snap: Snapshot | None = None
) -> tuple[Status, str, list[str], bool]:
    """One GPU against the gpus rule: its status, the line saying why, what would settle it, and whether
    it fails for being another model."""
    why: list[str] = []
    unsure: list[str] = []
    to_settle: list[str] = []
    name = gpu_model_name(g)[0]
    named = _model_text(g, snap)
    other_model = False
    if model:
        if name is None:
            unsure.append("model not recorded")
            to_settle.append(settle(Fact.GPU_MODEL))
        elif not model_matches(model, name):
            why.append(f"model {named}")
            other_model = True
    mem = gpu_memory(g, snap)
    have = mem.total_bytes
    size = fmt_bytes(have) + (f" ({mem.source})" if mem.kind != "snapshot" else "")
    if need_gb:
        if have is None:
            unsure.append("memory not recorded")
            to_settle.append(settle(Fact.GPU_MEMORY))
        elif mem.derived and abs(_sold_gb(have) - need_gb) <= need_gb * 0.03:
            unsure.append(f"memory {mem.source}: too close to {need_gb:g} GB to tell")
            to_settle.append(settle(Fact.GPU_MEMORY))
        elif _sold_gb(have) < need_gb * 0.99:
            why.append(f"{size} = {_sold_gb(have):.1f} GB < {need_gb:g} GB")
    if why:
        return "fail", ", ".join(why), [], other_model
    if unsure:
        return "unknown", ", ".join(unsure), to_settle, False
    if need_gb and have is not None:
        named += f", {size}"
    return "pass", named, [], False


def _models_seen(topo: Topology, pattern: str | None) -> list[str]:
    """For a failed model rule: the models the lot has, counted, and how the pattern was matched."""
    if pattern is None:
        return []
    counts: dict[str, int] = {}
    for g in topo.snapshot.gpus:
        key = _model_text(g)
        counts[key] = counts.get(key, 0) + 1
    seen = ", ".join(f"{k} ×{n}" for k, n in counts.items()) or "no GPU"
    return [f"models seen: {seen}", f"model {pattern!r}: {MODEL_RULE}"]


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
    desc = (
        f"GPUs pairwise on {_LINK_WORDS[rule.min]}"
        if rule.min in _LINK_WORDS
        else f"GPUs pairwise NVLink or P2P within {rule.min}"
    )
    if rule.steps:
        desc += f" (steps {', '.join(rule.steps)})"
    if len(gpus) < 2:
        return _too_few(req.name, lot, desc, f"applies to no GPU pair: {len(gpus)} GPU(s) in scope", rule.steps)
    findings: list[Finding] = []
    to_settle: list[str] = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            status, text, how = _gpu_pair(lot.topo, a, b, rule.min)
            findings.append(Finding(f"{a}–{b}", status, text))
            if how:
                to_settle.append(how)
    pairs = len(gpus) * (len(gpus) - 1) // 2
    ok = sum(f.status == "pass" for f in findings)
    return tally(req.name, lot.name, desc, findings, to_settle, f"{ok} of {pairs} pairs qualify")


#: The GPU-link minimums of gpu_links (issue 35): NVLink only, XGMI only, or either.
_LINK_WORDS = {"nvlink": "NVLink", "xgmi": "XGMI", "gpu-link": "a GPU link (NVLink or XGMI)"}


def _link_fits(via: str, least: str) -> bool:
    return least == "gpu-link" or (least == "xgmi") == (via == "xgmi")


def _gpu_pair(topo: Topology, a: str, b: str, least: str) -> tuple[Status, str, str | None]:
    """One GPU pair against gpu_links: NVLink usable, else (below ``nvlink``) P2P over a PCIe path
    no worse than ``least``. The status, the evidence, and what would settle an unknown."""
    nv = nvlink(topo, a, b)
    if nv.usable.yes and least in _LINK_WORDS and not _link_fits(nv.via, least):
        return "fail", f"{nv.path} is not {_LINK_WORDS[least]} (gpu_links min: gpu-link takes NVLink or XGMI)", None
    if nv.usable.yes:
        return "pass", (nv.path or f"NV{nv.links}") + origin_note(topo.snapshot, "pairs.nvlink"), None
    if least in _LINK_WORDS:
        if nv.usable.value == "unknown":
            return "unknown", f"NVLink unknown: {'; '.join(nv.usable.reasons)}", nv.usable.settle or settle(Fact.NVLINK)
        return "fail", f"no usable NVLink: {nv.usable.why()}", None
    cls = pcie_path_class(topo, a, b)
    if cls is None:
        return "unknown", "PCIe path unknown", settle(Fact.PATH)
    # Past this point the pair fails on PCIe; where the source cannot say whether NVLink joins it
    # (a static NCCL file, a `topo -p2p` paste), NVLink could still pass it: unknown, never FAIL.
    nv_unknown = nv.usable.value == "unknown"
    if class_rank(cls) > class_rank(least):
        if nv_unknown:
            return "unknown", f"{cls} (beyond {least}); NVLink unknown", nv.usable.settle or settle(Fact.NVLINK)
        return "fail", f"{cls} (beyond {least})", None
    p2p = pcie_p2p(topo, a, b)
    if p2p.no and not p2p.assumed:
        if nv_unknown:
            return "unknown", f"{cls} but {p2p.why()}; NVLink unknown", nv.usable.settle or settle(Fact.NVLINK)
        return "fail", f"{cls} but {p2p.why()}", None
    if p2p.assumed or p2p.value == "unknown":
        missing, how = p2p_unrecorded(topo, a, b)
        return "unknown", f"{cls}, {missing.replace(' by this source', '')}", how
    return "pass", f"{cls}, {p2p.why()}", None


def _gpu_groups(req: Requirement, lot: Lot) -> RuleResult:
    """``groups`` disjoint groups of ``k`` GPUs, each pairwise at ``min``: the best group `topomap
    place` finds, then the best among the GPUs left, and so on (greedy over groups; within a group
    the search proves the best slowest link, so a group that fails means no group of the GPUs left
    qualifies; where the search stopped at its limit before proving even that, UNKNOWN, not FAIL)."""
    rule = req.rule
    assert isinstance(rule, GpuGroupsRule)
    link = "NVLink" if rule.min == "nvlink" else f"NVLink or P2P within {rule.min}"
    desc = f"{rule.groups} × {rule.k} GPUs ({rule.pattern}), each group pairwise on {link}"
    used: set[str] = set()
    findings: list[Finding] = []
    to_settle: list[str] = []
    for n in range(1, rule.groups + 1):
        try:
            placed = place_gpus(lot.topo, rule.k, rule.pattern, exclude=used)
        except PlaceError as err:
            partial = not _facts(lot).knows(Fact.GPU_COUNT) and len(lot.topo.snapshot.gpus) - len(used) < rule.k
            if partial:  # too few GPUs listed, by a source that may list only some
                findings.append(Finding(f"group {n}", "unknown", f"{err}; {_facts(lot).why_not(Fact.GPU_COUNT)}"))
                to_settle.append(_to_settlecount())
            else:
                findings.append(Finding(f"group {n}", "fail", str(err)))
            break
        gids = [g.gid for g in placed.gpus]
        used.update(gids)
        pairs = [_gpu_pair(lot.topo, a, b, rule.min) for i, a in enumerate(gids) for b in gids[i + 1 :]]
        seen = {p[0] for p in pairs}
        status: Status = "fail" if "fail" in seen else "unknown" if "unknown" in seen else "pass"
        worst = next((p for p in pairs if p[0] == status), None)
        text = f"{', '.join(gids)}: slowest {placed.slowest.text if placed.slowest else 'one GPU, no pair'}"
        if worst is not None and status != "pass":
            text += f" ({worst[1]})"
        if status == "fail" and not placed.slowest_proven:  # no proof that a better group does not exist
            status, text = "unknown", f"{text}; {placed.search_note()}"
        findings.append(Finding(f"group {n}", status, text))
        to_settle += [p[2] for p in pairs if p[2]]
        if status == "fail":
            break
    ok = sum(f.status == "pass" for f in findings)
    return tally(req.name, lot.name, desc, findings, to_settle, f"{ok} of {rule.groups} group(s) of {rule.k} qualify")


def _gdr_nic(req: Requirement, lot: Lot) -> RuleResult:
    rule = req.rule
    assert isinstance(rule, GdrNicRule)
    desc = f"every GPU has a GPUDirect-capable NIC within {rule.max_path}"
    if rule.min_gbit_s:
        desc += f" at ≥ {rule.min_gbit_s:g} Gb/s"
    gpus = _gpu_set(lot, rule.steps)
    if not gpus:
        return _too_few(req.name, lot, desc, "applies to no GPU", rule.steps)
    facts = _facts(lot)
    findings: list[Finding] = []
    to_settle: list[str] = []
    for gid in gpus:
        status, text, how = _gdr_gpu(lot.topo, gid, rule, facts)
        findings.append(Finding(gid, status, text))
        if how:
            to_settle.append(how)
    ok = sum(f.status == "pass" for f in findings)
    return tally(req.name, lot.name, desc, findings, to_settle, f"{ok} of {len(gpus)} GPUs qualify")


def _gdr_gpu(topo: Topology, gid: str, rule: GdrNicRule, facts: SourceFacts) -> tuple[Status, str, str | None]:
    """One GPU against gdr_nic: its nearest usable NIC, how near, GPUDirect, line rate. A source that
    cannot list NICs (`topo -p2p`, `nvlink -s`) leaves it unknown."""
    alive = gpu_usable(topo, gid)
    if not alive.yes:
        return "fail", alive.why(), None
    if not facts.knows(Fact.NICS):
        return "unknown", f"no NIC listed: {facts.why_not(Fact.NICS)}", settle(Fact.NICS)
    choice = nearest_nic(topo, gid)
    nic = choice.nic
    if nic is None:
        return "fail", choice.gdr.why(), None
    if choice.path is None:  # no NIC of the host can do GPUDirect RDMA: a fail whatever the paths
        status: Status = "fail" if choice.gdr.no else "unknown"
        return status, choice.gdr.why(), None if choice.gdr.no else choice.gdr.settle or settle(Fact.NICS)
    if class_rank(choice.path) > class_rank(rule.max_path):
        return "fail", f"nearest usable NIC {nic.name} is {choice.path}", None
    if choice.gdr.no:
        return "fail", choice.gdr.why(), None
    if rule.min_gbit_s and nic.speed_gbit_s is not None:
        line_rate = nic_speed(nic, topo.snapshot).bandwidth()  # spec, declared or catalogue (model.filled_facts)
        if meets(line_rate, nic_bandwidth_gbps(rule.min_gbit_s)).verdict == "better-a":  # short of the minimum
            return "fail", f"NIC {nic.name} ({choice.path}) runs at {nic_speed(nic, topo.snapshot).text()}", None
    if choice.gdr.value == "unknown":  # the NIC's own ability (model.facts.nic_gdr), never assumed (issue 30)
        able = nic_gdr(nic)  # said per NIC, so GPUs that share one share the line
        return "unknown", f"{nic.name} {choice.path}, GPUDirect RDMA unknown: {'; '.join(able.reasons)}", able.settle
    if rule.min_gbit_s and nic.speed_gbit_s is None:
        return "unknown", f"NIC {nic.name} ({choice.path}) speed not recorded", settle(Fact.NIC_SPEED)
    return "pass", f"{nic.name} {choice.path}" + origin_note(topo.snapshot, "nics.gdr"), None


def _same_numa(req: Requirement, lot: Lot) -> RuleResult:
    """All the GPUs of the listed steps, together, on one NUMA node (the node whose memory serves
    each GPU, ``evidence.memory_node``). One step alone: its GPUs share a node; for steps apart,
    write one rule each."""
    rule = req.rule
    assert isinstance(rule, SameNumaRule)
    desc = f"GPUs of step(s) {', '.join(rule.steps)} share one NUMA node"
    placed = [(step, gid) for step in rule.steps for gid in lot.step_gpus.get(step, [])]
    if not placed:
        why = "applies to no GPU: the steps place nothing on this lot's GPUs"
        return RuleResult("same_numa", lot.name, "fail", desc, [why], why)
    nodes = {(step, gid): _numa_label(lot.topo, gid) for step, gid in placed}
    missing = [gid for (_, gid), node in nodes.items() if node is None]
    known = {node for node in nodes.values() if node is not None}

    def lines(status: Status) -> list[Finding]:
        return [
            Finding(step, status, f"{gid} on {node or 'an unknown NUMA node'}") for (step, gid), node in nodes.items()
        ]

    if len(known) > 1:  # two known nodes already differ, whatever the unknown ones are
        spread = f"on {len(known)} NUMA nodes: {', '.join(sorted(known))}"
        return tally(req.name, lot.name, desc, lines("fail"), [], spread)
    if missing:
        why = f"NUMA node of {', '.join(dict.fromkeys(missing))} not recorded by this source"
        if not _facts(lot).knows(Fact.NUMA):
            why += f" ({_facts(lot).why_not(Fact.NUMA)})"
        return tally(
            req.name, lot.name, desc, [*lines("pass"), Finding(None, "unknown", why)], [settle(Fact.NUMA)], why
        )
    return tally(req.name, lot.name, desc, lines("pass"), [], f"all {len(placed)} GPU(s) on {known.pop()}")


def _numa_label(topo: Topology, gid: str) -> str | None:
    """The NUMA node whose memory serves a GPU, in words (``NUMA 0``); None when the source records none."""
    node = memory_node(topo, gid) if topo.gpu(gid) is not None else None
    known = re.fullmatch(r"numa(\d+)", node or "")  # numa-unknown…: a node the source did not record
    return f"NUMA {known.group(1)}" if known else None


def _fabric(req: Requirement, lot: Lot) -> RuleResult:
    desc = "NVLink fabric ready (state completed, clique set)"
    gpus = lot.topo.snapshot.gpus
    if not gpus:
        return _too_few("fabric_ready", lot, desc, "applies to no GPU", None)
    findings: list[Finding] = []
    to_settle: list[str] = []
    for g in gpus:
        ans = fabric_ready(lot.topo.snapshot, g)
        status: Status = "pass" if ans.yes else "fail" if ans.no else "unknown"
        findings.append(Finding(f"gpu{g.index}", status, ans.why()))
        if status == "unknown":
            to_settle.append(ans.settle or settle(Fact.FABRIC))
    ok = sum(f.status == "pass" for f in findings)
    return tally(req.name, lot.name, desc, findings, to_settle, f"{ok} of {len(gpus)} GPU(s) ready")


def _facts(lot: Lot) -> SourceFacts:
    """What the lot's source carries (the one declaration every rule asks)."""
    return source_facts(lot.topo.snapshot)


def _to_settlecount() -> str:
    return settle(Fact.GPU_COUNT)


def _too_few(rule: str, lot: Lot, desc: str, why: str, steps: list[str] | None) -> RuleResult:
    """A rule with too few GPUs in scope: FAIL, unless the source may list only some of the host's
    GPUs (`nvlink --status -i 0`) and the rule is about the host's GPUs rather than a flow's steps."""
    facts = _facts(lot)
    if steps is None and not lot.step_gpus and not facts.knows(Fact.GPU_COUNT):
        text = f"{why}; {facts.why_not(Fact.GPU_COUNT)}"
        return RuleResult(rule, lot.name, "unknown", desc, [text], text, [_to_settlecount()])
    return RuleResult(rule, lot.name, "fail", desc, [why], why)


#: The evaluator of each rule asked once per lot.
LOT_RULES: dict[str, Callable[[Requirement, Lot], RuleResult]] = {
    "gpus": _gpus,
    "driver": _versions,
    "cuda": _versions,
    "gpu_links": _gpu_links,
    "gpu_groups": _gpu_groups,
    "gdr_nic": _gdr_nic,
    "same_numa": _same_numa,
    "fabric_ready": _fabric,
    "collective_busbw": collective_busbw,
}
