"""The `cluster` rule: gates on the whole cluster, asked once over every lot (the hosts of a merged
snapshot, or every --probe), after the per-host rules::

    requirements:
      - gpus: {min_count: 8}
      - cluster: {every_host_passes: true, one_nvlink_clique: true, rails_consistent: true}

``every_host_passes``: every host passes each other rule of the file and has no error finding;
``one_nvlink_clique``: every host's GPUs are in one NVLink domain (cluster UUID, clique id);
``rails_consistent``: rail *i* (GPU *i*'s nearest RDMA NIC) is the same NIC on every host. The facts
are topomap.cluster's (one analysis, as `topomap cluster` shows it). A host whose source cannot
carry a fact is UNKNOWN for the option that needs it, never FAIL.
"""

from __future__ import annotations

from collections.abc import Hashable

from topomap.base.errors import TopomapError
from topomap.check.requirements import ClusterRule, Requirement
from topomap.check.results import Finding, Lot, RuleResult, Status, tally
from topomap.cluster import ClusterReport, analyse_hosts
from topomap.model.facts import SETTLE

LOT = "cluster"
OPTIONS = ("every_host_passes", "one_nvlink_clique", "rails_consistent")


def cluster_rules(req: Requirement, lots: list[Lot], others: list[RuleResult]) -> list[RuleResult]:
    """One result per option set to true (``others``: the results of the file's other rules)."""
    rule = req.rule
    assert isinstance(rule, ClusterRule)
    chosen = [o for o in OPTIONS if getattr(rule, o)]
    if not chosen:
        raise TopomapError(f"{req.where()}: rule cluster sets no option to true", hint=f"options: {', '.join(OPTIONS)}")
    if rule.host is not None:
        raise TopomapError(f"{req.where('host')}: rule cluster is about every host", hint="remove `host:`")
    alike: list[Hashable] = [("group", lot.group.label) if lot.group else ("lot", lot.name) for lot in lots]
    report = analyse_hosts([(lot.name, lot.topo.snapshot) for lot in lots], f"{len(lots)} lots", alike)
    out = []
    for option in chosen:
        if option == "every_host_passes":
            out.append(_every_host_passes(lots, others))
        elif option == "one_nvlink_clique":
            out.append(_one_clique(report))
        else:
            out.append(_rails(report))
    return out


def _every_host_passes(lots: list[Lot], others: list[RuleResult]) -> RuleResult:
    desc = "every host passes the file's other rules and has no error finding"
    findings = []
    by_lot: dict[str, list[RuleResult]] = {}
    for r in others:
        by_lot.setdefault(r.lot, []).append(r)
    for lot in lots:
        mine = by_lot.get(lot.name, [])
        failed = [r.rule for r in mine if r.status == "fail"]
        failed += [f"error finding {f.kind} {f.subject}" for f in lot.topo.snapshot.findings if f.severity == "error"]
        unknown = [r.rule for r in mine if r.status == "unknown"]
        if failed:
            findings.append(Finding(lot.name, "fail", f"fails {', '.join(failed)}"))
        elif unknown:
            findings.append(Finding(lot.name, "unknown", f"cannot be told: {', '.join(unknown)}"))
        else:
            findings.append(Finding(lot.name, "pass", f"passes {len(mine)} rule(s)"))
    settle = sorted({c for r in others if r.status == "unknown" for c in r.settle})
    ok = sum(f.status == "pass" for f in findings)
    return tally("cluster", LOT, desc, findings, settle, f"{ok} of {len(lots)} host(s) pass")


def _one_clique(report: ClusterReport) -> RuleResult:
    desc = "every host's GPUs in one NVLink clique"
    f = report.fabric
    status: Status = "pass" if f.one_clique else "unknown" if f.one_clique is None else "fail"
    evidence = [f.why]
    evidence += [f"clique {c.cluster_uuid}/{c.clique_id}: {', '.join(c.hosts)}" for c in f.cliques]
    evidence += [f"{h}: fabric not ready or not supported" for h in f.not_ready]
    evidence += [f"{h}: fabric not recorded by the source" for h in f.unknown]
    settle = [SETTLE["fabric"]] if status == "unknown" else []
    return RuleResult("cluster", LOT, status, desc, evidence, f.why, settle)


def _rails(report: ClusterReport) -> RuleResult:
    desc = "rail i (GPU i's nearest RDMA NIC) the same NIC on every host"
    rails = report.rails
    status: Status = "pass" if rails.consistent else "unknown" if rails.consistent is None else "fail"
    fact = report.fact("rails")
    odd = [f"{h}: {o.differs}" for o in fact.others for h in o.hosts]
    if fact.common is None and fact.others:  # no layout held by most hosts: blame no one
        head = f"no rails layout is held by most of the {fact.known_hosts} host(s)"
    else:
        head = f"{fact.common_hosts} of {fact.known_hosts} host(s): {fact.common or 'no rails known'}"
    evidence = [head, *odd]
    evidence += [f"{h}: rails not known (no RDMA NIC or GPU↔NIC path in the source)" for h in rails.unknown]
    if status == "fail" and fact.common is None:
        summary = f"the {fact.known_hosts} host(s) have {len(fact.others)} different rails layouts, none held by most"
    elif status == "fail":
        summary = f"{sum(len(o.hosts) for o in fact.others)} host(s) differ: " + ", ".join(
            h for o in fact.others for h in o.hosts
        )
    elif status == "unknown":
        summary = f"rails unknown on {len(rails.unknown)} host(s)"
    else:
        summary = f"the same on all {fact.known_hosts} host(s)"
    settle = [SETTLE["nic"]] if status == "unknown" else []
    return RuleResult("cluster", LOT, status, desc, evidence, summary, settle)
