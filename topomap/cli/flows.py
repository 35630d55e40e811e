"""Commands on a flow: map and render.

The analysis modules (flow, graph, render) are imported inside the commands: every command module
is imported when topomap starts, and the graph (networkx) alone costs ~90 ms that `--version`,
`show` and `matrix` do not need.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from topomap.base.errors import TopomapError
from topomap.cli.given import USAGE, Given, flow_command_files, sort_files
from topomap.cli.output import output_format, wrote
from topomap.cli.wiring import (
    FilesArg,
    FlowOpt,
    JsonOpt,
    LotTypeOpt,
    ProbeOpt,
    _console,
    _guard,
    _load,
    _print_json,
    _write,
    app,
)

RENDER_FORMATS = ("svg", "png", "pdf", "dot", "graphml", "json")


@app.command("map")
@_guard
def map_(
    files: FilesArg = None,
    flow_opt: FlowOpt = None,
    probe: ProbeOpt = None,
    json_out: JsonOpt = False,
    lot_type: LotTypeOpt = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Every arrow with its route and notes (default: summary).")
    ] = False,
) -> None:
    """Show what each arrow of a flow travels over, and how fast.

    One line per flow arrow (replicas and pairs bundled): medium (gpu-link / host-memory / network /
    local), route, class, bandwidth; the slowest arrow per medium and each distinct note once; --all
    for every arrow. `topomap map FLOW [SNAP | NAME=SNAP …]`. Piped output is never wrapped or cut."""
    from topomap.cli.bind import bind_probes, read_flow_file  # lazy: start-up (module docstring)
    from topomap.flow import map_flow

    given = flow_command_files(files, "map")
    flow = read_flow_file(given.need_flow(flow_opt, USAGE["map"]), "map")
    from topomap.flow.collective_time import collective_times

    topos = bind_probes(flow, probe or [], given.machines)
    fmap = map_flow(flow, topos)
    fmap.collectives = collective_times(flow, topos)
    if json_out:
        arrows = [a.to_json() for a in fmap.arrows]
        collectives = [c.to_json() for c in fmap.collectives]
        _print_json({"flow": flow.name, "arrows": arrows, "summary": fmap.summary(), "collectives": collectives})
        return
    from topomap.render.mapview import arrows_view, summary_view  # lazy: start-up

    view = arrows_view if all_ else summary_view
    _console().print(view(fmap))  # a table when it fits the terminal, else one block per line (no word split)


@app.command()
@_guard
def render(
    files: Annotated[
        list[str] | None,
        typer.Argument(
            help="Snapshots or raw topology files to draw; or a flow file, then snapshots for its hosts "
            "(NAME=FILE per host); or a run record. Told apart by their content.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        str, typer.Option("-o", "--output", help="OUT.svg, .png, .pdf, .dot, .graphml or .json; - for stdout")
    ] = "",
    flow_opt: FlowOpt = None,
    probe: ProbeOpt = None,
    view: Annotated[str, typer.Option("--view", help="machine (default) or pipeline (flow logic only)")] = "machine",
    hardware: Annotated[
        str,
        typer.Option("--hardware", help="with a flow: used (default, hardware the flow does not touch folded) or all"),
    ] = "used",
    fmt_opt: Annotated[
        str | None, typer.Option("--format", help="With -o -: svg (default), dot, graphml, json, png or pdf.")
    ] = None,
    json_out: JsonOpt = False,
    lot_type: LotTypeOpt = None,
) -> None:
    """Draw a machine, a flow on its machines, or a run's timeline.

    A machine: hosts, NUMA nodes, PCIe switches, GPUs, NICs, NVLink fabric. A flow (`topomap render
    FLOW [SNAP | NAME=SNAP …] -o OUT.svg`): its steps in the boxes of their hosts, each flow arrow once
    (replicas bundled) with its label, medium, bandwidth and time; --hardware all adds the machines'
    trees. A run record: memory and utilisation over time. `-o -` writes to stdout (--format)."""
    fmt = _render(files or [], output, flow_opt, probe, view, hardware, fmt_opt)
    if json_out and output != "-":  # with -o - the diagram is the output, as for merge
        _print_json({"output": output, "format": fmt})


def _render(
    files: list[str],
    output: str,
    flow_opt: str | None,
    probe: list[str] | None,
    view: str,
    hardware: str,
    fmt_opt: str | None,
) -> str:
    """Draw (and write) what `render` was asked for; the format written."""
    given = sort_files(files, "render")
    given.refuse("requirements", "measurements")
    flow_file = given.flow(flow_opt)
    if given.runs:
        return _render_run(given, flow_file, probe, output, fmt_opt)
    fmt = _check_render_options(output, fmt_opt, flow_file, view, hardware)
    if flow_file is None:
        text = _machine_dot(given.machines, output, fmt, probe)
        if text is None:
            return fmt
    else:
        if fmt in ("graphml", "json"):
            raise TopomapError(
                f"{_target(output, fmt)}: a flow diagram is drawn as svg, png, pdf or dot",
                hint="-o OUT.svg; or leave out the flow for the machine as .graphml or .json",
            )
        text = _flow_dot(flow_file, [*given.machines], probe or [], view, hardware)
    if fmt == "dot":
        _wrote(output, text.encode())
        return fmt
    if shutil.which("dot") is None:  # checked before drawing too; nothing of the user's is replaced
        raise _dot_missing(output, text)
    from topomap.render import dot as dotr  # lazy: start-up (module docstring)

    try:
        data = dotr.pipe(text, fmt)
    except dotr.DotMissing as err:
        raise _dot_missing(output, text) from err
    _wrote(output, data)
    return fmt


def _render_run(given: Given, flow_file: str | None, probe: list[str] | None, output: str, fmt_opt: str | None) -> str:
    """A run record alone: memory and utilisation over time."""
    if len(given.runs) > 1 or given.machines or flow_file or probe:
        raise TopomapError(
            f"{given.runs[0]}: a run record is drawn alone, without snapshots or a flow",
            hint=f"topomap render {given.runs[0]} -o timeline.svg; compare two runs with topomap diff RUN_A RUN_B",
        )
    from topomap.cli.record import render_run  # start-up: the run views load only for a run record
    from topomap.render.timeline import FORMATS

    fmt = _output_format(output, fmt_opt, FORMATS, "a run is drawn as")
    render_run(given.runs[0], output, fmt)
    return fmt


def _machine_dot(machines: list[str], output: str, fmt: str, probe: list[str] | None) -> str | None:
    """The machines' diagram as Graphviz source; graphml and json are written here (None)."""
    if probe:
        raise TopomapError(
            "--probe binds a flow's hosts; without a flow, render draws the snapshots given",
            hint=f"topomap render {' '.join(probe)} -o OUT.svg, or give the flow first",
        )
    if not machines:
        raise TopomapError("render needs at least one snapshot (or a flow file)", hint=USAGE["render"])
    from topomap.graph import build  # lazy: start-up (module docstring)
    from topomap.model.snapshot import hosts_of
    from topomap.render import dot as dotr
    from topomap.render.export import graphml, node_link_json

    topos = [build(h) for s in machines for h in hosts_of(_load(s))]
    if fmt in ("graphml", "json"):
        _wrote(output, graphml(topos) if fmt == "graphml" else node_link_json(topos))
        return None
    drawn, names = dotr.group_identical(topos)
    return dotr.topology_dot(drawn, names=names)


def _flow_dot(flow_file: str, machines: list[str], probe: list[str], view: str, hardware: str) -> str:
    """The flow's diagram (on its machines, or its pipeline) as Graphviz source."""
    from topomap.cli.bind import bind_probes, read_flow_file  # start-up: only a flow needs the flow stage
    from topomap.flow import map_flow
    from topomap.render.flowdot import flow_on_machine_dot, flow_pipeline_dot

    flow = read_flow_file(flow_file, "render")
    bound = bind_probes(flow, probe, machines)
    fmap = map_flow(flow, bound)
    return flow_pipeline_dot(fmap) if view == "pipeline" else flow_on_machine_dot(fmap, bound, hardware)


def _wrote(output: str, data: bytes) -> None:
    """Write a diagram (``-``: stdout) and say so on stderr, whatever its format."""
    _write(output, data)
    wrote(output)


_INSTALL_GRAPHVIZ = "install Graphviz (apt-get install graphviz / brew install graphviz / conda install graphviz)"
_BINARY = frozenset({"png", "pdf"})


def _target(output: str, fmt: str) -> str:
    """The output as a message names it: ``-o OUT.svg``, or ``-o - --format svg``."""
    return f"-o - --format {fmt}" if output == "-" else f"-o {output}"


def _output_format(output: str, fmt_opt: str | None, formats: tuple[str, ...], what: str) -> str:
    """The format to write: the output's suffix, or ``--format`` (default: the first of ``formats``)
    for stdout (``-o -``) and a file with no suffix. Binary data to a terminal is refused."""
    listed = ", .".join(formats)
    if not output:
        raise TopomapError("render needs -o OUT", hint=f"-o OUT.{formats[0]} (or .{listed}); -o - for stdout")
    want = fmt_opt.lower().lstrip(".") if fmt_opt else None
    if output == "-":
        fmt = want or formats[0]
    else:
        suffix = output_format(output, want or formats[0])  # a device such as /dev/null: the default
        if want and suffix and suffix != want:
            raise TopomapError(
                f"-o {output} names .{suffix} but --format is {fmt_opt}", hint=f"-o OUT.{want}, or leave out --format"
            )
        fmt = suffix or want or ""
    if fmt not in formats:
        if want is not None and fmt == want:
            raise TopomapError(f"--format {fmt_opt}: {what} {', '.join(formats)}", hint=f"--format {formats[0]}")
        raise TopomapError(f"-o {output}: unknown format {fmt!r}", hint=f"name the file .{listed}")
    # the device's own answer, not the layout's (cli.wiring.on_terminal): FORCE_COLOR must not refuse a pipe
    if output == "-" and fmt in _BINARY and sys.stdout.isatty():
        raise TopomapError(
            f"-o - --format {fmt}: {fmt} is binary and stdout is a terminal",
            hint=f"redirect it (> out.{fmt}), pipe it, or write a file: -o OUT.{fmt}",
        )
    return fmt


def _check_render_options(output: str, fmt_opt: str | None, flow_file: str | None, view: str, hardware: str) -> str:
    """The output format, once every option is known good, before anything is drawn or written."""
    fmt = _output_format(output, fmt_opt, RENDER_FORMATS, "a diagram is drawn as")
    if view not in ("machine", "pipeline"):
        raise TopomapError(
            f"--view {view!r}: expected machine or pipeline", hint="--view machine (the default) or pipeline"
        )
    if hardware not in ("used", "all"):
        raise TopomapError(
            f"--hardware {hardware!r}: expected used or all", hint="--hardware used (the default) or all"
        )
    if view == "pipeline" and flow_file is None:
        raise TopomapError(
            "--view pipeline draws a flow's logic and needs a flow file",
            hint="topomap render FLOW.yaml --view pipeline -o OUT.svg",
        )
    return fmt


def _dot_missing(output: str, text: str) -> TopomapError:
    """Graphviz is not installed: the Graphviz source goes to OUT.dot where no file is; nothing is replaced."""
    if output == "-":
        return TopomapError(
            "Graphviz `dot` not found: cannot draw the diagram on stdout",
            hint=_INSTALL_GRAPHVIZ + "; or write the Graphviz source with -o - --format dot",
        )
    dot_path = str(Path(output).with_suffix(".dot"))
    if os.path.lexists(dot_path):
        return TopomapError(
            f"Graphviz `dot` not found: cannot write {output}; {dot_path} exists and was left as it was",
            hint=_INSTALL_GRAPHVIZ + "; or write the Graphviz source with -o OTHER.dot",
        )
    _write(dot_path, text.encode())
    return TopomapError(f"Graphviz `dot` not found: wrote {dot_path} instead of {output}", hint=_INSTALL_GRAPHVIZ)
