"""`topomap nccl` as text: per pair the predicted transport, the rule, what the log shows, why not."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from topomap.nccl.features import Feature
from topomap.nccl.predict import Entry, NcclReport
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


def pairs_text(pairs: list[str]) -> str:
    """Rank pairs as a short list: all of them up to six, else the count and the first three."""
    return ", ".join(pairs) if len(pairs) <= 6 else f"{len(pairs)} pairs ({', '.join(pairs[:3])}, …)"


def _why(report: NcclReport) -> list[Text]:
    """Why each prediction is what it is: per transport and rule, one line with the rule in words and
    every variable that would change it, then the decision's own reasons (``reasons`` in --json), once
    per reason, with the pairs it holds for. An ``unknown`` reads "unknown for …: why, and what would
    settle it"."""
    rules: Reasons = {}
    for e in report.entries:
        d = e.decision
        by_reason = rules.setdefault((d.transport, d.rule, d.env), {})
        by_reason.setdefault("; ".join(d.reasons), []).append(f"{e.src_rank}->{e.dst_rank}")
    return why_lines(rules)


#: (transport, rule, variables) → the decision's reasons in words → the pairs (or rails) they hold for
Reasons = dict[tuple[str, str, tuple[str, ...]], dict[str, list[str]]]


def why_lines(rules: Reasons) -> list[Text]:
    """The "why" lines of :func:`_why` (and of a cluster's view): per transport and rule, the rule in words
    and its variables, then each set of reasons with the pairs it holds for."""
    out: list[Text] = []
    for (transport, rule, env), by_reason in rules.items():
        if transport == "unknown":
            out.extend(Text(f"unknown for {pairs_text(pairs)}: {why}") for why, pairs in by_reason.items() if why)
            continue
        t = Text("why ")
        t.append(transport, style=_STYLE.get(transport, ""))
        said = RULES[rule].text if rule in RULES else RCCL_RULES.get(rule, ("", ()))[0]
        t.append(f" — rule {rule}" + (f": {said}" if said else "") + (f" (changed by {', '.join(env)})" if env else ""))
        out.append(t)
        out.extend(Text(f"  {pairs_text(pairs)}: {why or 'no further facts'}") for why, pairs in by_reason.items())
    return out


def _footnotes(report: NcclReport) -> dict[str, str]:
    """A long "why different" is a footnote: numbered once ("[1]") in the table, on every row it holds for,
    and its text follows the table (a sentence in a cell made the table as wide as the sentence)."""
    long = dict.fromkeys(e.why_different for e in report.entries if e.why_different and len(e.why_different) > 40)
    return {w: f"[{i}]" for i, w in enumerate(long, 1) if w}


def _nopairs_text(report: NcclReport) -> str:
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


def _host_ids(report: NcclReport) -> dict[str, str]:
    """Each host a GPU's name carries, by a short id (``h1``, ``h2``, in order of first appearance):
    a log's host names ("nccl-tests-gdr-2-worker-0") made the --log table about 230 columns wide."""
    ids: dict[str, str] = {}
    for e in report.entries:
        for host in (e.src_host, e.dst_host):
            if host is not None and host not in ids:
                ids[host] = f"h{len(ids) + 1}"
    return ids


def _by_bus(report: NcclReport) -> bool:
    """Every GPU of the table is known by its bus id only (a log without a snapshot): the column says
    "GPU buses" once instead of "bus" before each id."""
    return all(e.src_gpu is None and e.dst_gpu is None for e in report.entries) and any(
        e.src_bus or e.dst_bus for e in report.entries
    )


def _gpu(host: str | None, gpu: str | None, bus: str | None, ids: dict[str, str], by_bus: bool) -> str:
    """A GPU as the table shows it: ``h1:33000`` for the bus 33000 of ``vm-host40`` (``h1:bus 33000``
    where other GPUs have names), ``gpu3``."""
    name = gpu if gpu is not None else (bus if by_bus else f"bus {bus}") if bus else "?"
    return f"{ids[host]}:{name}" if host is not None else name


#: Pairs (and GPUs) of a row that several pairs share: the first few, then "…".
_FIRST = 3
#: A row's GPUs longer than this as ranges are its first few, then "…".
_LONG = 24


def _ranks(group: list[Entry]) -> str:
    more = ", …" if len(group) > _FIRST else ""
    return ", ".join(f"{e.src_rank}->{e.dst_rank}" for e in group[:_FIRST]) + more


def _gpus(group: list[Entry], ids: dict[str, str], by_bus: bool) -> str:
    """One pair's GPUs (``gpu0->gpu1``); a row of several pairs: the GPUs they touch, as ranges
    (``gpu0–7``), else the first few then "…" (its ranks column says which pairs)."""
    srcs = [_gpu(e.src_host, e.src_gpu, e.src_bus, ids, by_bus) for e in group]
    dsts = [_gpu(e.dst_host, e.dst_gpu, e.dst_bus, ids, by_bus) for e in group]
    if len(group) == 1:
        return f"{srcs[0]}->{dsts[0]}"
    names = list(dict.fromkeys(srcs + dsts))
    text = compress(names)
    return compress(names[:_FIRST]) + ", …" if len(names) > _FIRST and len(text) > _LONG else text


def _rows(report: NcclReport, every: bool, has_log: bool, marks: dict[str, str]) -> list[list[Entry]]:
    """The table's rows: with ``every``, one per pair; else pairs whose row is the same but for their ranks
    (and GPUs) share one, in the order of their first pair."""
    if every:
        return [[e] for e in report.entries]
    rows: dict[tuple[object, ...], list[Entry]] = {}
    for e in report.entries:
        d = e.decision
        why = marks.get(e.why_different or "", e.why_different) if has_log else None
        key = (d.transport, d.detail, d.rule, d.env[:3], e.via if has_log else None, why)
        rows.setdefault(key, []).append(e)
    return list(rows.values())


def _pairs_table(report: NcclReport, every: bool, marks: dict[str, str]) -> list[Table | Text]:
    """Per rank pair (or per row of alike pairs) the predicted transport; with a log what it did. The
    variables that would change a prediction are in its "why" line below; without a log also here."""
    has_log = any(e.observed is not None for e in report.entries)
    ids = _host_ids(report)
    by_bus = _by_bus(report)
    rows = _rows(report, every, has_log, marks)
    grouped = len(rows) < len(report.entries)
    t = Table(show_lines=False, box=box.SIMPLE_HEAD)
    cols: list[str] = ["pairs"] if grouped else []
    cols += ["ranks", "GPU buses" if by_bus else "GPUs", "predicted", "how", "rule"]
    cols += ["observed", "why different"] if has_log else ["changed by"]
    for col in cols:
        t.add_column(col)
    for group in rows:
        e = group[0]
        p = e.decision.transport
        # every cell a Text: a log's words ("via P2P/IPC[/]", a NIC named "[bold]") are not rich markup
        row: list[RenderableType] = [Text(str(len(group)))] if grouped else []
        row += [Text(_ranks(group)), Text(_gpus(group, ids, by_bus))]
        row += [
            Text(p, style=_STYLE.get(p, "")),
            Text(e.decision.detail),
            Text(e.decision.rule),
        ]
        if has_log:
            why = e.why_different
            row += [Text(e.via or ""), Text(marks.get(why, why) if why else "same")]
        else:
            row.append(Text(", ".join(e.decision.env[:3])))
        t.add_row(*row)
    out: list[Table | Text] = [t]
    if ids:
        out.append(Text("hosts: " + ", ".join(f"{i} {host}" for host, i in ids.items())))
    if grouped:
        held = f"{len(rows)} row{'s' if len(rows) > 1 else ''} for {len(report.entries)} pairs"
        out.append(Text(f"{held}: a row holds the pairs alike but for their ranks (--all: a row each)"))
    return out


def nccl_view(report: NcclReport, every: bool = False) -> list[Table | Text]:
    """The pairs table (``every``: a row per pair, else alike pairs on one row), the NIC table (snapshot
    only), then agreement, notes and skipped lines."""
    lib = "RCCL" if report.library == "rccl" else "NCCL"  # AMD GPUs: RCCL's rules (issue 35)
    out: list[Table | Text] = [Text(f"{lib} transports ({report.source}); rules of {report.rules}")]
    if report.env.values:
        out.append(Text("environment: " + " ".join(report.env.set_vars())))
    if report.entries:
        out.append(Text(summary(report)))
    marks = _footnotes(report)
    if report.entries:
        out += _pairs_table(report, every, marks)
    else:
        out.append(Text("no GPU pairs: " + _nopairs_text(report)))
    for why, mark in marks.items():
        pairs = [f"{e.src_rank}->{e.dst_rank}" for e in report.entries if e.why_different == why]
        out.append(Text(f"{mark} why different for {pairs_text(pairs)}: {why}"))
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
