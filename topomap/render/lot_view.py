"""A declared lot, or a paste filled from the catalogue, in the terminal: the lot's terms (price, rental
periods) and every fact that was not read from a machine, with where it comes from (``Source.filled``).
Plain lines: facts are few, and each line is whole for `grep`. Renderables only; the CLI prints."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from topomap.base.lotunits import Price, fmt_period
from topomap.model.lots import FACT_WORDS
from topomap.model.snapshot import LotTerms, Snapshot
from topomap.render.text import visible


def terms_words(terms: LotTerms) -> str:
    """ "price 2.49 USD per GPU-hour; rental periods 3 d, 7 d, 30 d" ("" without either)."""
    bits = []
    if terms.price is not None:
        p = terms.price
        bits.append("price " + Price(p.amount, p.currency, p.per, p.text).words())
    if terms.periods_s:
        bits.append("rental periods " + ", ".join(fmt_period(s) for s in terms.periods_s))
    return "; ".join(bits)


def lot_tables(snap: Snapshot, width: int | None = None) -> list[RenderableType]:
    """The lot's name, terms and the facts a declaration or the catalogue gave (``width`` unused: every
    line is whole)."""
    del width
    t = Text()
    terms = snap.lot
    declared = snap.source.kind == "declared"
    if terms is not None:
        head = f"Declared lot: {terms.name}" if declared else f"Catalogue entry: {terms.type} ({terms.name})"
        if declared and terms.type:
            head += f" (from the catalogue entry {terms.type})"
        if terms.hosts > 1:
            head += f"; {terms.hosts} identical hosts"
        t.append(visible(head) + "\n", style="bold")
        said = terms_words(terms)
        if said:
            t.append(visible(f"  {said}") + "\n")
    rows = [
        (
            FACT_WORDS.get(f.lot_field, f.lot_field),
            f.value,
            f.origin if f.origin == "declared" else f"catalogue ({f.detail})",
            f.source_url or "",
        )
        for f in snap.source.filled
        if f.field not in ("gpus.gdr", "nvswitches")  # said once, by nics.gdr and pairs.nvlink
    ]
    if rows:
        t.append("  not read from a machine (what is not listed is unknown):\n", style="dim")
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        w2 = max(len(r[2]) for r in rows)
        for fact, value, origin, url in rows:
            line = f"    {fact.ljust(w0)}  {value.ljust(w1)}  {origin.ljust(w2)}  {url}".rstrip()
            t.append(visible(line) + "\n")
    return [t]
