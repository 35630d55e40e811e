"""Declared lots and the catalogue of public instance types (issue 31).

A declared lot is a YAML file whose top level has ``lot:``: a lot as a catalogue describes it. It reads
as a snapshot (``source.kind`` ``declared``: :func:`read_lot`), so every command that takes a snapshot
takes it; each fact it gives is ``declared`` wherever it is used, and what it leaves out is unknown.
``type: aws/p4de.24xlarge`` starts from a catalogue entry (:func:`catalogue`); beside a paste,
:func:`with_lot_type` fills only what the paste does not carry, and says where the two disagree.

Inside: ``spec`` (the file format), ``gpus`` (a catalogue's GPU model in the parts table), ``typed``
(the facts as typed values), ``catalogue`` (the shipped entries and their sources), ``build`` (lot →
snapshot), ``fill`` (paste + catalogue).
"""

from __future__ import annotations

from topomap.model.lots.build import lot_snapshot
from topomap.model.lots.catalogue import Entry, catalogue, entry
from topomap.model.lots.fill import FINDING, with_lot_type
from topomap.model.lots.spec import FACT_KEYS, FACT_WORDS, LotError, Written, lot_schema, parse_written
from topomap.model.lots.typed import DeclaredLot, Given, GpuLinks, LotFact, typed_lot
from topomap.model.origins import FactOrigin
from topomap.model.snapshot import Snapshot
from topomap.model.validate import validate_snapshot

__all__ = [
    "FACT_KEYS",
    "FACT_WORDS",
    "FINDING",
    "DeclaredLot",
    "Entry",
    "GpuLinks",
    "LotError",
    "LotFact",
    "catalogue",
    "declared_lot",
    "entry",
    "lot_schema",
    "lot_snapshot",
    "read_lot",
    "with_lot_type",
]


def declared_lot(written: Written) -> DeclaredLot:
    """A written lot as typed facts: its catalogue entry's (``type:``), overridden key by key by its own."""
    given: dict[str, Given] = {}
    type_ = written.lot.type
    if type_ is not None:
        given.update(entry(type_, f"{written.doc.origin}:{written.line('type')}").given())
    for key, value in written.facts().items():
        given[key] = Given(value, FactOrigin("declared", value=str(value)), written)
    return typed_lot(written.lot.lot, written.doc.origin, type_, given, written)


def read_lot(text: str, origin: str) -> Snapshot:
    """A declared lot's text as a snapshot (one host, or a merged cluster of ``hosts`` hosts)."""
    snap = lot_snapshot(declared_lot(parse_written(text, origin)))
    validate_snapshot(snap, origin)
    return snap
