"""Every option and argument of every command, fuzzed through the real command line (issue 36 item 8:
`plan --observed-units` with a 310-digit number was exit 4, "OverflowError: int too large to convert
to float").

The commands and their parameters are walked from the typer app itself, so a new option is fuzzed the
day it is added (and a new command fails :func:`test_every_command_has_a_base_invocation` until it has
a base invocation here). Each case starts from a base invocation that works, gives one to three of the
command's parameters a hostile value — numbers past every bound (310 and 5,000 digits, ``nan``,
``inf``, ``1e400``, negatives), text with escapes, separators and NUL, 10,000 characters, devices,
FIFOs, folders, missing and wrong-kind files, unwritable outputs — and runs the command line as
`topomap` does (``topomap.cli.entry.run``, in-process). An internal error (exit 4, a traceback, an
exception out of the entry point) or a run past the time limit (a hang) fails the test; a refusal is
exit 2 with exactly one ``topomap: error:`` line on stderr, the last.

Default: every parameter of every command once with each of a few values (about 300 runs).
Opt-in: ``TOPOMAP_FUZZ=5000 python -m pytest -s tests/cli/test_option_fuzz.py`` runs that many random
cases (at least 5,000 when set), prints the counts per outcome and per command, and fails on any
internal error or hang. ``TOPOMAP_FUZZ_HANG_S`` sets the time limit (default 30 s).
"""

from __future__ import annotations

import os
import random
import signal
import sys
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.base.safetext import UNSAFE
from topomap.cli import app
from topomap.cli.entry import run

ROOT = Path(__file__).resolve().parents[2]
OPT_IN = int(os.environ.get("TOPOMAP_FUZZ", "0") or 0)
RUNS = max(OPT_IN, 5000) if OPT_IN else 0
HANG_S = int(os.environ.get("TOPOMAP_FUZZ_HANG_S", "0") or 0) or 30
#: The inputs every case starts from, copied into the case folder first: an output a case names is
#: only ever a copy (a `record -o` onto an input overwrote the shipped snapshot before this).
SOURCES = {
    "snap.json": SAMPLES / "snapshots" / "dgx1-v100.json",
    "snap2.json": SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json",
    "flow.yaml": SAMPLES / "flows" / "tensor-parallel.yaml",
    "work.yaml": SAMPLES / "flows" / "eight-documents.yaml",
    "rtx4090-8gpu-all-sys.json": SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json",
    "ibm-gx3d-h100-8gpu.json": SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json",
    "reqs.yaml": SAMPLES / "requirements" / "tensor-parallel.yaml",
    "run-a.json": SAMPLES / "records" / "one-card.json",
    "run-b.json": SAMPLES / "records" / "two-cards.json",
    "topo.txt": ROOT / "tests" / "data" / "real-topologies" / "nvidia-smi" / "dgx1-v100-pytorch-ddp-bench.txt",
    "p2p.txt": ROOT
    / "tests"
    / "data"
    / "real-topologies"
    / "bandwidth"
    / "a100-sxm4-80gb-8gpu-p2pBandwidthLatencyTest-distserve3.txt",
    "nccl.log": ROOT / "tests" / "data" / "real-nccl-logs" / "h200-vm-fulldump-gdrdma-nccltests256.log",
}
SNAP, SNAP2, FLOW, WORK, REQS = "snap.json", "snap2.json", "flow.yaml", "work.yaml", "reqs.yaml"
PRISTINE_SNAP, PRISTINE_WORK = str(SOURCES["snap.json"]), str(SOURCES["work.yaml"])  # never an output
RUN_A, RUN_B, TOPO, P2P, LOG = "run-a.json", "run-b.json", "topo.txt", "p2p.txt", "nccl.log"

NUMBERS = ["0", "-0", "1", "-1", "2", "3", "7", "8", "9", "16", "64", "257", "4096", "4097", "100000", "100001",
           "1e400", "-1e400", "nan", "-nan", "inf", "-inf", "1e-400", "9" * 310, "-" + "9" * 310, "9" * 5000,
           "0x10", "1_000", "1.5", "0.000001", "\u0661\u0662", " 5 ", "5,3", "1e3", "2**64",
           "18446744073709551617"]  # fmt: skip
TEXTS = ["", " ", "-", "--", "\x1b[2J\x1b]0;pwned\x07", "node1\u2028PASS  forged\u202eabc\u2066", "\x00", "\x85\x9b31m",
         "a" * 10_000, "é", "%s%n", "{}", "[", "null", "all", "none", "used", "machine", "pipeline", "gpu3", "GPU99",
         "3,5", "gpu0,gpu0", "0-7", "0-1,2-3", "1-1000000", "0-99999999999", "1,99999999999", "0-1,5-99999999999",
         "auto", "nvidia-smi", "svg", "pdf", "png", "dot",
         "graphml", "json", "tp", "ring", "independent", "r", "w", "n", "a", "64MiB", "1 ZB", "0B", "200ms", "0.2s",
         "10ms", "3601s", "2.21.5", "2.30", "3.0", "NCCL_P2P_LEVEL=NVL", "NCCL_P2P_DISABLE=1", "NCCL_X", "=", "x=y=z",
         "../../etc/passwd", "~", "$HOME", "\ud800"]  # fmt: skip
#: A record runs its command for real: only these (nothing long, nothing exiting 4).
COMMANDS = [["true"], ["false"], ["sh", "-c", "exit 3"], ["sh", "-c", "kill -TERM $$"], ["/dev/null"],
            ["no-such-command-xyz"], [""], ["sh", "-c", "echo '\x1b[2J\u2028x' >/dev/null"],
            ["sleep", "0.05"]]  # fmt: skip


@dataclass
class Files:
    """Paths every case may name: inputs of each kind and of none, special files, outputs."""

    tmp: Path
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Files]:
    """The case folder, made the current folder while the cases run."""
    tmp = tmp_path_factory.mktemp("optfuzz")
    for name, source in SOURCES.items():
        text = source.read_text()
        if name.endswith(".yaml"):  # a flow's lot is a snapshot in the same folder here
            text = text.replace("../snapshots/", "")
        (tmp / name).write_text(text)
    cwd = os.getcwd()
    os.chdir(tmp)  # every input is named relative to the case folder; a relative output lands here
    try:
        yield _files(tmp)
    finally:
        os.chdir(cwd)


def _files(tmp: Path) -> Files:
    (tmp / "dir").mkdir()
    (tmp / "empty").write_text("")
    (tmp / "secret.env").write_text("API_KEY=sk-live-abcdef123456\n")
    (tmp / "binary").write_bytes(b"\x00\x01\x02" * 100)
    (tmp / "huge-line.txt").write_text("GPU0\t" + " " * 200_000 + "X\n")
    (tmp / "bad.json").write_text('{"schema": "topomap.snapshot/1", "gpus": [')
    (tmp / "bad.yaml").write_text("flow: x\nsteps: [\n")
    os.mkfifo(tmp / "fifo")
    (tmp / "cluster.json").write_bytes(_merged(tmp))
    f = Files(tmp)
    f.inputs = [SNAP, SNAP2, FLOW, WORK, REQS, RUN_A, RUN_B, TOPO, P2P, LOG, str(tmp / "cluster.json"),
                str(tmp / "dir"), str(tmp / "empty"), str(tmp / "secret.env"), str(tmp / "binary"),
                str(tmp / "huge-line.txt"), str(tmp / "bad.json"), str(tmp / "bad.yaml"), str(tmp / "fifo"),
                str(tmp / "missing.json"), "/dev/zero", "/dev/null", "/dev/full", "/proc/self/status", "-",
                f"lot={SNAP}", f"lot={tmp / 'missing.json'}", "=", "lot=", f"n\u2028x={SNAP}"]  # fmt: skip
    f.outputs = [str(tmp / f"out.{ext}") for ext in ("json", "svg", "png", "pdf", "dot", "graphml", "html", "txt", "")]
    f.outputs += ["-", "/dev/null", "/dev/full", str(tmp / "dir"), str(tmp / "fifo"), str(tmp / "no" / "x.json"),
                  str(tmp / "dir") + "/", SNAP]  # fmt: skip
    f.folders = [str(tmp / "dir"), str(tmp / "empty"), str(tmp / "missing"), "/dev/null", str(tmp / "fifo")]
    return f


def _merged(tmp: Path) -> bytes:
    out = tmp / "merged.json"
    code, _, err, exc = _invoke(["merge", f"n1={SNAP2}", f"n2={SNAP2}", "-o", str(out)], 60)
    assert code == 0 and exc is None, err
    return out.read_bytes()


def _base(f: Files) -> dict[str, list[str]]:
    """A working invocation of every command (its arguments and options before any fuzzing)."""
    out = str(f.tmp / "base-out")
    return {
        "probe": ["-o", out + ".json"],
        "import": [TOPO, "-o", out + ".json"],
        "show": [SNAP],
        "matrix": [SNAP],
        "merge": [f"a={SNAP2}", f"b={SNAP2}", "-o", out + ".json"],
        "schema": ["flow"],
        "cluster": [str(f.tmp / "cluster.json")],
        "map": [FLOW],
        "render": [SNAP, "-o", out + ".dot"],
        "plan": [WORK],
        "diff": [SNAP, SNAP2],
        "check": [REQS, FLOW],
        "measure": [SNAP],
        "attach": [SNAP2, P2P, "-o", out + ".json"],
        "record": ["-o", out + "-run.json", "--", "true"],
        "report": [FLOW, "-o", out + ".html"],
        "nccl": [SNAP],
        "place": [SNAP, "--gpus", "2"],
        "lots": [],
    }


class _Hang(BaseException):
    pass


def _late(signum: int, frame: object) -> None:
    raise _Hang


def _invoke(argv: list[str], limit: int) -> tuple[int | str, str, str, BaseException | None]:
    """The command line as `topomap` runs it: (exit status or "hang", stdout, stderr, an exception that
    escaped the entry point)."""
    runner = CliRunner()
    code: int | str = 0
    escaped: BaseException | None = None
    with runner.isolation() as streams:
        argv0, sys.argv = sys.argv, ["topomap", *argv]  # the program name its hints give
        old = signal.signal(signal.SIGALRM, _late)
        signal.alarm(limit)
        try:
            run(argv)
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 2)
        except _Hang:
            code = "hang"
        except BaseException as err:  # any escape is the finding
            escaped = err
            code = "escaped"
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
            sys.argv = argv0
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        out = streams[0].getvalue().decode("utf-8", "surrogateescape")
        err_text = streams[1].getvalue().decode("utf-8", "surrogateescape")
    return code, out, err_text, escaped


@dataclass(frozen=True)
class Param:
    command: str
    name: str
    flags: tuple[str, ...]  # empty: an argument
    kind: str  # flag, int, float, text, tuple, list (multiple option), args (nargs=-1), arg


def params() -> list[Param]:
    """Every parameter of every command, as the typer app declares it."""
    out: list[Param] = []
    group: Any = get_command(app)
    for name, cmd in sorted(group.commands.items()):
        for p in cmd.params:
            flags = tuple(getattr(p, "opts", ()))
            type_name = getattr(p.type, "name", "")
            if p.param_type_name == "argument":
                kind = "args" if p.nargs == -1 else "arg"
                flags = ()
            elif getattr(p, "is_flag", False):
                kind = "flag"
            elif p.nargs == 2:
                kind = "tuple"
            elif getattr(p, "multiple", False):
                kind = "list"
            elif "integer" in type_name:
                kind = "int"
            elif "float" in type_name:
                kind = "float"
            else:
                kind = "text"
            out.append(Param(name, p.name or "", flags, kind))
    return out


def _values(p: Param, f: Files, rnd: random.Random) -> list[str]:
    """One hostile value (as argv words) for parameter ``p``."""
    if p.kind == "flag":
        return []
    if p.command == "record" and p.kind == "args":
        return rnd.choice(COMMANDS)
    if p.name == "output":
        return [rnd.choice(f.outputs)]
    if p.kind == "tuple":
        return [rnd.choice(f.folders), rnd.choice(f.folders)]
    if p.kind in ("int", "float"):
        return [rnd.choice(NUMBERS)]
    if p.kind in ("arg", "args") or p.name in ("flow_opt", "observed", "log", "probe", "sysfs_root"):
        return [rnd.choice(f.inputs + TEXTS[:8])]
    return [rnd.choice(TEXTS + NUMBERS)]


def _argv(command: str, base: list[str], chosen: list[tuple[Param, list[str]]]) -> list[str]:
    """``base`` with each chosen parameter set to its value: an option replaces its own occurrence (or
    is added before a ``--``), an argument replaces the base's positional words."""
    head, tail = (base[: base.index("--")], base[base.index("--") :]) if "--" in base else (base, [])
    words = list(head)
    for p, value in chosen:
        if p.flags:
            for flag in p.flags:
                while flag in words:
                    k = words.index(flag)
                    del words[k : k + (1 if p.kind == "flag" else 2 if p.kind != "tuple" else 3)]
            words += [p.flags[-1], *value]
        elif p.command == "record":
            tail = ["--", *value]
        else:
            positional = [w for w in words if not w.startswith("-") and (words.index(w) == 0 or not
                          words[words.index(w) - 1].startswith("-"))]  # fmt: skip
            words = [w for w in words if w not in positional[:1]] + value
    return [command, *words, *tail]


Result = tuple[int | str, str, str, BaseException | None]


@dataclass
class Tally:
    outcomes: Counter[str] = field(default_factory=Counter)
    per_command: Counter[str] = field(default_factory=Counter)
    covered: set[tuple[str, str]] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)

    def add(
        self, argv: list[str], chosen: list[Param], result: tuple[int | str, str, str, BaseException | None]
    ) -> None:
        code, out, err, escaped = result
        self.per_command[argv[0]] += 1
        self.covered.update((p.command, p.name) for p in chosen)
        problem = _problem(argv, code, out, err, escaped)
        outcome = "internal error" if problem and code != "hang" else "hang" if code == "hang" else f"exit {code}"
        self.outcomes[outcome] += 1
        if problem:
            self.failures.append(f"{problem}: topomap {' '.join(repr(a)[:80] for a in argv)}\n{err[-600:]}")


def _problem(argv: list[str], code: int | str, out: str, err: str, escaped: BaseException | None) -> str | None:
    if code == "hang":
        return f"hang (past {HANG_S} s)"
    if escaped is not None:
        return "escaped the entry point: " + "".join(traceback.format_exception_only(type(escaped), escaped)).strip()
    if code == 4 or "Traceback" in out + err or "internal error" in err:
        return "internal error"
    if argv[0] != "record" and code not in (0, 1, 2, 3):
        return f"exit {code}"
    if code == 2:
        lines = err.rstrip("\n").split("\n")
        errors = [x for x in lines if x.startswith("topomap: error: ")]
        if len(errors) != 1 or not lines[-1].startswith("topomap: error: "):
            return "not one error line"
    for c in UNSAFE.findall(out + err):
        if c not in "\n\t" and not (argv[0] == "record" and c in "\r\x1b"):
            return f"raw {c!r} reached the terminal"
    return None


def test_every_command_has_a_base_invocation(files: Files) -> None:
    base = _base(files)
    commands = {p.command for p in params()}
    assert commands == set(base), sorted(commands ^ set(base))
    for command, argv in base.items():
        code, _, err, escaped = _invoke([command, *argv], HANG_S)
        assert escaped is None and code in (0, 1, 3), (command, code, err)


def test_every_option_of_every_command_is_fuzzed(files: Files) -> None:
    """Default: each parameter of each command with a few hostile values, deterministically."""
    base = _base(files)
    tally = Tally()
    rnd = random.Random(36)
    for p in params():
        for _ in range(3):
            chosen = [(p, _values(p, files, rnd))]
            argv = _argv(p.command, base[p.command], chosen)
            tally.add(argv, [p], _invoke(argv, HANG_S))
    assert tally.covered == {(p.command, p.name) for p in params()}
    assert not tally.failures, "\n\n".join(tally.failures[:10])


@pytest.mark.skipif(not OPT_IN, reason="opt-in: TOPOMAP_FUZZ=5000")
def test_option_fuzz_opt_in(files: Files) -> None:
    base = _base(files)
    every = params()
    by_command: dict[str, list[Param]] = {}
    for p in every:
        by_command.setdefault(p.command, []).append(p)
    tally = Tally()
    rnd = random.Random(int(os.environ.get("TOPOMAP_FUZZ_SEED", "36")))
    for k in range(RUNS):
        command = rnd.choice(sorted(by_command))
        picked = rnd.sample(by_command[command], min(len(by_command[command]), rnd.choice((1, 1, 2, 3))))
        chosen = [(p, _values(p, files, rnd)) for p in picked]
        argv = _argv(command, base[command], chosen)
        tally.add(argv, picked, _invoke(argv, HANG_S))
        if (k + 1) % 500 == 0:
            print(f"  {k + 1} runs: {dict(tally.outcomes)}", flush=True)
    print(f"\noption fuzz: {RUNS} runs over {len(every)} parameters of {len(by_command)} commands")
    for outcome, n in sorted(tally.outcomes.items()):
        print(f"  {outcome:16s} {n}")
    print("  per command: " + ", ".join(f"{c} {n}" for c, n in sorted(tally.per_command.items())))
    print(f"  parameters covered: {len(tally.covered)} of {len(every)}")
    assert tally.covered == {(p.command, p.name) for p in every}
    assert not tally.failures, f"{len(tally.failures)} failures:\n\n" + "\n\n".join(tally.failures[:20])


def test_the_issues_310_digit_option_is_one_line() -> None:
    code, out, err, escaped = _invoke(["plan", WORK, "--observed", RUN_B, "--observed-units", "1" + "0" * 309], 60)
    assert escaped is None and code == 2, err
    assert err.startswith(
        "topomap: error: Invalid value for '--observed-units': 100000… (310 digits) is outside the range: "
        "from 1 to 1e+12 (hint: "
    )
    assert err.endswith("plan --help)\n") and err.count("\n") == 1 and not out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["plan", PRISTINE_WORK, "--margin", "nan"], "--margin nan: a percentage from 0 to 1000"),
        (
            ["plan", PRISTINE_WORK, "--gantt", "9" * 400],
            "'--gantt': 999999… (400 digits) is outside the range: from 1 to 100,000",
        ),
        (["probe", "--budget", "1e400"], "'--budget': inf is not a finite number (above 0 s up to 86,400 s)"),
        (["probe", "--call-timeout", "0"], "'--call-timeout': 0 is outside the range: above 0 s up to 3,600 s"),
        (["place", PRISTINE_SNAP, "--gpus", "-1"], "'--gpus': -1 is outside the range: from 1 to 4,096"),
        (["measure", PRISTINE_SNAP, "--reps", "0"], "'--reps': 0 is outside the range: from 1 to 1,000,000"),
        (
            ["measure", PRISTINE_SNAP, "--timeout", "-inf"],
            "'--timeout': -inf is not a finite number (above 0 s up to 86,400 s)",
        ),
        (
            ["nccl", PRISTINE_SNAP, "--ranks", "0-99999999999"],
            "--ranks '0-99999999999': not GPU indexes of this snapshot",
        ),
        (["measure", PRISTINE_SNAP, "--size", "9" * 400], "at most 256 GiB, more than any GPU holds"),
    ],
)
def test_every_numeric_option_states_its_range(argv: list[str], said: str) -> None:
    code, _, err, escaped = _invoke(argv, 60)
    assert escaped is None and code == 2 and said in err and err.count("\n") == 1, err


def test_typer_options_are_all_bounded() -> None:
    """Every int and float option of every command has a bound (a callback or a check of its own)."""
    unchecked = {
        ("diff", "tolerance"),  # a float, checked finite and >= 0 by record.outputs.check_tolerance
        ("plan", "margin"),  # checked by plan itself: "a percentage from 0 to 1000" (nan and inf refused)
    }
    for p in params():
        if p.kind in ("int", "float") and (p.command, p.name) not in unchecked:
            cmd = get_command(app).commands[p.command]  # type: ignore[attr-defined]
            option = next(x for x in cmd.params if x.name == p.name)
            assert option.callback is not None or isinstance(option.type, typer.main.click.types._NumberRangeBase), p
