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
      - cluster: {every_host_passes: true, one_nvlink_clique: true, rails_consistent: true}

A rule that the snapshot cannot answer is UNKNOWN (exit status 3), which does not pass: a rental
is not gated on a guess; each UNKNOWN names the command whose output would answer it. A rule that
applies to nothing (gpu_links on a one-GPU lot) fails. The rules about a lot's machine are in
``lot_rules``, those about the flow in ``flow_rules``; reading them is ``requirements``.
"""

from __future__ import annotations

from dataclasses import replace

from topomap.base.errors import TopomapError
from topomap.check.cluster_rules import cluster_rules
from topomap.check.flow_rules import arrows_rule, plan_total_rule
from topomap.check.lot_rules import LOT_RULES
from topomap.check.names import check_names
from topomap.check.requirements import FLOW_RULES, Requirement
from topomap.check.results import CheckResult, Lot, RuleResult
from topomap.flow.mapping import FlowMap
from topomap.graph import Topology


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
        if req.name == "cluster":
            continue  # asked once over every lot, after the others (check/cluster_rules.py)
        if req.name in ("arrow_bandwidth", "arrow_time"):
            assert fmap is not None
            results.append(arrows_rule(req, fmap))
            continue
        if req.name == "plan_total":
            assert fmap is not None
            bound: dict[str, Topology | None] = dict(topos) if topos is not None else {}
            if topos is None:
                bound.update({lot.name: lot.topo for lot in lots})
            results.append(plan_total_rule(req, fmap, bound))
            continue
        targets = [lot for lot in lots if req.rule.host in (None, lot.name)]  # check_names: the host is a lot
        results += _per_lot(req, targets)
    others = list(results)
    for req in reqs:
        if req.name == "cluster":
            results += cluster_rules(req, lots, others)
    groups = {lot.group.label: lot.group for lot in lots if lot.group is not None}
    return CheckResult(results, list(groups.values()))


def _per_lot(req: Requirement, lots: list[Lot]) -> list[RuleResult]:
    """The rule on each lot; once per group of alike hosts of a merged snapshot (topomap.cluster.groups:
    every rule answers them alike), the result named for each host of the group."""
    out: list[RuleResult] = []
    seen: dict[str, RuleResult] = {}
    for lot in lots:
        if lot.group is None or lot.step_gpus:
            out.append(LOT_RULES[req.name](req, lot))
            continue
        first = seen.get(lot.group.label)
        if first is None:
            first = seen[lot.group.label] = LOT_RULES[req.name](req, lot)
            out.append(first)
        else:
            out.append(replace(first, lot=lot.name))
    return out
