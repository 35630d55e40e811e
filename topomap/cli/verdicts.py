"""Commands that give a verdict: diff and check."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from topomap.base.errors import TopomapError
from topomap.cli.given import USAGE, Given, file_of, sort_files
from topomap.cli.wiring import AllOpt, HostOpt, JsonOpt, LotTypeOpt, ProbeOpt, _console, _guard, _load, _print_json, app
from topomap.files.kind import DESCRIPTIONS, file_kind

if TYPE_CHECKING:
    from topomap.model.snapshot import Snapshot


@app.command()
@_guard
def diff(
    files: Annotated[
        list[str] | None,
        typer.Argument(
            help="Lots A and B (snapshots or raw nvidia-smi/NCCL/hwloc files), after a flow file to compare "
            "its arrows on both; or two run records. Told apart by their content.",
            show_default=False,
        ),
    ] = None,
    flow_opt: Annotated[
        str | None, typer.Option("--flow", help="Compare this flow's arrows on A and on B (the same as giving it).")
    ] = None,
    match: Annotated[str, typer.Option("--match", help="index (default) or structure")] = "index",
    json_out: JsonOpt = False,
    lot_type: LotTypeOpt = None,
    outputs: Annotated[
        tuple[str, str] | None, typer.Option("--outputs", help="Two runs: also compare DIR_A and DIR_B.")
    ] = None,
    tolerance: Annotated[float | None, typer.Option("--tolerance", help="With --outputs: numeric tolerance.")] = None,
    all_hosts: AllOpt = False,
    host: HostOpt = None,
) -> None:
    """Compare two lots, or two recorded runs, and say what differs.

    `topomap diff [FLOW] A B`: the semantic differences between two lots (with a flow: its arrows on
    each), or the fair comparison of two recorded runs. Exit 0 equivalent (runs: both succeeded,
    same outputs), 1 different, 3 cannot confirm (a side does not record what equivalence needs),
    2 error."""
    # imports inside the commands keep start-up fast: every command module loads at start-up, and
    # `topomap --help` and the light commands must not load what diff and check need (networkx)
    given = sort_files(files or [], "diff", bindings=False)
    given.refuse("requirements", "measurements")
    lots = [f for f in files or [] if f not in given.flows]
    if given.runs:
        return _diff_runs(given, lots, outputs, tolerance, json_out)
    flow_file = given.flow(flow_opt)
    if len(lots) != 2:
        raise TopomapError(f"diff compares two lots; {_given(lots)}", hint=USAGE["diff"])
    a, b = lots
    how = _match(match)
    if outputs is not None or tolerance is not None:
        raise TopomapError(
            "--outputs and --tolerance compare two recorded runs, not two snapshots",
            hint="topomap diff RUN_A.json RUN_B.json --outputs DIR_A DIR_B",
        )
    from topomap.cli.bind import read_flow_file
    from topomap.diff import diff_snapshots
    from topomap.render.verdict_view import diff_view

    sa, sb = _load(a), _load(b)
    from topomap.diff.promise import is_declared

    if is_declared(sa) != is_declared(sb):  # promised against received (topomap.diff.promise)
        return _promise(sa, sb, (a, b), json_out)

    if sa.source.kind == "merge" or sb.source.kind == "merge":
        from topomap.cli.cluster_views import diff_cluster  # by groups of alike hosts (issue 34)

        sa, sb = diff_cluster(sa, sb, how, json_out, (all_hosts, host))  # exits, but for --host NAME
    names = (Path(a).stem, Path(b).stem) if host is None else (f"A:{host}", f"B:{host}")
    if names[0] == names[1]:
        names = (f"A ({names[0]})", f"B ({names[1]})")
    flow = read_flow_file(flow_file, "diff") if flow_file else None
    result = diff_snapshots(sa, sb, how, names, flow)
    if flow is not None:  # two priced lots (declared `price:`): which does the work for less
        from topomap.diff.cost import cost_line

        said = cost_line(flow, sa, sb, names)
        if said is not None:
            result.plan_lines.append(said)
    if json_out:
        _print_json(result.to_json())
    else:
        _console().print(diff_view(result))
    raise typer.Exit(result.exit_status)


def _promise(sa: Snapshot, sb: Snapshot, files: tuple[str, str], json_out: bool) -> None:
    """A declared lot against what was probed or pasted (either order): each fact promised, judged by
    what the received side can show. Exit 0 as promised, 1 short of the promise, 3 cannot tell."""
    from topomap.diff.promise import check_promise, is_declared
    from topomap.render.promise_view import promise_view

    promised, received, names = (sa, sb, files) if is_declared(sa) else (sb, sa, (files[1], files[0]))
    result = check_promise(promised, received, names)
    if json_out:
        _print_json(result.to_json())
    else:
        _console().print(promise_view(result))
    raise typer.Exit(result.exit_status)


def _diff_runs(
    given: Given,
    lots: list[str],
    outputs: tuple[str, str] | None,
    tolerance: float | None,
    json_out: bool,
) -> None:
    """Two run records compared; a run record beside a snapshot, or with a flow, is refused."""
    if len(lots) == 2 and len(given.runs) == 1:
        a, b = lots
        run, other, which = (a, b, "A") if a in given.runs else (b, a, "B")
        raise TopomapError(
            f"{run}: lot {which} is a run record (topomap record) but {other} is not; "
            "diff compares two runs or two snapshots, not one of each",
            hint="topomap diff RUN_A.json RUN_B.json, or topomap diff SNAP_A SNAP_B",
        )
    if len(lots) != 2 or len(given.runs) != 2:
        raise TopomapError(
            f"diff compares two run records; {_given(lots)}",
            hint="topomap diff RUN_A.json RUN_B.json",
        )
    if given.flows:
        raise TopomapError(
            f"{given.flows[0]}: a flow applies to two snapshots, not to two runs",
            hint="leave out the flow when comparing runs",
        )
    from topomap.cli.record import diff_run_files  # start-up: the run views load only for run records

    diff_run_files(lots[0], lots[1], outputs, tolerance, json_out)


def _given(files: list[str]) -> str:
    """How many files were given, and which."""
    return f"{len(files)} given" + (f" ({', '.join(files)})" if files else "")


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
    files: Annotated[
        list[str] | None,
        typer.Argument(
            help="The requirements file (or a flow file with `requirements:`), then the flow and the snapshots "
            "(NAME=FILE names a lot or binds a flow host). Told apart by their content.",
            show_default=False,
        ),
    ] = None,
    probe: ProbeOpt = None,
    flow_opt: Annotated[
        str | None, typer.Option("--flow", help="The flow the rules speak of (the same as giving it).")
    ] = None,
    json_out: JsonOpt = False,
    lot_type: LotTypeOpt = None,
    all_hosts: AllOpt = False,
    host: HostOpt = None,
) -> None:
    """Gate lots on requirements: PASS, FAIL or UNKNOWN per rule.

    `topomap check REQS [FLOW] [SNAP | NAME=SNAP …]`: each rule with its evidence; a merged cluster's
    hosts by group of alike hosts (--all: every host; --host NAME: one). Exit 0 pass, 1 fail, 3 unknown
    (cannot be told), 2 error."""
    # imports inside the command keep start-up fast (see diff)
    from topomap.check import check as run_check
    from topomap.check import flow_lots, read_requirements, snapshot_lots
    from topomap.cli.bind import bind_probes, read_flow_file
    from topomap.flow import map_flow
    from topomap.render.verdict_view import check_view

    given = sort_files(files or [], "check")
    given.refuse("run", "measurements")
    reqs, flow_file = _check_files(given, flow_opt)
    rules, _ = read_requirements(reqs)
    machines = [*given.machines, *(probe or [])]
    fmap = None
    topos = None
    if flow_file is not None:
        flow = read_flow_file(flow_file, "check")
        topos = bind_probes(flow, probe or [], given.machines)
        fmap = map_flow(flow, topos)
        lots = flow_lots(flow, topos)
    elif not machines:
        raise TopomapError(
            "check needs the machines to check: snapshots, or a flow",
            hint=f"topomap check {reqs} SNAP.json (NAME=SNAP for a named lot; several for several lots), "
            f"or topomap check {reqs} FLOW.yaml",
        )
    else:
        lots = snapshot_lots([(name, _load(path)) for name, path in map(_named, machines)])
    result = run_check(rules, lots, fmap, topos)
    from topomap.render.lot_view import disagreement_rows, disagreements

    machines_checked = [(lot.name, lot.topo.snapshot) for lot in lots]
    if host is not None or (result.groups and not all_hosts):
        from topomap.cli.cluster_views import check_cluster  # a cluster: each rule once per group

        raise typer.Exit(check_cluster(result, json_out, host, machines_checked))
    if json_out:
        doc = result.to_json()
        rows = disagreement_rows(machines_checked)
        if rows:  # a paste and its --lot-type catalogue entry disagree (topomap.model.lots.fill)
            doc["catalogue_disagrees"] = rows
        _print_json(doc)
    else:
        console = _console()
        console.print(check_view(result))
        said = disagreements(machines_checked)
        if said is not None:
            console.print(said)
    raise typer.Exit(result.exit_status)


def _check_files(given: Given, flow_opt: str | None) -> tuple[str, str | None]:
    """The requirements file and the flow file (or None) of `check`. The rules come from a
    requirements file, else from the flow's own `requirements:`; else a file of no known kind is
    read as the requirements (rules written as JSON; or its reader says what is wrong with it)."""
    flow_file = given.flow(flow_opt)
    if len(given.requirements) > 1:
        raise TopomapError(
            f"check: two requirements files ({given.requirements[0]} and {given.requirements[1]}); it reads one",
            hint=USAGE["check"],
        )
    if given.requirements:
        return given.requirements[0], flow_file
    if flow_file is not None and _has_requirements(flow_file):
        return flow_file, flow_file
    unknown = [m for m in given.machines if m in given.unknown]
    if unknown:  # rules written as JSON, or a file with a mistake: its reader says which
        given.machines.remove(unknown[0])
        return unknown[0], flow_file
    if flow_file is not None:
        raise TopomapError(
            f"{flow_file}: this is a flow file with no `requirements:`; check takes a requirements file "
            "(or a flow with `requirements:`), then a flow or snapshots",
            hint=f"topomap check REQS.yaml {flow_file} [SNAP | NAME=SNAP …]; or add `requirements:` to the flow",
        )
    if given.machines:
        first = given.machines[0]
        kind = file_kind(file_of(first))
        what = f"this is {DESCRIPTIONS[kind]}, not a requirements file" if kind else "not a requirements file"
        raise TopomapError(f"{first}: {what}; check needs one (YAML with `requirements:`)", hint=USAGE["check"])
    raise TopomapError("check needs a requirements file", hint=USAGE["check"])


def _has_requirements(flow_file: str) -> bool:
    """The flow file holds a `requirements:` list (read by the flow reader, which checks the file)."""
    from topomap.cli.bind import read_flow_file  # start-up: see diff

    return read_flow_file(flow_file, "check").spec.requirements is not None


def _named(arg: str) -> tuple[str, str]:
    """``--probe NAME=FILE`` → (NAME, FILE); a bare FILE is named by its stem."""
    name, sep, path = arg.partition("=")
    return (name, path) if sep else (Path(arg).stem, arg)
