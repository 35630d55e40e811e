"""Importers: text and XML that users and vendors already have → Snapshot.

Format is detected from content, not from the file name. Every command that takes a snapshot
goes through :func:`load_any`, so a raw nvidia-smi paste works wherever a snapshot does.
"""

from __future__ import annotations

from pathlib import Path

from topomap.errors import ImportFailure
from topomap.model import Snapshot, decode_snapshot

__all__ = ["ImportFailure", "import_file", "import_text", "load_any"]

FORMATS = ("nvidia-smi", "nccl-xml", "hwloc-xml")
MAX_INPUT_BYTES = 64 * 1024 * 1024


def read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as err:
        raise ImportFailure(f"{p}: cannot read ({err.strerror or err})") from err
    if len(data) > MAX_INPUT_BYTES:
        raise ImportFailure(f"{p}: {len(data)} bytes is larger than any topology file ({MAX_INPUT_BYTES} max)")
    if b"\0" in data[:4096]:
        raise ImportFailure(f"{p}: binary file, expected text or XML")
    return data.decode("utf-8", errors="replace")


def detect(text: str) -> str | None:
    """Which importer reads this text: by its content."""
    head = text.lstrip("\ufeff \t\r\n")[:4096]
    if head.startswith("<") or head.startswith("<?xml"):
        if "<topology" in head:
            return "hwloc-xml"
        if "<system" in head:
            return "nccl-xml"
        return None
    from topomap.importers.nvidia_smi import looks_like_nvidia_smi

    if looks_like_nvidia_smi(text):
        return "nvidia-smi"
    return None


def import_text(text: str, origin: str, fmt: str = "auto") -> Snapshot:
    """Import text of the given (or detected) format."""
    if fmt == "auto":
        if text.lstrip("\ufeff \t\r\n").startswith("{"):
            return decode_snapshot(text.encode(), origin)  # already a snapshot: validate it
        found = detect(text)
        if found is None:
            raise ImportFailure(
                f"{origin}: unknown format",
                hint="expected `nvidia-smi topo -m` (or topo -p2p / nvlink -s / nvlink -R) text, "
                "an NCCL topology XML (<system>) or an hwloc XML (<topology>)",
            )
        fmt = found
    if fmt not in FORMATS:
        raise ImportFailure(f"--format {fmt!r}: expected auto, {', '.join(FORMATS)}")
    try:
        return _IMPORTERS[fmt](text, origin)
    except (ValueError, KeyError, IndexError, TypeError) as err:
        # Safety net: content no real tool writes (a number that is not one, a reference to
        # nothing). Specific checks inside the importers name the line where they can.
        raise ImportFailure(f"{origin}: unexpected {fmt} content ({type(err).__name__}: {err})") from err


def _nvidia_smi(text: str, origin: str) -> Snapshot:
    from topomap.importers.nvidia_smi import import_nvidia_smi

    return import_nvidia_smi(text, origin)


def _nccl(text: str, origin: str) -> Snapshot:
    from topomap.importers.nccl_xml import import_nccl_xml

    return import_nccl_xml(text, origin)


def _hwloc(text: str, origin: str) -> Snapshot:
    from topomap.importers.hwloc_xml import import_hwloc_xml

    return import_hwloc_xml(text, origin)


_IMPORTERS = {"nvidia-smi": _nvidia_smi, "nccl-xml": _nccl, "hwloc-xml": _hwloc}


def import_file(path: str | Path, fmt: str = "auto") -> Snapshot:
    return import_text(read_text(path), str(path), fmt)


def load_any(path: str | Path) -> Snapshot:
    """A snapshot JSON, or any importable file imported on the fly."""
    return import_text(read_text(path), str(path))
