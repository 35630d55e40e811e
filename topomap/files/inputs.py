"""Safe reading of the files users hand topomap: pastes, XML, YAML, snapshot JSON.

Every loader reads through here (issue 14), so that:

- a FIFO, a character device (``/dev/zero``, ``/dev/urandom``), a socket or a directory is refused
  before anything is read (opened non-blocking, then checked with ``fstat`` on the open file, so
  nothing can be swapped in between);
- a file over the size cap is refused before it is read, and at most ``cap + 1`` bytes are ever
  read (a file that grows while read is still cut off);
- text arrives as ``str`` whatever the editor saved: UTF-8 with or without a byte-order mark,
  UTF-16 or UTF-32 with a byte-order mark (what Windows PowerShell ``>`` writes), and UTF-16
  without one; a NUL byte elsewhere means a binary file and is refused with its line.

Errors are one line naming the file, raised as the caller's :class:`TopomapError` subclass.
"""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

from topomap.base.errors import TopomapError
from topomap.base.units import fmt_mib
from topomap.files.budget import charge

# Caps, in bytes. The largest real topology file seen is ~40 KB; a plain merged cluster of 1,024
# hosts is 83 MB and a packed one of 10,000 hosts 66 MB (snapshots were allowed 256 MiB until issue 36:
# every maximum must decode in under 1 GiB); hand-written flow/requirements files are a few KB.
MAX_TOPOLOGY_BYTES = 64 * 1024 * 1024
MAX_SNAPSHOT_BYTES = 128 * 1024 * 1024
MAX_YAML_BYTES = 8 * 1024 * 1024

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _kind_of(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe) that may never end"
    if stat.S_ISCHR(mode):
        return "a character device that may never end"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bytes(path: str | Path, what: str, max_bytes: int, exc: type[TopomapError] = TopomapError) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; ``what`` names the file kind in errors."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as err:
        raise exc(f"{p}: cannot read ({err.strerror or err})") from err
    try:
        st = os.fstat(fd)
        kind = _kind_of(st.st_mode)
        if kind is not None:
            raise exc(f"{p}: is {kind}, not a {what}", hint="save the output to a regular file first")
        if st.st_size > max_bytes:
            raise exc(
                f"{p}: {fmt_mib(st.st_size)} is larger than any {what} ({fmt_mib(max_bytes)} max)",
                hint="is this the right file?",
            )
        charge(p, st.st_size, what, exc)  # the command's budget of large files, before any is read
        # One read of the whole size (one buffer, not chunks joined: a 250 MB file cost 500 MB), then
        # small reads for whatever the file grew by or a short read left.
        chunks: list[bytes] = [os.read(fd, min(st.st_size, max_bytes) + 1)]
        left = max_bytes + 1 - len(chunks[0])
        while left > 0 and chunks[-1]:
            chunk = os.read(fd, min(left, 1 << 20))
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as err:
        raise exc(f"{p}: cannot read ({err.strerror or err})") from err
    finally:
        os.close(fd)
    data = chunks[0] if len(chunks) == 1 or not any(chunks[1:]) else b"".join(chunks)
    if len(data) > max_bytes:
        raise exc(f"{p}: grew past {fmt_mib(max_bytes)} while being read; larger than any {what}")
    return data


def read_head(path: str | Path, n: int) -> bytes:
    """The first ``n`` bytes of a regular file (b"" for anything else or on any error): enough to tell
    what a file is without reading it whole."""
    try:
        fd = os.open(Path(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError):
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        chunks: list[bytes] = []
        left = n
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _looks_utf16(data: bytes) -> str | None:
    """UTF-16 without a byte-order mark: ASCII text with every other byte NUL."""
    head = data[:512]
    if len(head) < 4:
        return None
    even, odd = head[0::2], head[1::2]
    if odd.count(0) >= len(odd) * 0.9 and even.count(0) == 0:
        return "utf-16-le"
    if even.count(0) >= len(even) * 0.9 and odd.count(0) == 0:
        return "utf-16-be"
    return None


def decode_text(data: bytes, origin: str, exc: type[TopomapError] = TopomapError) -> str:
    """Bytes → text: BOM-marked UTF-8/16/32, bare UTF-16, else UTF-8 (undecodable bytes replaced)."""
    encoding = "utf-8"
    body = data
    for bom, enc in _BOMS:
        if data.startswith(bom):
            encoding, body = enc, data[len(bom) :]
            break
    else:
        guess = _looks_utf16(data)
        if guess is not None:
            encoding = guess
    text = body.decode(encoding, errors="replace")
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise exc(
            f"{origin}:{line}: binary content (a NUL byte), expected text",
            hint="save the tool's output as plain text (UTF-8)",
        )
    return text


def read_text(path: str | Path, what: str, max_bytes: int, exc: type[TopomapError] = TopomapError) -> str:
    """A regular text file of at most ``max_bytes``, decoded (see :func:`decode_text`)."""
    return decode_text(read_bytes(path, what, max_bytes, exc), str(path), exc)


def recode_utf8(data: bytes, origin: str, exc: type[TopomapError] = TopomapError) -> bytes:
    """Bytes as plain UTF-8 for a byte-level parser (JSON): unchanged unless they carry a BOM or
    are UTF-16; a NUL byte is refused as in :func:`decode_text`."""
    if any(data.startswith(bom) for bom, _ in _BOMS) or _looks_utf16(data) is not None:
        return decode_text(data, origin, exc).encode("utf-8")
    return data
