"""The topomap command line: parse, call, print, exit codes — nothing else.

- ``entry.py`` runs the command line: it loads the module of the command asked for and turns
  usage mistakes, exits and unwritable outputs into one line and an exit code;
- ``wiring.py`` holds the typer app, the shared options and the error guard every command uses;
- ``output.py`` writes stdout and files (atomically; a closed pipe or a full disk is one line);
- one module per group of commands: ``snapshots``, ``flows``, ``plan``, ``verdicts``, ``measure``,
  ``record``, ``report``.

Importing this package loads no command line library: ``topomap --version`` answers without typer.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from topomap.cli.output import finish, output_failed, print_version

if TYPE_CHECKING:
    from topomap.cli.wiring import app as app

__all__ = ["app", "main"]


def main() -> None:
    """Entry point (`topomap`, `python -m topomap`). Ctrl-C before a command's own guard is in place
    (while the command line library loads: the first half second) is one line and exit 130, as in a
    command, never a KeyboardInterrupt traceback (issue 36)."""
    try:
        _main()
    except KeyboardInterrupt:
        interrupted()


def interrupted() -> NoReturn:
    """Interrupted (SIGINT) outside a command: one line, exit 130 (128 + SIGINT), as a shell reports it."""
    with contextlib.suppress(OSError, ValueError):
        print("topomap: error: interrupted", file=sys.stderr)
    os._exit(130)  # at once: another Ctrl-C during shutdown would print a traceback again


def _main() -> None:
    argv = sys.argv[1:]
    if argv == ["--version"]:  # answered before typer loads: most of the start-up of any other command
        try:
            print_version()
        except OSError as err:
            output_failed(err, 0)
        finish(0)
    # Imported here for start-up: typer and the command asked for load only past --version.
    from topomap.cli.entry import run

    run(argv)


def __getattr__(name: str) -> Any:
    """``topomap.cli.app``: the typer app with every command registered (tests, embedding),
    loaded on first use so that importing this package stays light."""
    if name == "app":
        # Imported here for start-up: see the module docstring.
        from topomap.cli.entry import full_app

        return full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
