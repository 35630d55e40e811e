"""Command on a flow's work: plan."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from topomap.base.errors import TopomapError
from topomap.base.units import MAX_CARDS
from topomap.cli.output import output_format, wrote
from topomap.cli.wiring import FilesArg, FlowOpt, JsonOpt, LotTypeOpt, ProbeOpt, _console, _guard, _write, app, bounded

if TYPE_CHECKING:
    from topomap.flow.spec import Work

GANTT_FORMATS = ("svg", "png")
#: Units a recorded run may have processed (--observed-units): not the units a plan lays out (a run
#: may stand for millions of small ones), but a bound (a 310-digit count overflowed a float, issue 36).
MAX_OBSERVED_UNITS = 10**12


def _card_counts(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        counts = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise TopomapError(f"--cards {text!r}: not a list of card counts", hint="e.g. --cards 1,2,4") from None
    if not counts or any(k < 1 for k in counts):
        raise TopomapError(f"--cards {text!r}: card counts are 1 or more", hint="e.g. --cards 1,2,4")
    return counts


def _observed(path: str, units: int | None, work: Work | None) -> dict[str, Any]:
    """The figures of a recorded run, for the work's units (or ``units`` the run processed)."""
    from topomap.record import observed_for_plan  # here, not at the top: `topomap --help` stays fast
    from topomap.record.model import load_run

    if units is not None and units < 1:
        raise TopomapError(f"--observed-units {units}: a run processes 1 unit or more")
    n = units if units is not None else (len(work.units) if work is not None and work.units else 1)
    return observed_for_plan(load_run(path), n)


def _print_plan_json(doc: dict[str, object]) -> None:
    """Strict JSON: a number that is not finite is an error, never `Infinity` or `NaN` in the output.
    Written a piece at a time (topomap.cli.jsonout): --units lists millions of bars."""
    from topomap.cli.jsonout import write_json  # start-up: only plan --json writes one

    try:
        write_json(doc, sys.stdout)
    except ValueError as err:  # "Out of range float values are not JSON compliant"
        raise TopomapError(
            f"plan --json: a figure is not a finite number ({err})",
            hint="check the work block's durations, sizes and rates",
        ) from None


GanttOpt = Annotated[
    int | None,
    typer.Option(
        "--gantt",
        help="Draw the Gantt charts of this card count (default: the largest).",
        callback=bounded(1, MAX_CARDS),
    ),
]
ObservedUnitsOpt = Annotated[
    int | None,
    typer.Option(
        "--observed-units",
        help="Units the recorded run processed (default: the work's).",
        callback=bounded(1, MAX_OBSERVED_UNITS),
    ),
]


@app.command()
@_guard
def plan(
    files: FilesArg = None,
    flow_opt: FlowOpt = None,
    probe: ProbeOpt = None,
    cards: Annotated[
        str | None,
        typer.Option("--cards", help="Card counts to plan, e.g. 1,2,4 (default: 1 to every card of the lot)."),
    ] = None,
    gantt: GanttOpt = None,
    output: Annotated[
        str | None, typer.Option("-o", "--output", help="Also draw the Gantt charts: OUT.svg or .png")
    ] = None,
    observed: Annotated[
        str | None, typer.Option("--observed", help="A recorded run (topomap record): its unit time and memory peak.")
    ] = None,
    observed_units: ObservedUnitsOpt = None,
    margin: Annotated[
        float,
        typer.Option(
            "--margin",
            help="Name the fewest cards whose total is within this % of the fastest (default 10).",
        ),
    ] = 10.0,
    every_unit: Annotated[
        bool,
        typer.Option("--units", help="With --json: list every unit and every bar (default: a summary per card)."),
    ] = False,
    json_out: JsonOpt = False,
    lot_type: LotTypeOpt = None,
) -> None:
    """Plan a flow's work on 1…N cards: time, idle, speed-up, memory fit.

    `topomap plan FLOW [SNAP | NAME=SNAP …]`: the flow's `work:` block on 1…N cards — one card, even
    split, longest-first, shared queue, coordinated — parallel part, transfers, assembly, total,
    idle, speed-up and memory fit. A calculation."""
    # imported here, not at the top: every command module loads with the CLI, and the graph is slow
    from topomap.cli.bind import bind_probes, read_flow_file
    from topomap.cli.given import USAGE, flow_command_files
    from topomap.plan import plan_flow

    counts = _card_counts(cards)
    if not 0 <= margin <= 1000:
        raise TopomapError(f"--margin {margin:g}: a percentage from 0 to 1000", hint="e.g. --margin 10")
    if every_unit and not json_out:
        raise TopomapError("--units lists every unit in the JSON output", hint="add --json")
    if output is not None:
        fmt = output_format(output, "svg")
        if fmt not in GANTT_FORMATS:
            raise TopomapError(f"-o {output}: a Gantt chart is drawn as .svg or .png")
    given = flow_command_files(files, "plan")
    flow = read_flow_file(given.need_flow(flow_opt, USAGE["plan"]), "plan")
    seen = None if observed is None else (_observed(observed, observed_units, flow.work), observed)
    result = plan_flow(flow, bind_probes(flow, probe or [], given.machines), counts, seen)
    result.margin = margin / 100
    if gantt is not None and gantt not in {a.k for a in result.arrangements}:
        have = ", ".join(str(k) for k in sorted({a.k for a in result.arrangements}))
        raise TopomapError(f"--gantt {gantt}: no arrangement of {gantt} cards in this plan", hint=f"planned: {have}")
    if output is not None:
        from topomap.render.gantt import gantt_image  # matplotlib, only when drawing

        _write(output, gantt_image(result, output_format(output, "svg"), gantt))
        wrote(output)
    if json_out:
        _print_plan_json(result.to_json(every_unit))
        return
    from topomap.render.plan_view import plan_view

    console = _console()
    console.print(plan_view(result, gantt))
