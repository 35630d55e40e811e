"""What every command module uses: the typer app, the shared options, the error guard (one line on
stderr, an exit code, JSON under ``--json``), and printing and writing outputs.

Exit codes: 0 ok; 1 a verdict of "different"/"fail"; 2 bad input (one line on stderr);
3 nothing could be probed; 4 an internal error (traceback with --debug).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from topomap.base.errors import TopomapError
from topomap.base.safetext import json_text, safe_text
from topomap.cli.output import WRITE_ERRNOS, os_hint, print_version, refuse_input, write_output, write_text
from topomap.files.budget import command_budget

if TYPE_CHECKING:
    from topomap.model.snapshot import Snapshot

F = TypeVar("F", bound=Callable[..., Any])

#: A line that starts an item of a list in a docstring ("- …", "• …", "1. …"): kept on its own line.
_ITEM = re.compile(r"^\s*(?:[-*•] |\d+[.)] )")


def reflow(doc: str) -> str:
    """A command's docstring as its --help shows it: the lines of each paragraph joined (the source's
    hard line breaks would wrap raggedly at any other width), blank-line paragraph breaks and list
    items kept; a paragraph marked ``\\b`` (click's "keep as written") is left as it is."""
    out = []
    for para in inspect.cleandoc(doc).split("\n\n"):
        if para.startswith("\b"):
            out.append(para)
            continue
        lines: list[str] = []
        for line in para.split("\n"):
            if lines and not _ITEM.match(line):
                lines[-1] += " " + line.strip()
            else:
                lines.append(line.rstrip())
        out.append("\n".join(lines))
    return "\n\n".join(out)


class _App(typer.Typer):
    """topomap's typer app: each command's help is its docstring reflowed (:func:`reflow`), in this
    one place every command is registered through."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        register = super().command

        def decorator(fn: F) -> F:
            if kwargs.get("help") is None and fn.__doc__:
                kwargs["help"] = reflow(fn.__doc__)
            return register(*args, **kwargs)(fn)

        return decorator


app = _App(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Show what your data travels over on a GPU server: host memory, GPU link or network.",
)

# debug: --debug was given; json: --json was among topomap's own arguments (for a usage error,
# which comes before any command runs); ctx: the context of the command running now, or None;
# lot_type: the running command's --lot-type (every machine it loads is filled from that entry).
_state: dict[str, Any] = {"debug": False, "json": False, "ctx": None, "lot_type": None}

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
# A merged cluster's views say what its alike hosts share once, then the hosts that differ (issue 34):
AllOpt = Annotated[bool, typer.Option("--all", help="A merged cluster: every host in full, not its groups.")]
HostOpt = Annotated[str | None, typer.Option("--host", help="A merged cluster: this host alone, in full.")]
ProbeOpt = Annotated[
    list[str] | None,
    typer.Option("--probe", help="Bind a flow host to a snapshot: NAME=FILE (repeatable; FILE alone for one host)."),
]

FilesArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="The flow file (YAML), then snapshots or raw topology files for its hosts: FILE for a one-host "
        "flow, NAME=FILE per host. Files are told apart by their content, in any order.",
        show_default=False,
    ),
]
FlowOpt = Annotated[
    str | None, typer.Option("--flow", help="The flow file, named explicitly (the same as giving it first).")
]
LotTypeOpt = Annotated[
    str | None,
    typer.Option(
        "--lot-type",
        help="A catalogue entry (topomap lots), e.g. aws/p4de.24xlarge: fills what each given paste or snapshot "
        "does not carry, each such fact labelled 'catalogue'; a fact the paste carries is kept.",
    ),
]


def _number_text(value: float) -> str:
    """A number as an option error quotes it: ``1e+400`` → ``inf``; 310 digits cut to ``100000… (310 digits)``."""
    text = str(value) if isinstance(value, int) else f"{value:g}"
    digits = text.lstrip("-")
    return f"{text[: len(text) - len(digits) + 6]}… ({len(digits)} digits)" if len(digits) > 16 else text


def _bound(x: float) -> str:
    """A bound in words: 1000000 → "1,000,000", 1e12 → "1e+12"."""
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e9 else f"{x:g}"


def bounded(low: float, high: float, unit: str = "", above: bool = False) -> Callable[[Any], Any]:
    """A typer option callback: the option's number (int or float; None, not given, passes) is finite and
    from ``low`` (above it with ``above``) to ``high``, else a one-line usage error naming the option
    and the range (issue 36 item 8: a 310-digit ``--observed-units`` overflowed a float, exit 4)."""
    unit_text = f" {unit}" if unit else ""
    span = f"above {_bound(low)}{unit_text} up to" if above else f"from {_bound(low)} to"
    span += f" {_bound(high)}{unit_text}"

    def check(value: Any) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, float) and not math.isfinite(value):
            raise typer.BadParameter(f"{_number_text(value)} is not a finite number ({span})")
        if value < low or value > high or (above and value == low):
            raise typer.BadParameter(f"{_number_text(value)} is outside the range: {span}")
        return value

    return check


def _version(value: bool) -> None:
    if value:
        print_version()  # a full disk or closed pipe is handled by the entry point, as for --help
        raise typer.Exit(0)


@app.callback()
def _main(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks (also after the command: topomap map FLOW --debug).")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    _state["debug"] = debug


def _current_context() -> typer.Context | None:
    """The typer context of the command running now (its arguments, and where each came from)."""
    ctx: typer.Context | None = _state["ctx"]  # a click context typer passed to the guard
    return ctx


def _json_mode() -> bool:
    """True when the running command was given ``--json`` (its errors are then JSON too)."""
    ctx = _current_context()
    if ctx is not None:
        for param in ctx.command.params:
            if "--json" in getattr(param, "opts", ()) and ctx.params.get(param.name or ""):
                return True
    return _state["json"] is True


def _err(message: str, code: int = 2, hint: str | None = None) -> NoReturn:
    """Report an error (see :func:`report_error`), under ``--json`` in JSON too; exit ``code``."""
    report_error(message, code, hint, _json_mode())
    raise typer.Exit(code)


def report_error(message: str, code: int, hint: str | None, as_json: bool) -> None:
    """One line on stderr, ``topomap: error: MESSAGE (hint: HINT)``; with ``as_json`` also
    ``{"error", "hint", "exit"}`` on stdout, for a caller that reads only JSON.

    The choke point of every error: whatever the message quotes (a name from the input, a path, an
    option's value, a library's own words such as msgspec's "Object contains unknown field `…`") is
    written safe for a terminal (:func:`topomap.base.safetext.safe_text`), and the JSON faithfully,
    with the same characters as ``\\u`` escapes (:func:`topomap.base.safetext.json_text`)."""
    line = f"topomap: error: {safe_text(message)}"
    if hint:
        line += f" (hint: {safe_text(hint)})"
    if as_json:
        with contextlib.suppress(OSError):
            sys.stdout.write(json_text(json.dumps({"error": message, "hint": hint, "exit": code})) + "\n")
            sys.stdout.flush()
    print(line, file=sys.stderr)


_CTX = "topomap_typer_context"  # the keyword the guard asks typer to pass the context as


def _guard(fn: F) -> F:
    """TopomapError → one line, exit 2; a full disk or closed pipe → one line, exit 2;
    anything else → one line, exit 4. Under ``--json`` the line is also JSON on stdout.
    With ``--debug`` the traceback comes first; the exit status stays the same.

    The command also gets its context, which it keeps in ``_state`` while it runs: typer passes
    a `typer.Context` to a parameter annotated so, here one added to the signature typer reads."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _state["lot_type"] = kwargs.get("lot_type")  # read by _load; each command that takes machines has it
        with _running(kwargs.pop(_CTX, None)), command_budget():
            try:
                _refuse_nul(kwargs)
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
                if err.errno not in WRITE_ERRNOS:
                    _err(f"internal error: {type(err).__name__}: {err}", 4, "rerun with --debug for the traceback")
                hint = "check the free space of the disk written to"
                if err.errno == errno.EPIPE:
                    hint = "the program reading the output stopped"
                _err(f"cannot write output ({err.strerror or err})", 2, hint)
            except Exception as err:
                _traceback()
                _err(f"internal error: {type(err).__name__}: {err}", 4, "rerun with --debug for the traceback")

    sig = inspect.signature(fn, eval_str=True)
    ctx_param = inspect.Parameter(_CTX, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)
    sig = sig.replace(parameters=[*sig.parameters.values(), ctx_param])
    wrapper.__signature__ = sig  # type: ignore[attr-defined]
    # The annotations evaluated once, here (typer would evaluate the strings again), in a new dict:
    # functools.wraps shares the command's own.
    wrapper.__annotations__ = {name: p.annotation for name, p in sig.parameters.items()}
    return wrapper  # type: ignore[return-value]


def _refuse_nul(values: dict[str, Any]) -> None:
    """A NUL character in an argument or option value: no file name or value can hold one (the OS refuses
    it: "ValueError: embedded null byte", exit 4 before issue 36), so it is one line naming the parameter."""
    ctx = _current_context()
    for name, value in values.items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, str) and "\0" in item:
                param = next((p for p in ctx.command.params if p.name == name), None) if ctx is not None else None
                shown = "/".join(getattr(param, "opts", ())) if param is not None else name
                raise TopomapError(
                    f"{shown or name}: {item[:40]!r} holds a NUL character, which no file name or value can",
                    hint="check how the command line was built (a NUL from find -print0 or xargs -0?)",
                )


@contextlib.contextmanager
def _running(ctx: object) -> Iterator[None]:
    _state["ctx"] = ctx
    try:
        yield
    finally:
        _state["ctx"] = None


def _traceback() -> None:
    """Under ``--debug``: the traceback of the exception being handled, on stderr."""
    if _state["debug"]:
        import traceback  # only under --debug: traceback costs start-up

        traceback.print_exc(file=sys.stderr)


def on_terminal() -> bool:
    """Whether stdout is a terminal, for laying out a text view: the one answer every command asks.
    It is rich's (``isatty``; ``TTY_COMPATIBLE=1`` or a non-empty ``FORCE_COLOR`` force a terminal,
    ``TTY_COMPATIBLE=0`` refuses one), so the layout and the colours rich gives agree.

    Two questions are the device's, not the layout's, and ask ``isatty`` of the stream itself: whether
    binary bytes would reach a terminal (`render -o -`), and whether `record` may redraw its live line
    on stderr with cursor controls. ``FORCE_COLOR`` asks for colours in a CI log or a pager; it must not
    refuse a PNG piped to a file nor fill a log with carriage returns."""
    # Imported here for start-up: rich is for terminal views, not for --json or file outputs.
    from rich.console import Console

    return Console().is_terminal


class _Screen:
    """Where a command's text view goes. ``width`` is the terminal's, or None when the output is piped
    or redirected (:func:`on_terminal`): then nothing is wrapped, cut or padded (:func:`_print_wide`), so
    `grep` and a narrow viewer get every name and number whole. On a terminal every table that does not
    fit becomes blocks (:func:`topomap.render.whole.whole`), words are never folded and no line is
    cropped: a line longer than the terminal is the terminal's to wrap, whole. Every text view is
    printed through it: a command never asks itself whether it is on a terminal."""

    def __init__(self) -> None:
        # Imported here for start-up: rich is for terminal views, not for --json or file outputs.
        from rich.console import Console

        self._console = Console(soft_wrap=False, highlight=False)
        self.width: int | None = self._console.width if on_terminal() else None

    def print(self, *renderables: Any, markup: bool | None = None, **_layout: Any) -> None:
        """Print each renderable (``crop`` and other layout keywords are this class's to decide)."""
        if self.width is None:
            _print_wide(*renderables, markup=markup)
            return
        from topomap.render.whole import Safe, whole  # start-up: terminal views only

        for r in renderables:
            laid = Safe(whole(self._console, r, self.width))
            self._console.print(laid, crop=False, overflow="ignore", markup=markup)


def _console() -> _Screen:
    """The one console of the text views: see :class:`_Screen`."""
    return _Screen()


def _print_json(value: object) -> None:
    """The JSON printer of command results: a typed result (msgspec Struct, dataclass) or plain
    values, made JSON values by msgspec and laid out as every --json output is (indent 2,
    non-ASCII escaped). Strict: a non-finite number (NaN, Infinity) is no JSON, and means a figure
    escaped every input check; it fails here (an internal error) before anything is printed, where
    msgspec's own encoder would write null. A snapshot is printed by its own encoder instead
    (`topomap.model.codec.encode_snapshot`, through `_write`)."""
    # Imported here for start-up: --help and usage errors print no JSON result.
    import msgspec

    sys.stdout.write(
        json_text(json.dumps(msgspec.to_builtins(value, enc_hook=_words), indent=2, allow_nan=False)) + "\n"
    )


def _words(value: object) -> object:
    """A value msgspec does not encode: a reason made a :class:`~topomap.base.notes.Note` (a str with its
    template and subjects) is its words in JSON; anything else is a bug, refused."""
    if isinstance(value, str):
        return str.__str__(value)
    raise TypeError(f"no JSON for {type(value).__name__}")


def _load(path: str) -> Snapshot:
    """A snapshot, or any importable topology; a flow, requirements file, run record or
    measurements file in its place is named as such, with the command that reads it."""
    # Imported here for start-up: the loaders are for commands that read a snapshot.
    from topomap.cli.given import load_snapshot

    return load_snapshot(path, command_name(), _state["lot_type"])


def command_name() -> str:
    """The name of the command running now (``map``), for messages; ``topomap`` outside one."""
    ctx = _current_context()
    return (ctx.info_name if ctx is not None else None) or "topomap"


def _inputs() -> list[str]:
    """The running command's arguments other than its output: every string that may name a file."""
    ctx = _current_context()
    if ctx is None:
        return []
    found: list[str] = []
    for name, value in ctx.params.items():
        if name == "output":
            continue
        found += [arg for arg in (value if isinstance(value, (list, tuple)) else [value]) if isinstance(arg, str)]
    return found


def _write(path: str, data: bytes) -> None:
    """Write an output (``-`` is stdout) that is none of the running command's inputs; see
    :func:`topomap.cli.output.write_output`."""
    write_output(path, data, _inputs())


def _refuse_input(path: str, st: os.stat_result) -> None:
    """An output path that is also an input of the running command (same file) is refused."""
    refuse_input(path, st, _inputs())


def _print_wide(*renderables: object, markup: bool | None = None) -> None:
    """Piped or redirected: no wrapping, no truncation, no trailing blanks, so `grep` finds every full name."""
    from rich.console import Console  # start-up: rich is for terminal views only

    console = Console(width=100_000, soft_wrap=True, highlight=False, color_system=None)
    with console.capture() as cap:
        for r in renderables:
            console.print(r, markup=markup, crop=False)
    # Made safe before it is split: str.splitlines would also split at U+2028, U+0085 and the like.
    lines = safe_text(cap.get(), keep="\n\t").split("\n")
    if lines and not lines[-1]:
        lines.pop()
    write_text("".join(line.rstrip() + "\n" for line in lines))
