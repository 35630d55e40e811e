"""Writing an output file all at once, so a reader never sees it half-written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: str | Path, data: bytes) -> None:
    """Write a file all at once: a temporary file beside it, then rename. Never half-written."""
    p = Path(path)
    folder = str(p.parent or Path("."))
    try:
        name_max = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    # `.NAME.` + mkstemp's 8 random characters stays within NAME_MAX: a long NAME is shortened (whole
    # UTF-8 characters), so a name near the limit can be written; the temporary file stays hidden and unique.
    stem = os.fsencode(p.name)[: max(1, name_max - 10)].decode("utf-8", "ignore") or "out"
    fd, tmp = tempfile.mkstemp(prefix=f".{stem}.", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
