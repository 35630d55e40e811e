"""`topomap record -- COMMAND…`, and the run-file branches of show, render and diff.

Every command module is imported when the CLI starts (to register its commands), so each command
imports the stages it drives inside its body: start-up stays fast for the commands that do not run.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import stat
import sys
import tempfile
from typing import TYPE_CHECKING, Annotated

import typer

from topomap.base.errors import TopomapError
from topomap.base.safetext import safe_text
from topomap.base.units import DURATION_SPELLINGS, fmt_seconds, parse_duration
from topomap.cli.output import say, wrote
from topomap.cli.wiring import _console, _current_context, _guard, _print_json, _refuse_input, _write, app

if TYPE_CHECKING:
    from topomap.record import Run

#: The notes of what the command left that `record` says on stderr as well (how they were found stays in
#: the record).
_SAID = frozenset({"left-running", "ended", "killed", "escaped"})

#: What to install for `record`: psutil (the host side) and nvidia-ml-py (the cards), the `record` extra.
RECORD_HINT = "pip install -e '.[record]' in the topomap checkout, or pip install 'topomap[record]'"


def parse_interval(text: str) -> float:
    """ "0.2s", "200ms", "1min", "0.5" (a bare number is seconds) → seconds; between 10 ms and 1 hour.
    The spellings are every duration's (:mod:`topomap.base.units`)."""
    value = parse_duration(text, bare_seconds=True)
    if value is None:
        raise TopomapError(
            f"--interval {text[:40]!r}: not a duration",
            hint=f"e.g. 0.2s, 200ms or 1min, {DURATION_SPELLINGS} (a bare number is seconds)",
        )
    if not 0.01 <= value <= 3600:
        raise TopomapError(f"--interval {text[:40]!r}: must be between 10ms and 3600s")
    return value


def check_output(path: str) -> None:
    """Refuse, before the command runs, an output the record could not be written to at its end:
    a folder, a FIFO, a block device, a character device that refuses writes (/dev/full), a path
    under a regular file, a missing folder, or a folder where no file can be created. The final
    write stays atomic (``_write``); this only makes sure a long run is not recorded for nothing."""
    if path == "-":
        return
    where = f"-o {path}"
    if path.endswith(os.sep):
        raise TopomapError(f"{where}: names a folder", hint="name a file, e.g. run.json")
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise TopomapError(
            f"{where}: a part of the path above the file is not a folder", hint="name a file inside a folder"
        ) from None
    except OSError as err:
        raise TopomapError(f"{where}: cannot write ({err.strerror or err})", hint="choose another path") from err
    if st is not None and not stat.S_ISREG(st.st_mode):
        _check_special(where, path, st)
        return
    if st is not None:
        _refuse_input(path, st)
    _check_folder(where, os.path.dirname(path) or ".")


def _check_special(where: str, path: str, st: os.stat_result) -> None:
    """An existing output that is not a regular file: only a character device that takes writes."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise TopomapError(f"{where}: is a folder", hint="name a file inside it")
    if stat.S_ISFIFO(mode):
        raise TopomapError(f"{where}: is a FIFO (named pipe), not a file", hint="write to a regular file")
    if not stat.S_ISCHR(mode):
        raise TopomapError(f"{where}: is not a regular file or a character device", hint="write to a regular file")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
        try:
            os.write(fd, b"")  # /dev/full refuses even an empty write
        finally:
            os.close(fd)
    except OSError as err:
        raise TopomapError(f"{where}: cannot write ({err.strerror or err})", hint="write to a regular file") from err


def _check_folder(where: str, folder: str) -> None:
    """The output's folder exists, is a folder, and takes a new file (the atomic write puts a
    temporary file beside the output): tried for real, so permissions, ACLs and read-only mounts all count."""
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        raise TopomapError(f"{where}: folder {folder} does not exist", hint="create it first") from None
    except NotADirectoryError:
        raise TopomapError(
            f"{where}: a part of the path above the file is not a folder", hint="name a file inside a folder"
        ) from None
    except OSError as err:
        raise TopomapError(f"{where}: cannot use folder {folder} ({err.strerror or err})") from err
    if not stat.S_ISDIR(st.st_mode):
        raise TopomapError(f"{where}: {folder} is not a folder", hint="name a file inside a folder")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".topomap-check.", dir=folder)
    except OSError as err:
        reason = "read-only file system" if err.errno == errno.EROFS else (err.strerror or str(err))
        raise TopomapError(
            f"{where}: cannot create a file in folder {folder} ({reason})", hint="choose a folder you can write to"
        ) from err
    os.close(fd)
    os.unlink(tmp)


def _live_line(elapsed: float, mem: list[tuple[str, int | None, int | None]]) -> None:
    gib = 2**30
    cards = "  ".join(
        f"{cid} {used / gib:.1f}/{total / gib:.0f} GiB" if used is not None and total else f"{cid} ?"
        for cid, used, total in mem
    )
    line = f"\rtopomap record: {elapsed:7.1f} s  {safe_text(cards) or 'no GPU sampled'}"
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
    interval: Annotated[
        str, typer.Option("--interval", help="Sampling interval: 0.2s, 200ms, 1min (a bare number is seconds).")
    ] = "0.2s",
    label: Annotated[str | None, typer.Option("--label", help="A name for this run (e.g. the arrangement).")] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="A JSON summary on stdout after the command's own output.")
    ] = False,
    leave_running: Annotated[
        bool,
        typer.Option(
            "--leave-running",
            help="Leave the processes the command leaves behind running (named in the record) instead of "
            "ending them (SIGTERM, then SIGKILL after 2 s).",
        ),
    ] = False,
) -> None:
    """Run a command and sample what each card and the host used.

    `topomap record -o run.json -- python train.py`; exits with the command's status. Writes
    run-<UTC time>.json without -o. Read the record with show, render and diff (two records: which
    arrangement did better) and plan --observed."""
    try:
        from topomap.record.runner import RecordOptions, record_run
    except ImportError as err:  # psutil is the `record` extra (issue 33 item 8); reading records needs none
        if err.name != "psutil":
            raise
        raise TopomapError("record needs psutil, which is not installed here", hint=RECORD_HINT) from None

    if not command:
        raise TopomapError("record needs a command", hint="topomap record -o run.json -- python train.py")
    seconds = parse_interval(interval)
    path = output or f"run-{dt.datetime.now(dt.timezone.utc):%Y%m%d-%H%M%S}.json"
    check_output(path)  # before the command runs: a record that cannot be written is refused up front
    # stderr's own answer, not on_terminal's (stdout's, for laying out views): the live line redraws
    # itself with "\r\x1b[K", which only a real terminal shows as one line; FORCE_COLOR or TTY_COMPATIBLE
    # set for colours in a CI log must not fill that log with a line per sample
    live = sys.stderr.isatty()
    opts = RecordOptions(
        interval_s=seconds, label=label, on_sample=_live_line if live else None, leave_running=leave_running
    )
    recorded = record_run(command, opts)
    run = recorded.run
    if live:
        sys.stderr.write("\r\x1b[K")
    run = _write_record(path, run)
    gpu = (
        f"{len(run.gpus)} card(s) sampled" if run.sampling.gpu_sampled else (run.sampling.gpu_note or "no GPU sampled")
    )
    for note in recorded.tree_notes:  # what the command left, and what was done about it
        if note.kind in _SAID:
            say(f"topomap record: {note.text}")
    say(
        f"topomap record: wrote {path}: exit {run.exit_status} after {run.duration_s:.2f} s, "
        f"{run.sampling.samples} samples, {gpu}; recorder CPU {fmt_seconds(run.sampling.recorder_cpu_s)} "
        f"({run.sampling.overhead_pct}% of one CPU over the run, measured)"
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


def _write_record(path: str, run: Run) -> Run:
    """Write the record; when the disk is full (it filled during the run), a smaller record that fits
    instead, saying so. With no record written at all, one line that keeps the command's exit status."""
    from topomap.record import encode_run
    from topomap.record.thin import smaller_records

    try:
        _write(path, encode_run(run))
        return run
    except TopomapError as err:
        if not isinstance(err.__cause__, OSError) or err.__cause__.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        full = err
    for smaller, what in smaller_records(run):
        try:
            _write(path, encode_run(smaller))
        except TopomapError:
            continue
        say(f"topomap record: the disk is full: wrote a partial record ({what})")
        return smaller
    raise TopomapError(
        f"{full} — no record written; the command exited {run.exit_status}", hint="free some space on that disk"
    )


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


def render_run(path: str, output: str, fmt: str) -> None:
    """`topomap render RUN.json -o timeline.svg|png|pdf` (``-o -``: stdout, in ``fmt``)."""
    from topomap.record import load_run
    from topomap.render.timeline import timeline_image

    _write(output, timeline_image(load_run(path), fmt))
    wrote(output)


def _refuse_snapshot_options(outputs: tuple[str, str] | None, tolerance: float | None) -> None:
    """Options of `diff` that mean nothing for two runs are refused, not ignored: --flow and --match
    compare snapshots; --tolerance only applies to --outputs."""
    from topomap.record.outputs import check_tolerance

    check_tolerance(tolerance)
    if tolerance is not None and outputs is None:
        raise TopomapError(
            "--tolerance applies to --outputs only", hint="diff RUN_A RUN_B --outputs DIR_A DIR_B --tolerance 1e-6"
        )
    ctx = _current_context()
    if ctx is None:
        return
    for param, flag in (("flow_opt", "--flow"), ("match", "--match")):
        source = ctx.get_parameter_source(param) if param in ctx.params else None
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
            raise TopomapError(
                f"{flag} applies to two snapshots, not to two runs", hint="leave out " + flag + " when comparing runs"
            )


def diff_run_files(a: str, b: str, outputs: tuple[str, str] | None, tolerance: float | None, json_out: bool) -> None:
    """`topomap diff RUN_A.json RUN_B.json [--outputs DIR_A DIR_B] [--tolerance T]`.

    Exit 0 when both runs succeeded (and produced the same outputs, when checked), else 1.
    """
    from topomap.files.kind import is_run_file
    from topomap.record import load_run
    from topomap.record.compare import diff_runs, run_names
    from topomap.record.outputs import check_outputs

    for p in (a, b):
        if not is_run_file(p):
            raise TopomapError(f"{p}: not a run record; diff compares two runs or two snapshots, not one of each")
    _refuse_snapshot_options(outputs, tolerance)
    run_a, run_b = load_run(a), load_run(b)  # a bad record is refused before the folders are read
    names = run_names(run_a, a, run_b, b)
    check = check_outputs(outputs[0], outputs[1], tolerance) if outputs else None
    result = diff_runs(run_a, run_b, names, check)
    if json_out:
        _print_json(result.to_json())
    else:
        from topomap.render.record_view import run_diff_view

        _console().print(run_diff_view(result))
    raise typer.Exit(0 if result.ok else 1)
