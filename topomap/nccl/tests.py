"""nccl-tests results against what the lot should reach: per run the measured peak (as printed), the
expected figure — the same one ``topomap nccl LOT --perf`` gives for that lot, never read from the measured
rows — a verdict in the README's bands, and for a run that falls short its likely causes, ranked."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from topomap.collective.consts import ABOVE, BELOW, FAR_BELOW
from topomap.collective.expect import COLLECTIVES, Expectation, expect
from topomap.collective.lot import LotPlan, plan
from topomap.importers.nccl_tests import Run, TestsFile
from topomap.importers.nccl_tests_id import identify, table_ranks
from topomap.model.snapshot import Snapshot, hosts_of
from topomap.nccl.logdata import NcclLog
from topomap.nccl.shortfall import Cause, causes, signals
from topomap.nccl.testslot import lot_from_results
from topomap.transport.rules import NcclEnv, parse_env

_ENV_IN_COMMAND = re.compile(
    r"(?:^|\s)(?:-x\s+|--env\s+|export\s+)?(?P<k>(?:NCCL|FI)_[A-Z0-9_]+)=(?P<v>\"[^\"]*\"|'[^']*'|\S+)"
)


@dataclass(frozen=True)
class Judged:
    """One run: what it measured and what the lot should reach."""

    index: int
    line: int
    collective: str | None
    ranks: int | None
    hosts: int | None
    gpus_per_host: int | None
    max_bytes: int | None
    measured: float
    measured_text: str
    at_bytes: int
    half: str
    expected: Expectation | None
    verdict: str
    why: str
    causes: tuple[Cause, ...] = ()
    notes: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    nccl_version: str | None = None
    command: str | None = None

    def to_json(self) -> dict[str, Any]:
        e = self.expected
        return {
            "run": self.index,
            "line": self.line,
            "collective": self.collective,
            "ranks": self.ranks,
            "hosts": self.hosts,
            "gpus_per_host": self.gpus_per_host,
            "max_bytes": self.max_bytes,
            "measured_busbw_gbps": self.measured,
            "measured_busbw_text": self.measured_text,
            "measured_at_bytes": self.at_bytes,
            "measured_in": self.half,
            "expected_busbw_gbps": None if e is None else e.to_json()["busbw_gbps"],
            "expected": None if e is None else e.to_json(),
            "verdict": self.verdict,
            "why": self.why,
            "causes": [c.to_json() for c in self.causes],
            "nccl_version": self.nccl_version,
            "command": self.command,
            "notes": list(self.notes),
            "skipped": list(self.skipped),
        }


@dataclass
class TestsReport:
    origin: str
    lot: str
    results: list[Judged]
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "results_file": self.origin,
            "lot": self.lot,
            "results": [r.to_json() for r in self.results],
            "notes": self.notes,
            "skipped": self.skipped,
        }


def verdict(measured: float, e: Expectation | None) -> tuple[str, str]:
    """The README's bands: far-below under 0.7 of expected, below under 0.85, above over 1.15 (the model may
    be off), as-expected between; unknown without a figure — but a run under the range's low end, or over
    its high end, is told by the range."""
    if e is None:
        return "unknown", "no expectation: the program, or the machine it ran on, is not known"
    if e.busbw_gbps is None:
        if e.low_gbps is not None and measured < FAR_BELOW * e.low_gbps:
            return (
                "far-below",
                f"under {FAR_BELOW:.0%} of the lowest figure the unknown facts allow ({e.low_gbps:.0f} GB/s)",
            )
        if e.low_gbps is not None and measured < BELOW * e.low_gbps:
            return "below", f"under {BELOW:.0%} of the lowest figure the unknown facts allow ({e.low_gbps:.0f} GB/s)"
        if e.high_gbps is not None and measured > ABOVE * e.high_gbps:
            return (
                "above",
                f"over {ABOVE:.0%} of the highest figure the unknown facts allow: the lot may not be what it says",
            )
        return "unknown", "the figure needs facts the lot does not record: " + "; ".join(e.missing)
    ratio = measured / e.busbw_gbps
    if ratio < FAR_BELOW:
        return "far-below", f"{ratio:.0%} of expected (under {FAR_BELOW:.0%})"
    if ratio < BELOW:
        return "below", f"{ratio:.0%} of expected (under {BELOW:.0%})"
    if ratio > ABOVE:
        return "above", f"{ratio:.0%} of expected (over {ABOVE:.0%}): " + _above_why(e)
    return "as-expected", f"{ratio:.0%} of expected"


def _above_why(e: Expectation) -> str:
    if e.hosts == 2 and e.collective == "all_reduce":
        return (
            "on two nodes NCCL's tree can carry more than the ring's figure; or the lot's NICs are faster than recorded"
        )
    if e.algorithm and "NVLS" in e.algorithm:
        return "NVLS may reach more on this part than the model's Hopper-based factor"
    return "the model's efficiency for this tier may be low for this machine, or the lot is not what it records"


def env_of_command(command: str | None) -> list[str]:
    """``NCCL_X=Y`` (and ``FI_PROVIDER``) a command line sets: ``mpirun -x NCCL_ALGO=Ring``, ``NCCL_ALGO=Ring
    ./all_reduce_perf``."""
    if not command:
        return []
    return [f"{m['k']}={m['v'].strip(chr(34) + chr(39))}" for m in _ENV_IN_COMMAND.finditer(command)]


def judge(
    tests: TestsFile,
    lot: Snapshot | None,
    env: NcclEnv,
    version: str | None,
    log: tuple[NcclLog | None, str | None] = (None, None),
) -> TestsReport:
    """Every run of ``tests`` against ``lot`` (None: the lot the results' rank table implies)."""
    sig = signals(*log)
    report = TestsReport(tests.origin, lot.source.origin if lot is not None else "the results' rank table", [])
    for k, run in enumerate(tests.runs, 1):
        report.results.append(_judge_run(k, run, tests.origin, lot, env, version, sig))
    report.skipped = list(tests.skipped)
    if tests.info_lines:
        report.notes.append(f"{tests.info_lines} NCCL log line(s) between the results were not read as results")
    return report


def _judge_run(
    k: int, run: Run, origin: str, lot: Snapshot | None, env: NcclEnv, version: str | None, sig: Any
) -> Judged:
    ident = identify(run)
    peak = run.peak()
    assert peak is not None  # parse_nccl_tests keeps runs with rows only
    value, text, row, half = peak
    run_env = parse_env(env_of_command(run.command), None)
    run_env = parse_env(list(env.set_vars()), run_env)  # --env overrides the command's
    nversion = version or run.nccl_version
    partial = lot is None and bool(run.ranks) and table_ranks(run) is None  # an excerpt's few rank lines
    snap = lot if lot is not None else None if partial else lot_from_results(run, origin)
    notes: list[str] = [] if ident.how == "the program named in the output" else [f"program: {ident.how}"]
    expected: Expectation | None = None
    p: LotPlan | None = None
    if snap is not None and ident.program in COLLECTIVES:
        p, more = _plan_for(snap, run, lot is not None, nversion, run_env)
        notes += more
        expected = expect(p, ident.program)
    elif ident.program not in COLLECTIVES and ident.program is not None:
        notes.append(f"{ident.program}_perf: no expectation modelled for it")
    elif snap is None and partial:
        listed = len({r.rank for r in run.ranks})
        notes.append(
            f"the rank table lists {listed} of the run's ranks and no lot is given: the hosts and GPUs are not known "
            "(give the lot: topomap nccl --tests FILE LOT)"
        )
    elif snap is None:
        notes.append("no rank table and no lot: the machine is not known (give the lot: topomap nccl --tests FILE LOT)")
    v, why = verdict(value, expected)
    found: tuple[Cause, ...] = ()
    if v in ("below", "far-below") and expected is not None and snap is not None and p is not None:
        found = tuple(causes(snap, p, expected, run, value, sig, run_env))
    hosts = p.hosts if p is not None else None if partial else len(run.hosts) or None
    per_host = p.gpus_per_host if p is not None else None
    return Judged(
        k, run.first_line, ident.program, ident.ranks, hosts, per_host, run.max_bytes, value, text, row.size_bytes,
        half, expected, v, why, found, tuple(notes), tuple(run.skipped), nversion, run.command,
    )  # fmt: skip


def _plan_for(snap: Snapshot, run: Run, given: bool, version: str | None, env: NcclEnv) -> tuple[LotPlan, list[str]]:
    """The job the run was: on a given one-host lot, as many hosts as the rank table names, with the CUDA
    devices the first host's ranks used; on the results' own lot, as it is."""
    notes: list[str] = []
    if not given:
        return plan(snap, version=version, env=env), notes
    members = hosts_of(snap)
    whole = table_ranks(run) is not None  # an excerpt's few rank lines say nothing of the rest
    devices = sorted({r.device for r in run.ranks if whole and r.host == run.ranks[0].host})
    indexes = _indexes(members[0], devices) if devices else None
    hosts = len(run.hosts) if whole and len(members) == 1 and len(run.hosts) > 1 else None
    if hosts is not None:
        notes.append(f"the lot is one host; the results ran on {hosts}: {hosts} identical hosts of it")
    ranks = identify(run).ranks
    per_host = len([g for g in members[0].gpus if not g.lost])
    if not whole and len(members) == 1 and ranks and per_host and ranks > per_host and ranks % per_host == 0:
        hosts = ranks // per_host
        notes.append(
            f"no rank table: {ranks} ranks (busbw/algbw) on hosts of {per_host} GPUs: {hosts} hosts of the lot"
        )
    elif not whole and len(members) == 1:
        notes.append("no rank table: assumed one host of the lot, every GPU")
    return plan(snap, hosts=hosts, gpu_indexes=indexes, version=version, env=env), notes


def _indexes(host: Snapshot, devices: list[int]) -> list[int] | None:
    """The snapshot GPUs of the CUDA devices a run used: by CUDA ordinal, else by index."""
    by_cuda = {g.cuda_ordinal: g.index for g in host.gpus if g.cuda_ordinal is not None}
    out = [by_cuda.get(d, d) for d in devices]
    known = {g.index for g in host.gpus}
    return out if all(i in known for i in out) else None
