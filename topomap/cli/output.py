"""Writing what a command produces — stdout, a file, a device — and what happens when it cannot be
written: a closed pipe (`| head`) ends quietly, a full disk is one line and exit 2.

No command line library here: ``topomap --version`` uses this module before (and without) typer.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

from topomap import __version__
from topomap.base.errors import TopomapError
from topomap.base.safetext import json_bytes, safe_text

# Errors writing an output (stdout or a file): the disk, not topomap, is at fault.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EPIPE, errno.EROFS})


def print_version() -> None:
    print(f"topomap {__version__}")


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


def write_output(path: str, data: bytes, inputs: Iterable[str]) -> None:
    """Write an output: ``-`` is stdout; a file atomically (never half-written); a character
    device such as /dev/null (or a link to one) directly, since a rename would replace the device.
    A FIFO, a block device, a folder, or a file that is also one of ``inputs`` is refused. JSON on
    stdout (a snapshot, a run record) has its control, bidirectional and separator characters written
    as ``\\u`` escapes (:func:`topomap.base.safetext.json_bytes`): the same document, safe on a terminal."""
    if path == "-":
        write_stdout(json_bytes(data) if data[:64].lstrip()[:1] == b"{" else data)
        return
    p = Path(path)
    try:
        st: os.stat_result | None = os.stat(p)
    except FileNotFoundError:
        st = None
    except (OSError, ValueError) as err:
        raise _unwritable(path, err) from err
    if st is not None:
        refuse_input(path, st, inputs)
        _refuse_special(path, st)
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
    # Imported here for start-up: tempfile is not needed by commands that write to stdout only.
    from topomap.files import atomic

    try:
        atomic.atomic_write(p, data)
    except OSError as err:
        raise _unwritable(path, err) from err


def _refuse_special(path: str, st: os.stat_result) -> None:
    """A FIFO (a write would block until a reader comes), a folder, a socket or a block device."""
    if stat.S_ISFIFO(st.st_mode):
        raise TopomapError(f"{path}: is a FIFO (named pipe), not a file", hint="write to stdout with -o - instead")
    if stat.S_ISDIR(st.st_mode):
        raise TopomapError(f"{path}: is a folder", hint="name a file inside it")
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISCHR(st.st_mode):
        raise TopomapError(
            f"{path}: is not a regular file or a character device; refusing to write to it",
            hint="write to a regular file, or to stdout with -o -",
        )


def say(line: str) -> None:
    """One line on stderr, made safe for a terminal (:func:`topomap.base.safetext.safe_text`: a file
    name or a host name in it cannot clear, retitle or split the screen)."""
    print(safe_text(line), file=sys.stderr)


def write_text(text: str) -> None:
    """A text view on stdout, made safe for a terminal; its newlines and tabs (a table's layout) stay."""
    sys.stdout.write(safe_text(text, keep="\n\t"))


def wrote(output: str | None, detail: str = "", command: str = "") -> None:
    """Say on stderr what was written: ``wrote FILE`` (``: detail``). Stdout (``-``, or None where
    stdout is the default) is no file and is not announced: only the detail is said, as
    ``topomap COMMAND: detail``, and with no detail nothing is."""
    if output not in (None, "-"):
        say(f"wrote {output}" + (f": {detail}" if detail else ""))
    elif detail:
        say(f"topomap {command}: {detail}" if command else f"topomap: {detail}")


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


def write_stdout(data: bytes) -> None:
    sys.stdout.flush()
    out = getattr(sys.stdout, "buffer", None)
    if out is None:  # a text-only stream (tests capture stdout this way)
        sys.stdout.write(data.decode())
    else:
        out.write(data)
    sys.stdout.flush()


def refuse_input(path: str, st: os.stat_result, inputs: Iterable[str]) -> None:
    """An output path that is also an input (the same regular file) is refused. An input given
    as ``NAME=FILE`` is compared by its FILE too."""
    if not stat.S_ISREG(st.st_mode):
        return
    for arg in inputs:
        for candidate in {arg, arg.partition("=")[2]} - {""}:
            try:
                other = os.stat(candidate)
            except (OSError, ValueError):
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                raise TopomapError(
                    f"{path}: is also an input of this command ({candidate}); refusing to overwrite it",
                    hint="write the output to another file",
                )


def finish(code: int) -> NoReturn:
    """Exit, after making sure stdout reached its reader: a full disk or a closed pipe is one
    line and exit 2, not Python's "Exception ignored" and exit 120."""
    try:
        sys.stdout.flush()
    except OSError as err:
        output_failed(err, code)
    if code == 130:  # interrupted: at once, or Python, having seen the KeyboardInterrupt, ends itself by
        with contextlib.suppress(OSError, ValueError):  # SIGINT after the exit (status -2, not 130)
            sys.stderr.flush()
        os._exit(130)
    sys.exit(code)


def output_failed(err: OSError, code: int) -> NoReturn:
    """stdout could not be written: a closed pipe (`| head`) exits ``code`` quietly, as the reader
    left; anything else (a full disk) is one line and exit 2."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the unwritable buffer drains into /dev/null
    if err.errno == errno.EPIPE:
        sys.exit(code)
    with contextlib.suppress(OSError):
        say(f"topomap: error: cannot write output ({err.strerror or err})")
    sys.exit(2)
