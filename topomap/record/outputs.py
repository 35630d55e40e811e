"""Did two runs produce the same accepted outputs? Names, counts, and contents.

Files are matched by their path relative to each folder; only regular files are read (symbolic
links are not followed, devices, FIFOs and other file systems are skipped, each counted with
why). Equal bytes are the same. With a tolerance, two text files whose only differences are
numbers within it are the same too (for results whose last digits depend on summation order):
both texts are split into numbers and the text between them; the text must match exactly, each number pair must satisfy
``math.isclose(a, b, rel_tol=tol, abs_tol=tol)``.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, NoReturn

from topomap.base.errors import TopomapError

_NUMBER = re.compile(rb"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)\b", re.IGNORECASE)
_MAX_TEXT_BYTES = 256 * 2**20  # larger files are compared by bytes only
_CHUNK = 2**20


@dataclass
class FileDifference:
    name: str
    reason: str  # one line: where and how they differ


@dataclass
class OutputsCheck:
    dir_a: str
    dir_b: str
    tolerance: float | None
    files_a: int
    files_b: int
    missing_in_a: list[str] = field(default_factory=list)  # present in B only
    missing_in_b: list[str] = field(default_factory=list)
    identical: int = 0
    within_tolerance: list[str] = field(default_factory=list)
    different: list[FileDifference] = field(default_factory=list)
    skipped_a: dict[str, str] = field(default_factory=dict)  # not compared: path → why (a link, a device, …)
    skipped_b: dict[str, str] = field(default_factory=dict)

    @property
    def same(self) -> bool:
        return not (self.missing_in_a or self.missing_in_b or self.different)

    def summary(self) -> str:
        if self.same:
            tol = f", {len(self.within_tolerance)} within tolerance {self.tolerance:g}" if self.within_tolerance else ""
            return f"same outputs: {self.files_a} files in each, {self.identical} identical{tol}{self._skipped()}"
        parts = []
        if self.missing_in_b:
            parts.append(f"{len(self.missing_in_b)} missing in B")
        if self.missing_in_a:
            parts.append(f"{len(self.missing_in_a)} missing in A")
        if self.different:
            parts.append(f"{len(self.different)} different")
        return f"outputs differ: {', '.join(parts)} ({self.files_a} files in A, {self.files_b} in B){self._skipped()}"

    def _skipped(self) -> str:
        """What was not compared, and why (only regular files are)."""
        if not (self.skipped_a or self.skipped_b):
            return ""
        kinds = Counter([*self.skipped_a.values(), *self.skipped_b.values()])
        why = ", ".join(f"{n}× {kind}" for kind, n in sorted(kinds.items()))
        return f"; not compared: {len(self.skipped_a)} in A, {len(self.skipped_b)} in B ({why}; only regular files are)"


def check_tolerance(tolerance: float | None) -> None:
    """A tolerance is a finite number, 0 or more (NaN would accept nothing and say "beyond nan")."""
    if tolerance is not None and not (math.isfinite(tolerance) and tolerance >= 0):
        raise TopomapError(
            f"--tolerance {tolerance:g}: must be a finite number, 0 or more", hint="e.g. --tolerance 1e-6"
        )


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "symbolic link (not followed)"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _folder(root: Path) -> os.stat_result:
    try:
        top = os.stat(root)
    except FileNotFoundError:
        raise TopomapError(
            f"--outputs {root}: not a folder (it does not exist)", hint="give the two runs' output folders"
        ) from None
    except OSError as err:
        raise TopomapError(f"--outputs {root}: cannot read ({err.strerror or err})") from err
    if not stat.S_ISDIR(top.st_mode):
        raise TopomapError(f"--outputs {root}: not a folder", hint="give the two runs' output folders")
    return top


def _unreadable(side: str, err: OSError, what: str = "folder") -> NoReturn:
    raise TopomapError(
        f"--outputs {side}: cannot read {what} {err.filename} ({err.strerror or err})",
        hint="check its permissions, or compare folders you can read",
    ) from err


def _walk(root: Path, top: os.stat_result, side: str) -> tuple[dict[str, Path], dict[str, str]]:
    """The regular files under ``root`` by relative path, and what was skipped (path → why).

    Nothing is followed out of the folder: a symbolic link is listed as skipped, not read (one to
    /proc/self/mem or /etc/shadow is not the run's output), and so are FIFOs, sockets, devices and
    folders on another file system (/proc under `--outputs / /`)."""
    files: dict[str, Path] = {}
    skipped: dict[str, str] = {}

    def mode_of(p: Path) -> os.stat_result:
        try:
            return os.lstat(p)
        except OSError as err:
            _unreadable(side, err, "entry")

    for folder, dirs, names in os.walk(root, onerror=lambda err: _unreadable(side, err), followlinks=False):
        here = Path(folder)
        for d in sorted(dirs):
            st = mode_of(here / d)
            if stat.S_ISDIR(st.st_mode) and st.st_dev == top.st_dev:
                continue
            dirs.remove(d)
            why = "folder on another file system" if stat.S_ISDIR(st.st_mode) else _kind(st.st_mode)
            skipped[(here / d).relative_to(root).as_posix()] = why
        for name in names:
            p = here / name
            mode, rel = mode_of(p).st_mode, p.relative_to(root).as_posix()
            if stat.S_ISREG(mode):
                files[rel] = p
            else:
                skipped[rel] = _kind(mode)
    return dict(sorted(files.items())), dict(sorted(skipped.items()))


class _Reader:
    """Opens a listed file without following a link and without blocking, and checks it is still
    a regular file; a read error names the file (it is a read, never a write, that failed)."""

    def __init__(self, side: str) -> None:
        self.side = side

    def _fail(self, path: Path, err: OSError) -> NoReturn:
        raise TopomapError(
            f"--outputs {self.side}: cannot read {path} ({err.strerror or err})",
            hint="check its permissions, or leave it out of the output folder",
        ) from err

    def open(self, path: Path) -> BinaryIO:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(path, flags)
        except OSError as err:
            self._fail(path, err)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise TopomapError(f"--outputs {self.side}: {path} changed into something other than a regular file")
        return os.fdopen(fd, "rb")

    def chunks(self, path: Path) -> Iterator[bytes]:
        with self.open(path) as fh:
            while True:
                try:
                    block = fh.read(_CHUNK)
                except OSError as err:
                    self._fail(path, err)
                if not block:
                    return
                yield block

    def read(self, path: Path) -> bytes:
        return b"".join(self.chunks(path))


def _same_bytes(ra: _Reader, pa: Path, rb: _Reader, pb: Path) -> bool:
    """Equal contents, read a chunk at a time (never a whole large file in memory)."""
    ia, ib = ra.chunks(pa), rb.chunks(pb)
    buf_a = buf_b = b""
    while True:
        if not buf_a:
            buf_a = next(ia, b"")
        if not buf_b:
            buf_b = next(ib, b"")
        if not buf_a or not buf_b:
            return not buf_a and not buf_b
        n = min(len(buf_a), len(buf_b))
        if buf_a[:n] != buf_b[:n]:
            return False
        buf_a, buf_b = buf_a[n:], buf_b[n:]


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def compare_text(a: bytes, b: bytes, tol: float) -> str | None:
    """None when ``a`` and ``b`` agree within ``tol``; else where they first differ (line and values)."""
    pos_a = pos_b = 0
    ia, ib = _NUMBER.finditer(a), _NUMBER.finditer(b)
    while True:
        ma, mb = next(ia, None), next(ib, None)
        text_a = a[pos_a : ma.start() if ma else len(a)]
        text_b = b[pos_b : mb.start() if mb else len(b)]
        if text_a != text_b:
            same = next((i for i, (x, y) in enumerate(zip(text_a, text_b)) if x != y), min(len(text_a), len(text_b)))
            return f"line {_line_of(a, pos_a + same)}: text differs"
        if ma is None or mb is None:
            if ma is None and mb is None:
                return None
            return f"line {_line_of(a, pos_a)}: one file has more numbers"
        va, vb = float(ma.group()), float(mb.group())
        same_special = (math.isnan(va) and math.isnan(vb)) or va == vb
        if not same_special and not math.isclose(va, vb, rel_tol=tol, abs_tol=tol):
            return (
                f"line {_line_of(a, ma.start())}: {ma.group().decode()} vs {mb.group().decode()} "
                f"(differ by {abs(va - vb):.3g}, beyond {tol:g})"
            )
        pos_a, pos_b = ma.end(), mb.end()


def check_outputs(dir_a: str, dir_b: str, tolerance: float | None = None) -> OutputsCheck:
    """Compare the regular files under two output folders (links and special files are skipped and counted)."""
    check_tolerance(tolerance)
    pa, pb = Path(dir_a), Path(dir_b)
    top_a, top_b = _folder(pa), _folder(pb)
    if (top_a.st_dev, top_a.st_ino) == (top_b.st_dev, top_b.st_ino):
        raise TopomapError(f"--outputs {dir_a} {dir_b}: the same folder twice", hint="give each run's own folder")
    (fa, sa), (fb, sb) = _walk(pa, top_a, "A"), _walk(pb, top_b, "B")
    out = OutputsCheck(dir_a, dir_b, tolerance, len(fa), len(fb))
    out.skipped_a, out.skipped_b = sa, sb
    out.missing_in_b = sorted(set(fa) - set(fb) - set(sb))
    out.missing_in_a = sorted(set(fb) - set(fa) - set(sa))
    for name in sorted((set(fa) & set(sb)) | (set(fb) & set(sa))):
        kind_a, kind_b = ("regular file", sb[name]) if name in fa else (sa[name], "regular file")
        out.different.append(FileDifference(name, f"a {kind_a} in A, a {kind_b} in B"))
    ra, rb = _Reader("A"), _Reader("B")
    for name in sorted(set(fa) & set(fb)):
        reason = _compare_file(ra, fa[name], rb, fb[name], tolerance)
        if reason is None:
            out.identical += 1
        elif reason == "":
            out.within_tolerance.append(name)
        else:
            out.different.append(FileDifference(name, reason))
    out.different.sort(key=lambda d: d.name)
    return out


def _compare_file(ra: _Reader, a: Path, rb: _Reader, b: Path, tolerance: float | None) -> str | None:
    """None: identical bytes; "": the same within ``tolerance``; else why they differ (one line)."""
    size_a, size_b = a.lstat().st_size, b.lstat().st_size
    if (tolerance is None or max(size_a, size_b) > _MAX_TEXT_BYTES) and size_a != size_b:
        if tolerance is None:
            return f"contents differ ({size_a} vs {size_b} bytes)"
        return "binary contents differ (tolerance applies to text only)"
    if tolerance is None or max(size_a, size_b) > _MAX_TEXT_BYTES:
        if _same_bytes(ra, a, rb, b):
            return None
        if tolerance is None:
            return f"contents differ ({size_a} vs {size_b} bytes)"
        return "binary contents differ (tolerance applies to text only)"
    da, db = ra.read(a), rb.read(b)
    if da == db:
        return None
    if b"\0" in da[:8192] or b"\0" in db[:8192]:
        return "binary contents differ (tolerance applies to text only)"
    where = compare_text(da, db, tolerance)
    return "" if where is None else where
