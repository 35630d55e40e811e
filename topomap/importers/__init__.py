"""Importers: text and XML that users and vendors already have → Snapshot.

Format is detected from content, not from the file name. Every command that takes a snapshot
goes through :func:`load_any`, so a raw nvidia-smi paste works wherever a snapshot does.
"""

from __future__ import annotations

import re
from pathlib import Path

from topomap.base.errors import ImportFailure
from topomap.files.inputs import MAX_SNAPSHOT_BYTES, MAX_TOPOLOGY_BYTES, decode_text, read_bytes
from topomap.model.codec import decode_snapshot
from topomap.model.snapshot import Snapshot
from topomap.model.validate import validate_snapshot

__all__ = ["ImportFailure", "describe", "import_file", "import_text", "load_any"]

FORMATS = ("nvidia-smi", "nccl-xml", "hwloc-xml")
MAX_INPUT_BYTES = MAX_TOPOLOGY_BYTES


def read_text(path: str | Path) -> str:
    """A topology file or snapshot as text: a regular file under the size cap, BOM/UTF-16 decoded."""
    p = Path(path)
    data = read_bytes(p, "topology file or snapshot", MAX_SNAPSHOT_BYTES, ImportFailure)
    text = decode_text(data, str(p), ImportFailure)
    if len(data) > MAX_TOPOLOGY_BYTES and not text.lstrip(" \t\r\n").startswith("{"):
        raise ImportFailure(
            f"{p}: {len(data)} bytes is larger than any topology file ({MAX_TOPOLOGY_BYTES} max)",
            hint="is this the right file?",
        )
    return text


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


_DESCRIPTIONS = {
    "nvidia-smi": "an `nvidia-smi` output (a topology)",
    "nccl-xml": "an NCCL topology XML (a topology)",
    "hwloc-xml": "an hwloc XML (a topology)",
    "snapshot": "a topomap snapshot (JSON)",
    "run": "a topomap run record (JSON, from `topomap record`)",
}


def describe(text: str) -> str | None:
    """What a file is, in words, when it is a topology or snapshot; None otherwise.

    For "wrong kind of file" messages: a paste given where a flow or requirements file was expected.
    """
    head = text.lstrip("\ufeff \t\r\n")
    if head.startswith("{") and '"topomap.run/' in head:  # a record holds a snapshot: ask this first
        return _DESCRIPTIONS["run"]
    if head.startswith("{") and '"topomap.snapshot/' in head[:65536]:
        return _DESCRIPTIONS["snapshot"]
    found = detect(text)
    return _DESCRIPTIONS[found] if found else None


_YAML_TOP = re.compile(r"^(flow|requirements)\s*:", re.MULTILINE)


def _yaml_kind(text: str) -> str | None:
    """A flow or requirements file given where a topology was expected (arguments swapped)."""
    m = _YAML_TOP.search(text[:65536])
    if m is None:
        return None
    return "flow file" if m.group(1) == "flow" else "requirements file"


def import_text(text: str, origin: str, fmt: str = "auto") -> Snapshot:
    """Import text of the given (or detected) format; the result passes validate_snapshot."""
    if fmt == "auto":
        if text.lstrip("\ufeff \t\r\n").startswith("{"):
            return decode_snapshot(text.lstrip("\ufeff").encode(), origin)  # already a snapshot: validate it
        found = detect(text)
        yaml_kind = _yaml_kind(text) if found is None else None
        if yaml_kind is not None:
            raise ImportFailure(
                f"{origin}: this is a {yaml_kind} (YAML), not a topology or snapshot",
                hint=f"the {yaml_kind} comes first: topomap {'map' if yaml_kind == 'flow file' else 'check'} "
                f"{origin} --probe [NAME=]SNAPSHOT",
            )
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
        snap = _IMPORTERS[fmt](text, origin)
    except (ValueError, KeyError, IndexError, TypeError, OverflowError, RecursionError) as err:
        # Safety net: content no real tool writes (a number that is not one, a reference to
        # nothing). Specific checks inside the importers name the line where they can.
        raise ImportFailure(f"{origin}: unexpected {fmt} content ({type(err).__name__}: {err})") from err
    validate_snapshot(snap, origin)
    return snap


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
