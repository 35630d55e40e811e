"""The topomap command line: parse, call, print, exit codes — nothing else.

Exit codes: 0 ok; 1 a verdict of "different"/"fail"; 2 bad input (one line on stderr);
3 nothing could be probed; 4 an internal error (traceback with --debug).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from topomap import __version__
from topomap.base.errors import TopomapError

if TYPE_CHECKING:
    from topomap.model.snapshot import Snapshot

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Show what your data travels over on a GPU server: host memory, GPU link or network.",
)

_state = {"debug": False, "json": False}
F = TypeVar("F", bound=Callable[..., Any])

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _current_context() -> Any:
    """The click context of the running command (typer's vendored click, or click), or None."""
    import importlib

    for mod in ("typer._click.globals", "click.globals"):  # the first that imports is typer's click
        try:
            return importlib.import_module(mod).get_current_context(silent=True)
        except (ImportError, AttributeError):
            continue
    return None


def _json_mode() -> bool:
    """True when the running command was given ``--json`` (its errors are then JSON too)."""
    ctx = _current_context()
    if ctx is None:
        return _state["json"] is True
    for param in ctx.command.params:
        if "--json" in getattr(param, "opts", ()) and ctx.params.get(param.name or ""):
            return True
    return _state["json"] is True


def _err(message: str, code: int = 2, hint: str | None = None) -> NoReturn:
    """One line on stderr (and, under ``--json``, ``{"error", "hint", "exit"}`` on stdout); exit ``code``."""
    line = f"topomap: error: {message}"
    if hint:
        line += f" (hint: {hint})"
    if _json_mode():
        with contextlib.suppress(OSError):
            sys.stdout.write(json.dumps({"error": message, "hint": hint, "exit": code}) + "\n")
            sys.stdout.flush()
    print(line, file=sys.stderr)
    raise typer.Exit(code)


# Errors writing an output (stdout or a file): the disk, not topomap, is at fault.
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EPIPE, errno.EROFS}


def _guard(fn: F) -> F:
    """TopomapError → one line, exit 2; a full disk or closed pipe → one line, exit 2;
    anything else → one line, exit 4. Under ``--json`` the line is also JSON on stdout.
    With ``--debug`` the traceback comes first; the exit status stays the same."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except TopomapError as err:
            _traceback()
            _err(str(err), 2, err.hint or os_hint(err.__cause__))
        except KeyboardInterrupt:
            _err("interrupted", 130)
        except OSError as err:
            _traceback()
            if err.errno not in _WRITE_ERRNOS:
                _err(f"internal error: {type(err).__name__}: {err}", 4, "rerun with --debug for the traceback")
            hint = "the program reading the output stopped" if err.errno == errno.EPIPE else None
            _err(
                f"cannot write output ({err.strerror or err})", 2, hint or "check the free space of the disk written to"
            )
        except Exception as err:
            _traceback()
            _err(f"internal error: {type(err).__name__}: {err}", 4, "rerun with --debug for the traceback")

    return wrapper  # type: ignore[return-value]


def _traceback() -> None:
    """Under ``--debug``: the traceback of the exception being handled, on stderr."""
    if _state["debug"]:
        import traceback

        traceback.print_exc(file=sys.stderr)


def os_hint(cause: BaseException | None, writing: bool = False) -> str | None:
    """What to do about the OS error behind a read or write failure; None when there is none."""
    if not isinstance(cause, OSError):
        return None
    hints = {
        errno.ENOENT: "check the path (relative paths start from the current folder)",
        errno.EACCES: "check the permissions (ls -l)" + ("; or write elsewhere with -o" if writing else ""),
        errno.EPERM: "check the permissions (ls -l)" + ("; or write elsewhere with -o" if writing else ""),
        errno.ENAMETOOLONG: "a file name is at most 255 bytes: use a shorter name",
        errno.ENOTDIR: "a part of the path is a file, not a folder: check the path",
        errno.EISDIR: "name a file, not a folder",
        errno.ELOOP: "the path has a symbolic-link loop: check the links",
        errno.EROFS: "the file system is read-only: write elsewhere with -o",
    }
    if writing:
        hints[errno.ENOENT] = "check that the folder exists"
    return hints.get(cause.errno or 0)


def _version(value: bool) -> None:
    if value:
        print(f"topomap {__version__}")  # a full disk or closed pipe is handled in main(), as for --help
        raise typer.Exit(0)


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    _state["debug"] = debug


def _console() -> Any:
    from rich.console import Console

    return Console(soft_wrap=False, highlight=False)


def _print_json(data: Any) -> None:
    """Strict JSON on stdout: a non-finite number (NaN, Infinity) is no JSON, and means a figure
    escaped every input check; it fails here (an internal error) before anything is printed."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n")


def _load(path: str) -> Snapshot:
    from topomap.importers import load_any

    return load_any(path)


def _write(path: str, data: bytes) -> None:
    """Write an output: ``-`` is stdout; a file atomically (never half-written); a character
    device such as /dev/null (or a link to one) directly, since a rename would replace the device.
    A FIFO, a block device, a folder, or a file that is also an input of this command is refused."""
    if path == "-":
        _write_stdout(data)
        return
    p = Path(path)
    try:
        st: os.stat_result | None = os.stat(p)
    except FileNotFoundError:
        st = None
    except (OSError, ValueError) as err:
        raise _unwritable(path, err) from err
    if st is not None:
        _refuse_input(path, st)
        if stat.S_ISFIFO(st.st_mode):
            raise TopomapError(f"{path}: is a FIFO (named pipe), not a file", hint="write to stdout with -o - instead")
        if stat.S_ISDIR(st.st_mode):
            raise TopomapError(f"{path}: is a folder", hint="name a file inside it")
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISCHR(st.st_mode):
            raise TopomapError(
                f"{path}: is not a regular file or a character device; refusing to write to it",
                hint="write to a regular file, or to stdout with -o -",
            )
        if stat.S_ISCHR(st.st_mode):
            try:
                with open(p, "wb") as fh:
                    fh.write(data)
            except OSError as err:
                raise _unwritable(path, err) from err
            return
    if not p.parent.is_dir():
        raise TopomapError(
            f"{path}: folder {p.parent} does not exist",
            hint=f"create it first (mkdir -p {p.parent}) or write elsewhere with -o",
        )
    from topomap.files.atomic import atomic_write

    try:
        atomic_write(p, data)
    except OSError as err:
        raise _unwritable(path, err) from err


def output_format(path: str, default: str) -> str:
    """The format an output path names (its suffix, lower case). A character device such as
    ``/dev/null`` has no suffix and takes ``default``: the output is made, checked and thrown away."""
    fmt = Path(path).suffix.lower().lstrip(".")
    if not fmt and path != "-":
        with contextlib.suppress(OSError, ValueError):
            if stat.S_ISCHR(os.stat(path).st_mode):
                return default
    return fmt


def _unwritable(path: str, err: OSError | ValueError) -> TopomapError:
    """The one-line error for an output that could not be written, with what to do about it."""
    reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
    return TopomapError(f"{path}: cannot write ({reason})", hint=os_hint(err, writing=True))


def _write_stdout(data: bytes) -> None:
    sys.stdout.flush()
    out = getattr(sys.stdout, "buffer", None)
    if out is None:  # a text-only stream (tests capture stdout this way)
        sys.stdout.write(data.decode())
    else:
        out.write(data)
    sys.stdout.flush()


def _refuse_input(path: str, st: os.stat_result) -> None:
    """An output path that is also an input of the running command (same file) is refused."""
    ctx = _current_context()
    if ctx is None:
        return
    for name, value in ctx.params.items():
        if name == "output":
            continue
        for arg in value if isinstance(value, (list, tuple)) else [value]:
            if not isinstance(arg, str) or not arg:
                continue
            for candidate in {arg, arg.partition("=")[2]} - {""}:
                try:
                    other = os.stat(candidate)
                except (OSError, ValueError):
                    continue
                if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino) and stat.S_ISREG(st.st_mode):
                    raise TopomapError(
                        f"{path}: is also an input of this command ({candidate}); refusing to overwrite it",
                        hint="write the output to another file",
                    )


ProbeOpt = Annotated[
    list[str] | None,
    typer.Option("--probe", help="Bind a flow host to a snapshot: NAME=FILE (repeatable; FILE alone for one host)."),
]


def _click_errors(name: str) -> tuple[type[BaseException], ...]:
    """An exception class of the click typer runs on: the copy typer >= 0.26 vendors, else click
    itself (not both: importing click when typer does not use it costs start-up time)."""
    import importlib

    for mod in ("typer._click.exceptions", "click.exceptions"):
        try:
            cls = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            continue
        return (cls,) if isinstance(cls, type) and issubclass(cls, BaseException) else ()
    return ()


def _own_args(argv: list[str]) -> list[str]:
    """topomap's own arguments: those before a bare ``--`` (after it: the command `record` runs)."""
    return argv[: argv.index("--")] if "--" in argv else argv


def main() -> None:
    """Entry point: usage mistakes are one line too (typer would draw a box); --help and --version
    that cannot be written are one line and exit 2, a closed pipe exits quietly, as for every command."""
    _state["json"] = "--json" in _own_args(sys.argv[1:])
    no_args, usage = _click_errors("NoArgsIsHelpError"), _click_errors("UsageError")
    exits: tuple[type[BaseException], ...] = (typer.Exit, *_click_errors("Exit"))
    aborts: tuple[type[BaseException], ...] = (typer.Abort, *_click_errors("Abort"))
    try:
        rc = app(standalone_mode=False)
    except no_args as err:
        print(err.format_message())  # type: ignore[attr-defined]
        sys.exit(0)
    except usage as err:
        ctx = getattr(err, "ctx", None)
        cmd = ctx.command_path if ctx is not None else "topomap"
        message = err.format_message()  # type: ignore[attr-defined]
        if _state["json"]:
            with contextlib.suppress(OSError):
                print(json.dumps({"error": message, "hint": f"{cmd} --help", "exit": 2}))
        print(f"topomap: error: {message} (hint: {cmd} --help)", file=sys.stderr)
        _exit(2)
    except exits as err:
        _exit(getattr(err, "exit_code", 0))
    except aborts:
        _exit(130)
    except OSError as err:  # --help or --version writing (a command's own errors are caught by _guard)
        _output_failed(err, 0)
    except SystemExit as err:
        cause = err.__context__  # typer turns a closed pipe while writing --help into a bare exit 1
        if isinstance(cause, OSError) and cause.errno == errno.EPIPE:
            _output_failed(cause, 0)
        raise
    _exit(rc if isinstance(rc, int) else 0)


def _exit(code: int) -> NoReturn:
    """Exit, after making sure stdout reached its reader: a full disk or a closed pipe is one
    line and exit 2, not Python's "Exception ignored" and exit 120."""
    try:
        sys.stdout.flush()
    except OSError as err:
        _output_failed(err, code)
    sys.exit(code)


def _output_failed(err: OSError, code: int) -> NoReturn:
    """stdout could not be written: a closed pipe (`| head`) exits ``code`` quietly, as the reader
    left; anything else (a full disk) is one line and exit 2."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the unwritable buffer drains into /dev/null
    if err.errno == errno.EPIPE:
        sys.exit(code)
    with contextlib.suppress(OSError):
        print(f"topomap: error: cannot write output ({err.strerror or err})", file=sys.stderr)
    sys.exit(2)


# Commands live in one module per group, registered on ``app`` when imported, in the order
# `topomap --help` lists them. A new command group adds its module name here.
COMMAND_MODULES = ("snapshots", "flows", "plan", "verdicts", "measure", "record", "report")


def _register() -> None:
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(f"topomap.cli.{name}")


_register()
