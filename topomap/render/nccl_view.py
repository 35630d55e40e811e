"""`topomap nccl` as text: per pair the predicted transport, the rule, what the log shows, why not."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from topomap.nccl.features import Feature
from topomap.nccl.predict import NcclReport
from topomap.nccl.rules import rules_used
from topomap.render.notes import compress

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


def _unknowns(report: NcclReport) -> list[Text]:
    """Why each ``unknown`` prediction is unknown, once per reason, with the pairs it holds for."""
    by_reason: dict[str, list[str]] = {}
    for e in report.entries:
        if e.decision.transport == "unknown" and e.decision.reasons:
            by_reason.setdefault("; ".join(e.decision.reasons), []).append(f"{e.src_rank}->{e.dst_rank}")
    out = []
    for reason, pairs in by_reason.items():
        shown = ", ".join(pairs) if len(pairs) <= 6 else f"{len(pairs)} pairs ({', '.join(pairs[:3])}, …)"
        out.append(Text(f"unknown for {shown}: {reason}"))
    return out


def nccl_view(report: NcclReport) -> list[Table | Text]:
    """The pairs table, the NIC table (snapshot only), then agreement, notes and skipped lines."""
    out: list[Table | Text] = [Text(f"NCCL transports ({report.source}); rules of {rules_used(report.version)}")]
    if report.env.values:
        out.append(Text("environment: " + " ".join(report.env.set_vars())))
    has_log = any(e.observed is not None for e in report.entries)
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
            row += [Text(e.via or ""), Text(e.why_different or "same")]
        t.add_row(*row)
    out.append(t)
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
    out.extend(_unknowns(report))
    same, total = report.agreement
    if total:
        out.append(Text(f"agreement: {same}/{total} (rank pair, transport) entries as predicted"))
    for note in report.notes:
        out.append(Text(f"note: {note}"))
    for skip in report.skipped:
        out.append(Text(f"skipped: {skip}"))
    return out
