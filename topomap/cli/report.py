"""Command on a flow: report (one self-contained HTML page).

The CLI imports every command module at start-up, so what only `report` needs (networkx, graphviz,
Jinja2, the planner) is imported when it runs: inside the functions below, to keep start-up fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from topomap.base.errors import TopomapError
from topomap.cli.output import output_format, wrote
from topomap.cli.wiring import FilesArg, FlowOpt, JsonOpt, LotTypeOpt, ProbeOpt, _guard, _print_json, _write, app

#: Hosts the flow diagram draws at most (a box each); past it the page says so and keeps its tables.
DIAGRAM_HOSTS = 64

if TYPE_CHECKING:
    from topomap.flow.mapping import FlowMap
    from topomap.flow.spec import Flow
    from topomap.graph import Topology
    from topomap.render.report import ReportInputs


@app.command()
@_guard
def report(
    files: FilesArg = None,
    flow_opt: FlowOpt = None,
    probe: ProbeOpt = None,
    output: Annotated[str, typer.Option("-o", "--output", help="OUT.html")] = "",
    hardware: Annotated[str, typer.Option("--hardware", help="Diagram: used (default) or all hardware.")] = "used",
    json_out: JsonOpt = False,
    lot_type: LotTypeOpt = None,
) -> None:
    """Write one self-contained HTML page about a flow on its machines.

    `topomap report FLOW [SNAP | NAME=SNAP …] -o OUT.html`: a page to hand to a colleague — the flow
    diagram, the arrows, the machines, the requirements verdict and the plan when the flow has them,
    provenance and assumptions."""
    from topomap.cli.bind import bind_probes, read_flow_file  # start-up: see the module docstring
    from topomap.cli.given import USAGE, flow_command_files
    from topomap.flow import map_flow
    from topomap.flow.collective_time import collective_times
    from topomap.render import dot as dotr
    from topomap.render.flowdot import flow_on_machine_dot
    from topomap.render.report import ReportInputs, report_html

    if not output:
        raise TopomapError("report needs -o OUT.html", hint="-o OUT.html, or -o - for stdout")
    if output != "-" and output_format(output, "html") not in ("html", "htm"):
        raise TopomapError(f"-o {output}: the report is an HTML page", hint="name it OUT.html")
    if hardware not in ("used", "all"):
        raise TopomapError(f"--hardware {hardware!r}: expected used or all")
    given = flow_command_files(files, "report")
    flow_file = given.need_flow(flow_opt, USAGE["report"])
    flow = read_flow_file(flow_file, "report")
    topos = bind_probes(flow, probe or [], given.machines)
    fmap = map_flow(flow, topos)
    fmap.collectives = collective_times(flow, topos)
    sources = [f"flow: {flow_file}", *given.machines, *(probe or [])]
    inp = ReportInputs(fmap=fmap, topos=topos, svg=None, sources=sources)
    drawn = sum(t is not None for t in topos.values())
    if drawn > DIAGRAM_HOSTS:
        inp.svg_missing = (
            f"the flow has {drawn} hosts: a box for each is past what a page can show (the diagram is drawn up to "
            f"{DIAGRAM_HOSTS}); the tables below are complete, and `topomap render {flow_file} -o flow.svg "
            "--view pipeline` draws the flow's logic"
        )
    else:
        try:
            inp.svg = dotr.pipe(flow_on_machine_dot(fmap, topos, hardware), "svg").decode()
        except dotr.DotMissing:
            inp.svg_missing = (
                "Graphviz `dot` is not installed (apt-get install graphviz); the tables below are complete"
            )
    if flow.spec.requirements is not None:
        _add_check(inp, flow_file, flow, topos, fmap)
    _add_plan(inp, flow, topos)
    _add_cluster(inp, topos)
    page = report_html(inp).encode()
    _write(output, page)
    wrote(output)
    if json_out and output != "-":  # with -o - the page is the output
        _print_json({"output": output, "bytes": len(page), "arrows": len(fmap.arrows), "diagram": inp.svg is not None})


def _add_cluster(inp: ReportInputs, topos: dict[str, Topology | None]) -> None:
    """Two or more hosts with snapshots: the cluster section (topomap cluster's report of them)."""
    from topomap.cluster import analyse_hosts  # start-up: see the module docstring
    from topomap.cluster.groups import group_named

    named = [(h, t.snapshot) for h, t in topos.items() if t is not None]
    if len(named) >= 2:
        inp.groups = group_named(named, "the flow's hosts")  # alike hosts: one row, one analysis each
        inp.cluster = analyse_hosts(named, "the flow's hosts", [inp.groups.label_of[h] for h, _s in named])


def _add_check(inp: ReportInputs, flow_file: str, flow: Flow, topos: dict[str, Topology | None], fmap: FlowMap) -> None:
    """The `check` verdict of the flow's own `requirements:` on its bound lots."""
    from topomap.check import check as run_check  # start-up: see the module docstring
    from topomap.check import flow_lots, read_requirements

    rules, _ = read_requirements(flow_file)
    inp.check = run_check(rules, flow_lots(flow, topos), fmap, topos)


def _add_plan(inp: ReportInputs, flow: Flow, topos: dict[str, Topology | None]) -> None:
    """The plan when the flow's work can be planned; otherwise the reason, said plainly."""
    if flow.spec.work is None:
        inp.plan_missing = "the flow has no `work:` block (what one unit is, how many, how long)"
        return
    from topomap.plan import plan_flow  # start-up: see the module docstring

    try:
        inp.plan = plan_flow(flow, topos).to_json()
    except TopomapError as err:
        inp.plan_missing = str(err) + (f" (hint: {err.hint})" if err.hint else "")
