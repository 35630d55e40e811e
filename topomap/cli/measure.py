"""Commands that put measured figures in a snapshot: measure (on the GPU machine) and attach (imported).

Every command module is imported when the CLI starts (to register its commands), so each command
imports the stages it drives inside its body: start-up stays fast for the commands that do not run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from topomap.base.errors import TopomapError
from topomap.base.units import BINARY_LETTERS
from topomap.cli.output import say, wrote
from topomap.cli.wiring import JsonOpt, _console, _err, _guard, _load, _print_json, _write, app, bounded

if TYPE_CHECKING:
    from topomap.measure.run import MeasureOptions


def _progress_bar() -> tuple[Any, Any]:
    """A rich progress bar on stderr and the callback that drives it."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("measuring {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("", total=None)

    def update(done: int, total: int, label: str) -> None:
        bar.update(task, completed=done, total=total, description=label)

    return bar, update


def _options(
    quick: bool, size: str | None, reps: int | None, samples: int | None, timeout: float | None, pairs: str | None
) -> MeasureOptions:
    """The measure options the command line asks for, over the defaults (or --quick's)."""
    from topomap.measure.run import MeasureOptions, parse_pairs, parse_size

    opts = MeasureOptions.quick() if quick else MeasureOptions()
    if size is not None:
        opts.size_bytes = parse_size(size)
    if reps is not None:
        opts.repetitions = reps
    if samples is not None:
        opts.samples = samples
    if timeout is not None:
        opts.timeout_s = timeout
    if pairs is not None:
        opts.pairs = parse_pairs(pairs)
    return opts


#: How --size is written: every size's spellings, a bare number as nvbandwidth's -b, a bare letter as nccl-tests'.
SIZE_HELP = (
    f"Bytes per copy, e.g. 64MiB, 256MB (default 64MiB): a bare number is MiB, as nvbandwidth's -b; {BINARY_LETTERS}."
)


@app.command()
@_guard
def measure(
    snapshot: Annotated[
        str | None, typer.Argument(help="Snapshot of this machine (default: probe it now).", show_default=False)
    ] = None,
    output: Annotated[str | None, typer.Option("-o", "--output", help="Write the measured snapshot here.")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="32 MiB, 4 copies × 3 samples, own NUMA node only.")] = False,
    pairs: Annotated[str | None, typer.Option("--pairs", help="Only these GPU pairs, e.g. 0-1,2-3.")] = None,
    size: Annotated[str | None, typer.Option("--size", help=SIZE_HELP)] = None,
    reps: Annotated[
        int | None, typer.Option("--reps", help="Copies per sample (default 8).", callback=bounded(1, 1_000_000))
    ] = None,
    samples: Annotated[
        int | None, typer.Option("--samples", help="Timed samples (default 5).", callback=bounded(1, 10_000))
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Seconds before a test counts as hung.", callback=bounded(0, 86400, "s", True)),
    ] = None,
    table: Annotated[bool, typer.Option("--table", help="Also print every measurement with its spread.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Measure copy bandwidth and latency between this machine's GPUs.

    Verified copy bandwidth and latency per GPU and GPU pair, added to the snapshot (needs a GPU).

    Exit 0 measured (findings recorded); 2 bad input; 3 no GPU CUDA can use, or cuda-bindings
    not installed (the `probe` extra).
    """
    from topomap.measure.run import NoGpuError, plan
    from topomap.measure.run import measure as run_measure
    from topomap.model.codec import encode_checked, to_builtins
    from topomap.render.bandwidth_matrix import measurements_table, render_bandwidth_matrix
    from topomap.render.text import visible

    opts = _options(quick, size, reps, samples, timeout, pairs)
    given = _load(snapshot) if snapshot is not None else None
    from topomap.probe.bindings import PROBE_HINT, missing_bindings, missing_sentence

    missing = missing_bindings()
    if "cuda-bindings" in missing:  # the copies run through cuda.bindings (the `probe` extra)
        _err(missing_sentence(missing, "measure", "nothing can be measured"), 3, PROBE_HINT)
    if given is None:
        from topomap.probe import probe

        given = probe().snapshot
    snap = given
    try:
        plan(snap, opts)  # refuse before the progress bar starts
        bar, update = _progress_bar()
        with bar:
            out = run_measure(snap, opts, progress=update)
    except NoGpuError as err:
        _err(str(err), 3, err.hint)  # under --json also the JSON object on stdout
    data = encode_checked(out.snapshot, output or "stdout")
    if output:
        _write(output, data)
    if json_out:
        _print_json(to_builtins(out.snapshot))
    elif not output:
        _write("-", data)
    else:
        console = _console()
        console.print(render_bandwidth_matrix(out.snapshot), markup=False)
        if table:
            console.print(measurements_table(out.snapshot))
        for f in out.snapshot.findings:
            if f.source == "measure":
                console.print(visible(f"[{f.severity}] {f.subject}: {f.text}"), markup=False)
    wrote(
        output,
        f"{len(out.snapshot.measurements)} measurement(s), {out.jobs} test(s), {out.failed} failed; used at "
        f"most {out.memory_per_gpu_bytes // 2**20} MiB per GPU and {out.pinned_host_bytes // 2**20} MiB of "
        "pinned host memory at a time",
        "measure",
    )


@app.command()
@_guard
def attach(
    snapshot: Annotated[str, typer.Argument(help="Snapshot of the machine the figures were measured on.")],
    measurements: Annotated[
        str,
        typer.Argument(help="nvbandwidth output (text or -j JSON), p2pBandwidthLatencyTest, or nccl-tests results."),
    ],
    output: Annotated[str, typer.Option("-o", "--output", help="Write the snapshot with the figures here.")],
    json_out: JsonOpt = False,
) -> None:
    """Add measured bandwidth figures or nccl-tests results to a snapshot.

    The figures measured by nvbandwidth (text or -j JSON) or CUDA's p2pBandwidthLatencyTest are
    matched to the snapshot's GPUs; show, matrix --bandwidth, render and check then use them.
    nccl-tests results are kept per run; matrix --bandwidth and report show them beside the
    expected busbw (topomap nccl SNAP --perf)."""
    from topomap.cli.given import name_what_it_is
    from topomap.cli.nccl_perf import attach_tests, is_nccl_tests
    from topomap.importers.bandwidth import attach as attach_figures
    from topomap.importers.bandwidth import join_notes, load_measurements
    from topomap.model.codec import encode_checked

    if is_nccl_tests(measurements):
        attach_tests(snapshot, measurements, output, json_out)
        return
    snap = _load(snapshot)
    try:
        imported = load_measurements(measurements)
    except TopomapError as err:  # a flow, requirements file or run record is named as such
        name_what_it_is(err, measurements, "attach")
        raise
    new = attach_figures(snap, imported)
    _write(output, encode_checked(new, output))
    notes = join_notes(snap, imported)
    say(
        f"wrote {output}: {len(imported.measurements)} {imported.tool} figure(s) attached"
        + (f"; {'; '.join(notes)}" if notes else "")
        + (f"; not imported: {'; '.join(imported.skipped)}" if imported.skipped else "")
    )
    if json_out:
        _print_json(
            {
                "output": output,
                "tool": imported.tool,
                "measurements": len(imported.measurements),
                "notes": notes,
                "not_imported": imported.skipped,
            }
        )
