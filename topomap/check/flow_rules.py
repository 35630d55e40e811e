"""The rules about a flow: every matching arrow fast enough (``arrow_bandwidth``) or quick enough
(``arrow_time``), and the flow's work done in time by the best plan (``plan_total``)."""

from __future__ import annotations

from topomap.base.units import fmt_span
from topomap.check.requirements import ArrowBandwidthRule, ArrowTimeRule, PlanTotalRule, Requirement
from topomap.check.results import Finding, RuleResult, tally
from topomap.flow.mapping import FlowMap, MappedArrow
from topomap.graph import Topology
from topomap.model.ranking import meets
from topomap.model.source_facts import Fact, settle
from topomap.plan import plan_flow


def _bw(a: MappedArrow) -> str:
    return a.bandwidth().text()


def _matching(rule: ArrowBandwidthRule | ArrowTimeRule, fmap: FlowMap) -> list[MappedArrow]:
    return [
        a
        for a in fmap.arrows
        if a.medium != "local"
        and (rule.medium is None or a.medium == rule.medium)
        and (rule.from_step is None or a.src_step == rule.from_step)
        and (rule.to_step is None or a.dst_step == rule.to_step)
        and (rule.host is None or rule.host in (a.src_place.host, a.dst_place.host))
    ]


def _bandwidth(rule: ArrowBandwidthRule, a: MappedArrow) -> tuple[Finding, str | None]:
    """One arrow against arrow_bandwidth: its figure set against the rule's, ranked only where its
    range lies wholly above or below it (:func:`~topomap.model.ranking.meets`); a range
    that spans the threshold, or a figure that is not the machine's, is UNKNOWN with what settles it."""
    name = f"{a.src}→{a.dst}"
    if a.medium == "unknown":
        return Finding(name, "unknown", f"medium unknown ({'; '.join(a.notes[:1])})"), a.settle or settle(Fact.NVLINK)
    if a.bandwidth_gbps is None:
        return Finding(name, "unknown", f"bandwidth unknown ({a.medium})"), None
    cmp = meets(a.bandwidth(), rule.min_gbps)
    if cmp.verdict == "better-b":
        return Finding(name, "pass", _bw(a)), None
    if cmp.verdict == "better-a":
        whole = f" ({a.bandwidth().range_text()})" if a.lower_bound else ""
        return Finding(name, "fail", f"{_bw(a)}{whole} < {rule.min_gbps:g} over {a.medium}"), None
    text = f"{_bw(a)} ({a.bandwidth().range_text()}), which does not settle ≥ {rule.min_gbps:g}"
    return Finding(name, "unknown", text), cmp.settle or settle(Fact.NVLINK_LINKS)


def _time(rule: ArrowTimeRule, a: MappedArrow) -> tuple[Finding, str | None]:
    """One arrow against arrow_time: the bandwidth the limit needs (volume / seconds) set against the
    arrow's figure (:func:`~topomap.model.ranking.meets`), so a range decides only where
    all of it is fast enough or too slow."""
    name = f"{a.src}→{a.dst}"
    if a.seconds is None or a.volume_bytes is None or not a.bandwidth_gbps:
        return Finding(name, "unknown", "time unknown (no volume or bandwidth)"), None
    cmp = meets(a.bandwidth(), a.volume_bytes / rule.max_seconds / 1e9)
    if cmp.verdict == "better-b":
        return Finding(name, "pass", f"{a.seconds:.3g} s" + (" at most" if a.lower_bound else "")), None
    if cmp.verdict == "better-a":
        return Finding(name, "fail", f"{_seconds(a)} > {rule.max_seconds:g} s over {a.medium}"), None
    text = f"{_seconds(a)} (the bandwidth is {a.bandwidth().range_text()})"
    return Finding(name, "unknown", text), cmp.settle or settle(Fact.NVLINK_LINKS)


def _seconds(a: MappedArrow) -> str:
    """The arrow's time; "at most" where its figure is a lower bound (a range: "from … to …")."""
    high = a.bandwidth().high
    if not a.lower_bound or a.volume_bytes is None:
        return f"{a.seconds:.3g} s"
    if high:
        return f"{a.volume_bytes / (high * 1e9):.3g} to {a.seconds:.3g} s"
    return f"at most {a.seconds:.3g} s"


def arrows_rule(req: Requirement, fmap: FlowMap) -> RuleResult:
    """arrow_bandwidth / arrow_time over the flow's arrows that match the rule's medium, steps, host."""
    rule = req.rule
    assert isinstance(rule, (ArrowBandwidthRule, ArrowTimeRule))
    arrows = _matching(rule, fmap)
    lot = rule.host or fmap.flow.name
    where = f" to or from {rule.host}" if rule.host else ""
    if isinstance(rule, ArrowBandwidthRule):
        desc = f"every {rule.medium or ''} arrow{where} ≥ {rule.min_gbps:g} GB/s".replace("  ", " ")
        judged = [_bandwidth(rule, a) for a in arrows]
    else:
        desc = f"every {rule.medium or ''} arrow{where} done in ≤ {rule.max_seconds:g} s".replace("  ", " ")
        judged = [_time(rule, a) for a in arrows]
    if not arrows:
        why = "applies to nothing: no arrow of the flow matches this rule"
        return RuleResult(req.name, lot, "fail", desc, [why], why)
    findings = [f for f, _ in judged]
    to_settle = [s for _, s in judged if s is not None]
    ok = sum(f.status == "pass" for f in findings)
    return tally(req.name, lot, desc, findings, to_settle, f"{ok} of {len(arrows)} arrows qualify")


def plan_total_rule(req: Requirement, fmap: FlowMap, topos: dict[str, Topology | None]) -> RuleResult:
    """The plan's total (a calculation from the flow's work block and the mapped arrows) against a limit."""
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
        return RuleResult(req.name, plan.lot, "unknown", desc, [*evidence, *unsure], summary, [settle(Fact.GPU_MEMORY)])
    return RuleResult(req.name, plan.lot, "pass", desc, evidence, f"best plan {what} ≤ {rule.max_minutes:g} min")
