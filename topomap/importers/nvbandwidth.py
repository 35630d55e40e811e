"""nvbandwidth output (plain text, or ``-j`` JSON) → measurements.

Each test case prints one matrix described as ``memcpy CE GPU(row) -> GPU(column) bandwidth
(GB/s)``: the arrow gives the direction data moves (row → column, or column → row for ``<-``);
``CPU(row)`` has a single row, the host. nvbandwidth reports the median of ``--testSamples``
samples (3 by default; the mean with ``--useMean``) of a 512 MiB buffer copied 16 times; the
text output does not print the size, so it is recorded as unknown unless the JSON carries it.
GPU↔GPU tests run only where peer access could be enabled, so their route is ``peer``
(NVIDIA/nvbandwidth testcases_ce.cpp). Imported, not imported (and why) is listed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from topomap.base.errors import ImportFailure
from topomap.base.pciaddr import format_bus_id
from topomap.importers.measurements import ImportedMeasurements, MeasuredDevice
from topomap.model.snapshot import MeasureDirection, MeasureKind, Measurement

TOOL = "nvbandwidth"
_DEVICE = re.compile(
    r"^(?:Process \d{1,9} \([^)]*\): device|Device) (\d{1,6}): (.*?)"
    r"(?: \((?:PCI:)?([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.[0-7])?\))?(?:: \(.*\))?$"
)  # matched on the stripped line: a `\s*$` after the lazy name tried a blank run from each of its characters
_JSON_DEVICE = re.compile(
    r"^(\d{1,6}): (.*?)(?: \((?:PCI:)?([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.[0-7])?\))?"
    r"(?:: \(.*\))?$"
)
_DESC = re.compile(
    r"^(?P<engine>memcpy CE|memcpy SM|memory latency SM|Device to Device Latency SM)\s+"
    r"(?P<row>CPU|GPU)\(row\)\s+(?P<arrow><->|->|<-)\s+GPU\(column\)\s*(?:(?P<part>Read1|Read2|Write1|Write2|Total)\s*)?"
    r"(?:bandwidth\s*)?\((?P<unit>GB/s|ns)\)"
)  # the blanks after the part belong to it: two `\s*` side by side split a blank run every way
_RUNNING = re.compile(r"^Running (\w+)\.")


def _device(m: re.Match[str]) -> MeasuredDevice:
    bus = None
    if m.group(3):
        bus = format_bus_id((int(m.group(3), 16), int(m.group(4), 16), int(m.group(5), 16), 0))
    return MeasuredDevice(ordinal=int(m.group(1)), name=m.group(2).strip(), pci_bus_id=bus)


def parse_nvbandwidth(text: str, origin: str) -> ImportedMeasurements:
    if text.lstrip("\ufeff \t\r\n").startswith("{"):
        return _parse_json(text, origin)
    out = ImportedMeasurements(tool=TOOL, origin=origin)
    lines = text.splitlines()
    test = "unnamed test"
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        dm = _DEVICE.match(line)
        rm = _RUNNING.match(line)
        if dm:
            if not out.devices and i > 0 and re.fullmatch(r"[\w.-]+", lines[i - 1].strip()):
                out.hostname = lines[i - 1].strip()  # v0.5+ prints the host name above the device list
            out.devices.append(_device(dm))
        elif rm:
            test = rm.group(1)
        elif line.startswith(("memcpy ", "memory latency", "Device to Device Latency")):
            rows, i = _text_matrix(lines, i + 1, origin)
            _add(out, test, line, rows, {}, f"{origin}:{i}")
            continue
        i += 1
    _need_devices(out, origin)
    return out


def _text_matrix(lines: list[str], i: int, origin: str) -> tuple[list[list[str]], int]:
    """Rows of cells under a matrix header at ``i``; the row label dropped."""
    if i >= len(lines) or not lines[i].split():
        raise ImportFailure(f"{origin}:{i + 1}: expected the column header of an nvbandwidth matrix")
    ncols = len(lines[i].split())
    rows: list[list[str]] = []
    j = i + 1
    while j < len(lines) and lines[j].split():
        cells = lines[j].split()
        if len(cells) != ncols + 1:
            raise ImportFailure(f"{origin}:{j + 1}: {len(cells) - 1} values for {ncols} columns")
        rows.append(cells[1:])
        j += 1
    return rows, j


def _parse_json(text: str, origin: str) -> ImportedMeasurements:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ImportFailure(f"{origin}:{err.lineno}: not valid JSON ({err.msg})") from err
    except RecursionError as err:
        raise ImportFailure(f"{origin}: JSON nested deeper than any nvbandwidth output") from err
    except ValueError as err:  # an integer of thousands of digits (Python's int() limit)
        raise ImportFailure(f"{origin}: a number too long for any nvbandwidth output") from err
    root = doc.get("nvbandwidth") if isinstance(doc, dict) else None
    if not isinstance(root, dict):
        raise ImportFailure(f"{origin}: JSON without the top-level `nvbandwidth` object", hint="nvbandwidth -j output")
    out = ImportedMeasurements(tool=TOOL, origin=origin)
    devices, cases = root.get("GPU Device list") or [], root.get("testcases") or []
    for key, value in (("GPU Device list", devices), ("testcases", cases)):
        if not isinstance(value, list):
            raise ImportFailure(f"{origin}: `{key}` is not a list", hint="nvbandwidth -j output")
    for k, entry in enumerate(devices):
        m = _JSON_DEVICE.match(str(entry).strip())
        out.devices.append(_device(m) if m else MeasuredDevice(ordinal=k, name=str(entry)))
        host = re.search(r": \(([^()]+)\)$", str(entry).strip())
        out.hostname = out.hostname or (host.group(1) if host else None)
    extra: dict[str, Any] = {key: root[key] for key in ("bufferSize", "testSamples", "useMean") if key in root}
    for key, most in (("bufferSize", 2**20), ("testSamples", 10**6)):  # MiB (1 TiB), samples
        value = extra.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= most
        ):
            raise ImportFailure(f"{origin}: `{key}` {str(value)[:40]!r} is not a number from 1 to {most:,}")
    if root.get("error"):
        out.skipped.append(f"nvbandwidth reported an error: {root['error']}")
    for n, case in enumerate(cases):
        where = f"{origin}: testcases[{n}]"
        if not isinstance(case, dict):
            raise ImportFailure(f"{where}: expected an object")
        name = str(case.get("name", f"testcase {n}"))
        if case.get("status") != "Passed" or "bandwidth_matrix" not in case:
            out.skipped.append(
                f"{name}: status {case.get('status')!r}{' — ' + str(case['error']) if 'error' in case else ''}"
            )
            continue
        matrix = case["bandwidth_matrix"]
        if not isinstance(matrix, list) or not all(isinstance(r, list) for r in matrix):
            raise ImportFailure(f"{where}.bandwidth_matrix: expected a list of rows")
        _add(out, name, str(case.get("bandwidth_description", "")), [[str(c) for c in r] for r in matrix], extra, where)
    _need_devices(out, origin)
    return out


def _need_devices(out: ImportedMeasurements, origin: str) -> None:
    if not out.devices:
        raise ImportFailure(f"{origin}: nvbandwidth output without its device list", hint="paste the whole output")


def _add(
    out: ImportedMeasurements, test: str, desc: str, rows: list[list[str]], extra: dict[str, Any], where: str
) -> None:
    """Turn one test case's matrix into measurements (or a line in ``skipped``)."""
    m = _DESC.match(desc.strip())
    if m is None:
        out.skipped.append(f"{test}: {desc.strip()!r} (not a host↔GPU or GPU↔GPU figure)")
        return
    engine, row, arrow, part, unit = m.group("engine", "row", "arrow", "part", "unit")
    latency = unit == "ns"
    if not latency and arrow == "<->" and (row == "CPU" or part != "Total"):
        out.skipped.append(
            f"{test}: {part or 'one direction under reverse traffic'} (only total both-way figures kept)"
        )
        return
    sm = "SM" in engine
    read = "_read_" in test
    method = (
        ("SM copy kernel" if sm else "copy engine, cuMemcpyAsync")
        + (" (destination reads)" if read else " (source writes)" if "_write_" in test else "")
        + ", CUDA events"
    )
    size = extra.get("bufferSize")
    notes = [f"nvbandwidth {test}: {desc.strip()}"]
    if size is None and not latency:
        notes.append("buffer size not in the output (nvbandwidth default 512 MiB)")
    if extra.get("useMean"):
        notes.append("mean of samples (--useMean), not the median")
    for r, cells in enumerate(rows):
        for c, cell in enumerate(cells):
            if cell in ("N/A", "") or (row == "GPU" and r == c):
                continue
            try:
                v = float(cell)
            except ValueError as err:
                raise ImportFailure(f"{where}: row {r}, column {c}: {str(cell)[:40]!r} is not a number") from err
            if not math.isfinite(v):
                raise ImportFailure(f"{where}: row {r}, column {c}: {str(cell)[:40]!r} is not a finite number")
            if v <= 0:
                continue
            kind: MeasureKind
            direction: MeasureDirection = "one-way"
            if latency:
                kind, src, dst = "latency", ("host" if row == "CPU" else f"cuda{r}"), f"cuda{c}"
            elif row == "CPU":
                kind = "h2d" if arrow == "->" else "d2h"
                src, dst = ("host", f"cuda{c}") if arrow == "->" else (f"cuda{c}", "host")
            else:
                kind = "d2d"
                src, dst = (f"cuda{r}", f"cuda{c}") if arrow != "<-" else (f"cuda{c}", f"cuda{r}")
                direction = "both-way" if arrow == "<->" else "one-way"
            out.measurements.append(
                Measurement(
                    kind=kind,
                    direction=direction,
                    src=src,
                    dst=dst,
                    route="host" if row == "CPU" else "peer",
                    method=method,
                    origin=TOOL,
                    size_bytes=int(size) * 2**20 if isinstance(size, (int, float)) and not latency else None,
                    samples=int(extra["testSamples"]) if isinstance(extra.get("testSamples"), int) else None,
                    median_gbps=None if latency else v,
                    median_us=v / 1000.0 if latency else None,
                    notes=notes,
                )
            )
