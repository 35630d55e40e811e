"""`topomap nccl` as text: per pair the predicted transport, the rule, what the log shows, why not."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from topomap.nccl.features import Feature
from topomap.nccl.predict import NcclReport
from topomap.render.notes import compress
from topomap.transport.rccl_rules import RCCL_RULES
from topomap.transport.rules import RULES

_STYLE = {"SHM": "yellow", "NET": "red", "unknown": "magenta"}
_CAN = {"yes": "green", "possible": "cyan", "unknown": "magenta"}


def _features(report: NcclReport) -> list[Text]:
    """PXN, NVLS and multi-node NVLink, one line per answer and reason with the GPUs it holds for."""
    out: list[Text] = []
    for title, attr in (("PXN", "pxn"), ("NVLS", "nvls"), ("multi-node NVLink", "mnnvl")):
        groups: dict[Feature, list[str]] = {}
        for g in report.features:
            feat: Feature = getattr(g, attr)
            groups.setdefault(feat, []).append(g.gpu)
        for f, gpus in groups.items():
            t = Text(f"{title}: ")
            t.append(f.can, style=_CAN.get(f.can, ""))
            t.append(f" for {compress(gpus)}: {f.why} (changed by {f.env})")
            out.append(t)
    return out


def _pairs(pairs: list[str]) -> str:
    """Rank pairs as a short list: all of them up to six, else the count and the first three."""
    return ", ".join(pairs) if len(pairs) <= 6 else f"{len(pairs)} pairs ({', '.join(pairs[:3])}, …)"


def _why(report: NcclReport) -> list[Text]:
    """Why each prediction is what it is: per transport and rule, one line with the rule in words and
    every variable that would change it, then the decision's own reasons (``reasons`` in --json), once
    per reason, with the pairs it holds for. An ``unknown`` reads "unknown for …: why, and what would
    settle it"."""
    rules: dict[tuple[str, str, tuple[str, ...]], dict[str, list[str]]] = {}
    for e in report.entries:
        d = e.decision
        by_reason = rules.setdefault((d.transport, d.rule, d.env), {})
        by_reason.setdefault("; ".join(d.reasons), []).append(f"{e.src_rank}->{e.dst_rank}")
    out: list[Text] = []
    for (transport, rule, env), by_reason in rules.items():
        if transport == "unknown":
            out.extend(Text(f"unknown for {_pairs(pairs)}: {why}") for why, pairs in by_reason.items() if why)
            continue
        t = Text("why ")
        t.append(transport, style=_STYLE.get(transport, ""))
        said = RULES[rule].text if rule in RULES else RCCL_RULES.get(rule, ("", ()))[0]
        t.append(f" — rule {rule}" + (f": {said}" if said else "") + (f" (changed by {', '.join(env)})" if env else ""))
        out.append(t)
        out.extend(Text(f"  {_pairs(pairs)}: {why or 'no further facts'}") for why, pairs in by_reason.items())
    return out


def _footnotes(report: NcclReport) -> dict[str, str]:
    """A long "why different" that several pairs share, numbered once ("[1]") instead of repeated on
    every row; the text itself follows the table."""
    count: dict[str, int] = {}
    for e in report.entries:
        if e.why_different:
            count[e.why_different] = count.get(e.why_different, 0) + 1
    shared = [w for w, n in count.items() if n > 1 and len(w) > 40]
    return {w: f"[{i}]" for i, w in enumerate(shared, 1)}


def _no_pairs(report: NcclReport) -> str:
    """Why the pairs table would be empty: one GPU, or no channel line between two ranks."""
    gpus = len(report.nics) or len(report.features)
    if gpus == 1:
        return "the source holds one GPU (NCCL needs two ranks for a channel)"
    return "no two ranks to pair (see the notes)"


def summary(report: NcclReport) -> str:
    """One line first: how many pairs get each transport, and by which rule (most pairs first)."""
    counts: dict[tuple[str, str], int] = {}
    for e in report.entries:
        key = (e.decision.transport, e.decision.rule)
        counts[key] = counts.get(key, 0) + 1
    parts = [f"{n} {t} ({rule})" for (t, rule), n in sorted(counts.items(), key=lambda kv: -kv[1])]
    n = len(report.entries)
    unit = "(rank pair, transport) entries" if report.compared else "rank pairs"
    return f"predicted for {n} {unit}: " + ", ".join(parts)


def nccl_view(report: NcclReport) -> list[Table | Text]:
    """The pairs table, the NIC table (snapshot only), then agreement, notes and skipped lines."""
    lib = "RCCL" if report.library == "rccl" else "NCCL"  # AMD GPUs: RCCL's rules (issue 35)
    out: list[Table | Text] = [Text(f"{lib} transports ({report.source}); rules of {report.rules}")]
    if report.env.values:
        out.append(Text("environment: " + " ".join(report.env.set_vars())))
    if report.entries:
        out.append(Text(summary(report)))
    has_log = any(e.observed is not None for e in report.entries)
    marks = _footnotes(report)
    t = Table(show_lines=False, box=box.SIMPLE_HEAD)
    for col in (
        "ranks",
        "GPUs",
        "predicted",
        "how",
        "rule",
        "changed by",
        *(("observed", "why different") if has_log else ()),
    ):
        t.add_column(col)
    for e in report.entries:
        p = e.decision.transport
        # every cell a Text: a log's words ("via P2P/IPC[/]", a NIC named "[bold]") are not rich markup
        row: list[RenderableType] = [
            Text(f"{e.src_rank}->{e.dst_rank}"),
            Text(f"{e.src_gpu or '?'}->{e.dst_gpu or '?'}"),
            Text(p, style=_STYLE.get(p, "")),
            Text(e.decision.detail),
            Text(e.decision.rule),
            Text(", ".join(e.decision.env[:3])),
        ]
        if has_log:
            why = e.why_different
            row += [Text(e.via or ""), Text(marks.get(why, why) if why else "same")]
        t.add_row(*row)
    out.append(t if report.entries else Text("no GPU pairs: " + _no_pairs(report)))
    for why, mark in marks.items():
        pairs = [f"{e.src_rank}->{e.dst_rank}" for e in report.entries if e.why_different == why]
        out.append(Text(f"{mark} why different for {_pairs(pairs)}: {why}"))
    if report.nics:
        n = Table(title="NIC per GPU", box=box.SIMPLE_HEAD, title_justify="left")
        for col in ("GPU", "NIC", "path", "GPUDirect RDMA", "why"):
            n.add_column(col)
        for g in report.nics:
            n.add_row(
                Text(g.gpu),
                Text(g.nic or "none"),
                Text(g.path or "?"),
                Text(g.gdr, style="" if g.gdr == "yes" else "yellow"),
                Text(g.why),
            )
        out.append(n)
    out.extend(_features(report))
    out.extend(_why(report))
    same, total = report.agreement
    if total:
        unknown = sum(1 for e in report.entries if e.observed is not None and e.decision.transport == "unknown")
        left = f" ({unknown} predicted unknown: the 'unknown for' lines say what would settle them)" if unknown else ""
        out.append(Text(f"agreement: {same}/{total} (rank pair, transport) entries as predicted{left}"))
    for note in report.notes:
        out.append(Text(f"note: {note}"))
    for skip in report.skipped:
        out.append(Text(f"skipped: {skip}"))
    return out
