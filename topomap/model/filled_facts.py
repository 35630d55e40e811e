"""Device facts that a declared lot or the catalogue may give, each with its origin: a NIC's line rate,
a GPU's PCIe link generation and width, the GPU model, the host's CPU. Every view that prints one asks
here, so "400 Gb/s (declared)" reads the same in show, check, map and diff."""

from __future__ import annotations

from dataclasses import dataclass

from topomap.base.links import nic_bandwidth_gbps
from topomap.base.units import fmt_gbit
from topomap.model.facts import Answer, Bandwidth, BandwidthSource, gpu_pcie_link
from topomap.model.origins import FactOrigin, fact_origin, relabel
from topomap.model.snapshot import Gpu, Nic, Snapshot


@dataclass(frozen=True)
class NicSpeed:
    """A NIC's line rate in Gb/s (None: not recorded) and, when a declared lot or the catalogue gave it,
    its origin."""

    gbit_s: float | None
    origin: FactOrigin | None = None

    @property
    def source(self) -> BandwidthSource:
        """ "spec" for a rate a tool read (the port's nominal line rate), else declared / catalogue."""
        if self.gbit_s is None:
            return "unknown"
        return self.origin.source if self.origin is not None else "spec"

    def text(self) -> str:
        """ "400 Gb/s", "400 Gb/s (declared)", "100 Gb/s (catalogue: aws/p4d.24xlarge)"; "—" unknown."""
        if self.gbit_s is None:
            return "—"
        return fmt_gbit(self.gbit_s) + (self.origin.note() if self.origin is not None else "")

    def bandwidth(self) -> Bandwidth:
        """The line rate as GB/s per direction, labelled with its source."""
        if self.gbit_s is None:
            return Bandwidth(None, "unknown", "NIC line rate not recorded")
        bw = Bandwidth(nic_bandwidth_gbps(self.gbit_s), "spec", f"NIC line rate {fmt_gbit(self.gbit_s)}")
        return relabel(bw, self.origin, "NIC rate")


def nic_speed(nic: Nic, snap: Snapshot | None = None) -> NicSpeed:
    """The NIC's line rate as the snapshot records it, with its origin where it was declared or filled."""
    if nic.speed_gbit_s is None:
        return NicSpeed(None)
    return NicSpeed(nic.speed_gbit_s, fact_origin(snap, "nics.speed_gbit_s"))


def pcie_text(gpu: Gpu, snap: Snapshot | None = None) -> str | None:
    """A GPU's PCIe link in words with its origin where declared: "Gen5 x16 (63.0 GB/s declared)"; None
    when neither generation nor width is recorded."""
    link = gpu_pcie_link(gpu)
    if link.gen is None and link.width is None:
        return None
    origin = fact_origin(snap, "gpus.pcie")
    text = f"Gen{link.gen if link.gen is not None else '?'} " + (f"x{link.width}" if link.width else "width unknown")
    if link.gbps is not None:
        bw = relabel(Bandwidth(link.gbps, "spec"), origin, "PCIe link")
        return text + f" ({bw.text()})"
    return text + (origin.note() if origin is not None else "")


def named(snap: Snapshot | None, field: str, text: str) -> str:
    """A value followed by its origin where a declared lot or the catalogue gave it: "Intel (declared)"."""
    origin = fact_origin(snap, field)
    return text + (origin.note() if origin is not None else "")


def said(snap: Snapshot | None, field: str, otherwise: str = "from the matrix") -> str:
    """Where a fact shown comes from, inside parentheses: "declared", "catalogue aws/p4de.24xlarge", or
    ``otherwise`` (what a tool's output gave it: "from the matrix")."""
    origin = fact_origin(snap, field)
    return origin.inner() if origin is not None else otherwise


def lot_gdr(snap: Snapshot, nics: list[Nic]) -> Answer | None:
    """GPUDirect RDMA as a declared lot (or the catalogue) gives it where the source places no NIC: the
    declaration's yes or no, said as such; None where no declaration gave it (the path then decides)."""
    origin = fact_origin(snap, "nics.gdr")
    words = {n.gdr for n in nics}
    if origin is None or len(words) != 1 or None in words:
        return None
    yes = words == {True}
    text = f"GPUDirect RDMA {'yes' if yes else 'no'} ({origin.inner()}; where the NICs sit is not given)"
    return Answer("yes" if yes else "no", (text,))
