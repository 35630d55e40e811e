"""Did two runs produce the same accepted outputs? Names, counts, and contents.

Files are matched by their path relative to each folder. Equal bytes are the same. With a
tolerance, two text files whose only differences are numbers within it are the same too (for
results whose last digits depend on summation order): both texts are split into numbers and
the text between them; the text must match exactly, each number pair must satisfy
``math.isclose(a, b, rel_tol=tol, abs_tol=tol)``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from topomap.errors import TopomapError

_NUMBER = re.compile(rb"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)\b", re.IGNORECASE)
_MAX_TEXT_BYTES = 256 * 2**20  # larger files are compared by bytes only


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

    @property
    def same(self) -> bool:
        return not (self.missing_in_a or self.missing_in_b or self.different)

    def summary(self) -> str:
        if self.same:
            tol = f", {len(self.within_tolerance)} within tolerance {self.tolerance:g}" if self.within_tolerance else ""
            return f"same outputs: {self.files_a} files in each, {self.identical} identical{tol}"
        parts = []
        if self.missing_in_b:
            parts.append(f"{len(self.missing_in_b)} missing in B")
        if self.missing_in_a:
            parts.append(f"{len(self.missing_in_a)} missing in A")
        if self.different:
            parts.append(f"{len(self.different)} different")
        return f"outputs differ: {', '.join(parts)} ({self.files_a} files in A, {self.files_b} in B)"


def _files(root: Path) -> dict[str, Path]:
    if not root.is_dir():
        raise TopomapError(f"--outputs {root}: not a folder", hint="give the two runs' output folders")
    return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}


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
    """Compare the files under two output folders."""
    fa, fb = _files(Path(dir_a)), _files(Path(dir_b))
    out = OutputsCheck(dir_a, dir_b, tolerance, len(fa), len(fb))
    out.missing_in_b = sorted(set(fa) - set(fb))
    out.missing_in_a = sorted(set(fb) - set(fa))
    for name in sorted(set(fa) & set(fb)):
        a, b = fa[name].read_bytes(), fb[name].read_bytes()
        if a == b:
            out.identical += 1
            continue
        if tolerance is None:
            out.different.append(FileDifference(name, f"contents differ ({len(a)} vs {len(b)} bytes)"))
            continue
        if b"\0" in a[:8192] or b"\0" in b[:8192] or max(len(a), len(b)) > _MAX_TEXT_BYTES:
            out.different.append(FileDifference(name, "binary contents differ (tolerance applies to text only)"))
            continue
        where = compare_text(a, b, tolerance)
        if where is None:
            out.within_tolerance.append(name)
        else:
            out.different.append(FileDifference(name, where))
    return out
