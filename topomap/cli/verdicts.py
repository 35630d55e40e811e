"""Commands that give a verdict: diff and check."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from topomap.base.errors import TopomapError
from topomap.cli.wiring import JsonOpt, ProbeOpt, _console, _guard, _load, _print_json, app


@app.command()
@_guard
def diff(
    a: Annotated[str, typer.Argument(help="Lot A: snapshot or raw nvidia-smi/NCCL/hwloc file.")],
    b: Annotated[str, typer.Argument(help="Lot B.")],
    flow_file: Annotated[str | None, typer.Option("--flow", help="Compare this flow's arrows on A and on B.")] = None,
    match: Annotated[str, typer.Option("--match", help="index (default) or structure")] = "index",
    json_out: JsonOpt = False,
    outputs: Annotated[
        tuple[str, str] | None, typer.Option("--outputs", help="Two runs: also compare DIR_A and DIR_B.")
    ] = None,
    tolerance: Annotated[float | None, typer.Option("--tolerance", help="With --outputs: numeric tolerance.")] = None,
) -> None:
    """Semantic differences between two lots, or the fair comparison of two recorded runs.
    Exit 0 equivalent (runs: both succeeded, same outputs), 1 different, 3 cannot confirm (a side
    does not record what equivalence needs), 2 error."""
    # imports inside the commands keep start-up fast: every command module loads at start-up, and
    # `topomap --help` and the light commands must not load what diff and check need (networkx)
    from topomap.files.kind import is_run_file

    runs = (is_run_file(a), is_run_file(b))
    if all(runs):
        from topomap.cli.record import diff_run_files  # start-up: the run views load only for run records

        return diff_run_files(a, b, outputs, tolerance, json_out)
    if any(runs):
        run, other, which = (a, b, "A") if runs[0] else (b, a, "B")
        raise TopomapError(
            f"{run}: lot {which} is a run record (topomap record) but {other} is not; "
            "diff compares two runs or two snapshots, not one of each",
            hint="topomap diff RUN_A.json RUN_B.json, or topomap diff SNAP_A SNAP_B",
        )
    how = _match(match)
    if outputs is not None or tolerance is not None:
        raise TopomapError(
            "--outputs and --tolerance compare two recorded runs, not two snapshots",
            hint="topomap diff RUN_A.json RUN_B.json --outputs DIR_A DIR_B",
        )
    from topomap.cli.bind import read_flow_file
    from topomap.diff import diff_clusters, diff_snapshots
    from topomap.render.verdict_view import cluster_diff_view, diff_view

    sa, sb = _load(a), _load(b)
    if sa.source.kind == "merge" or sb.source.kind == "merge":
        cluster = diff_clusters(sa, sb, how)
        if json_out:
            _print_json(cluster.to_json())
        else:
            _console().print(cluster_diff_view(cluster))
        raise typer.Exit(cluster.exit_status)
    names = (Path(a).stem, Path(b).stem)
    if names[0] == names[1]:
        names = (f"A ({names[0]})", f"B ({names[1]})")
    flow = read_flow_file(flow_file, "diff --flow") if flow_file else None
    result = diff_snapshots(sa, sb, how, names, flow)
    if json_out:
        _print_json(result.to_json())
    else:
        _console().print(diff_view(result))
    raise typer.Exit(result.exit_status)


def _match(match: str) -> Literal["index", "structure"]:
    if match == "index":
        return "index"
    if match == "structure":
        return "structure"
    raise TopomapError(
        f"--match {match!r}: expected index or structure",
        hint="--match index (the default: GPU i with GPU i) or structure (renumber so the topologies line up)",
    )


@app.command()
@_guard
def check(
    reqs: Annotated[str, typer.Argument(help="Requirements file (or a flow file with `requirements:`).")],
    probe: ProbeOpt = None,
    flow_file: Annotated[str | None, typer.Option("--flow", help="The flow the rules speak of.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Requirements verdict per rule, with evidence. Exit 0 pass, 1 fail, 3 unknown (cannot be told), 2 error."""
    # imports inside the command keep start-up fast (see diff)
    from topomap.check import check as run_check
    from topomap.check import flow_lots, read_requirements, snapshot_lots
    from topomap.cli.bind import bind_probes, read_flow_file
    from topomap.files.kind import is_run_file
    from topomap.flow import map_flow
    from topomap.render.verdict_view import check_view

    if is_run_file(reqs):
        raise TopomapError(
            f"{reqs}: this is a run record (topomap record), not a requirements file",
            hint="check takes a requirements file (or a flow file with `requirements:`), then --probe SNAP",
        )
    rules, is_flow = read_requirements(reqs)
    if flow_file is None and is_flow:
        flow_file = reqs
    fmap = None
    topos = None
    if flow_file is not None:
        flow = read_flow_file(flow_file, "check --flow")
        topos = bind_probes(flow, probe or [])
        fmap = map_flow(flow, topos)
        lots = flow_lots(flow, topos)
    elif not probe:
        raise TopomapError(
            "check needs --probe SNAP (or --flow FLOW)",
            hint=f"topomap check {reqs} --probe SNAP.json (NAME=SNAP for a named lot; repeat for more)",
        )
    else:
        lots = snapshot_lots([(name, _load(path)) for name, path in map(_named, probe)])
    result = run_check(rules, lots, fmap, topos)
    if json_out:
        _print_json(result.to_json())
    else:
        _console().print(check_view(result))
    raise typer.Exit(result.exit_status)


def _named(arg: str) -> tuple[str, str]:
    """``--probe NAME=FILE`` → (NAME, FILE); a bare FILE is named by its stem."""
    name, sep, path = arg.partition("=")
    return (name, path) if sep else (Path(arg).stem, arg)
