"""``nvidia-smi --query-gpu=… --format=csv`` output: per-GPU names, memory, bus ids, PCIe links.

nvidia-smi writes one header line of the field names asked (``index, name, memory.total [MiB]``,
the unit in brackets; aliases are printed by their first name: ``gpu_bus_id`` heads ``pci.bus_id``)
and one line per GPU in index order, cells separated by ``", "``, never quoted. ``nounits`` drops
the units from the cells (the header keeps them); ``noheader`` drops the header, so the columns are
read from the command line pasted above the rows (``--query-gpu=index,name …``). A cell
``[N/A]`` or ``[Not Supported]`` is unknown. Columns topomap does not use (``temperature.gpu``,
``utilization.gpu``) are read past.

Alone, the CSV is a snapshot with GPUs and no links; appended to a `topo -m` paste (or `-q`, or
`nvlink -s`) it fills in the GPUs by index: the matrix gives the paths, the CSV the names, memory,
bus ids and link widths. A file that is CSV-like but broken fails with file:line and the column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import msgspec

from topomap.base.devices import format_device_id, parse_device_id
from topomap.base.errors import ImportFailure
from topomap.base.pciaddr import normalize_bus_id
from topomap.model.snapshot import Gpu, Mig, PcieLink, Snapshot
from topomap.model.source_facts import Fact, source_facts

#: Field aliases nvidia-smi accepts → the name it prints in the header (and topomap reads).
ALIASES = {
    "gpu_name": "name",
    "gpu_uuid": "uuid",
    "gpu_bus_id": "pci.bus_id",
    "gpu_serial": "serial",
    "pcie.link.gen.gpucurrent": "pcie.link.gen.current",
    "pcie.link.gen.gpumax": "pcie.link.gen.max",
    "compute_capability": "compute_cap",
}
#: The columns topomap reads, and the snapshot field each fills (``Source.unknown_fields`` names).
READ = {
    "index": "gpus.index",
    "name": "gpus.name",
    "uuid": "gpus.uuid",
    "pci.bus_id": "gpus.pci_bus_id",
    "pci.device_id": "gpus.pci_device_id",
    "memory.total": "gpus.memory_total_bytes",
    "pcie.link.gen.current": "gpus.pcie",
    "pcie.link.gen.max": "gpus.pcie",
    "pcie.link.width.current": "gpus.pcie",
    "pcie.link.width.max": "gpus.pcie",
    "driver_version": "software",
    "compute_cap": "gpus.compute_capability",
    "mig.mode.current": "gpus.mig",
    "persistence_mode": "gpus.persistence_mode",
}
UNKNOWN_CELLS = {
    "",
    "n/a",
    "[n/a]",
    "[not supported]",
    "not supported",
    "[unknown error]",
    "[insufficient permissions]",
}
MAX_ROWS = 4096
_NOT_FACTS = {"gpus.index", "gpus.pci_device_id", "gpus.persistence_mode"}  # read when there, never a gap
_FIELD = re.compile(r"^[a-z][a-z0-9_.]*$")
_HEADER_CELL = re.compile(r"^([a-z][a-z0-9_.]*)(?:\s*\[([^\]]*)\])?$")
_COMMAND = re.compile(r"--query-gpu[= ]\s*([A-Za-z0-9_.,]+)")
_FORMAT = re.compile(r"--format[= ]\s*([A-Za-z,]+)")
_ONE_GPU = re.compile(r"(?:^|\s)(?:-i|--id)[= ]?\s*\S")
_MEMORY = re.compile(r"^(\d{1,12}(?:\.\d+)?)\s*(MiB|GiB|KiB)?$")
_UNIT_BYTES = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


class QueryCsvError(ImportFailure):
    """A `--query-gpu` CSV that cannot be read; names the file, line and column."""


@dataclass
class CsvRow:
    line: int
    cells: dict[str, str | None]  # column → cell (None: unknown)


@dataclass
class QueryCsv:
    """One `--query-gpu` block: its columns (as printed), rows, and whether it names one GPU (``-i``)."""

    line: int  # of the header, or of the first row without one
    columns: list[str]
    units: dict[str, str] = field(default_factory=dict)
    rows: list[CsvRow] = field(default_factory=list)
    some_gpus: bool = False  # the command line names GPUs (`-i 0`): not every GPU of the host


def canonical(name: str) -> str:
    return ALIASES.get(name, name)


def _header(line: str) -> tuple[list[str], dict[str, str]] | None:
    """Columns and units of a CSV header line; None when the line is not one."""
    cells = [c.strip() for c in line.strip().split(",")]
    cols: list[str] = []
    units: dict[str, str] = {}
    for c in cells:
        m = _HEADER_CELL.match(c)
        if not m:
            return None
        name = canonical(m.group(1))
        cols.append(name)
        if m.group(2):
            units[name] = m.group(2)
    if not any(c in READ for c in cols) or cols == ["index"]:
        return None
    return cols, units


def _is_row(line: str, n: int) -> bool:
    """A data line of an ``n``-column block (a line without the block's commas ends it)."""
    text = line.strip()
    if not text or text.startswith(("```", "$", "#", ">")) or "--query-gpu" in text:
        return False
    return n == 1 or "," in text


def find_blocks(lines: list[str], origin: str) -> list[QueryCsv]:
    """Every `--query-gpu` CSV block in ``lines`` (other text is skipped)."""
    blocks: list[QueryCsv] = []
    pending: tuple[list[str], bool, bool, int] | None = None  # columns, noheader, some GPUs, line of the command
    i = 0
    while i < len(lines):
        line = lines[i]
        cmd = _COMMAND.search(line)
        if cmd:
            cols = [canonical(c) for c in cmd.group(1).split(",") if c]
            fmt = _FORMAT.search(line)
            noheader = bool(fmt and "noheader" in fmt.group(1))
            pending = (cols, noheader, bool(_ONE_GPU.search(line[: cmd.start()] + line[cmd.end() :])), i + 1)
            i += 1
            continue
        head = _header(line)
        if head is not None:
            cols, units = head
            some = pending is not None and pending[2] and pending[0] == cols
            block = QueryCsv(line=i + 1, columns=cols, units=units, some_gpus=some)
            i = _rows(lines, i + 1, block, origin)
            blocks.append(block)
            pending = None
            continue
        if pending is not None and pending[1] and _is_row(line, len(pending[0])):
            block = QueryCsv(line=i + 1, columns=pending[0], some_gpus=pending[2])
            i = _rows(lines, i, block, origin)
            blocks.append(block)
            pending = None
            continue
        i += 1
    return [b for b in blocks if b.rows]


def _rows(lines: list[str], start: int, block: QueryCsv, origin: str) -> int:
    """Read the block's rows from ``start``; returns the line after them."""
    n = len(block.columns)
    i = start
    while i < len(lines) and not lines[i].strip() and i == start:
        i += 1  # one blank line between header and rows, as some pastes have
    while i < len(lines) and _is_row(lines[i], n):
        cells = [c.strip() for c in lines[i].strip().split(",")]
        if n == 1 and len(cells) != 1:
            break
        if len(cells) != n:
            raise QueryCsvError(
                f"{origin}:{i + 1}: --query-gpu row has {len(cells)} cells but the header names {n} columns "
                f"({', '.join(block.columns)})",
                hint="the CSV may be cut or two outputs run together; paste the whole output",
            )
        if len(block.rows) >= MAX_ROWS:
            raise QueryCsvError(f"{origin}:{i + 1}: more than {MAX_ROWS} GPU rows in one --query-gpu output")
        values = {c: (None if v.lower() in UNKNOWN_CELLS else v) for c, v in zip(block.columns, cells)}
        block.rows.append(CsvRow(line=i + 1, cells=values))
        i += 1
    return i


# --- cells → facts -----------------------------------------------------------------------------------


def _fail(origin: str, row: CsvRow, column: str, value: str, want: str) -> QueryCsvError:
    return QueryCsvError(f"{origin}:{row.line}: column {column}: {value!r} is not {want}")


def _int(origin: str, row: CsvRow, column: str) -> int | None:
    v = row.cells.get(column)
    if v is None:
        return None
    text = v.removesuffix("x").strip()  # some drivers print a width as "16x"
    if not text.isdigit() or len(text) > 6:
        raise _fail(origin, row, column, v, "a whole number")
    return int(text)


def _memory(origin: str, row: CsvRow, unit: str | None) -> int | None:
    v = row.cells.get("memory.total")
    if v is None:
        return None
    m = _MEMORY.match(v)
    u = (m.group(2) if m else None) or unit or "MiB"
    if not m or u not in _UNIT_BYTES:
        raise _fail(origin, row, "memory.total", v, "a size in MiB")
    return int(float(m.group(1)) * _UNIT_BYTES[u])


def _bus(origin: str, row: CsvRow) -> str | None:
    v = row.cells.get("pci.bus_id")
    if v is None:
        return None
    bus = normalize_bus_id(v)
    if bus is None:
        raise _fail(origin, row, "pci.bus_id", v, "a PCI bus id like 00000000:18:00.0")
    return bus


def _row_gpu(origin: str, block: QueryCsv, row: CsvRow, k: int, base: Gpu | None) -> Gpu:
    """One row as a GPU, filling what ``base`` (the same GPU from the matrix) does not say."""
    index = _int(origin, row, "index")
    index = k if index is None else index
    g = base or Gpu(index=index)
    gens = [_int(origin, row, c) for c in ("pcie.link.gen.current", "pcie.link.width.current",
                                           "pcie.link.gen.max", "pcie.link.width.max")]  # fmt: skip
    pcie = g.pcie
    if any(x is not None for x in gens):
        pcie = PcieLink(gen_current=gens[0], width_current=gens[1], gen_max=gens[2], width_max=gens[3])
    device = row.cells.get("pci.device_id")
    dev_id = parse_device_id(device) if device else None
    cc = row.cells.get("compute_cap")
    mig = row.cells.get("mig.mode.current")
    persistence = row.cells.get("persistence_mode")
    bus = _bus(origin, row)
    if bus and g.pci_bus_id and bus != g.pci_bus_id:
        raise QueryCsvError(
            f"{origin}:{row.line}: column pci.bus_id: GPU {index} is at {bus} here but at {g.pci_bus_id} "
            "earlier in the file; two machines in one file?",
            hint="split the file, one per host",
        )
    memory = _memory(origin, row, block.units.get("memory.total"))
    reported = row.cells.get("name")
    return msgspec.structs.replace(
        g,
        name=reported if reported and (g.name is None or "name" in g.derived) else g.name,
        uuid=g.uuid or row.cells.get("uuid"),
        pci_bus_id=bus or g.pci_bus_id,
        pci_device_id=format_device_id(dev_id) if dev_id is not None else g.pci_device_id,
        memory_total_bytes=memory if memory is not None else g.memory_total_bytes,
        compute_capability=cc if cc and re.fullmatch(r"\d+\.\d+", cc) else g.compute_capability,
        pcie=pcie,
        mig=Mig(enabled=mig == "Enabled") if mig in ("Enabled", "Disabled") else g.mig,
        persistence_mode=(persistence == "Enabled") if persistence in ("Enabled", "Disabled") else g.persistence_mode,
        derived=[d for d in g.derived if not (d in ("name", "architecture") and reported)],
    )


def apply_csv(snap: Snapshot, block: QueryCsv, origin: str) -> Snapshot:
    """Add one `--query-gpu` block to a snapshot: rows join the GPUs by their ``index`` cell (else
    row k is GPU k, nvidia-smi's order); a matrix in the same file that lacks a row's GPU is an error."""
    by_index = {g.index: g for g in snap.gpus}
    had = bool(snap.gpus) and source_facts(snap).knows(Fact.GPU_COUNT)  # a matrix lists every GPU; nvlink -s may not
    seen: set[int] = set()
    notes = list(snap.source.notes)
    for k, row in enumerate(block.rows):
        index = _int(origin, row, "index")
        index = k if index is None else index
        if index in seen:
            raise QueryCsvError(f"{origin}:{row.line}: column index: GPU {index} appears twice")
        seen.add(index)
        if had and index not in by_index:
            raise QueryCsvError(
                f"{origin}:{row.line}: column index: GPU {index} is not among the GPUs earlier in the file "
                f"(GPUs {', '.join(str(x) for x in sorted(by_index))}); two machines in one file?",
                hint="split the file, one per host",
            )
        by_index[index] = _row_gpu(origin, block, row, k, by_index.get(index))
    if had and len(seen) < len(snap.gpus):
        notes.append(f"the --query-gpu output at line {block.line} lists {len(seen)} of the {len(snap.gpus)} GPUs")
    return _with_source(snap, block, sorted(by_index.values(), key=lambda g: g.index), notes)


def _with_source(snap: Snapshot, block: QueryCsv, gpus: list[Gpu], notes: list[str]) -> Snapshot:
    """What the block's columns make known (and, alone, what they leave out), and its driver version."""
    cols = set(block.columns)
    known = {READ[c] for c in cols if c in READ}
    unknown = [f for f in snap.source.unknown_fields if f not in known]
    driver = next((r.cells.get("driver_version") for r in block.rows if r.cells.get("driver_version")), None)
    software = snap.software
    if driver:
        software = msgspec.structs.replace(software, driver_version=software.driver_version or driver)
        if software.cuda_driver_version is None:
            unknown.append("software.cuda_driver_version")
    alone = not snap.gpus
    if alone:  # no other output in the file: what the columns leave out is unknown
        for col, fld in READ.items():
            if col not in cols and fld not in known and fld not in unknown and fld not in _NOT_FACTS:
                unknown.append(fld)
    count = next((r.cells.get("count") for r in block.rows if r.cells.get("count")), None)
    some = block.some_gpus or (count is not None and count.isdigit() and int(count) > len(block.rows))
    if some and not (snap.gpus and source_facts(snap).knows(Fact.GPU_COUNT)):
        unknown.append("gpus.count")  # `-i 3`: some GPUs, and nothing else in the file lists them all
    formats = list(snap.source.formats)
    if "query-gpu-csv" not in formats:
        formats.append("query-gpu-csv")
    source = msgspec.structs.replace(
        snap.source, unknown_fields=list(dict.fromkeys(unknown)), notes=notes, formats=formats
    )
    return msgspec.structs.replace(snap, source=source, gpus=gpus, software=software)


def apply_blocks(snap: Snapshot, blocks: list[QueryCsv], origin: str) -> Snapshot:
    for b in blocks:
        snap = apply_csv(snap, b, origin)
    return snap


__all__ = ["QueryCsv", "QueryCsvError", "apply_blocks", "apply_csv", "find_blocks"]
