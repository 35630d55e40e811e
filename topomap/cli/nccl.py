"""`topomap nccl`: NCCL's transport per rank pair, predicted, and read from a log."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from topomap.base.errors import LogWithoutDump, TopomapError

if TYPE_CHECKING:
    from topomap.model.snapshot import Snapshot
    from topomap.nccl.predict import NcclReport
    from topomap.transport.rules import NcclEnv
from topomap.cli.nccl_perf import CollectiveOpt, CurveOpt, HostsOpt, PerfOpt, SizesOpt, TestsOpt
from topomap.cli.wiring import (
    HostOpt,
    JsonOpt,
    LotTypeOpt,
    _console,
    _guard,
    _load,
    _print_json,
    app,
)
from topomap.files.kind import file_kind

#: the options of `topomap nccl` (module level so that the command stays one readable function)
SnapArg = Annotated[str | None, typer.Argument(help="Snapshot (or raw nvidia-smi/NCCL/hwloc file) of the machine.")]
LogOpt = Annotated[
    str | None,
    typer.Option(
        "--log",
        help="An NCCL_DEBUG=INFO log (NCCL_DEBUG_SUBSYS=INIT,GRAPH adds NCCL's topology): what NCCL did, "
        "against the prediction.",
    ),
]
RanksOpt = Annotated[
    str | None,
    typer.Option(
        "--ranks",
        help="per-gpu (one process per GPU, the default), one-process, containers (one per rank), or GPU "
        "indexes 0,1,2,3[:MODE]. A --log with channel lines says it instead.",
    ),
]
VersionOpt = Annotated[
    str | None,
    typer.Option(
        "--nccl-version",
        help="NCCL 2.x release whose rules apply (2.18.3) where the log does not say (default: newest).",
    ),
]
AllOpt = Annotated[
    bool,
    typer.Option(
        "--all",
        help="Every rank pair on its own row (by default pairs alike but for their ranks share one); a merged "
        "cluster: every host in full, not its groups.",
    ),
]
EnvOpt = Annotated[
    list[str] | None,
    typer.Option("--env", help="NCCL_X=Y as exported before the run (repeat); with --log, overrides the log's."),
]


@app.command()
@_guard
def nccl(
    snap: SnapArg = None,
    log: LogOpt = None,
    ranks: RanksOpt = None,
    version: VersionOpt = None,
    env: EnvOpt = None,
    perf: PerfOpt = False,
    tests: TestsOpt = None,
    collective: CollectiveOpt = None,
    sizes: SizesOpt = None,
    hosts: HostsOpt = None,
    output: CurveOpt = None,
    json_out: JsonOpt = False,
    lot_type: LotTypeOpt = None,
    all_hosts: AllOpt = False,
    host: HostOpt = None,
) -> None:
    """Predict NCCL's transport per rank pair, or explain an NCCL log.

    Per ordered rank pair, the transport NCCL will choose (P2P, SHM, NET, NET+GDR), the rule that
    decides it and the variables that would change it; per GPU its NIC, GPUDirect RDMA, PXN, NVLS.
    `topomap nccl SNAP`, `--log LOG [SNAP]`, `SNAP --perf`, `--tests RESULTS [SNAP]`. Exit 0, 2 bad input."""
    # imports inside the command keep start-up fast (networkx, the graph)
    from topomap.files.inputs import decode_text, read_bytes
    from topomap.nccl.nodes import predict
    from topomap.render.nccl_view import nccl_view

    extra = _settings(env, version)
    if perf or tests is not None:
        return _perf_or_tests(
            snap, log, ranks, version, extra, (perf, tests, collective, sizes, hosts, output), json_out
        )
    snapshot, as_log = _snapshot_or_log(snap, log)
    if as_log:  # `topomap nccl run.log`: its channel lines too, not only its first topology dump
        log, snapshot = snap, None
    if log is not None:
        text = decode_text(read_bytes(log, "NCCL log", 64 * 1024 * 1024), log)
        report = _from_log(text, log, snapshot, extra, (ranks, version))
        if as_log:
            report.notes.insert(0, f"{log} is an NCCL log: read as --log {log}")
    elif snapshot is not None and snapshot.source.kind == "merge" and (host is not None or not all_hosts):
        return _cluster(snapshot, extra, (ranks, version), json_out, host)  # once per group of alike hosts
    elif snapshot is not None:
        report = predict(snapshot, extra, ranks, version)
    else:
        raise TopomapError(
            "nccl needs a snapshot, a log, or both", hint="topomap nccl SNAP, or topomap nccl --log LOG [SNAP]"
        )
    if snapshot is not None:  # facts a declared lot or --lot-type gave, not read (topomap.model.origins)
        from topomap.model.origins import filled_summary

        said = filled_summary(snapshot)
        if said is not None:
            report.notes.append(said)
    if json_out:
        _print_json(report.to_json())
        return
    _console().print(*nccl_view(report, all_hosts))  # piped: every name and number whole, never wrapped or cut


def _settings(env: list[str] | None, version: str | None) -> NcclEnv:
    """``--env`` as NCCL reads it; an ``--nccl-version`` outside the 2.x releases is a one-line error."""
    from topomap.transport.rules import parse_env, version_problem  # start-up: see the command

    extra = parse_env(env or [])
    problem = version_problem(version) if version is not None else None
    if problem:
        raise TopomapError(f"--nccl-version {version!r}: {problem}", hint="e.g. --nccl-version 2.18.3")
    return extra


def _cluster(
    snapshot: Snapshot, extra: NcclEnv, how: tuple[str | None, str | None], json_out: bool, host: str | None
) -> None:
    """A merged cluster: its alike hosts once, the cross-host pairs one line per rail (issue 34; --all
    gives every pair as before, --host NAME one host's pairs and its ring neighbours')."""
    from topomap.cli.cluster_views import nccl_cluster  # start-up: see the command

    ranks, version = how
    nccl_cluster(snapshot, extra, ranks, version, json_out, host)


def _from_log(
    text: str, path: str, snapshot: Snapshot | None, extra: NcclEnv, how: tuple[str | None, str | None]
) -> NcclReport:
    """Compare the log's channel lines with the prediction. Without a snapshot, the facts come from
    the log: its path rows where it has them, else its topology tree (NCCL's own view, imported as a
    snapshot). A log with a tree and no channel lines is a prediction from that tree."""
    # imports inside the function keep start-up fast
    from topomap.importers.nccl_log import read_nccl_log_dump
    from topomap.nccl.logread import read_log
    from topomap.nccl.predict import compare_log, predict_snapshot

    ranks, version = how
    dump: Snapshot | None = None
    gaps: tuple[str, ...] = ()  # what of the log's dump the importer did not read (its cut start or end, …)
    dump_error: TopomapError | None = None
    if snapshot is None:
        try:
            read = read_nccl_log_dump(text, path)
            dump, gaps = read.snapshot, read.gaps
        except TopomapError as err:
            dump_error = err
    try:
        parsed = read_log(text, path)
    except TopomapError:
        if dump is None:
            if dump_error is not None and _has_dump(text, path):
                raise dump_error from None  # a dump is there but unreadable: its line and why, not "no dump"
            raise
        report = predict_snapshot(dump, extra, ranks, version)
        report.notes[:0] = [f"{path}: no channel lines; predicted from the log's own topology dump", *gaps]
        return report
    use = snapshot if snapshot is not None else (dump if not parsed.gpu_paths else None)
    report = compare_log(parsed, use, extra, version)
    if snapshot is not None:
        report.notes.insert(0, f"facts from the snapshot: {snapshot.source.origin or snapshot.source.kind}")
    if ranks is not None:
        report.notes.append(
            f"--ranks {ranks} not used: with --log, the log says which ranks share a host and a process"
        )
    if use is dump and dump is not None:
        report.notes[:0] = ["facts from the log's own topology tree (imported as a snapshot)", *gaps]
    return report


def _snapshot_or_log(snap: str | None, log: str | None) -> tuple[Snapshot | None, bool]:
    """The snapshot argument loaded, and whether it is an NCCL log given where the snapshot goes (then
    read as ``--log``), with a topology dump or without one."""
    if not snap:
        return None, False
    try:
        snapshot = _load(snap)
    except LogWithoutDump:
        if log is not None:
            raise  # a log in each place: the first is no machine
        return None, True
    return snapshot, log is None and _raw_log(snapshot, snap)


def _raw_log(snapshot: Snapshot, path: str) -> bool:
    """The file itself is an NCCL log (imported from its topology dump), not a snapshot saved from one."""
    # (files/kind tells a saved snapshot from a raw log, as every command asks it: told once per file)
    return snapshot.source.kind == "nccl-log" and file_kind(path) != "snapshot"


def _has_dump(text: str, path: str) -> bool:
    """Whether the log holds the start of a topology dump (a CPU line), readable or not."""
    # imports inside the function keep start-up fast
    from topomap.importers.nccl_log import read_dumps

    try:
        return any(d.roots for d in read_dumps(text, path))
    except TopomapError:
        return True


def _perf_or_tests(
    snap: str | None,
    log: str | None,
    ranks: str | None,
    version: str | None,
    extra: NcclEnv,
    what: tuple[bool, str | None, str | None, str | None, int | None, str | None],
    json_out: bool,
) -> None:
    """`--perf` and `--tests` (issue 32): the expected bus bandwidth per collective, and results against it."""
    from topomap.cli.nccl_perf import PerfArgs, run_perf, run_tests  # start-up: the model only when asked

    _, tests, collective, sizes, hosts, output = what
    args = PerfArgs(collective, sizes, hosts, output)
    if tests is not None:
        run_tests(tests, snap, log, extra, version, args, json_out)
        return
    if snap is None:
        raise TopomapError("--perf needs the lot's snapshot", hint="topomap nccl SNAP --perf")
    if log is not None:
        raise TopomapError("--perf reads a snapshot, not a log", hint="topomap nccl --tests RESULTS SNAP --log LOG")
    run_perf(snap, ranks, version, extra, args, json_out)
