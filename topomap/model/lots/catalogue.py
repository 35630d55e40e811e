"""The catalogue of public instance types shipped with topomap: ``catalogue/*.yaml`` in this package, one
file per provider, each entry written as a declared lot with, beside each fact, the public page it comes
from and what that page says (``catalogue/README.md``). A fact without a source is refused at load: the
catalogue states nothing it cannot show a page for.

Entry ids are ``provider/name`` (``aws/p4de.24xlarge``, ``nvidia/dgx-h100``), as `type:` and `--lot-type`
name them.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from topomap.files.yamlfile import load_yaml
from topomap.model.lots.spec import LotError, Written, read_written, shown
from topomap.model.lots.typed import DeclaredLot, Given, typed_lot
from topomap.model.origins import FactOrigin

PROVIDERS = ("aws", "azure", "gcp", "nvidia")


@dataclass(frozen=True)
class Entry:
    """One catalogue entry: its id, the entry as written (with its sources), its provider file."""

    type: str
    written: Written
    file: str

    def given(self) -> dict[str, Given]:
        """Each fact with its catalogue origin: this entry, the page and what the page says."""
        sources = self.written.lot.sources or {}
        out: dict[str, Given] = {}
        for key, value in self.written.facts().items():
            src = sources[key]
            origin = FactOrigin("catalogue", self.type, src.url, src.says, str(value))
            out[key] = Given(value, origin, self.written)
        return out

    def lot(self) -> DeclaredLot:
        """The entry as a lot of catalogue facts (no price: prices change; a declaration gives its own)."""
        return typed_lot(self.written.lot.lot, self.file, self.type, self.given(), self.written, complete=False)

    def source_kind(self, key: str) -> str:
        """ "provider" (the provider's own page or file) or "third-party"."""
        src = (self.written.lot.sources or {}).get(key)
        return src.kind if src is not None else "provider"


def _read(provider: str) -> list[Entry]:
    """One provider's catalogue file; every fact has its source, every source a fact."""
    name = f"catalogue/{provider}.yaml"
    text = resources.files("topomap.model.lots").joinpath(name).read_text(encoding="utf-8")
    doc = load_yaml(text, f"topomap/model/lots/{name}", "catalogue", LotError)
    entries = doc.data.get("entries") if isinstance(doc.data, dict) else None
    if not isinstance(entries, dict):
        raise LotError(f"{doc.origin}:1: a catalogue file holds `entries:`")
    out: list[Entry] = []
    for key, value in entries.items():
        written = read_written(doc, value, f"$.entries.{key}")
        sources = written.lot.sources or {}
        facts = written.facts()
        for fact in facts:
            if fact not in sources:
                raise LotError(f"{doc.origin}:{written.line(fact)}: {provider}/{key}: {fact} has no source")
        for src in sources:
            if src not in facts:
                raise LotError(f"{doc.origin}:{written.line('sources')}: {provider}/{key}: source {src} for no fact")
        if written.lot.type is not None or written.lot.price is not None or written.lot.periods:
            raise LotError(f"{doc.origin}:{written.line('lot')}: {provider}/{key}: no type, price or periods here")
        out.append(Entry(f"{provider}/{key}", written, doc.origin))
    return out


@lru_cache(maxsize=1)
def catalogue() -> tuple[Entry, ...]:
    """Every entry, provider by provider, in file order."""
    return tuple(e for p in PROVIDERS for e in _read(p))


def entry(type_: str, where: str) -> Entry:
    """The entry of an id; an unknown id is a one-line error naming ``where`` ("lot.yaml:3", "--lot-type")
    with the closest ids."""
    found = {e.type.lower(): e for e in catalogue()}
    hit = found.get(type_.strip().lower())
    if hit is not None:
        return hit
    ids = [e.type for e in catalogue()]
    close = difflib.get_close_matches(type_.strip(), ids, n=2, cutoff=0.5)
    hint = f"did you mean {' or '.join(f'`{c}`' for c in close)}?" if close else "`topomap lots` lists them"
    raise LotError(f"{where}: type {shown(type_)}: not in the catalogue of instance types", hint=hint)
