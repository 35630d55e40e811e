"""`topomap nccl --perf` and `--tests` in text: the expected busbw per collective with its range, algorithm,
bottleneck and origin; per run of a results file its measured peak beside the expectation, the verdict and,
for a run that falls short, its likely causes. Every cell a Text (a log's words are not rich markup)."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from topomap.base.units import fmt_bytes
from topomap.collective.expect import Expectation
from topomap.collective.lot import LotPlan
from topomap.nccl.tests import Judged, TestsReport

_VERDICT_STYLE = {"far-below": "bold red", "below": "yellow", "above": "cyan", "as-expected": "green"}


def gbps(v: float | None) -> str:
    return "unknown" if v is None else f"{v:.1f} GB/s"


def span(e: Expectation) -> str:
    """The range as text: "216–247 GB/s", "≤ 382 GB/s" (only a ceiling), "—" (none)."""
    if e.low_gbps is not None and e.high_gbps is not None:
        return f"{e.low_gbps:.0f}–{e.high_gbps:.0f} GB/s"
    if e.high_gbps is not None:
        return f"≤ {e.high_gbps:.0f} GB/s"
    return "—"


def lot_line(where: str, p: LotPlan) -> str:
    rules = f"{p.library} {p.version} rules" if p.version else f"the newest {p.library}'s rules"
    env = f"; {' '.join(p.env.set_vars())}" if p.env.values else ""
    return (
        f"Expected bus bandwidth on {where} ({p.hosts} host(s) × {p.gpus_per_host} GPU(s), {p.ranks} ranks, "
        f"{p.mode}; {rules}{env}) — model, at large messages"
    )


def perf_view(where: str, p: LotPlan, found: list[Expectation], curves: dict[str, list[int]]) -> list[Table | Text]:
    out: list[Table | Text] = [Text(lot_line(where, p))]
    t = Table(box=box.SIMPLE_HEAD)
    for col in ("collective", "busbw", "range", "algorithm", "bottleneck", "origin"):
        t.add_column(col)
    for e in found:
        t.add_row(
            Text(e.collective),
            Text(gbps(e.busbw_gbps)),
            Text(span(e)),
            Text(e.algorithm or "—"),
            Text(e.bottleneck),
            Text(e.origin),
        )
    out.append(t)
    out += _unknowns(found)
    for e in found:
        if e.collective in curves:
            out.append(_curve(e, curves[e.collective]))
    return out


def _unknowns(found: list[Expectation]) -> list[Table | Text]:
    out: list[Table | Text] = []
    said: set[tuple[str, ...]] = set()
    for e in found:
        if e.busbw_gbps is None and (e.missing, e.settle) and (*e.missing, *e.settle) not in said:
            said.add((*e.missing, *e.settle))
            names = ", ".join(x.collective for x in found if x.missing == e.missing and x.busbw_gbps is None)
            out.append(Text(f"unknown for {names}: {'; '.join(e.missing)}"))
            if e.settle:
                out.append(Text("  settle it with: " + "; ".join(e.settle)))
    assumed = list(dict.fromkeys(a for e in found for a in e.assumed))
    notes = list(dict.fromkeys(n for e in found for n in e.notes))
    out += [Text(f"assumed: {a}") for a in assumed]
    out += [Text(f"note: {n}") for n in notes]
    return out


def _curve(e: Expectation, sizes: list[int]) -> Table:
    t = Table(title=f"{e.collective}: busbw by message size (model)", box=box.SIMPLE_HEAD)
    t.add_column("size")
    t.add_column("busbw")
    t.add_column("of the peak")
    for n in sizes:
        v = e.busbw_at(n)
        share = f"{v / e.busbw_gbps:.0%}" if v is not None and e.busbw_gbps else "—"
        t.add_row(Text(fmt_bytes(n)), Text(gbps(v)), Text(share))
    return t


def tests_view(report: TestsReport) -> list[Table | Text]:
    out: list[Table | Text] = [Text(f"nccl-tests results ({report.origin}) against {report.lot}")]
    t = Table(box=box.SIMPLE_HEAD)
    for col in (
        "run",
        "collective",
        "ranks",
        "hosts",
        "largest size",
        "measured peak",
        "expected",
        "algorithm",
        "verdict",
    ):
        t.add_column(col)
    for r in report.results:
        e = r.expected
        expected = "—" if e is None else f"{gbps(e.busbw_gbps)} ({span(e)})"
        t.add_row(
            Text(f"{r.index} (line {r.line})"),
            Text(r.collective or "unknown"),
            Text(str(r.ranks or "?")),
            Text(str(r.hosts or "?")),
            Text(fmt_bytes(r.max_bytes)),
            Text(f"{r.measured_text} GB/s ({r.half}, {fmt_bytes(r.at_bytes)})"),
            Text(expected),
            Text((e.algorithm if e else None) or "—"),
            Text(r.verdict, style=_VERDICT_STYLE.get(r.verdict, "")),
        )
    out.append(t)
    for r in report.results:
        out += _run_detail(r)
    out += [Text(f"note: {n}") for n in report.notes]
    out += [Text(f"skipped: {s}") for s in report.skipped]
    return out


def _run_detail(r: Judged) -> list[Text]:
    out = [Text(f"run {r.index}: {r.verdict} — {r.why}")]
    if r.expected is not None:
        out.append(Text(f"  expected: {r.expected.bottleneck} ({r.expected.origin})"))
        if r.expected.busbw_gbps is None and r.expected.settle:
            out.append(Text("  settle it with: " + "; ".join(r.expected.settle)))
        out += [Text(f"  assumed: {a}") for a in r.expected.assumed]
    if r.causes:
        out.append(Text(f"  why run {r.index} falls short (most likely first):"))
        for k, c in enumerate(r.causes, 1):
            out.append(Text(f"    {k}. {c.cause} — {c.evidence}"))
            out.append(Text(f"       confirm: {c.settle}"))
    out += [Text(f"  note: {n}") for n in r.notes]
    out += [Text(f"  skipped: {s}") for s in r.skipped]
    return out
