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
from topomap.cli.output import output_format
from topomap.cli.wiring import JsonOpt, ProbeOpt, _console, _guard, _load, _print_json, _print_wide, _write, app
from topomap.files.kind import is_run_file

RENDER_FORMATS = ("svg", "png", "pdf", "dot", "graphml", "json")


@app.command("map")
@_guard
def map_(
    flow_file: Annotated[str, typer.Argument(help="Flow file (YAML).")],
    probe: ProbeOpt = None,
    json_out: JsonOpt = False,
    all_: Annotated[
        bool, typer.Option("--all", help="Every arrow with its route and notes (default: summary).")
    ] = False,
) -> None:
    """The flow's arrows: medium (gpu-link / host-memory / network / local), route, class, bandwidth.

    One line per flow arrow (replicas and pairs bundled), the slowest arrow per medium and each
    distinct note once; --all for every arrow. Piped output is never wrapped or cut."""
    from topomap.cli.bind import bind_probes, read_flow_file  # lazy: start-up (module docstring)
    from topomap.flow import map_flow

    flow = read_flow_file(flow_file, "map")
    fmap = map_flow(flow, bind_probes(flow, probe or []))
    if json_out:
        _print_json({"flow": flow.name, "arrows": [a.to_json() for a in fmap.arrows], "summary": fmap.summary()})
        return
    from topomap.render.mapview import arrows_view, summary_view  # lazy: start-up

    view = arrows_view if all_ else summary_view
    if sys.stdout.isatty():  # a table when it fits the terminal, else one block per line (no word split)
        console = _console()
        console.print(view(fmap, console.width))
        return
    _print_wide(view(fmap))


@app.command()
@_guard
def render(
    snapshots: Annotated[
        list[str] | None,
        typer.Argument(help="Snapshots or raw files; with --flow, NAME=FILE bindings for the flow's hosts."),
    ] = None,
    output: Annotated[str, typer.Option("-o", "--output", help="OUT.svg, .png, .pdf, .dot, .graphml or .json")] = "",
    flow_file: Annotated[str | None, typer.Option("--flow", help="Draw this flow's arrows on the machine.")] = None,
    probe: ProbeOpt = None,
    view: Annotated[str, typer.Option("--view", help="machine (default) or pipeline (flow logic only)")] = "machine",
    hardware: Annotated[
        str,
        typer.Option("--hardware", help="with --flow: used (default, hardware the flow does not touch folded) or all"),
    ] = "used",
    json_out: JsonOpt = False,
) -> None:
    """Diagram of the topology: hosts, NUMA nodes, PCIe switches, GPUs, NICs, NVLink fabric; with
    --flow, the flow first: its steps in the boxes of their hosts, each flow arrow once (replicas
    bundled) with its label, medium, bandwidth and time; --hardware all adds the machines' trees."""
    _render(snapshots, output, flow_file, probe, view, hardware)
    if json_out:
        _print_json({"output": output, "format": output_format(output, "svg")})


def _render(
    snapshots: list[str] | None,
    output: str,
    flow_file: str | None,
    probe: list[str] | None,
    view: str,
    hardware: str,
) -> None:
    """Draw (and write) what `render` was asked for."""
    from topomap.graph import build  # lazy: start-up (module docstring)
    from topomap.render import dot as dotr
    from topomap.render.export import graphml, node_link_json

    if snapshots and len(snapshots) == 1 and flow_file is None and is_run_file(snapshots[0]):
        from topomap.cli.record import render_run  # start-up: the run views load only for a run record

        return render_run(snapshots[0], output)  # a run record: memory and utilisation over time
    fmt = _check_render_options(output, flow_file, view, hardware)
    if flow_file is None:
        if not snapshots:
            raise TopomapError(
                "render needs at least one snapshot (or --flow FLOW)", hint="topomap render SNAP.json -o OUT.svg"
            )
        from topomap.model.snapshot import hosts_of

        topos = [build(h) for s in snapshots for h in hosts_of(_load(s))]
        if fmt in ("graphml", "json"):
            return _wrote(output, graphml(topos) if fmt == "graphml" else node_link_json(topos))
        drawn, names = dotr.group_identical(topos)
        text = dotr.topology_dot(drawn, names=names)
    else:
        from topomap.cli.bind import (
            bind_probes,
            read_flow_file,  # start-up: only a flow needs the flow stage
        )
        from topomap.flow import map_flow
        from topomap.render.flowdot import flow_on_machine_dot, flow_pipeline_dot

        if fmt in ("graphml", "json"):
            raise TopomapError(
                f"-o {output}: a flow diagram is drawn as svg, png, pdf or dot",
                hint="-o OUT.svg; or leave out --flow for the machine as .graphml or .json",
            )
        flow = read_flow_file(flow_file, "render --flow")
        bound = bind_probes(flow, [*(snapshots or []), *(probe or [])])
        fmap = map_flow(flow, bound)
        text = flow_pipeline_dot(fmap) if view == "pipeline" else flow_on_machine_dot(fmap, bound, hardware)
    if fmt == "dot":
        return _wrote(output, text.encode())
    if shutil.which("dot") is None:  # checked before drawing too; nothing of the user's is replaced
        raise _dot_missing(output, text)
    try:
        data = dotr.pipe(text, fmt)
    except dotr.DotMissing as err:
        raise _dot_missing(output, text) from err
    _wrote(output, data)


def _wrote(output: str, data: bytes) -> None:
    """Write a diagram and say so, whatever its format."""
    _write(output, data)
    print(f"wrote {output}", file=sys.stderr)


_INSTALL_GRAPHVIZ = "install Graphviz (apt-get install graphviz / brew install graphviz / conda install graphviz)"


def _check_render_options(output: str, flow_file: str | None, view: str, hardware: str) -> str:
    """The output format, once every option is known good, before anything is drawn or written."""
    if not output:
        raise TopomapError("render needs -o OUT", hint=f"-o OUT.svg (or .{', .'.join(RENDER_FORMATS[1:])})")
    fmt = output_format(output, "svg")
    if fmt not in RENDER_FORMATS:
        raise TopomapError(f"-o {output}: unknown format {fmt!r}", hint=f"name the file .{', .'.join(RENDER_FORMATS)}")
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
            "--view pipeline draws a flow's logic and needs --flow FLOW",
            hint="topomap render --flow FLOW.yaml --view pipeline -o OUT.svg",
        )
    return fmt


def _dot_missing(output: str, text: str) -> TopomapError:
    """Graphviz is not installed: the Graphviz source goes to OUT.dot where no file is; nothing is replaced."""
    dot_path = str(Path(output).with_suffix(".dot"))
    if os.path.lexists(dot_path):
        return TopomapError(
            f"Graphviz `dot` not found: cannot write {output}; {dot_path} exists and was left as it was",
            hint=_INSTALL_GRAPHVIZ + "; or write the Graphviz source with -o OTHER.dot",
        )
    _write(dot_path, text.encode())
    return TopomapError(f"Graphviz `dot` not found: wrote {dot_path} instead of {output}", hint=_INSTALL_GRAPHVIZ)
