"""A declared lot, or a paste filled from the catalogue, in the terminal: the lot's terms (price, rental
periods) and every fact that was not read from a machine, with where it comes from (``Source.filled``).
Plain lines: facts are few, and each line is whole for `grep`. Renderables only; the CLI prints."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from topomap.base.lotunits import Price, fmt_period
from topomap.base.units import fmt_gbit
from topomap.model.lots import FACT_WORDS, Entry
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


def lot_tables(snap: Snapshot) -> list[RenderableType]:
    """The lot's name, terms and the facts a declaration or the catalogue gave (every line whole)."""
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


def disagreement_rows(lots: list[tuple[str, Snapshot]]) -> list[dict[str, object]]:
    """Where a lot's paste and its catalogue entry disagree (``catalogue-disagrees`` findings), per lot:
    the lot, what it is about, the finding and its evidence (for `check --json`)."""
    from topomap.model.lots import FINDING  # start-up: the catalogue only where a lot has a finding

    rows: list[dict[str, object]] = []
    for name, snap in lots:
        for host in snap.members or [snap]:
            for f in host.findings:
                if f.kind == FINDING:
                    where = name if host is snap else f"{name}/{host.host.hostname}"
                    rows.append({"lot": where, "subject": f.subject, "text": f.text, "evidence": list(f.evidence)})
    return rows


def disagreements(lots: list[tuple[str, Snapshot]]) -> Text | None:
    """The paste-against-catalogue disagreements of the lots checked, one line each (None: none): the
    paste's fact was kept, and the catalogue's page is named."""
    rows = disagreement_rows(lots)
    if not rows:
        return None
    t = Text("paste and catalogue disagree (the paste's fact is kept):\n", style="yellow")
    for r in rows:
        t.append(visible(f"  [{r['lot']}] {r['subject']}: {r['text']}") + "\n")
        evidence = r["evidence"]
        if isinstance(evidence, list) and evidence:
            t.append(visible(f"    {evidence[0]}") + "\n", style="dim")
    return t


def catalogue_rows(entries: list[Entry]) -> list[dict[str, object]]:
    """The catalogue as `topomap lots --json` writes it: each entry with every fact, its value, the
    public page it comes from, what the page says and whose page it is."""
    out: list[dict[str, object]] = []
    for e in entries:
        sources = e.written.lot.sources or {}
        facts = {
            key: {"value": value, "url": sources[key].url, "says": sources[key].says, "kind": sources[key].kind}
            for key, value in e.written.facts().items()
        }
        out.append({"type": e.type, "lot": e.written.lot.lot, "facts": facts})
    return out


def catalogue_table(entries: list[Entry]) -> Text:
    """One line per entry: its id, what it is, its GPUs, links and NICs, and how many facts it gives
    (each with a public source; how many of them third-party pages)."""
    t = Text(f"{len(entries)} instance types in the catalogue (topomap lots TYPE: every fact with its page)\n\n")
    rows = []
    for e in entries:
        lot = e.lot()
        gpus = f"{lot.gpu_count or '?'} × {lot.model.name if lot.model else 'model unknown'}"
        links = lot.links.words() if lot.links else "links unknown"
        rate = f" × {fmt_gbit(lot.nic_rate_gbit)}" if lot.nic_rate_gbit else ""
        nics = (
            f"{lot.nic_count or '?'}{rate} {lot.fabric or ''}".strip()
            if (lot.nic_count or lot.fabric)
            else "NICs unknown"
        )
        third = sum(e.source_kind(k) == "third-party" for k in lot.facts)
        facts = f"{len(lot.facts)} facts" + (f" ({third} from third-party pages)" if third else "")
        rows.append((e.type, gpus, links, nics, facts))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        t.append(visible("  " + "  ".join(r[i].ljust(widths[i]) for i in range(4)) + f"  {r[4]}") + "\n")
    return t


_NOT_LISTED = frozenset({"hosts", "p2p", "nvlink_domain", "cuda"})


def entry_text(e: Entry) -> Text:
    """One entry: every fact, its value, and the public page it comes from with what the page says."""
    t = Text(visible(f"{e.type}: {e.written.lot.lot}") + "\n", style="bold")
    sources = e.written.lot.sources or {}
    for key, value in e.written.facts().items():
        src = sources[key]
        kind = " (third-party page)" if src.kind == "third-party" else ""
        shown = ("yes" if value else "no") if isinstance(value, bool) else value  # GPUDirect RDMA: yes, not True
        t.append(visible(f"  {FACT_WORDS.get(key, key)}: {shown}") + "\n")
        t.append(visible(f"    {src.url}{kind}") + "\n", style="dim")
        t.append(visible(f"    says: {src.says}") + "\n", style="dim")
    # (hosts is the renter's choice; P2P a question for PCIe boards; an NVLink domain across hosts only
    # some types have; the CUDA version is the image's, not the type's)
    given = e.written.facts()
    left = [FACT_WORDS[k] for k in FACT_WORDS if k not in given and k not in _NOT_LISTED]
    if left:
        t.append(visible(f"  not in the catalogue (no public page found; unknown): {', '.join(left)}") + "\n")
    return t
