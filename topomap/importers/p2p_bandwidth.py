"""CUDA sample ``p2pBandwidthLatencyTest`` output → measurements.

Matrices are ``D\\D`` with the row the source and the column the destination (the sample copies
``buffers[i]`` on device i to device j for writes, cuda-samples p2pBandwidthLatencyTest.cu).
"P2P=Disabled" figures go through host memory (staged); bidirectional figures are the sum of
both directions (the sample doubles the bytes). The diagonal (a copy within one GPU) is not a
link and is skipped. Buffer size is not printed: the sample's default is 40,000,000 ints
(160 MB), ``--numElems`` changes it, so the size is recorded as unknown.
"""

from __future__ import annotations

import math
import re

from topomap.base.errors import ImportFailure
from topomap.base.pciaddr import format_bus_id
from topomap.importers.measurements import ImportedMeasurements, MeasuredDevice
from topomap.model.snapshot import MeasureDirection, Measurement, MeasureRoute

TOOL = "p2pBandwidthLatencyTest"
_DEVICE = re.compile(
    r"^Device: (\d{1,6}), (.*?), pciBusID: ([0-9a-fA-F]{1,2}), pciDeviceID: ([0-9a-fA-F]{1,2}), "
    r"pciDomainID:\s*([0-9a-fA-F]{1,8})\b"
)
_BW_TITLE = re.compile(r"^(Unidirectional|Bidirectional) P2P=(Enabled|Disabled) Bandwidth(?: \(P2P (\w+)\))? Matrix")
_LAT_TITLE = re.compile(r"^P2P=(Enabled|Disabled) Latency(?: \(P2P (\w+)\))? Matrix \(us\)")


def _floats(line: str, where: str) -> list[float]:
    try:
        values = [float(t) for t in line.split()]
    except ValueError as err:
        raise ImportFailure(f"{where}: expected numbers, got {line.strip()[:80]!r}") from err
    if not all(math.isfinite(v) for v in values):
        raise ImportFailure(f"{where}: a figure that is not a finite number in {line.strip()[:80]!r}")
    return values


def _ordinal(token: str | float, where: str) -> int:
    """A device number in a matrix header or row: a small non-negative integer."""
    text = str(token)
    value = float(text) if text.replace(".", "", 1).isdigit() and len(text) <= 8 else -1.0
    if value < 0 or not value.is_integer():
        raise ImportFailure(f"{where}: {text[:20]!r} is not a device number", hint="a p2pBandwidthLatencyTest matrix")
    return int(value)


def parse_p2p_bandwidth(text: str, origin: str) -> ImportedMeasurements:
    out = ImportedMeasurements(tool=TOOL, origin=origin)
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        m = _DEVICE.match(line)
        if m:
            bus = format_bus_id((int(m.group(5), 16), int(m.group(3), 16), int(m.group(4), 16), 0))
            out.devices.append(MeasuredDevice(ordinal=int(m.group(1)), name=m.group(2).strip(), pci_bus_id=bus))
            i += 1
            continue
        bw, lat = _BW_TITLE.match(line), _LAT_TITLE.match(line)
        if bw or lat:
            i = _matrix(lines, i, origin, out, bw, lat)
            continue
        i += 1
    if not out.devices:
        raise ImportFailure(
            f"{origin}: {TOOL} output without its `Device: N, ...` lines", hint="paste the whole output"
        )
    return out


def _matrix(
    lines: list[str],
    i: int,
    origin: str,
    out: ImportedMeasurements,
    bw: re.Match[str] | None,
    lat: re.Match[str] | None,
) -> int:
    """Read one matrix starting at its title line ``i``; return the index after it."""
    title = lines[i].strip()
    enabled = (bw.group(2) if bw else lat.group(1) if lat else "") == "Enabled"
    mode = (bw.group(3) if bw else lat.group(2) if lat else None) or ("Writes" if enabled else None)
    direction: MeasureDirection = "both-way" if bw and bw.group(1) == "Bidirectional" else "one-way"
    route: MeasureRoute = "peer" if enabled else "staged"
    header = lines[i + 1].split() if i + 1 < len(lines) else []
    if len(header) < 2 or header[0] not in ("D\\D", "GPU"):
        raise ImportFailure(f"{origin}:{i + 2}: expected the `D\\D 0 1 ...` header under {title!r}")
    cols = [_ordinal(c, f"{origin}:{i + 2}") for c in header[1:]]
    j = i + 2
    n = len(out.devices)
    while j < len(lines) and lines[j].split() and lines[j].split()[0].isdigit():
        vals = _floats(lines[j], f"{origin}:{j + 1}")
        src, cells = _ordinal(lines[j].split()[0], f"{origin}:{j + 1}"), vals[1:]
        if len(cells) != len(cols):
            raise ImportFailure(f"{origin}:{j + 1}: {len(cells)} values for {len(cols)} columns under {title!r}")
        for dst, v in zip(cols, cells):
            if dst == src or (n and (src >= n or dst >= n)):
                continue
            note = f"{TOOL}: {title}"
            method = f"copy engine, cudaMemcpyPeerAsync ({mode or 'staged'}), CUDA events"
            if lat:
                out.measurements.append(
                    Measurement(
                        kind="latency",
                        src=f"cuda{src}",
                        dst=f"cuda{dst}",
                        route=route,
                        method=method,
                        origin=TOOL,
                        repetitions=100,
                        median_us=v,
                        notes=[note, "GPU-timed mean of 100 single-element copies (not a median)"],
                    )
                )
            else:
                out.measurements.append(
                    Measurement(
                        kind="d2d",
                        direction=direction,
                        src=f"cuda{src}",
                        dst=f"cuda{dst}",
                        route=route,
                        method=method,
                        origin=TOOL,
                        repetitions=5,
                        median_gbps=v,
                        notes=[note, "one run per figure: no spread; buffer size not in the output (default 160 MB)"],
                    )
                )
        j += 1
    if lat:
        out.skipped.append(f"{title}: the CPU-timed rows (launch overhead included)")
        # the CPU block follows after a blank line: skip it
        k = j
        while k < len(lines) and not lines[k].strip():
            k += 1
        if k < len(lines) and lines[k].split()[:1] == ["CPU"]:
            k += 1
            while k < len(lines) and lines[k].split() and lines[k].split()[0].isdigit():
                k += 1
            j = k
    return j
