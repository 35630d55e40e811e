"""The fair comparison of two recorded runs: which did better, by how much, and whether they compare.

"Better" means: the run that succeeded, when only one did; else, when both did and the outputs
check (if asked) found the same outputs, the one that finished sooner, when the difference exceeds
:data:`NOISE` (smaller differences are reported as a tie). Two successful runs with different
outputs are not ranked. :func:`verdict` is the one place that decides; the headline, the rows'
marks and the JSON ``better`` all follow it.
Everything compared is observed (the records), except capacities, which are labelled.
"""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from topomap.base.units import fmt_bytes, fmt_seconds
from topomap.record.environment import is_placement
from topomap.record.model import Run
from topomap.record.outputs import OutputsCheck
from topomap.record.summary import cards, host_peaks, last, shared_resources

NOISE = 0.02  # relative difference in wall time below which two runs tie
RANKED = ("faster", "tie")  # verdicts where both runs succeeded with the same results: rows may be marked


@dataclass
class Row:
    """One compared quantity: values for A and B (None when unknown), unit, and which is better."""

    metric: str
    a: float | None
    b: float | None
    unit: str  # "s", "B", "B/s", "%", "CPU s", ""
    better: str | None = None  # "A", "B" or None (equal, unknown, or not a better/worse quantity)


@dataclass
class RunDiff:
    names: tuple[str, str]
    better: str | None  # "A", "B", or None (tie, both failed, or outputs differ)
    headline: list[str]  # the first lines: the verdict and by how much
    warnings: list[str] = field(default_factory=list)  # why the two may not be comparable
    arrangement: list[str] = field(default_factory=list)  # placement variables that differ (expected)
    rows: list[Row] = field(default_factory=list)
    outputs: OutputsCheck | None = None
    both_succeeded: bool = True
    verdict: str = "unknown"  # Verdict.why: what decided ``better``

    @property
    def rows_marked(self) -> bool:
        """Whether the rows' "better" marks are given (only when the two compare as results)."""
        return self.verdict in RANKED

    @property
    def ok(self) -> bool:
        """Both runs of one command succeeded, and produced the same outputs where checked."""
        comparable = self.verdict != "different commands"
        return comparable and self.both_succeeded and (self.outputs is None or self.outputs.same)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "names": list(self.names),
            "better": self.better,
            "verdict": self.verdict,
            "headline": self.headline,
            "warnings": self.warnings,
            "arrangement": self.arrangement,
            "rows": [r.__dict__ for r in self.rows],
            "source": "observed",
        }
        if self.outputs is not None:
            o = self.outputs
            out["outputs"] = {
                "same": o.same,
                "summary": o.summary(),
                "tolerance": o.tolerance,
                "files_a": o.files_a,
                "files_b": o.files_b,
                "missing_in_a": o.missing_in_a,
                "missing_in_b": o.missing_in_b,
                "within_tolerance": o.within_tolerance,
                "different": [{"name": d.name, "reason": d.reason} for d in o.different],
                "skipped_a": o.skipped_a,
                "skipped_b": o.skipped_b,
            }
        return out


def run_names(a: Run, path_a: str, b: Run, path_b: str) -> tuple[str, str]:
    """How a diff names two runs: by their ``--label`` with the file in brackets (``baseline
    [one-card.json]``), by the file's stem where a run has no label; ``A (…)``/``B (…)`` when the two
    names are the same."""

    def name(run: Run, path: str) -> str:
        file = path.replace("\\", "/").rsplit("/", 1)[-1]
        return f"{run.label} [{file}]" if run.label else file.rsplit(".", 1)[0] if "." in file else file

    names = (name(a, path_a), name(b, path_b))
    return (f"A ({names[0]})", f"B ({names[1]})") if names[0] == names[1] else names


def _status(run: Run) -> str:
    if run.exit_status == 0:
        return "succeeded"
    if run.signal:
        return f"failed ({run.signal}, exit {run.exit_status})"
    return f"failed (exit {run.exit_status})"


@dataclass
class Verdict:
    """Which run did better and why; the headline's first lines say exactly this."""

    better: str | None  # "A", "B", or None
    why: str  # "different commands", "faster", "tie", "only one succeeded", "neither succeeded", "results differ",
    # "no duration"
    lines: list[str]

    @property
    def rows_comparable(self) -> bool:
        """Both runs succeeded with the same results (where checked): per-quantity "better" marks mean something."""
        return self.why in RANKED


def verdict(a: Run, b: Run, names: tuple[str, str], outputs: OutputsCheck | None = None) -> Verdict:
    """The one decision of which run did better. Runs of different commands are not compared at
    all (a nvbandwidth run against an nccl-tests run): they are said to be not comparable before
    anything else, and neither is ranked. A run that succeeded beats one that failed
    (whatever the outputs: a failed run's outputs are incomplete by nature). Two that succeeded
    but produced different outputs are not ranked: a faster wrong answer is not better, and the
    outputs alone do not say which one is right, so their times are given as facts only. Else the
    shorter wall time, beyond :data:`NOISE`."""
    na, nb = names
    ok_a, ok_b = a.exit_status == 0, b.exit_status == 0
    if a.command != b.command:  # before any ranking: two different pieces of work do not compare
        return Verdict(
            None,
            "different commands",
            [
                "Not comparable, so neither is ranked: the two runs ran different commands (below).",
                f"As facts only: {na} {_status(a)} after {fmt_seconds(a.duration_s)}, "
                f"{nb} {_status(b)} after {fmt_seconds(b.duration_s)} (observed wall time).",
            ],
        )
    if not ok_a and not ok_b:
        return Verdict(None, "neither succeeded", [f"Neither run succeeded: {na} {_status(a)}, {nb} {_status(b)}."])
    if ok_a != ok_b:
        win, lose, wr, lr = (na, nb, a, b) if ok_a else (nb, na, b, a)
        return Verdict(
            "A" if ok_a else "B",
            "only one succeeded",
            [f"{win} did better: {lose} {_status(lr)}, {win} succeeded in {fmt_seconds(wr.duration_s)} (observed)."],
        )
    if outputs is not None and not outputs.same:
        return _results_differ(a, b, names, outputs)
    da, db = a.duration_s, b.duration_s
    if da is None or db is None or max(da, db) <= 0:
        return Verdict(None, "no duration", ["No verdict: a run has no duration."])
    if abs(da - db) / max(da, db) < NOISE:
        return Verdict(
            None,
            "tie",
            [
                f"Neither did clearly better: {na} {fmt_seconds(da)}, {nb} {fmt_seconds(db)} "
                f"(within {NOISE:.0%}, observed wall time)."
            ],
        )
    fast, fd, sd = (na, da, db) if da < db else (nb, db, da)
    return Verdict(
        "A" if da < db else "B",
        "faster",
        [
            f"{fast} did better: finished in {fmt_seconds(fd)} vs {fmt_seconds(sd)}, "
            f"{(sd - fd) / sd:.0%} less time ({sd / fd:.2f}× faster; observed wall time)."
        ],
    )


def _results_differ(a: Run, b: Run, names: tuple[str, str], outputs: OutputsCheck) -> Verdict:
    """Both succeeded, different outputs: no run ranked, the wall times given as facts only."""
    hint = (
        "; if they differ only in the last digits of numbers, --tolerance (e.g. 1e-6) compares them as numbers"
        if outputs.tolerance is None
        else ""
    )
    return Verdict(
        None,
        "results differ",
        [
            f"Not the same result, so neither did better: {outputs.summary()}.",
            f"Wall time, not a verdict since the results differ: {names[0]} {fmt_seconds(a.duration_s)}, "
            f"{names[1]} {fmt_seconds(b.duration_s)} (observed){hint}.",
        ],
    )


def _peak_line(a: Run, b: Run, names: tuple[str, str]) -> str | None:
    def top(run: Run) -> str | None:
        cs = [c for c in cards(run) if c.peak_memory_bytes is not None and "/mig" not in c.id]
        if not cs:
            return None
        c = max(cs, key=lambda c: c.peak_memory_bytes or 0)
        total = c.memory_total_bytes
        share = f" ({(c.peak_memory_bytes or 0) / total:.1%} of its {_mib(total)})" if total else ""
        return f"{_mib(c.peak_memory_bytes)} on {c.id}{share}"

    ta, tb = top(a), top(b)
    if ta is None and tb is None:
        return None
    no = "no GPU sampled"
    return f"Largest per-card memory peak: {names[0]} {ta or no}, {names[1]} {tb or no} (observed)."


def _mib(n: int | None) -> str:
    """Bytes rounded to whole MiB for a sentence (1 MiB is far below what sampling resolves)."""
    return fmt_bytes(round(n / 2**20) * 2**20) if n is not None and n >= 2**20 else fmt_bytes(n)


def _warnings(a: Run, b: Run) -> tuple[list[str], list[str]]:
    warn: list[str] = []
    if a.command != b.command:
        warn.append(f"different commands: {shlex.join(a.command)} vs {shlex.join(b.command)}")
    for key in sorted(set(a.versions) | set(b.versions)):
        va, vb = a.versions.get(key), b.versions.get(key)
        if va != vb and key not in ("platform", "packages_of"):
            warn.append(f"different versions: {key} {va or 'absent'} vs {vb or 'absent'}")
    arrangement: list[str] = []
    for key in sorted(set(a.environment) | set(b.environment)):
        va, vb = a.environment.get(key), b.environment.get(key)
        if va == vb:
            continue
        text = f"{key}={va if va is not None else '(unset)'} vs {vb if vb is not None else '(unset)'}"
        if is_placement(key):
            arrangement.append(text)
        else:
            warn.append(f"different settings: {text}")
    ca, cb = _machine_class(a), _machine_class(b)
    if ca != cb:
        warn.append(f"different machine class: {ca} vs {cb}")
    for name, r in (("A", a), ("B", b)):
        if r.interrupted_by:
            warn.append(f"{name} was interrupted ({r.interrupted_by})")
        if any(s.lost_at_s is not None for s in r.gpus):
            warn.append(f"{name} lost a GPU during the run")
    if a.sampling.gpu_sampled != b.sampling.gpu_sampled:
        warn.append("only one run sampled its GPUs: GPU figures compare with nothing")
    return warn, arrangement


def _machine_class(run: Run) -> str:
    """GPU models and counts plus CPU model: two hosts of one class should behave alike."""
    snap = run.snapshot
    if snap is None:
        return "unknown (no snapshot)"
    gpus = Counter(g.name or "unknown GPU" for g in snap.gpus)
    gpu_text = ", ".join(f"{n}× {name}" for name, n in sorted(gpus.items())) or "no GPU"
    return f"{gpu_text}; CPU {snap.host.cpu_model or 'unknown'}"


def _lower(a: float | None, b: float | None) -> str | None:
    """The run with the clearly lower value (by more than NOISE), or None."""
    if a is None or b is None or abs(a - b) <= NOISE * max(abs(a), abs(b)):
        return None
    return "A" if a < b else "B"


def _rows(a: Run, b: Run, v: Verdict) -> list[Row]:
    """Every compared quantity; marked better only where the verdict says the runs compare as results."""
    rows = [
        Row("wall time", a.duration_s, b.duration_s, "s", v.better),
        Row("exit status", a.exit_status, b.exit_status, ""),
    ]
    ids = sorted({s.id for s in a.gpus} | {s.id for s in b.gpus}, key=lambda i: (len(i), i))
    ca, cb = {c.id: c for c in cards(a)}, {c.id: c for c in cards(b)}
    for cid in ids:
        pa = ca[cid].peak_memory_bytes if cid in ca else None
        pb = cb[cid].peak_memory_bytes if cid in cb else None
        # a card only one run could use is no better for being idle in the other
        both = all(cid in c and c[cid].visible_to_command is not False for c in (ca, cb))
        rows.append(Row(f"{cid} memory peak", pa, pb, "B", _lower(pa, pb) if both else None))
        ua = ca[cid].util_mean_pct if cid in ca else None
        ub = cb[cid].util_mean_pct if cid in cb else None
        rows.append(Row(f"{cid} mean utilisation", ua, ub, "%"))
    ha, hb = a.host, b.host
    cpu_a = (ha.cpu_user_s or 0) + (ha.cpu_system_s or 0) if ha.cpu_user_s is not None else None
    cpu_b = (hb.cpu_user_s or 0) + (hb.cpu_system_s or 0) if hb.cpu_user_s is not None else None
    rows.append(Row("host CPU time (rusage)", cpu_a, cpu_b, "CPU s", _lower(cpu_a, cpu_b)))
    ra, rb = host_peaks(a)["tree_rss_bytes"][0], host_peaks(b)["tree_rss_bytes"][0]
    rows.append(Row("host memory peak (tree RSS)", ra, rb, "B", _lower(ra, rb)))
    for label, xa, xb in (
        ("disk read (whole host)", last(ha.disk_read_bytes), last(hb.disk_read_bytes)),
        ("disk written (whole host)", last(ha.disk_write_bytes), last(hb.disk_write_bytes)),
        ("network received (whole host)", last(ha.net_rx_bytes), last(hb.net_rx_bytes)),
        ("network sent (whole host)", last(ha.net_tx_bytes), last(hb.net_tx_bytes)),
    ):
        rows.append(Row(label, xa, xb, "B", _lower(xa, xb)))
    ba, bb = shared_resources(a), shared_resources(b)
    fa = ba[0].fraction if ba and ba[0].fraction is not None else None
    fb = bb[0].fraction if bb and bb[0].fraction is not None else None
    rows.append(Row("busiest shared resource, peak share", _pct(fa), _pct(fb), "%", _lower(fa, fb)))
    pa, pb = len(a.problems), len(b.problems)
    rows.append(Row("problems recorded", pa, pb, "", _lower(pa, pb)))
    if not v.rows_comparable:  # a failed run, or a different result, is not better for using less
        for r in rows:
            r.better = None
    return rows


def _pct(f: float | None) -> float | None:
    return round(f * 100, 1) if f is not None else None


def diff_runs(a: Run, b: Run, names: tuple[str, str] = ("A", "B"), outputs: OutputsCheck | None = None) -> RunDiff:
    """Compare two runs; :func:`verdict` decides, and the headline, the rows and ``better`` follow it."""
    v = verdict(a, b, names, outputs)
    headline = list(v.lines)
    if outputs is not None and v.why != "results differ":  # that verdict already opens with the outputs
        headline.append(f"Outputs: {outputs.summary()}.")
    peak = _peak_line(a, b, names)
    if peak:
        headline.append(peak)
    warnings, arrangement = _warnings(a, b)
    both = a.exit_status == 0 and b.exit_status == 0
    return RunDiff(names, v.better, headline, warnings, arrangement, _rows(a, b, v), outputs, both, v.why)
