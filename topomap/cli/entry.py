"""Running the command line: load the module of the command asked for, run it, and turn what the
command line library raises into topomap's one-line errors and exit codes."""

from __future__ import annotations

import errno
import importlib
from typing import Any, NoReturn

import typer

from topomap.cli.output import finish, output_failed
from topomap.cli.wiring import _state, app, report_error

# Which module registers each command, in the order `topomap --help` lists them. A run imports
# only the module of the command it names, so typer builds one group of commands, not all of
# them (start-up); `--help`, a typo or no command at all load every module. A new command adds
# its line here; tests/cli/test_cli.py checks this table against what the modules register.
COMMANDS = {
    "probe": "snapshots",
    "import": "snapshots",
    "show": "snapshots",
    "matrix": "snapshots",
    "merge": "snapshots",
    "schema": "snapshots",
    "cluster": "cluster",
    "map": "flows",
    "render": "flows",
    "plan": "plan",
    "diff": "verdicts",
    "check": "verdicts",
    "measure": "measure",
    "attach": "measure",
    "record": "record",
    "report": "report",
    "nccl": "nccl",
    "place": "place",
    "lots": "lots",
}
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))


def load_commands(argv: list[str]) -> typer.Typer:
    """The app with the commands ``argv`` may run: the named command's module, else all of them.
    topomap's own options (--debug, --version, --help) take no value, so the first argument that
    is not an option names the command."""
    name = next((arg for arg in _own_args(argv) if not arg.startswith("-")), None)
    for module in (COMMANDS[name],) if name in COMMANDS else COMMAND_MODULES:
        importlib.import_module(f"topomap.cli.{module}")
    return app


def full_app() -> typer.Typer:
    """The app with every command registered."""
    return load_commands([])


def _own_args(argv: list[str]) -> list[str]:
    """topomap's own arguments: those before a bare ``--`` (after it: the command `record` runs)."""
    return argv[: argv.index("--")] if "--" in argv else argv


def run(argv: list[str]) -> NoReturn:
    """Run the command line ``argv``: usage mistakes are one line too (typer would draw a box);
    --help and --version that cannot be written are one line and exit 2, a closed pipe exits
    quietly, as for every command."""
    argv = debug_first(argv)
    _state["json"] = "--json" in _own_args(argv)
    commands = load_commands(argv)
    try:
        # No arguments at all: the help, on stdout, exit 0 (as no_args_is_help does, without its error).
        rc = commands(args=argv or ["--help"], standalone_mode=False)
    except typer.Exit as err:
        finish(err.exit_code)
    except typer.Abort:
        finish(130)
    except OSError as err:  # --help or --version writing (a command's own errors are caught by its guard)
        output_failed(err, 0)
    except SystemExit as err:
        cause = err.__context__  # typer turns a closed pipe while writing --help into a bare exit 1
        if isinstance(cause, OSError) and cause.errno == errno.EPIPE:
            output_failed(cause, 0)
        raise
    except Exception as err:
        if not _is_usage_error(err):
            raise
        _usage_error(err)
    finish(rc if isinstance(rc, int) else 0)


def debug_first(argv: list[str]) -> list[str]:
    """``--debug`` anywhere among topomap's own arguments (``topomap map x --debug``) moved before
    the command, where typer reads it: the same effect wherever it is written. After a bare ``--``
    it belongs to the command `record` runs, and `record` without ``--`` runs what follows its
    first argument as given."""
    own = _own_args(argv)
    command = next((arg for arg in own if not arg.startswith("-")), None)
    if "--debug" not in own or (command == "record" and "--" not in argv):
        return argv
    rest = [arg for arg in own if arg != "--debug"]
    return ["--debug", *rest, *argv[len(own) :]]


def _is_usage_error(err: Exception) -> bool:
    """A usage mistake (a missing argument, an unknown option, a bad value): click's UsageError,
    which typer raises outside standalone mode. typer does not export the class (since 0.26 its
    click is vendored under a private name; typer.BadParameter is one of its subclasses), so the
    error is known by the interface click documents for it: exit code 2 and format_message()."""
    return getattr(err, "exit_code", None) == 2 and callable(getattr(err, "format_message", None))


def _usage_error(err: Any) -> NoReturn:
    """The mistake as one line on stderr with the command's --help as the hint (JSON on stdout too
    under --json); exit 2."""
    ctx = getattr(err, "ctx", None)
    cmd = ctx.command_path if ctx is not None else "topomap"
    report_error(err.format_message(), 2, f"{cmd} --help", _state["json"])
    finish(2)
