"""The work a flow does, in numbers: units and their durations, cards and memory per task, the
assembly step and shared limits — parsed from the flow's `work:` block with file:line errors.

Everything here is the user's stated assumption (provenance ``assumed``), not a measurement::

    work:
      count: 8
      duration: 12 min            # or durations: [21 min, 19 min, …] or durations_csv: batch.csv
      cards_per_task: 1
      memory_per_task: 20 GiB
      duplicated_memory: 14 GiB   # replicated state every card holding the task keeps whole
      includes_transfers: true    # the 12 min already include loading and writing the unit
      volume_per: replica         # an arrow's volume is per step replica (default), or per unit
      assembly: {duration: 10 min, on: workstation, waits_for_all: true}
      limits: {storage_read: 2 GB/s, max_concurrent: 4}
      split: {steps: 2000, exchange: 64 MiB}   # one task over several cards
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from topomap.base.units import (
    DURATION_SPELLINGS,
    MAX_CARDS,
    MAX_RATE_GBPS,
    MAX_SPAN_S,
    MAX_UNITS,
    MIN_RATE_GBPS,
    MIN_SPAN_S,
    RATE_RANGE,
    SPAN_RANGE,
    parse_duration,
    parse_rate_gbps,
    rate_problem,
)
from topomap.files.excerpt import excerpt
from topomap.files.inputs import MAX_TOPOLOGY_BYTES, read_text
from topomap.flow.spec import (
    SIZE_HINT,
    Assembly,
    AssemblySpec,
    Flow,
    FlowError,
    Limits,
    Split,
    Unit,
    Work,
    assembly_on,
    parse_volume,
    size_problem,
)

DURATION_HINT = f"write a number and a unit: 12 min, 90 s, 1.5 h, 1 h 30 min, 500 µs ({DURATION_SPELLINGS})"
#: The hint of a refused rate: the work block's rates are in bytes a second.
RATE_HINT = f"write a rate in bytes a second, e.g. 2 GB/s, 800 MB/s, 500 MiB/s ({RATE_RANGE})"


#: MAX_UNITS (units a plan lays out one by one) and MAX_CARDS (cards a task spans) are in
#: topomap.base.units, where the command line's option bounds read them too.
#: Exchange rounds of a split task: more is a typo (a 400-digit count of steps overflowed the float sum).
MAX_STEPS = 10**9
_SHOWN = 40  # characters of a bad value quoted in a message


def _cut(text: str) -> str:
    """``text`` cut in the middle when it is too long to quote in a one-line message."""
    if len(text) <= _SHOWN:
        return text
    return f"{text[: _SHOWN // 2]}…{text[-_SHOWN // 4 :]} ({len(text):,} characters)"


def quote_value(value: str | float) -> str:
    """A bad value as quoted in a one-line message: repr of a string, a number as %g; cut when long."""
    return _cut(repr(value) if isinstance(value, str) else f"{value:g}")


def span_problem(sec: float) -> str | None:
    """Why ``sec`` (a parsed duration, seconds) is refused, or None when it is within bounds."""
    if math.isnan(sec) or sec <= 0:
        return "is not longer than zero"
    if not math.isfinite(sec) or sec > MAX_SPAN_S:
        return f"is longer than a year: durations are {SPAN_RANGE}"
    if sec < MIN_SPAN_S:
        return f"is shorter than a microsecond: durations are {SPAN_RANGE}"
    return None


def _err(flow: Flow, where: str, message: str, hint: str | None = None) -> FlowError:
    return FlowError(f"{flow.path}:{flow.line(where)}: work: {message}", hint=hint)


def _duration(flow: Flow, value: str | float, where: str, what: str) -> float:
    sec = parse_duration(value)
    if sec is None:
        if isinstance(value, str):
            raise _err(flow, where, f"{what} {quote_value(value)} is not a duration", DURATION_HINT)
        raise _err(flow, where, f"{what} {quote_value(value)} has no unit", DURATION_HINT)
    problem = span_problem(sec)
    if problem is not None:
        raise _err(flow, where, f"{what} {quote_value(value)} {problem}", DURATION_HINT)
    return sec


def _size(flow: Flow, value: str | None, where: str, what: str) -> int | None:
    if value is None:
        return None
    size = parse_volume(value)  # None past 1 EB (or infinite), or not a size: size_problem says which
    if size is None:
        raise _err(flow, where, f"{what} {quote_value(value)} {size_problem(value)}", SIZE_HINT)
    return size


def _rate(flow: Flow, value: str | None, where: str, what: str) -> float | None:
    if value is None:
        return None
    gbps = parse_rate_gbps(value)
    if gbps is None:
        raise _err(flow, where, f"{what} {quote_value(value)} {rate_problem(value, 'bytes')}", RATE_HINT)
    if gbps <= 0:
        raise _err(flow, where, f"{what} {quote_value(value)} is not a rate", RATE_HINT)
    if not MIN_RATE_GBPS <= gbps <= MAX_RATE_GBPS:
        raise _err(flow, where, f"{what} {quote_value(value)} is outside {RATE_RANGE}", RATE_HINT)
    return gbps


_CSV_HINT = "one duration per line, or a `duration` column (e.g. 12 min)"
_TOO_MANY = "plan a representative batch (the plan scales with the count)"


class _CsvDurations:
    """Reads a durations CSV row by row; the first non-blank row may be a header."""

    def __init__(self, shown: str) -> None:
        self.shown = shown
        self.col: int | None = None  # the duration column, once known
        self.name_col: int | None = None
        self.units: list[Unit] = []

    def row(self, line: int, cells: list[str]) -> None:
        if self.col is None:
            self._first(line, cells)
            return
        if len(self.units) >= MAX_UNITS:
            raise FlowError(f"{self.shown}:{line}: more than {MAX_UNITS:,} durations (units)", hint=_TOO_MANY)
        cell = cells[self.col] if self.col < len(cells) else ""
        sec = parse_duration(cell)
        problem = "is not a duration" if sec is None else span_problem(sec)
        if problem is not None:  # a durations CSV (its header or first row said so): a few characters shown
            raise FlowError(f"{self.shown}:{line}: {excerpt(cell)} {problem}", hint=DURATION_HINT)
        assert sec is not None
        n = len(self.units) + 1
        name = cells[self.name_col] if self.name_col is not None and self.name_col < len(cells) else ""
        self.units.append(Unit(name or f"u{n}", sec))

    def _first(self, line: int, cells: list[str]) -> None:
        header = [c.lower() for c in cells]
        if "duration" in header:
            self.col = header.index("duration")
            self.name_col = header.index("name") if "name" in header else None
            return
        self.col = 0
        if parse_duration(cells[0]) is None:  # not shown: the file may be anything (issue 36 item 4)
            raise FlowError(
                f"{self.shown}:{line}: not a durations CSV: its first line is neither a header with a "
                "`duration` column nor a duration",
                hint=_CSV_HINT,
            )
        self.row(line, cells)

    def done(self) -> list[Unit]:
        if self.col is None:
            raise FlowError(f"{self.shown}:1: no durations", hint=_CSV_HINT)
        if not self.units:
            raise FlowError(f"{self.shown}: no durations under the header", hint="one duration per line")
        return self.units


def read_durations_csv(path: Path, shown: str) -> list[Unit]:
    """Per-unit durations from a CSV: a `duration` column (optionally `name`), or one column
    without a header. Errors name the CSV's own line; reading stops past :data:`MAX_UNITS` rows."""
    try:
        text = read_text(path, "durations CSV", MAX_TOPOLOGY_BYTES, FlowError)
    except FlowError as err:
        if err.hint is None:  # cannot read: most often a path written relative to the wrong folder
            err.hint = "the path is relative to the flow file"
        raise
    return _parse_csv(text, shown)


def _parse_csv(text: str, shown: str) -> list[Unit]:
    reader = csv.reader(io.StringIO(text))
    rows = _CsvDurations(shown)
    try:
        for r in reader:
            cells = [c.strip() for c in r]
            if any(cells):
                rows.row(reader.line_num, cells)
    except csv.Error as err:  # a field past csv.field_size_limit() (131,072 characters), a stray NUL
        what = str(err)
        if "field limit" in what:
            what = f"a field longer than {csv.field_size_limit():,} characters"
        raise FlowError(f"{shown}:{reader.line_num}: not a durations CSV: {what}", hint=_CSV_HINT) from None
    return rows.done()


def _units(flow: Flow) -> tuple[list[Unit], str]:
    spec = flow.spec.work
    assert spec is not None
    given = [k for k in ("duration", "durations", "durations_csv") if getattr(spec, k) is not None]
    if len(given) > 1:
        raise _err(flow, f"$.work.{given[1]}", f"{given[0]} and {given[1]} both given", "give one of them")
    if spec.count is not None and spec.count < 1:
        raise _err(flow, "$.work.count", f"count {_cut(str(spec.count))} is not a number of units", "count: 8")
    if spec.count is not None and spec.count > MAX_UNITS:
        raise _err(
            flow,
            "$.work.count",
            f"count {_cut(str(spec.count))} is more units than topomap plans ({MAX_UNITS:,})",
            _TOO_MANY,
        )
    if spec.duration is not None:
        sec = _duration(flow, spec.duration, "$.work.duration", "duration")
        if spec.count is None:
            raise _err(flow, "$.work.duration", "a duration per unit needs `count`", "count: 8")
        return [Unit(f"u{i + 1}", sec) for i in range(spec.count)], "work.duration"
    if spec.durations is not None:
        if len(spec.durations) > MAX_UNITS:
            raise _err(
                flow,
                "$.work.durations",
                f"{len(spec.durations):,} durations are more units than topomap plans ({MAX_UNITS:,})",
                _TOO_MANY,
            )
        units = [
            Unit(f"u{i + 1}", _duration(flow, d, f"$.work.durations[{i}]", f"duration {i + 1}"))
            for i, d in enumerate(spec.durations)
        ]
        source = "work.durations"
    elif spec.durations_csv is not None:
        shown = str(Path(flow.path).parent / spec.durations_csv)
        units, source = read_durations_csv(Path(shown), shown), f"work.durations_csv ({spec.durations_csv})"
    else:
        return [], "none"
    if not units:
        raise _err(flow, "$.work.durations", "no durations", "durations: [12 min, 9 min]")
    if spec.count is not None and spec.count != len(units):
        raise _err(
            flow, "$.work.count", f"count {spec.count} but {len(units)} durations", "drop count or make them agree"
        )
    return units, source


def work_of(flow: Flow) -> Work | None:
    """The flow's work in numbers, or None when the flow has no `work:` block. The reader calls it
    once and keeps the answer in ``flow.work``: later stages read that, not the block again."""
    spec = flow.spec.work
    if spec is None:
        return None
    units, source = _units(flow)
    if spec.cards_per_task < 1:
        raise _err(flow, "$.work.cards_per_task", f"cards_per_task {spec.cards_per_task} is below 1", "1 or more")
    if spec.cards_per_task > MAX_CARDS:
        raise _err(
            flow, "$.work.cards_per_task", f"cards_per_task {_cut(str(spec.cards_per_task))} is more than "
            f"{MAX_CARDS:,} cards", "the cards one task occupies, e.g. 2",
        )  # fmt: skip
    mem = _size(flow, spec.memory_per_task, "$.work.memory_per_task", "memory_per_task")
    dup = _size(flow, spec.duplicated_memory, "$.work.duplicated_memory", "duplicated_memory")
    if dup is not None and mem is None:
        raise _err(flow, "$.work.duplicated_memory", "duplicated_memory without memory_per_task", "give both")
    if dup is not None and mem is not None and dup > mem:
        raise _err(
            flow, "$.work.duplicated_memory", "duplicated_memory is larger than memory_per_task", "it is a part of it"
        )
    return Work(
        units=units,
        source=source,
        cards_per_task=spec.cards_per_task,
        memory_per_task_bytes=mem,
        duplicated_bytes=dup or 0,
        includes_transfers=spec.includes_transfers,
        assembly=_assembly(flow),
        limits=_limits(flow),
        split=_split(flow),
        unit_label=spec.unit,
        volume_per=spec.volume_per,
    )


def _assembly(flow: Flow) -> Assembly | None:
    """The assembly step, when the work block gives one (not just a rule in words)."""
    a = flow.spec.work.assembly if flow.spec.work is not None else None
    if not isinstance(a, AssemblySpec):
        return None
    if a.duration is None:
        raise _err(flow, "$.work.assembly", "assembly needs a duration", "assembly: {duration: 10 min}")
    on = assembly_on(flow, a.on)  # a host or step, or a placement such as lot:gpu0 (issue 23)
    sec = _duration(flow, a.duration, "$.work.assembly.duration", "assembly duration")
    return Assembly(sec, on, a.waits_for_all, a.rule)


def _limits(flow: Flow) -> Limits:
    """Shared limits: storage rates and the cap on concurrent tasks (none given: no limit)."""
    lim = flow.spec.work.limits if flow.spec.work is not None else None
    if lim is None:
        return Limits()
    if lim.max_concurrent is not None and lim.max_concurrent < 1:
        raise _err(flow, "$.work.limits.max_concurrent", "max_concurrent is below 1", "1 or more tasks at once")
    return Limits(
        _rate(flow, lim.storage_read, "$.work.limits.storage_read", "storage_read"),
        _rate(flow, lim.storage_write, "$.work.limits.storage_write", "storage_write"),
        lim.max_concurrent,
    )


def _split(flow: Flow) -> Split | None:
    """How one task splits over cards: exchange rounds and each card's data per round."""
    split = flow.spec.work.split if flow.spec.work is not None else None
    if split is None:
        return None
    if split.steps < 1:
        raise _err(flow, "$.work.split.steps", "split steps is below 1", "exchange rounds per task, e.g. 2000")
    if split.steps > MAX_STEPS:
        raise _err(
            flow, "$.work.split.steps", f"split steps {_cut(str(split.steps))} is more than "
            f"{MAX_STEPS:,} exchange rounds per task", "exchange rounds per task, e.g. 2000",
        )  # fmt: skip
    return Split(split.steps, _size(flow, split.exchange, "$.work.split.exchange", "exchange"))
