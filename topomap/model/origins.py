"""Where a fact that no tool output gave comes from: a declared lot, or the catalogue of public instance
types (``Source.filled``). The fact functions ask :func:`fact_origin` so that every figure a declaration
or the catalogue gave says so wherever it is used: "NIC rate 400 Gb/s (declared)", "300 GB/s catalogue
(aws/p4de.24xlarge)". Such a figure is never ``spec`` or ``measured``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, TypeVar

from topomap.model.snapshot import Filled, FillOrigin, Snapshot

_B = TypeVar("_B")


@dataclass(frozen=True)
class FactOrigin:
    """One filled fact's origin: ``declared`` or ``catalogue``, the entry (``aws/p4de.24xlarge``) or lot
    file it comes from, the public page and what it says there (catalogue facts)."""

    origin: FillOrigin
    detail: str | None = None
    url: str | None = None
    says: str | None = None
    value: str = ""

    @property
    def source(self) -> FillOrigin:
        """The figure's source as a bandwidth names it (``model.facts.BandwidthSource``)."""
        return self.origin

    def words(self) -> str:
        """ "declared", or "catalogue (aws/p4de.24xlarge)"."""
        if self.origin == "catalogue" and self.detail:
            return f"catalogue ({self.detail})"
        return self.origin

    def inner(self) -> str:
        """The words inside parentheses: "declared", "catalogue aws/p4de.24xlarge"."""
        if self.origin == "catalogue" and self.detail:
            return f"catalogue {self.detail}"
        return self.origin

    def note(self) -> str:
        """Appended to a value: " (declared)", " (catalogue aws/p4de.24xlarge)"."""
        return f" ({self.inner()})"

    def with_value(self) -> str:
        """ "declared: 180 GB", "catalogue aws/p4de.24xlarge: 80 GB" — the words and the value as given."""
        return f"{self.inner()}: {self.value}" if self.value else self.inner()

    def cited(self) -> str:
        """With the page it comes from, for evidence lines: "catalogue (aws/p4de.24xlarge: URL)"."""
        if self.origin == "catalogue" and self.detail:
            return f"catalogue ({self.detail}" + (f": {self.url})" if self.url else ")")
        return self.words()


def _first_host(snap: Snapshot) -> Snapshot:
    return snap.members[0] if snap.source.kind == "merge" and snap.members else snap


def filled_record(snap: Snapshot | None, field: str) -> Filled | None:
    """The ``Source.filled`` record of a snapshot field (``nics.speed_gbit_s``), or None when a tool
    output gave it (or nothing did). A merged cluster answers for its first host."""
    if snap is None:
        return None
    for f in _first_host(snap).source.filled:
        if f.field == field:
            return f
    return None


def fact_origin(snap: Snapshot | None, field: str) -> FactOrigin | None:
    """Where a snapshot field's value comes from when a declared lot or the catalogue gave it."""
    f = filled_record(snap, field)
    if f is None:
        return None
    return FactOrigin(f.origin, f.detail, f.source_url, f.says, f.value)


def origin_note(snap: Snapshot | None, field: str) -> str:
    """ " (declared)" / " (catalogue: aws/p4de.24xlarge)" for a filled field, "" for one a tool gave."""
    o = fact_origin(snap, field)
    return o.note() if o is not None else ""


def filled_fields(snap: Snapshot) -> frozenset[str]:
    """Every snapshot field a declared lot or the catalogue filled (of the first host of a cluster)."""
    return frozenset(f.field for f in _first_host(snap).source.filled)


def relabel(bw: _B, origin: FactOrigin | None, what: str) -> _B:
    """A bandwidth (``model.facts.Bandwidth``) that rests on a declared or catalogue fact (``what``: "NV18",
    "NIC rate") takes that origin as its source: "450 GB/s declared", "300 GB/s catalogue
    (aws/p4de.24xlarge)". The rest of its basis (the parts table's per-link rate) is kept and said."""
    fields: Any = bw
    if origin is None or fields.gbps is None:
        return bw
    basis = f"{what} {origin.words()}" + (f"; {fields.basis}" if fields.basis else "")
    tag = f"{origin.origin}, {fields.tag}" if fields.tag else origin.origin
    detail = (origin.detail or "") if origin.origin == "catalogue" else ""
    out: _B = dataclasses.replace(fields, source=origin.source, basis=basis, tag=tag, detail=detail)
    return out


def filled_summary(snap: Snapshot) -> str | None:
    """One line for views that list notes (nccl, map): which facts were not read from the machine, and
    from where ("not read from the machine: GPU links NVSwitch (NV12 every GPU pair) (catalogue
    aws/p4d.24xlarge) …"); None where every fact was read."""
    records = [f for f in _first_host(snap).source.filled if f.field not in ("gpus.gdr", "nvswitches")]
    if not records:
        return None
    words = ", ".join(f"{f.lot_field} {f.value}" for f in records)
    first = fact_origin(snap, records[0].field)
    where = first.inner() if first is not None else "a declared lot"
    if any(f.origin != records[0].origin or f.detail != records[0].detail for f in records):
        where = "a declared lot and the catalogue"
    return f"not read from the machine ({where}): {words}"
