"""What a measurement file holds once read: its devices and figures, before they are joined to a snapshot.

The parsers (:mod:`~topomap.importers.nvbandwidth`, :mod:`~topomap.importers.p2p_bandwidth`) make
these; :mod:`~topomap.importers.bandwidth` picks the parser and joins the figures to a snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topomap.model.snapshot import Measurement


@dataclass
class MeasuredDevice:
    ordinal: int  # CUDA ordinal in the measuring process
    name: str | None = None
    pci_bus_id: str | None = None  # as the tool printed it


@dataclass
class ImportedMeasurements:
    tool: str  # "nvbandwidth", "p2pBandwidthLatencyTest"
    origin: str  # the file
    devices: list[MeasuredDevice] = field(default_factory=list)
    measurements: list[Measurement] = field(default_factory=list)  # src/dst are "cuda<k>" or "host"
    skipped: list[str] = field(default_factory=list)  # what the file held that was not imported, and why
    hostname: str | None = None  # where the tool says it ran (nvbandwidth prints it)
