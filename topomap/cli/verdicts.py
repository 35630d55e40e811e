"""Commands that give a verdict: diff and check."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    from topomap.files.kind import is_run_file

    runs = (is_run_file(a), is_run_file(b))
    if all(runs):
        from topomap.cli.record import diff_run_files

        return diff_run_files(a, b, outputs, tolerance, json_out)
    if any(runs):
        run, other, which = (a, b, "A") if runs[0] else (b, a, "B")
        raise TopomapError(
            f"{run}: lot {which} is a run record (topomap record) but {other} is not; "
            "diff compares two runs or two snapshots, not one of each",
            hint="topomap diff RUN_A.json RUN_B.json, or topomap diff SNAP_A SNAP_B",
        )
    from topomap.diff.core import diff_flow, diff_snapshots

    if match not in ("index", "structure"):
        raise TopomapError(
            f"--match {match!r}: expected index or structure",
            hint="--match index (the default: GPU i with GPU i) or structure (renumber so the topologies line up)",
        )
    if outputs is not None or tolerance is not None:
        raise TopomapError(
            "--outputs and --tolerance compare two recorded runs, not two snapshots",
            hint="topomap diff RUN_A.json RUN_B.json --outputs DIR_A DIR_B",
        )
    sa, sb = _load(a), _load(b)
    if sa.source.kind == "merge" or sb.source.kind == "merge":
        from topomap.diff.core import diff_clusters

        cluster = diff_clusters(sa, sb, match)  # type: ignore[arg-type]
        if json_out:
            _print_json(cluster)
        else:
            from topomap.render.verdict_view import cluster_diff_view

            _console().print(cluster_diff_view(cluster))
        raise typer.Exit(int(cluster["exit_status"]))
    names = (Path(a).stem, Path(b).stem)
    if names[0] == names[1]:
        names = (f"A ({names[0]})", f"B ({names[1]})")
    result = diff_snapshots(sa, sb, match, names)  # type: ignore[arg-type]
    if flow_file:
        diff_flow(result, flow_file, sa, sb)
    if json_out:
        _print_json(
            {
                "same": result.same,
                "verdict": result.verdict,
                "summary": result.summary(),
                "reasons": result.reasons(),
                "unconfirmed": result.unconfirmed,
                "match": result.match,
                "mapping": result.mapping,
                "grouped": result.grouped(),
                "plan": result.plan_lines,
                "changes": [
                    {
                        "kind": c.kind,
                        "subject": c.subject,
                        "field": c.field,
                        "a": c.a,
                        "b": c.b,
                        "direction": c.direction,
                        "text": c.text,
                    }
                    for c in result.changes
                ],
                "not_compared": result.not_compared,
                "notes": result.notes,
                "arrows": [
                    {
                        "from": r.src,
                        "to": r.dst,
                        "a": r.a,
                        "b": r.b,
                        "medium_changed": r.medium_changed,
                        "slower": r.slower,
                        "direction": r.direction,
                        "reason": r.reason,
                    }
                    for r in result.arrows
                ],
            }
        )
    else:
        from topomap.render.verdict_view import diff_view

        _console().print(diff_view(result))
    raise typer.Exit(result.exit_status)


@app.command()
@_guard
def check(
    reqs: Annotated[str, typer.Argument(help="Requirements file (or a flow file with `requirements:`).")],
    probe: ProbeOpt = None,
    flow_file: Annotated[str | None, typer.Option("--flow", help="The flow the rules speak of.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Requirements verdict per rule, with evidence. Exit 0 pass, 1 fail, 3 unknown (cannot be told), 2 error."""
    from topomap.check.evaluate import Lot, flow_lots, read_requirements
    from topomap.check.evaluate import check as run_check
    from topomap.files.kind import is_run_file
    from topomap.graph import build

    if is_run_file(reqs):
        raise TopomapError(
            f"{reqs}: this is a run record (topomap record), not a requirements file",
            hint="check takes a requirements file (or a flow file with `requirements:`), then --probe SNAP",
        )
    rules, is_flow = read_requirements(reqs)
    if flow_file is None and is_flow:
        flow_file = reqs
    fmap = None
    lots: list[Lot] = []
    topos = None
    if flow_file is not None:
        from topomap.cli.flows import read_flow_file
        from topomap.flow.mapping import bind_hosts, map_flow

        flow = read_flow_file(flow_file, "check --flow")
        topos = bind_hosts(flow, probe or [])
        fmap = map_flow(flow, topos)
        lots = flow_lots(flow, topos)
    else:
        if not probe:
            raise TopomapError(
                "check needs --probe SNAP (or --flow FLOW)",
                hint=f"topomap check {reqs} --probe SNAP.json (NAME=SNAP for a named lot; repeat for more)",
            )
        for arg in probe:
            name, sep, path = arg.partition("=")
            if not sep:
                name, path = Path(arg).stem, arg
            from topomap.model.snapshot import hosts_of

            hosts = hosts_of(_load(path))
            for h in hosts:
                lots.append(Lot(name=(h.host.hostname or name) if len(hosts) > 1 else name, topo=build(h)))
    result = run_check(rules, lots, fmap, topos)
    if json_out:
        _print_json(
            {
                "verdict": result.status,
                "summary": result.verdict(),
                "rules": [r.to_json() for r in result.results],
            }
        )
    else:
        from topomap.render.verdict_view import check_view

        _console().print(check_view(result))
    raise typer.Exit(result.exit_status)
