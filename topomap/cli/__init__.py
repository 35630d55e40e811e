"""The topomap command line: parse, call, print, exit codes — nothing else.

Exit codes: 0 ok; 1 a verdict of "different"/"fail"; 2 bad input (one line on stderr);
3 nothing could be probed; 4 an internal error (traceback with --debug).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from topomap import __version__
from topomap.errors import TopomapError

if TYPE_CHECKING:
    from topomap.model import Snapshot

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Show what your data travels over on a GPU server: host memory, GPU link or network.",
)

_state = {"debug": False}
F = TypeVar("F", bound=Callable[..., Any])

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _err(message: str, code: int = 2, hint: str | None = None) -> NoReturn:
    line = f"topomap: error: {message}"
    if hint:
        line += f" (hint: {hint})"
    print(line, file=sys.stderr)
    raise typer.Exit(code)


def _guard(fn: F) -> F:
    """Turn TopomapError into one line and exit 2; anything else into one line and exit 4."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except TopomapError as err:
            if _state["debug"]:
                raise
            _err(str(err), 2, err.hint)
        except KeyboardInterrupt:
            _err("interrupted", 130)
        except Exception as err:
            if _state["debug"]:
                raise
            _err(f"internal error: {type(err).__name__}: {err}", 4, "rerun with --debug for the traceback")

    return wrapper  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        print(f"topomap {__version__}")
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
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def _load(path: str) -> Snapshot:
    from topomap.importers import load_any

    return load_any(path)


def _write(path: str, data: bytes) -> None:
    from topomap.model import atomic_write

    p = Path(path)
    if p.parent and not p.parent.exists():
        raise TopomapError(f"{path}: folder {p.parent} does not exist")
    try:
        atomic_write(p, data)
    except OSError as err:
        raise TopomapError(f"{path}: cannot write ({err.strerror or err})") from err


ProbeOpt = Annotated[
    list[str] | None,
    typer.Option("--probe", help="Bind a flow host to a snapshot: NAME=FILE (repeatable; FILE alone for one host)."),
]


def _click_errors(name: str) -> tuple[type[BaseException], ...]:
    """An exception class from click, and from the copy of click newer typer versions vendor."""
    import importlib

    found: list[type[BaseException]] = []
    for mod in ("typer._click.exceptions", "click.exceptions"):
        try:
            cls = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            continue
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def main() -> None:
    """Entry point: usage mistakes are one line too (typer would draw a box)."""
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
        print(f"topomap: error: {err.format_message()} (hint: {cmd} --help)", file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(2)
    except exits as err:
        sys.exit(getattr(err, "exit_code", 0))
    except aborts:
        sys.exit(130)
    sys.exit(rc if isinstance(rc, int) else 0)


# Commands live in one module per group, registered on ``app`` when imported, in the order
# `topomap --help` lists them. A new command group adds its module name here.
COMMAND_MODULES = ("snapshots", "flows", "plan", "verdicts", "measure", "record", "report")


def _register() -> None:
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(f"topomap.cli.{name}")


_register()
