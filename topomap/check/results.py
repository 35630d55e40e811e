"""What check decides, as typed records: one finding per subject (a GPU, a GPU pair, an arrow), one
result per rule and lot, the verdict over all rules; and the lots a rule is asked about.
``CheckResult.to_json()`` is the one place the JSON of ``topomap check --json`` (and the HTML
report's rules) is made: msgspec encodes the report structs, whose field order is the contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from topomap.cluster.groups import HostGroup, group_hosts
from topomap.flow.spec import Flow
from topomap.graph import Topology, alike_topology, build
from topomap.model.snapshot import Snapshot, hosts_of

Status = Literal["pass", "fail", "unknown"]
Verdict = Literal["pass", "fail", "unknown"]
#: Exit status of `topomap check` per verdict.
EXIT_STATUS: dict[Verdict, int] = {"pass": 0, "fail": 1, "unknown": 3}


class Finding(msgspec.Struct, frozen=True):
    """One subject's answer under a rule: ``gpu0–gpu1`` pass ``NV18``. ``subject`` None: a line
    about the rule as a whole (``NUMA node of gpu0 not recorded by this source``)."""

    subject: str | None
    status: Status
    text: str

    @property
    def line(self) -> str:
        """As the evidence lists it: ``gpu0–gpu1: NV18``."""
        return f"{self.subject}: {self.text}" if self.subject is not None else self.text


class RuleReport(msgspec.Struct):
    """One rule on one lot as --json writes it."""

    rule: str
    lot: str
    status: Status
    description: str
    summary: str
    evidence: list[str]
    settle: list[str]


class CheckReport(msgspec.Struct):
    """``topomap check --json``."""

    verdict: Verdict
    summary: str
    rules: list[RuleReport]


@dataclass(frozen=True)
class RuleResult:
    rule: str
    lot: str
    status: Status
    description: str
    evidence: list[str] = field(default_factory=list)  # complete; views may shorten, JSON never does
    summary: str = ""  # the deciding fact in one line: "4 GPUs < 8"
    settle: list[str] = field(default_factory=list)  # for UNKNOWN: commands whose output would answer it
    findings: list[Finding] = field(default_factory=list)  # per subject, typed (the evidence's lines)

    def report(self) -> RuleReport:
        return RuleReport(self.rule, self.lot, self.status, self.description, self.summary, self.evidence, self.settle)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self.report())
        return out


@dataclass(frozen=True)
class CheckResult:
    results: list[RuleResult]
    # The lots of a merged snapshot in groups of alike hosts (topomap.cluster.groups), the largest
    # first: every rule's result is the same for the hosts of one group (issue 34). Empty otherwise.
    groups: list[HostGroup] = field(default_factory=list)

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

    def report(self) -> CheckReport:
        return CheckReport(self.status, self.verdict(), [r.report() for r in self.results])

    def to_json(self) -> dict[str, Any]:
        """``verdict``, ``summary``, ``rules`` (one per rule and lot: every host of a cluster), and for
        a merged snapshot's hosts ``groups``: its groups of alike hosts (label, hosts, first,
        summary, differs), whose hosts every rule answers alike."""
        out: dict[str, Any] = msgspec.to_builtins(self.report())
        if self.groups:
            out["groups"] = [g.to_json() for g in self.groups]
        return out


def tally(
    rule: str,
    lot: str,
    desc: str,
    findings: list[Finding],
    settle: list[str],
    counted: str,
    extra: tuple[str, ...] = (),
) -> RuleResult:
    """FAIL when anything fails, else UNKNOWN when anything cannot be told, else PASS; the evidence
    is the count (and ``extra`` lines), then failures, unknowns and what qualifies — all of it."""
    by: dict[Status, list[str]] = {"fail": [], "unknown": [], "pass": []}
    for f in findings:
        by[f.status].append(f.line)
    bad, unknown = by["fail"], by["unknown"]
    status: Status = "fail" if bad else "unknown" if unknown else "pass"
    summary = counted
    if len(bad) == 1:
        summary = bad[0]
    elif not bad and len(unknown) == 1:
        summary = unknown[0]
    evidence = [counted, *extra, *bad, *unknown, *by["pass"]]
    return RuleResult(rule, lot, status, desc, evidence, summary, sorted(set(settle)) if unknown else [], findings)


# --- lots ----------------------------------------------------------------------------------------


@dataclass
class Lot:
    """One machine to check: its name (flow host or file), topology, and the flow's GPUs on it."""

    name: str
    topo: Topology
    step_gpus: dict[str, list[str]] = field(default_factory=dict)  # step → gpu ids on this lot
    group: HostGroup | None = None  # a merged snapshot's host: its group of alike hosts (one answer each)


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


def snapshot_lots(named: list[tuple[str, Snapshot]]) -> list[Lot]:
    """One lot per snapshot (``--probe NAME=FILE``), or per host of a merged cluster, named by its host;
    a merged snapshot's hosts know their group of alike hosts (and alike hosts share one graph)."""
    lots: list[Lot] = []
    for name, snap in named:
        hosts = hosts_of(snap)
        if len(hosts) == 1:
            lots.append(Lot(name=name, topo=build(hosts[0])))
            continue
        grouping = group_hosts(snap)
        firsts = {g.label: build(g.first) for g in grouping.groups}
        for h, host in zip(hosts, grouping.names):
            group = grouping.group_of(host)
            first = firsts[group.label]
            topo = first if h is group.first else alike_topology(first, h)
            lots.append(Lot(name=h.host.hostname or name, topo=topo, group=group))
    return lots
