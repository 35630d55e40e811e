"""``rocm-smi`` text → :class:`~topomap.importers.amd_facts.AmdFacts` (issue 35).

Reads ``--showtopo`` and its parts as rocm_smi.py prints them (ROCm/rocm_smi_lib
``python_smi_tools/rocm_smi.py`` @a129571: ``showWeightTopology``, ``showHopsTopology``,
``showTypeTopology``, ``showNumaTopology``, ``showAccessibleTopology``, ``showNodesBw``): a spacer line
``==== Weight between two GPUs ====`` (``Hops …``, ``Link Type …``, ``Link accessibility …``,
``Bandwidth``), a ``GPU0 GPU1 …`` header, one ``GPUi`` row per GPU with ``%-12s`` cells; ``Numa Nodes``
as ``GPU[i] : (Topology) Numa Node: n`` (``GPU i`` in older releases). Also the per-GPU lines other
options print (``Card series``, ``Card model``, ``PCI Bus``, ``VRAM Total Memory (B)``, ``Device ID``,
``GFX Version``), the concise table's device ids and names, and ``Driver version``.

What the cells mean is :mod:`~topomap.importers.amd_build`'s to say (weights as AMD computes them).
"""

from __future__ import annotations

import re

from topomap.importers.amd_facts import AmdFacts

_SPACER = re.compile(r"^=+ ?(.*?) ?=+\s*$")
_ROW = re.compile(r"^GPU(\d+)\s+(.*)$")
_PER_GPU = re.compile(r"^GPU(?:\[(\d+)\]| (\d+))\s*:\s*(.*?)\s*$")
_CONCISE_MODEL = re.compile(r"^(\d+)\s+\[(0x[0-9a-fA-F]{4})\s*:\s*0x[0-9a-fA-F]+\]")
_CONCISE_DID = re.compile(r"^(\d+)\s+\d+\s+(0x[0-9a-fA-F]{4}),\s+\d+\s")
_BW_CELL = re.compile(r"^(\d+)-(\d+)$")

_MATRICES = {
    "weight between two gpus": "weight",
    "hops between two gpus": "hops",
    "link type between two gpus": "link",
    "link accessibility between two gpus": "access",
    "bandwidth": "bw",
}


def looks_like_rocm_smi(text: str) -> bool:
    """A rocm-smi report: its banner, or one of its topology spacers with GPU rows under it."""
    head = text[:200_000]
    if "ROCm System Management Interface" in head:
        return True
    return bool(re.search(r"=+ (Weight|Hops|Link Type) between two GPUs =+", head)) or bool(
        re.search(r"^GPU\[\d+\]\s*: \(Topology\) Numa Node:", head, re.MULTILINE)
    )


def read_rocm_smi(text: str, facts: AmdFacts) -> None:
    """Every rocm-smi part of ``text`` into ``facts``."""
    section: str | None = None
    header: list[int] | None = None
    concise_row: int | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        m = _SPACER.match(line.strip())
        if m and "=" in line:
            title = m.group(1).strip().lower()
            section = _MATRICES.get(title)
            header = None
            if title == "numa nodes":
                facts.saw("rocm-smi-numa")
            elif section is not None:
                facts.saw("rocm-smi-topo")
            concise_row = None
            continue
        stripped = line.strip()
        if section is not None:
            toks = stripped.split()
            if toks and all(re.fullmatch(r"GPU\d+", t) for t in toks):
                header = [int(t[3:]) for t in toks]
                continue
            row = _ROW.match(stripped)
            if row and header is not None:
                _matrix_row(facts, section, int(row.group(1)), header, row.group(2).split())
                continue
        if _per_gpu(facts, stripped):
            continue
        concise_row = _concise(facts, stripped, concise_row)
        if stripped.startswith("Driver version:"):
            version = stripped.split(":", 1)[1].strip()
            for g in facts.gpus.values():
                g.driver = g.driver or version
            facts.notes.append(f"amdgpu driver {version}")


def _matrix_row(facts: AmdFacts, section: str, src: int, header: list[int], cells: list[str]) -> None:
    for dst, cell in zip(header, cells):
        facts.gpu(src)
        if dst == src or cell in ("N/A", "XXXX"):
            continue
        key = (src, dst)
        if section in ("weight", "hops") and cell.isdigit():
            (facts.weight if section == "weight" else facts.hops)[key] = int(cell)
        elif section == "link" and cell in ("XGMI", "PCIE"):
            facts.link[key] = cell
        elif section == "access" and cell in ("True", "False"):
            facts.access[key] = cell == "True"
        elif section == "bw":
            bw = _BW_CELL.match(cell)
            if bw:
                facts.bw[key] = (int(bw.group(1)), int(bw.group(2)))


def _per_gpu(facts: AmdFacts, line: str) -> bool:
    m = _PER_GPU.match(line)
    if not m:
        return False
    index = int(m.group(1) if m.group(1) is not None else m.group(2))
    key, _, value = m.group(3).partition(":")
    key, value = key.strip().lower(), value.strip()
    g = facts.gpu(index)
    if key == "(topology) numa node" and re.fullmatch(r"-?\d+", value):
        g.numa = int(value) if int(value) >= 0 else None
        facts.saw("rocm-smi-numa")
    elif key == "card series" and value:
        g.name = g.name or value
    elif key in ("card model", "device id") and re.fullmatch(r"0x[0-9a-fA-F]{1,4}", value):
        g.device_id = g.device_id or value.lower()
    elif key == "pci bus" and value:
        g.bus = value.lower()
    elif key == "vram total memory (b)" and value.isdigit():
        g.memory_bytes = int(value)
    elif key == "gfx version" and value.startswith("gfx"):
        g.gfx = value
    elif key == "unique id" and value.startswith("0x"):
        g.uuid = g.uuid or value
    return True


def _concise(facts: AmdFacts, line: str, last: int | None) -> int | None:
    """The concise table: ``0  [0x74a1 : 0x00] …`` then the name on the next line, or ``0  2  0x74a2, …``."""
    m = _CONCISE_MODEL.match(line) or _CONCISE_DID.match(line)
    if m:
        g = facts.gpu(int(m.group(1)))
        g.device_id = g.device_id or m.group(2).lower()
        return int(m.group(1)) if _CONCISE_MODEL.match(line) else None
    if last is not None and line and not line[0].isdigit() and not line.startswith("="):
        g = facts.gpu(last)
        g.name = g.name or line
    return None
