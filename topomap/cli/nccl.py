"""`topomap nccl`: NCCL's transport per rank pair, predicted, and read from a log."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from topomap.base.errors import TopomapError
from topomap.cli.wiring import JsonOpt, _console, _guard, _load, _print_json, _print_wide, app


@app.command()
@_guard
def nccl(
    snap: Annotated[
        str | None, typer.Argument(help="Snapshot (or raw nvidia-smi/NCCL/hwloc file) of the machine.")
    ] = None,
    log: Annotated[str | None, typer.Option("--log", help="An NCCL_DEBUG=INFO log to compare with.")] = None,
    ranks: Annotated[
        str | None, typer.Option("--ranks", help="per-gpu (default), one-process, or GPU list 0,1,2,3")
    ] = None,
    env: Annotated[
        list[str] | None, typer.Option("--env", help="NCCL_X=Y that changes the prediction (repeat).")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Predict NCCL's transport per rank pair, or explain an NCCL log.

    Per ordered rank pair, the transport NCCL will choose (P2P, SHM, NET, NET+GDR) and the rule
    that decides it; with --log, what NCCL did and why it differs. Exit 0, 2 bad input."""
    # imports inside the command keep start-up fast (networkx, the graph)
    from topomap.files.inputs import decode_text, read_bytes
    from topomap.nccl.logread import read_log
    from topomap.nccl.predict import compare_log, predict_snapshot
    from topomap.nccl.rules import parse_env
    from topomap.render.nccl_view import nccl_view

    extra = parse_env(env or [])
    snapshot = _load(snap) if snap else None
    if log is not None:
        text = decode_text(read_bytes(log, "NCCL log", 64 * 1024 * 1024), log)
        report = compare_log(read_log(text, log), snapshot, extra)
    elif snapshot is not None:
        report = predict_snapshot(snapshot, extra, ranks)
    else:
        raise TopomapError(
            "nccl needs a snapshot, a log, or both", hint="topomap nccl SNAP, or topomap nccl --log LOG [SNAP]"
        )
    if json_out:
        _print_json(report.to_json())
        return
    if not sys.stdout.isatty():  # piped: every name and number whole, never wrapped or cut
        _print_wide(*nccl_view(report))
        return
    console = _console()
    for part in nccl_view(report):
        console.print(part)
