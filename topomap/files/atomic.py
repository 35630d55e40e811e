"""Writing an output file all at once, so a reader never sees it half-written.

The data goes to a temporary file beside the output, is flushed to the disk (``fsync``), and is
renamed over the output; the folder is then flushed too, so after a power loss the output is the old
file or the new one, never a mix. Two topomap processes writing the same output at once each write
their own temporary file: the last rename wins and the output is always one whole file.

Overwriting keeps what the user set up (issue 24): the existing file's permission bits (and its
owner and group where this process may set them: as root, or a group the user is in), and an output
path that is a symbolic link is written through to the file it points to, as ``cp`` and editors do.

Temporary files are named ``.NAME.topomap-tmp-HOST-PID-RANDOM`` (HOST: 8 hex digits of a hash of
this machine's name). A process killed during a write (``kill -9``, a lost node) leaves one behind;
the next write into the same folder from the same machine removes those whose PID is no longer
running. A leftover of a live process, or of another machine sharing the folder, is left alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import zlib
from pathlib import Path

#: What every temporary file's name holds between the output's name and the writer's id.
TMP_MARK = ".topomap-tmp-"
_LEFTOVER = re.compile(r"^\..*\.topomap-tmp-([0-9a-f]{8})-(\d+)-[0-9a-f]{8}$", re.S)


def _host_tag() -> str:
    """8 hex digits naming this machine, so that a folder shared between machines (NFS) is swept only
    of this machine's leftovers: a PID means nothing on another machine."""
    # crc32 of the node name: os and zlib are loaded anyway; hashlib and socket cost ~9 ms of start-up
    return f"{zlib.crc32(os.uname().nodename.encode('utf-8', 'surrogateescape')):08x}"


def _alive(pid: int) -> bool:
    """Whether a process with this PID runs on this machine (another user's process counts)."""
    if pid <= 0:
        return True  # not a PID we wrote: never remove on its account
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def sweep_leftovers(folder: str | Path) -> list[str]:
    """Remove the temporary files that writers on this machine, no longer running, left in ``folder``;
    returns their names. Files that are not ours, or not regular files, are never touched."""
    tag = _host_tag()
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if TMP_MARK not in entry.name:
            continue
        m = _LEFTOVER.match(entry.name)
        if m is None or m.group(1) != tag or _alive(int(m.group(2))):
            continue
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed.append(entry.name)
    return removed


def _temp_name(name: str, folder: str) -> str:
    """``.NAME.topomap-tmp-HOST-PID-RANDOM``, within the folder's longest name (a long NAME is
    shortened, whole UTF-8 characters, so an output name near the limit can still be written)."""
    try:
        name_max = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    tail = f"{TMP_MARK}{_host_tag()}-{os.getpid()}-{os.urandom(4).hex()}"
    stem = os.fsencode(name)[: max(1, name_max - len(tail) - 1)].decode("utf-8", "ignore") or "out"
    return f".{stem}{tail}"


def _target(path: Path) -> Path:
    """Where the bytes go: the output itself, or for a symbolic link the file it points to."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _keep_owner_and_mode(fd: int, old: os.stat_result | None) -> None:
    """Give the new file the old one's permission bits and, where allowed, its owner and group; a new
    output gets the usual 0666 less the umask."""
    if old is None:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        return
    if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(PermissionError):  # only root may give a file away; a group of ours is fine
            os.fchown(fd, old.st_uid, old.st_gid)
    os.fchmod(fd, stat.S_IMODE(old.st_mode))  # after chown, which clears set-id bits


def _sync_folder(folder: str) -> None:
    """Flush the folder's entry for the rename to the disk (not every file system can)."""
    with contextlib.suppress(OSError):
        dfd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def atomic_write(path: str | Path, data: bytes) -> None:
    """Write a file all at once: a temporary file beside it, flushed, then renamed over it. Never
    half-written; mode, owner and a symbolic link of an existing output are kept (module docstring)."""
    p = _target(Path(path))
    folder = str(p.parent or Path("."))
    sweep_leftovers(folder)
    try:
        old: os.stat_result | None = os.stat(p)
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):
        old = None
    tmp = os.path.join(folder, _temp_name(p.name, folder))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            _keep_owner_and_mode(fd, old)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _sync_folder(folder)
