"""nccl-tests results (``all_reduce_perf`` and the other ``*_perf`` programs, nccl-tests 2.x) → typed runs.

Read as people paste them: one or several runs in a file, each with the command line above it when
present; out-of-place and in-place halves; ``-g``/``-t`` runs (several GPUs per process); MPI and srun
launcher prefixes (``[1,0]<stdout>:``, ``0: ``) and the ``[0]`` tags some launchers glue between
columns (nccl#1453); the rank table (host, pid, device, bus id, GPU model; 2.0-2.10 print it without
``Group``); the older ``error`` column (a float, or ``N/A``) and the newer ``#wrong``; ``# Out of
bounds values``, ``# Avg bus bandwidth``; NCCL INFO lines interleaved; runs cut short. The table's
layout is nccl-tests' own (``src/common.cu``, NVIDIA/nccl-tests v2.19.6): size, count, type, redop and
root (absent before 2.x's redop column on some programs), then time, algbw, busbw, #wrong per half.

One pass over the lines, each line matched by anchored patterns: linear in the input, memory bounded
by the rows kept. What cannot be read is listed in ``skipped`` with its line number, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from topomap.base.errors import ImportFailure

#: nccl-tests' programs (``src/*.cu``), their names without ``_perf``
PROGRAMS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "alltoall",
    "sendrecv",
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "hypercube",
)
_DTYPES = frozenset(
    (
        "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16",
        "f8e4m3", "f8e5m2", "fp8_e4m3", "fp8_e5m2", "char", "int", "uint", "float16", "float32", "float64",
    )
)  # fmt: skip
_OPS = frozenset(["sum", "prod", "min", "max", "avg", "none", "mulsum", "all"])

_PREFIX = re.compile(r"^(?:\s*\[\d+,\d+\]<std(?:out|err)>:|\s*\d+:\s|\s*>\s?)")
_GLUED_TAG = re.compile(r"\[\d+\]")  # "-1[0]    1626.5": a launcher's rank tag glued between columns
_INFO = re.compile(r"\bNCCL (?:INFO|WARN|TRACE)\b")
_TESTS_VERSION = re.compile(r"^#\s*nccl-tests version (?P<v>\S+)(?:.*nccl-library=(?P<lib>\d+))?")
_RCCL = re.compile(r"^rccl-tests: Version")
_STARTING = re.compile(r"^#\s*Collective test (?P<what>starting|concluded): (?P<prog>\w+?)_perf(?:_mpi)?\b")
_HEADER = re.compile(r"^#?\s*nThread (?P<nthread>\d+) nGpus (?P<ngpus>\d+) minBytes (?P<min>\d+) maxBytes (?P<max>\d+)")
_HEADER_FIELD = re.compile(r"(?P<k>warmup iters|iters|agg iters|validation|graph): (?P<v>-?\d+)")
_STEP = re.compile(r"step: (?P<step>\d+)\((?P<kind>factor|bytes)\)")
_RANK = re.compile(
    r"^#?\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+(?P<group>\d+)\s+)?Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<dev>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*?)\s*$"
)
_NCCL_VERSION = re.compile(r"NCCL version (?P<v>\d+\.\d+\.\d+)(?:\+cuda(?P<cuda>\d+\.\d+))?")
_COLUMNS = re.compile(r"^#\s*size\s+count\s+type\b(?P<rest>.*)$")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+)\s*(?P<ok>OK|FAILED)?")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<v>[-+0-9.eE]+|nan|inf)")
PROGRAM_RE = re.compile(r"(?:^|[\s/])(?P<prog>[a-z_]+?)_perf(?:_mpi)?(?=\s|$|\\)")
_OPT = re.compile(r"(?:^|\s)(?P<flag>-[gtbefn]|--ngpus|--nthreads|--minbytes|--maxbytes)[ =](?P<v>\S+)")


@dataclass(frozen=True)
class Half:
    """One half of a result row (out-of-place or in-place): time in µs, algbw and busbw in GB/s as
    printed (``busbw_text`` keeps the printed digits), and ``wrong``: the #wrong count (int), the older
    error column (its text), ``N/A`` or None."""

    time_us: float
    algbw_gbps: float
    busbw_gbps: float
    busbw_text: str
    wrong: int | str | None


@dataclass(frozen=True)
class Row:
    size_bytes: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    out_of_place: Half
    in_place: Half | None
    line: int


@dataclass(frozen=True)
class RankEntry:
    rank: int
    pid: int
    host: str
    device: int
    bus: str
    name: str
    group: int | None = None


@dataclass
class Run:
    """One run of one nccl-tests program, as far as the file holds it."""

    first_line: int
    command: str | None = None
    program: str | None = None  # "all_reduce" (from the starting line or the command), None unknown
    tests_version: str | None = None
    nccl_version: str | None = None
    nccl_cuda: str | None = None  # the CUDA version NCCL was built for ("12.8")
    nthread: int | None = None
    ngpus: int | None = None
    min_bytes: int | None = None
    max_bytes_arg: int | None = None
    params: dict[str, int] = field(default_factory=dict)
    ranks: list[RankEntry] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    columns: tuple[str, ...] = ()
    avg_busbw: float | None = None
    out_of_bounds: int | None = None
    oob_ok: bool | None = None
    concluded: bool = False
    rccl: bool = False
    skipped: list[str] = field(default_factory=list)

    @property
    def hosts(self) -> list[str]:
        """The hosts of the rank table, in order of first appearance."""
        return list(dict.fromkeys(r.host for r in self.ranks))

    @property
    def gpu_names(self) -> list[str]:
        return list(dict.fromkeys(r.name for r in self.ranks if r.name))

    def peak(self) -> tuple[float, str, Row, str] | None:
        """The largest busbw printed (either half): value, its text, its row, and which half."""
        best: tuple[float, str, Row, str] | None = None
        for row in self.rows:
            for half, which in ((row.out_of_place, "out-of-place"), (row.in_place, "in-place")):
                if half is not None and (best is None or half.busbw_gbps > best[0]):
                    best = (half.busbw_gbps, half.busbw_text, row, which)
        return best

    @property
    def max_bytes(self) -> int | None:
        return max((r.size_bytes for r in self.rows), default=None)

    @property
    def wrong_total(self) -> int:
        return sum(
            h.wrong
            for r in self.rows
            for h in (r.out_of_place, r.in_place)
            if h is not None and isinstance(h.wrong, int)
        )


@dataclass
class TestsFile:
    origin: str
    runs: list[Run]
    skipped: list[str] = field(default_factory=list)
    info_lines: int = 0
    lines: int = 0


def parse_nccl_tests(text: str, origin: str) -> TestsFile:
    """Every run of an nccl-tests output. Raises ImportFailure (one line) when no result row and no
    nccl-tests header is in it."""
    out = TestsFile(origin, [])
    st = _State(out)
    raws = text.splitlines()
    for no, raw in enumerate(raws, 1):
        out.lines += 1
        line = raw.rstrip("\r")
        for _ in range(3):  # launchers nest: "[1,0]<stdout>:" inside "0: "
            stripped = _PREFIX.sub("", line, count=1)
            if stripped == line:
                break
            line = stripped
        cut = no == len(raws) and not text.endswith(("\n", "\r"))
        st.feed(line.strip(), no, cut)
    st.close()
    runs = [r for r in out.runs if r.rows or r.ranks or r.program]
    if not any(r.rows for r in runs):
        if not runs:
            raise ImportFailure(
                f"{origin}: not an nccl-tests output: no result rows and no nccl-tests header in {out.lines} line(s)",
                hint="paste what all_reduce_perf (or another *_perf program) printed, its table included",
            )
        raise ImportFailure(
            f"{origin}: an nccl-tests output with no result row (cut before its table?)",
            hint="keep the rows under the '#  size  count  type …' header",
        )
    out.runs = runs
    return out


class _State:
    """The line reader's state: the run being read and what came before it."""

    def __init__(self, out: TestsFile) -> None:
        self.out = out
        self.run: Run | None = None
        self.command: list[str] = []
        self.command_open = False
        self.pending: dict[str, str] = {}  # a version line before its run's header

    def new_run(self, no: int) -> Run:
        run = Run(first_line=no)
        if self.command:
            run.command = " ".join(c.rstrip("\\").strip() for c in self.command)
            run.program = _program(run.command)
            self.command = []
        run.tests_version = self.pending.pop("tests", None)
        if "rccl" in self.pending:
            run.rccl = bool(self.pending.pop("rccl"))
        self.out.runs.append(run)
        self.run = run
        return run

    def current(self, no: int) -> Run:
        return self.run if self.run is not None else self.new_run(no)

    def close(self) -> None:
        if self.command and self.run is not None and self.run.command is None and not self.run.rows:
            self.run.command = " ".join(self.command)

    def feed(self, line: str, no: int, cut: bool) -> None:
        if not line:
            return
        if self.command_open:  # a command continued with a backslash
            self.command.append(line)
            self.command_open = line.endswith("\\")
            return
        if _INFO.search(line):
            self.out.info_lines += 1
            self._info(line)
            return
        if line.startswith("#") or _HEADER.match(line) or _RANK.match(line):
            self._comment(line, no)
            return
        if _RCCL.match(line):
            self.pending["rccl"] = "1"
            return
        v = _NCCL_VERSION.search(line)
        if v and line.startswith("NCCL version"):
            run = self.current(no)
            run.nccl_version, run.nccl_cuda = v.group("v"), v.group("cuda")
            return
        if self._row(line, no, cut):
            return
        if PROGRAM_RE.search(line) and not line.startswith(("Warning", "WARNING")):
            self.command = [line]
            self.command_open = line.endswith("\\")
            if self.run is not None and self.run.rows:
                self.run = None  # the next run's command: its header starts a new run

    def _info(self, line: str) -> None:
        v = _NCCL_VERSION.search(line)
        if v and self.run is not None and self.run.nccl_version is None:
            self.run.nccl_version, self.run.nccl_cuda = v.group("v"), v.group("cuda")

    def _comment(self, line: str, no: int) -> None:
        if m := _TESTS_VERSION.match(line):
            self.pending["tests"] = m.group("v")
            if self.run is not None and self.run.rows:
                self.run = None
            return
        if m := _STARTING.match(line):
            if m.group("what") == "starting":
                run = self.run if self.run is not None and not self.run.rows and not self.run.ranks else None
                run = run or self.new_run(no)
                run.program = m.group("prog")
            elif self.run is not None:
                self.run.concluded = True
                self.run.program = self.run.program or m.group("prog")
                self.run = None
            return
        if m := _HEADER.match(line):
            self._header(m, line, no)
            return
        if m := _RANK.match(line):
            run = self.current(no)
            group = int(m.group("group")) if m.group("group") else None
            run.ranks.append(
                RankEntry(
                    int(m.group("rank")),
                    int(m.group("pid")),
                    m.group("host"),
                    int(m.group("dev")),
                    m.group("bus"),
                    m.group("name"),
                    group,
                )
            )
            return
        if m := _COLUMNS.match(line):
            run = self.current(no)
            run.columns = ("size", "count", "type", *m.group("rest").split())
            return
        self._trailer(line)

    def _trailer(self, line: str) -> None:
        if self.run is None:
            return
        if m := _OOB.match(line):
            self.run.out_of_bounds = int(m.group("n"))
            self.run.oob_ok = m.group("ok") == "OK" if m.group("ok") else None
        elif m := _AVG.match(line):
            try:
                self.run.avg_busbw = float(m.group("v"))
            except ValueError:
                self.run.avg_busbw = None

    def _header(self, m: re.Match[str], line: str, no: int) -> None:
        run = self.run
        if run is None or run.rows or run.nthread is not None or (run.ranks and not run.program):
            run = self.new_run(no)
        run.nthread, run.ngpus = int(m.group("nthread")), int(m.group("ngpus"))
        run.min_bytes, run.max_bytes_arg = int(m.group("min")), int(m.group("max"))
        run.params = {f.group("k"): int(f.group("v")) for f in _HEADER_FIELD.finditer(line)}

    def _row(self, line: str, no: int, cut: bool) -> bool:
        """A result row: True when the line was one (read, or skipped as cut)."""
        tokens = _GLUED_TAG.sub(" ", line).split() if "[" in line else line.split()
        if cut and tokens and tokens[0].isdigit() and self.run is not None and self.run.rows:
            self.run.skipped.append(f"line {no}: the file ends inside this row: {line.strip()[:60]!r}")
            return True
        if len(tokens) < 3 or not tokens[0].isdigit() or not tokens[1].isdigit():
            return False
        if tokens[2] not in _DTYPES:
            return False
        run = self.current(no)
        row = _parse_row(tokens, no)
        if row is None or cut:
            why = "the file ends inside this row" if cut else "a cut or unreadable result row"
            run.skipped.append(f"line {no}: {why}: {line.strip()[:60]!r}")
            return True
        run.rows.append(row)
        return True


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def _wrong(text: str) -> int | str | None:
    if text.isdigit():
        return int(text)
    return text if text else None


def _half(values: list[str]) -> Half | None:
    if len(values) < 4:
        return None
    t, alg, bus = _number(values[0]), _number(values[1]), _number(values[2])
    if t is None or alg is None or bus is None or t < 0 or alg < 0 or bus < 0:
        return None
    return Half(t, alg, bus, values[2], _wrong(values[3]))


def _parse_row(tokens: list[str], no: int) -> Row | None:
    size, count, dtype = int(tokens[0]), int(tokens[1]), tokens[2]
    rest = tokens[3:]
    redop = rest.pop(0) if rest and rest[0] in _OPS else None
    root: int | None = None
    if rest and re.fullmatch(r"-?\d+", rest[0]) and len(rest) in (5, 9):
        root = int(rest.pop(0))
    if len(rest) not in (4, 8):
        return None
    oop = _half(rest[:4])
    ip = _half(rest[4:8]) if len(rest) == 8 else None
    if oop is None or (len(rest) == 8 and ip is None):
        return None
    return Row(size, count, dtype, redop, root, oop, ip, no)


def _program(command: str) -> str | None:
    m = PROGRAM_RE.search(command)
    if m is None:
        return None
    prog = m.group("prog").rsplit("/", 1)[-1]
    return prog if prog in PROGRAMS else None


def command_options(command: str | None) -> dict[str, str]:
    """The nccl-tests options a command line gives (``-g``, ``-t``, ``-b``, ``-e``, ``-f``, ``-n``)."""
    if not command:
        return {}
    program = PROGRAM_RE.search(command)
    command = command[program.end() :] if program else command  # the launcher's own -n is not nccl-tests'
    names = {"--ngpus": "-g", "--nthreads": "-t", "--minbytes": "-b", "--maxbytes": "-e"}
    return {names.get(m.group("flag"), m.group("flag")): m.group("v") for m in _OPT.finditer(command)}
