"""Importers: text and XML that users and vendors already have → Snapshot.

Format is detected from content, not from the file name. Every command that takes a snapshot
goes through :func:`load_any`, so a raw nvidia-smi paste works wherever a snapshot does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec

from topomap.base.errors import ImportFailure, LogWithoutDump
from topomap.files.inputs import MAX_SNAPSHOT_BYTES, MAX_TOPOLOGY_BYTES, decode_text, read_bytes, read_head, recode_utf8
from topomap.files.kind import emptiness, json_what, topology_format, yaml_kind
from topomap.model.codec import decode_snapshot
from topomap.model.snapshot import Snapshot
from topomap.model.validate import validate_snapshot

__all__ = ["ImportFailure", "import_file", "import_text", "load_any"]

FORMATS = ("nvidia-smi", "nccl-xml", "hwloc-xml", "lstopo", "nccl-log", "amd-smi")

#: terminal colour/underline codes: nvidia-smi underlines the topo -m header even when its output is
#: captured by a program (p2p-bench's p2p_evidence.json holds "\x1b[4mGPU0\tGPU1…\x1b[0m")
_ANSI_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _read(path: Path) -> tuple[bytes, bool]:
    """A topology file or snapshot's bytes, and whether it starts as JSON (a snapshot): the size cap of
    its kind is told from its first bytes, before it is read (a 100 MB paste reached 700 MB before its
    refusal, issue 36)."""
    head = read_head(path, 4096)
    try:
        # no head (empty, or unreadable): the reader below says why, and the importer that it is empty
        text = decode_text(head, str(path), ImportFailure) if head else ""
    except ImportFailure:
        text = ""  # binary: refused below, its size first
    json = text.lstrip("\ufeff \t\r\n").startswith("{")
    cap, what = (MAX_SNAPSHOT_BYTES, "topology file or snapshot") if json else (MAX_TOPOLOGY_BYTES, "topology file")
    return read_bytes(path, what, cap, ImportFailure), json


def read_text(path: str | Path) -> str:
    """A topology file or snapshot as text: a regular file under the size cap, BOM/UTF-16 decoded."""
    p = Path(path)
    return decode_text(_read(p)[0], str(p), ImportFailure)


def _json_array(text: str) -> bool:
    """The whole text is one JSON array."""
    body = text.strip("\ufeff \t\r\n")
    if not (body.startswith("[") and body.endswith("]")):
        return False
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return False
    return True


def import_text(text: str, origin: str, fmt: str = "auto") -> Snapshot:
    """Import text of the given (or detected) format; the result passes validate_snapshot."""
    if "\x1b[" in text:
        text = _ANSI_SGR.sub("", text)
    if fmt == "auto":
        empty = emptiness(text)
        if empty is not None:  # said so, not "unknown format" (issue 30)
            raise ImportFailure(f"{origin} {empty}: nothing to import", hint="is this the right file, or was it cut?")
        if _json_array(text) and _amd_json(text):  # `amd-smi topology --json` (issue 35)
            return _amd(text, origin)
        if _json_array(text):  # JSON, but no snapshot is an array (a launcher's "[1,0]<stdout>:" is not one)
            what, hint = json_what(text[:65536])
            raise ImportFailure(f"{origin}: {what}", hint=hint)
        if text.lstrip("\ufeff \t\r\n").startswith("{"):
            return decode_snapshot(text.lstrip("\ufeff").encode(), origin)  # already a snapshot: validate it
        found = topology_format(text)
        kind = yaml_kind(text) if found is None else None
        if kind == "lot":  # a declared lot: a lot as a catalogue describes it (topomap.model.lots)
            from topomap.model.lots import read_lot  # lazy: start-up, as the parsers below

            return read_lot(text, origin)
        if kind is not None:
            yaml_kind_words = f"{kind} file"
            raise ImportFailure(
                f"{origin}: this is a {yaml_kind_words} (YAML), not a topology or snapshot",
                hint=f"the {yaml_kind_words} comes first: topomap {'map' if kind == 'flow' else 'check'} "
                f"{origin} --probe [NAME=]SNAPSHOT",
            )
        if found is None and " NCCL INFO " in text:
            raise LogWithoutDump(
                f"{origin}: an NCCL log without a topology dump ('=== System : maxBw' lines)",
                hint="run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH to have NCCL print it; "
                f"`topomap nccl --log {origin}` reads the channel lines",
            )
        if found is None:
            raise ImportFailure(
                f"{origin}: unknown format",
                hint="expected `nvidia-smi topo -m` (or topo -p2p / nvlink -s / nvlink -R / -q / --query-gpu CSV) "
                "text, an NCCL topology XML (<system>), an hwloc XML (<topology>), `lstopo` text, "
                "an NCCL INFO log with its topology dump (NCCL_DEBUG_SUBSYS=GRAPH), or AMD's `rocm-smi --showtopo`, "
                "`amd-smi topology` / `static` / `list` or `rocminfo`",
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
    if not snap.source.formats and snap.source.kind in ("nccl-xml", "hwloc-xml"):  # one output per file
        snap = msgspec.structs.replace(snap, source=msgspec.structs.replace(snap.source, formats=[snap.source.kind]))
    validate_snapshot(snap, origin)
    return snap


# The three parsers are imported when a file of their format is read, to keep start-up fast: every
# command that takes a snapshot comes through here, a snapshot JSON needs none of them, and together
# they cost about 50 ms to import (the XML stack, the device table, the nvidia-smi -q reader).


def _nvidia_smi(text: str, origin: str) -> Snapshot:
    from topomap.importers.nvidia_smi import import_nvidia_smi  # lazy: start-up (see above)

    return import_nvidia_smi(text, origin)


def _nccl(text: str, origin: str) -> Snapshot:
    from topomap.importers.nccl_xml import import_nccl_xml  # lazy: start-up (see above)

    return import_nccl_xml(text, origin)


def _hwloc(text: str, origin: str) -> Snapshot:
    from topomap.importers.hwloc_xml import import_hwloc_xml  # lazy: start-up (see above)

    return import_hwloc_xml(text, origin)


def _lstopo(text: str, origin: str) -> Snapshot:
    from topomap.importers.lstopo import import_lstopo  # lazy: start-up (see above)

    return import_lstopo(text, origin)


def _nccl_log(text: str, origin: str) -> Snapshot:
    from topomap.importers.nccl_log import import_nccl_log  # lazy: start-up (see above)

    return import_nccl_log(text, origin)


def _amd(text: str, origin: str) -> Snapshot:
    from topomap.importers.amd_paste import import_amd  # lazy: start-up (see above)

    snap = import_amd(text, origin)
    validate_snapshot(snap, origin)
    return snap


def _amd_json(text: str) -> bool:
    from topomap.importers.amd_paste import amd_json  # lazy: start-up (see above)

    return amd_json(text)


_IMPORTERS = {
    "nvidia-smi": _nvidia_smi,
    "nccl-xml": _nccl,
    "hwloc-xml": _hwloc,
    "lstopo": _lstopo,
    "nccl-log": _nccl_log,
    "amd-smi": _amd,
}


def import_file(path: str | Path, fmt: str = "auto") -> Snapshot:
    return load_any(path) if fmt == "auto" else import_text(read_text(path), str(path), fmt)


def load_any(path: str | Path) -> Snapshot:
    """A snapshot JSON, or any importable file imported on the fly. A snapshot is decoded from its bytes
    (text decoded and encoded again held it three times over); one with a NUL byte or a terminal code
    goes the text way, whose errors name them."""
    p = Path(path)
    data, json = _read(p)
    if json and b"\0" not in data and b"\x1b[" not in data:
        return decode_snapshot(recode_utf8(data, str(p), ImportFailure), str(p))
    return import_text(decode_text(data, str(p), ImportFailure), str(p))
