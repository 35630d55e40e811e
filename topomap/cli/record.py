"""`topomap record -- COMMAND…`, and the run-file branches of show, render and diff."""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from topomap.cli import _console, _guard, _print_json, _write, app
from topomap.errors import TopomapError
from topomap.units import fmt_seconds

_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s)?\s*$")


def parse_interval(text: str) -> float:
    """ "0.2s", "200ms", "0.5" (seconds) → seconds; between 10 ms and 1 hour."""
    m = _INTERVAL.match(text)
    if not m:
        raise TopomapError(f"--interval {text!r}: expected a duration like 0.2s or 200ms")
    value = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
    if not 0.01 <= value <= 3600:
        raise TopomapError(f"--interval {text!r}: must be between 10ms and 3600s")
    return value


def _live_line(elapsed: float, mem: list[tuple[str, int | None, int | None]]) -> None:
    gib = 2**30
    cards = "  ".join(
        f"{cid} {used / gib:.1f}/{total / gib:.0f} GiB" if used is not None and total else f"{cid} ?"
        for cid, used, total in mem
    )
    line = f"\rtopomap record: {elapsed:7.1f} s  {cards or 'no GPU sampled'}"
    sys.stderr.write(line[:200] + "\x1b[K")
    sys.stderr.flush()


@app.command(
    "record",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@_guard
def record_cmd(
    command: Annotated[list[str] | None, typer.Argument(help="The command to run, after --.")] = None,
    output: Annotated[str | None, typer.Option("-o", "--output", help="Run record to write (JSON).")] = None,
    interval: Annotated[str, typer.Option("--interval", help="Sampling interval: 0.2s, 200ms.")] = "0.2s",
    label: Annotated[str | None, typer.Option("--label", help="A name for this run (e.g. the arrangement).")] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="A JSON summary on stdout after the command's own output.")
    ] = False,
) -> None:
    """Run a command (after --) and sample what each card and the host used; exit with the command's status.

    topomap record -o run.json -- python train.py. Writes run-<UTC time>.json without -o. Read the
    record with show, render and diff (two records: which arrangement did better)."""
    from topomap.record import encode_run
    from topomap.record.runner import RecordOptions, record

    if not command:
        raise TopomapError("record needs a command", hint="topomap record -o run.json -- python train.py")
    seconds = parse_interval(interval)
    path = output or f"run-{dt.datetime.now(dt.timezone.utc):%Y%m%d-%H%M%S}.json"
    if Path(path).parent and not Path(path).parent.exists():
        raise TopomapError(f"-o {path}: folder {Path(path).parent} does not exist")
    live = sys.stderr.isatty()
    run = record(command, RecordOptions(interval_s=seconds, label=label, on_sample=_live_line if live else None))
    if live:
        sys.stderr.write("\r\x1b[K")
    _write(path, encode_run(run))
    gpu = (
        f"{len(run.gpus)} card(s) sampled" if run.sampling.gpu_sampled else (run.sampling.gpu_note or "no GPU sampled")
    )
    print(
        f"topomap record: wrote {path}: exit {run.exit_status} after {run.duration_s:.2f} s, "
        f"{run.sampling.samples} samples, {gpu}; recorder CPU {fmt_seconds(run.sampling.recorder_cpu_s)} "
        f"({run.sampling.overhead_pct}% of one CPU over the run, measured)",
        file=sys.stderr,
    )
    if json_out:
        _print_json(
            {
                "output": path,
                "exit_status": run.exit_status,
                "duration_s": run.duration_s,
                "samples": run.sampling.samples,
                "gpu_sampled": run.sampling.gpu_sampled,
                "gpus": len(run.gpus),
            }
        )
    raise typer.Exit(run.exit_status if run.exit_status is not None else 1)


def show_run(path: str, json_out: bool) -> None:
    """`topomap show RUN.json`."""
    from topomap.record import load_run

    run = load_run(path)
    if json_out:
        from topomap.record.model import run_to_builtins

        _print_json(run_to_builtins(run))
        return
    from topomap.render.record_view import run_view

    _console().print(run_view(run))


def render_run(path: str, output: str) -> None:
    """`topomap render RUN.json -o timeline.svg|png|pdf`."""
    from topomap.record import load_run
    from topomap.render.timeline import FORMATS, timeline_image

    fmt = Path(output).suffix.lower().lstrip(".")
    if not output or fmt not in FORMATS:
        raise TopomapError(f"-o {output or '(none)'}: a run is drawn as .{', .'.join(FORMATS)}")
    _write(output, timeline_image(load_run(path), fmt))
    print(f"wrote {output}", file=sys.stderr)


def diff_run_files(a: str, b: str, outputs: tuple[str, str] | None, tolerance: float | None, json_out: bool) -> None:
    """`topomap diff RUN_A.json RUN_B.json [--outputs DIR_A DIR_B] [--tolerance T]`.

    Exit 0 when both runs succeeded (and produced the same outputs, when checked), else 1.
    """
    from topomap.record import is_run_file, load_run
    from topomap.record.compare import diff_runs
    from topomap.record.outputs import check_outputs

    for p in (a, b):
        if not is_run_file(p):
            raise TopomapError(f"{p}: not a run record; diff compares two runs or two snapshots, not one of each")
    if tolerance is not None and tolerance < 0:
        raise TopomapError(f"--tolerance {tolerance}: must be 0 or more")
    names = (Path(a).stem, Path(b).stem)
    if names[0] == names[1]:
        names = (f"A ({names[0]})", f"B ({names[1]})")
    check = check_outputs(outputs[0], outputs[1], tolerance) if outputs else None
    result = diff_runs(load_run(a), load_run(b), names, check)
    if json_out:
        _print_json(result.to_json())
    else:
        from topomap.render.record_view import run_diff_view

        _console().print(run_diff_view(result))
    raise typer.Exit(0 if result.ok else 1)
