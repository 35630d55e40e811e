"""Fuzzing every parser users feed (issue 14), seeded from the real outputs and the samples.

Each case mutates a seed (bytes, lines, attributes, numbers, nesting, names, encodings,
concatenation), writes it to a file and loads it the way the CLI does. The input must be either
accepted or refused with a TopomapError; anything else is a crash, and a case that runs longer than
the time limit is a hang. Each accepted input (once per distinct parse) is pushed on through the CLI
views in-process: ``show``, ``matrix``, ``render -o x.dot`` (DOT source only) and ``map`` for
topologies and snapshots; ``map`` and ``render --flow`` for flows; ``check`` for requirements. A
view may refuse (exit 2) or give a verdict (1, 3); exit 4 (internal error) is a crash.

Default: ~200 cases per format, derandomized, views for the first few distinct accepted inputs.
Opt-in: ``TOPOMAP_FUZZ=10000 pytest -s tests/importers/test_fuzz.py`` runs 10,000 random cases per format,
pushes every distinct accepted input through the views, counts instead of stopping at the first
failure, prints the table (accepted / refused cleanly / crash / hang) and fails if any crashed or
hung. ``TOPOMAP_FUZZ_OUT=prefix`` also writes the counts, up to 20 examples per class and their
inputs; ``TOPOMAP_FUZZ_HANG_S`` sets the time limit (default 20 s opt-in, 10 s otherwise).
"""

from __future__ import annotations

import codecs
import gc
import hashlib
import json
import os
import re
import resource
import signal
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from topomap.base.errors import TopomapError
from topomap.check import read_requirements
from topomap.cli import app
from topomap.flow import read_flow
from topomap.importers import import_file, load_any
from topomap.importers.bandwidth import load_measurements
from topomap.record import load_run

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "real-topologies"
FIXTURES = ROOT / "tests" / "data" / "fixtures"
SAMPLES = ROOT / "samples"
OPT_IN = int(os.environ.get("TOPOMAP_FUZZ", "0") or 0)
CASES = OPT_IN or 200
VIEW_LIMIT = int(os.environ.get("TOPOMAP_FUZZ_VIEWS", "0") or 0) or (10**9 if OPT_IN else 6)
MEMORY_LIMIT = int(os.environ.get("TOPOMAP_FUZZ_MEMORY_GB", "4")) * 2**30  # per case, opt-in runs only
HANG_S = int(os.environ.get("TOPOMAP_FUZZ_HANG_S", "0") or 0) or (20 if OPT_IN else 10)
SNAPSHOT = SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"
FLOW = SAMPLES / "flows" / "tensor-parallel.yaml"
REQS = SAMPLES / "requirements" / "tensor-parallel.yaml"
BANDWIDTH_SNAPSHOT = SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json"  # the machine kind the real figures are from
RUN = SAMPLES / "records" / "one-card.json"


def _seeds(*globs: str) -> list[bytes]:
    files = sorted({f for g in globs for f in ROOT.glob(g)})
    assert files, globs
    return [f.read_bytes() for f in files]


# --- mutations -------------------------------------------------------------------------------

HOSTILE_NUMBERS = [
    b"0",
    b"-1",
    b"4097",
    b"65",
    b"1e6",
    b"1e309",
    b"nan",
    b"inf",
    b"-0",
    b"2.5",
    b"0x7fffffff",
    b"18446744073709551616",
    b"99999999999999999999999999999999",
    b"1" * 5000,
]
HOSTILE_TEXT = [
    b"",
    b"\x1b[31mred\x1b[0m",
    b'"',
    b"'",
    b"<",
    b"&",
    b"\\",
    b"\n",
    b"\x00",
    b"\x0b",
    b"\t",
    b"A" * 20000,
    b"gpu99",
    b"nic0",
    b"NV999",
    b"NV18",
    b"PIX",
    b"SYS",
    b"XYZ",
    b"0000:00:00.0",
    b"ffff:ff:1f.7",
    b"mlx5_0",
    b"\xff\xfe",
    b"\xe2\x80\xae",
    b"!!python/object/apply:os.system",
    b"*a",
    b"&a",
    b"{",
    b"[",
    b"- ",
    b": ",
]


@dataclass
class Mutator:
    """Draws mutations of a seed with hypothesis' ``draw``."""

    draw: Callable[[st.SearchStrategy[Any]], Any]
    seeds: list[bytes]

    def pos(self, data: bytes) -> int:
        return int(self.draw(st.integers(0, max(0, len(data)))))

    def pick(self, items: list[Any]) -> Any:
        return self.draw(st.sampled_from(items))

    def bytes_flip(self, d: bytes) -> bytes:
        p = self.pos(d)
        b = self.draw(
            st.one_of(st.sampled_from([0, 0x1B, 0x0B, 0x0C, 0x7F, 0xFF, 0xC3, 0x22, 0x3C]), st.integers(0, 255))
        )
        return d[:p] + bytes([b]) + d[p + 1 :]

    def bytes_insert(self, d: bytes) -> bytes:
        p = self.pos(d)
        return d[:p] + self.draw(st.one_of(st.binary(max_size=16), st.sampled_from(HOSTILE_TEXT))) + d[p:]

    def bytes_delete(self, d: bytes) -> bytes:
        p = self.pos(d)
        return d[:p] + d[p + self.draw(st.integers(1, 400)) :]

    def truncate(self, d: bytes) -> bytes:
        return d[: self.pos(d)]

    def lines(self, d: bytes) -> bytes:
        ls = d.split(b"\n")
        i = self.draw(st.integers(0, len(ls) - 1))
        op = self.pick(["delete", "duplicate", "swap", "block", "spaces"])
        if op == "delete":
            del ls[i]
        elif op == "duplicate":
            ls.insert(i, ls[i])
        elif op == "swap":
            j = self.draw(st.integers(0, len(ls) - 1))
            ls[i], ls[j] = ls[j], ls[i]
        elif op == "block":
            j = self.draw(st.integers(i, min(len(ls), i + 40)))
            ls[j:j] = ls[i:j] * self.draw(st.integers(1, 50))
        else:
            ls[i] = ls[i] + b" " * self.draw(st.sampled_from([1, 100, 50_000]))
        return b"\n".join(ls)

    def number(self, d: bytes) -> bytes:
        spots = [m.span() for m in re.finditer(rb"\d+(?:\.\d+)?", d[:200_000])]
        if not spots:
            return d
        a, b = self.pick(spots)
        return d[:a] + self.pick(HOSTILE_NUMBERS) + d[b:]

    def token(self, d: bytes) -> bytes:
        """A word replaced by another word of the same file: paths, ids and names that still parse."""
        words = [m.span() for m in re.finditer(rb"[A-Za-z_][\w:.-]*", d[:200_000])]
        if len(words) < 2:
            return d
        a, b = self.pick(words)
        c, e = self.pick(words)
        return d[:a] + d[c:e] + d[b:]

    def attribute(self, d: bytes) -> bytes:
        spots = [m.span(1) for m in re.finditer(rb'="([^"]*)"', d[:200_000])]
        if not spots:
            return self.token(d)
        a, b = self.pick(spots)
        return d[:a] + self.pick(HOSTILE_NUMBERS + HOSTILE_TEXT[:20]).replace(b'"', b"&quot;") + d[b:]

    def name(self, d: bytes) -> bytes:
        spots = [m.span(1) for m in re.finditer(rb'"([A-Za-z][^"\n]{0,40})"', d[:200_000])]
        spots += [m.span(1) for m in re.finditer(rb"(mlx5_\d+|GPU\d+|NIC\d+|gpu\d+|nic\d+)", d[:200_000])]
        if not spots:
            return self.token(d)
        a, b = self.pick(spots)
        return d[:a] + self.pick(HOSTILE_TEXT) + d[b:]

    def nesting(self, d: bytes) -> bytes:
        p = self.pos(d)
        depth = self.pick([10, 70, 1000, 100_000])
        kind = self.pick(["json", "yaml-alias", "xml", "yaml-block"])
        if kind == "json":
            bit = b"[" * depth + b"]" * depth
        elif kind == "xml":
            bit = b'<pci busid="0000:01:00.0" class="0x060400">' * min(depth, 5000) + b"</pci>" * min(depth, 5000)
        elif kind == "yaml-alias":
            bit = b"\nb0: &b0 [x, x, x, x, x, x, x, x, x]\n" + b"".join(
                b"b%d: &b%d [*b%d, *b%d, *b%d, *b%d, *b%d, *b%d, *b%d, *b%d, *b%d]\n" % ((k, k) + (k - 1,) * 9)
                for k in range(1, 9)
            )
        else:
            bit = b"\n" + b"".join(b"  " * k + b"k%d:\n" % k for k in range(min(depth, 300))) + b"  " * 300 + b"v\n"
        return d[:p] + bit + d[p:]

    def concat(self, d: bytes) -> bytes:
        return d + b"\n" + self.pick(self.seeds)

    def encoding(self, d: bytes) -> bytes:
        text = d.decode("utf-8", "replace")
        return self.pick(
            [
                codecs.BOM_UTF8 + d,
                codecs.BOM_UTF16_LE + text.encode("utf-16-le", "replace"),
                text.encode("utf-16-le", "replace"),
                d.replace(b"\n", b"\r\n"),
                d.replace(b"    ", b"\t"),
            ]
        )

    def tree(self, d: bytes) -> bytes:
        """JSON or YAML parsed, one value changed (to another value of the same document, a
        hostile one, or removed / duplicated), written back: inputs that still parse and test
        the consistency rules rather than the parser."""
        if d.lstrip()[:1] == b"<":
            return self.attribute(d)
        if re.search(rb"[&*][A-Za-z0-9_]", d):  # YAML anchors/aliases: re-dumping would expand a bomb here
            return self.token(d)
        try:
            return self._tree(d)
        except Exception:  # an input already too odd to parse (deep, huge numbers): mutate it as text
            return self.token(d)

    def _tree(self, d: bytes) -> bytes:
        try:
            doc = json.loads(d)
            dump: Callable[[Any], bytes] = lambda x: json.dumps(x, indent=1).encode()  # noqa: E731
        except ValueError:
            try:
                doc = yaml.load(d, Loader=yaml.SafeLoader)  # not libyaml: its composer overflows the C stack
            except yaml.YAMLError:
                return self.token(d)
            dump = lambda x: yaml.safe_dump(x, sort_keys=False).encode()  # noqa: E731
        spots: list[tuple[Any, Any]] = []  # (container, key) of every value

        def walk(x: Any) -> None:
            items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else []
            for k, v in items:
                spots.append((x, k))
                walk(v)

        walk(doc)
        if not spots:
            return d
        leaves = [c[k] for c, k in spots if not isinstance(c[k], (dict, list))]
        for _ in range(self.draw(st.integers(1, 4))):
            box, key = self.pick(spots)
            op = self.pick(["other", "hostile", "drop", "dup"])
            if op == "other" and leaves:
                box[key] = self.pick(leaves)
            elif op == "hostile":
                box[key] = self.pick([None, -1, 0, 2**64, 10**400, 1e300, 1e308, float("nan"), "", "gpu99",
                                      "nic0", "NV99", "\x1b[2J", "\u202e", [], {}, "0000:00:00.0", True,
                                      "x" * 5000])  # fmt: skip
            elif op == "drop" and isinstance(box, (dict, list)):
                del box[key]
                break  # the spots after it moved
            elif op == "dup" and isinstance(box, list):
                box.append(box[key])
        try:
            return dump(doc)
        except (ValueError, TypeError, yaml.YAMLError):
            return d

    OPS = ("tree", "tree", "bytes_flip", "bytes_insert", "bytes_delete", "truncate", "lines", "number", "token",
           "attribute", "name", "nesting", "concat", "encoding")  # fmt: skip


@st.composite
def mutated(draw: Callable[[st.SearchStrategy[Any]], Any], seeds: list[bytes]) -> tuple[bytes, str]:
    m = Mutator(draw, seeds)
    data = m.pick(seeds)
    ops = [m.pick(list(Mutator.OPS)) for _ in range(draw(st.integers(1, 3)))]
    for op in ops:
        data = getattr(m, op)(data)
    return data, "+".join(ops)


# --- running one case --------------------------------------------------------------------------


class Hang(BaseException):
    """A case ran past the time limit (BaseException: the CLI's guard does not swallow it)."""


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def fire(signum: int, frame: object) -> None:
        raise Hang(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextmanager
def memory_limit(limit: int | None) -> Iterator[None]:
    """Cap the address space a case may add, so a runaway allocation is a MemoryError (a crash)
    in the tally, not the kernel's OOM killer ending the whole run."""
    if limit is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:  # what the process already holds, so the cap is per case
        held = int(fh.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (held + limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@dataclass
class Format:
    name: str
    seeds: list[bytes]
    filename: str
    load: Callable[[Path], object]
    views: Callable[[Path, Path], list[list[str]]]


def _snapshot_views(f: Path, out: Path) -> list[list[str]]:
    return [
        ["show", str(f)],
        ["matrix", str(f)],
        ["render", str(f), "-o", str(out / "x.dot")],
        ["map", str(FLOW), "--probe", f"lot={f}"],
    ]


def _flow_views(f: Path, out: Path) -> list[list[str]]:
    return [
        ["map", str(f), "--probe", f"lot={SNAPSHOT}"],
        ["render", str(SNAPSHOT), "--flow", str(f), "-o", str(out / "f.dot")],
    ]


def _requirements_views(f: Path, out: Path) -> list[list[str]]:
    return [["check", str(f), "--probe", f"lot={SNAPSHOT}", "--flow", str(FLOW)]]


def _bandwidth_views(f: Path, out: Path) -> list[list[str]]:
    """Measured figures are attached to a snapshot, then shown (their matrix) and mapped."""
    attached = out / "attached.json"
    return [
        ["attach", str(BANDWIDTH_SNAPSHOT), str(f), "-o", str(attached)],
        ["show", str(attached)],
        ["map", str(FLOW), "--probe", f"lot={attached}"],
    ]


def _run_views(f: Path, out: Path) -> list[list[str]]:
    return [["show", str(f)], ["diff", str(f), str(RUN)]]


FORMATS = {
    "nvidia-smi": Format("nvidia-smi", _seeds("tests/data/real-topologies/nvidia-smi/*.txt"), "paste.txt",
                         import_file, _snapshot_views),
    "nccl-xml": Format("nccl-xml", _seeds("tests/data/real-topologies/nccl-xml/*.xml",
                                          "tests/data/fixtures/nccl-*.xml"), "topo.xml", import_file, _snapshot_views),
    "hwloc-xml": Format("hwloc-xml", _seeds("tests/data/real-topologies/hwloc/*.xml"), "lstopo.xml", import_file,
                        _snapshot_views),
    "flow-yaml": Format("flow-yaml", _seeds("samples/flows/*.yaml"), "flows/flow.yaml", read_flow, _flow_views),
    "requirements-yaml": Format("requirements-yaml", _seeds("samples/requirements/*.yaml"), "reqs.yaml",
                                read_requirements, _requirements_views),
    "snapshot-json": Format("snapshot-json", _seeds("samples/snapshots/*.json"), "snap.json", load_any,
                            _snapshot_views),
    # formats added since the first fuzz run: nvidia-smi -q beside topo -m, measured figures, run records
    "nvidia-smi-q": Format("nvidia-smi-q", _seeds("tests/data/fixtures/nvidia-smi-q-*.txt"), "q.txt", import_file,
                           _snapshot_views),
    "bandwidth": Format("bandwidth", _seeds("tests/data/real-topologies/bandwidth/*.txt",
                                            "tests/data/fixtures/nvbandwidth-*"), "nvb.txt", load_measurements,
                        _bandwidth_views),
    "run-json": Format("run-json", _seeds("samples/records/*.json"), "run.json", load_run, _run_views),
}  # fmt: skip


@dataclass
class Tally:
    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    viewed: int = 0

    def add(self, outcome: str, detail: str, data: bytes = b"", keep: str | None = None) -> None:
        self.counts[outcome] += 1
        if outcome != "accepted":
            self.examples.setdefault(outcome, [])
            if len(self.examples[outcome]) < 20:
                self.examples[outcome].append(detail[:600])
                if keep and outcome in ("crash", "hang"):  # the input, to reproduce it
                    Path(f"{keep}.{outcome}-{len(self.examples[outcome])}.bin").write_bytes(data)


def _workdir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="topomap-fuzz-"))
    (d / "flows").mkdir()
    (d / "snapshots").symlink_to(SAMPLES / "snapshots")  # flows name hosts as ../snapshots/x.json
    for f in (SAMPLES / "flows").iterdir():  # and data files beside them (uneven-documents.csv)
        if f.suffix != ".yaml":
            (d / "flows" / f.name).symlink_to(f)
    return d


def run_case(fmt: Format, data: bytes, work: Path, tally: Tally, ops: str) -> tuple[str, str]:
    with memory_limit(MEMORY_LIMIT if OPT_IN else None):
        return _run_case(fmt, data, work, tally, ops)


def _run_case(fmt: Format, data: bytes, work: Path, tally: Tally, ops: str) -> tuple[str, str]:
    f = work / fmt.filename
    f.write_bytes(data)
    try:
        with time_limit(HANG_S):
            obj = fmt.load(f)
    except TopomapError as err:
        msg = str(err)
        if "\n" in msg or not msg:
            return "crash", f"[{ops}] load: error message not one line: {msg!r}"
        return "refused", msg
    except Hang as err:
        return "hang", f"[{ops}] load: {err}"
    except MemoryError:  # nothing allocated here: the traceback still holds the runaway data
        exhausted = True
    except Exception as err:  # any other exception is the finding
        return "crash", f"[{ops}] load: {type(err).__name__}: {err}"
    else:
        exhausted = False
    if exhausted:
        gc.collect()
        return "crash", f"[{ops}] load: MemoryError"
    key = hashlib.sha256(repr(obj).encode("utf-8", "replace")).hexdigest()
    if key in tally.seen or tally.viewed >= VIEW_LIMIT:
        return "accepted", ""
    tally.seen.add(key)
    tally.viewed += 1
    runner = CliRunner()
    wrote = ""  # the writer whose output the next views read (attach): they must accept it
    for args in fmt.views(f, work):
        res = None
        try:
            with time_limit(HANG_S):
                res = runner.invoke(app, args)
        except Hang as err:
            return "hang", f"[{ops}] {args[0]}: {err}"
        except MemoryError:
            res = None  # counted below, after the runaway data is released
        if res is None or isinstance(res.exception, MemoryError):
            res = None
            gc.collect()
            return "crash", f"[{ops}] {args[0]}: MemoryError"
        exc = res.exception
        if res.exit_code not in (0, 1, 2, 3) or (exc is not None and not isinstance(exc, SystemExit)):
            tail = res.output.strip().splitlines()[-1:] if res.output.strip() else [repr(exc)]
            return "crash", f"[{ops}] {' '.join(args[:1])} exit {res.exit_code}: {tail[0][:300]}"
        if wrote and args[0] == "show" and res.exit_code != 0:  # issue 24: a writer wrote what readers refuse
            tail = res.output.strip().splitlines()[-1:] or [""]
            return "crash", f"[{ops}] {wrote} wrote a file `show` refuses: {tail[0][:300]}"
        wrote = args[0] if args[0] == "attach" and res.exit_code == 0 else wrote
    return "accepted", ""


# --- the tests ----------------------------------------------------------------------------------

TALLIES: dict[str, Tally] = {}


def _fuzz(name: str) -> None:
    fmt = FORMATS[name]
    tally = TALLIES.setdefault(name, Tally())
    work = _workdir()

    @settings(
        max_examples=CASES,
        deadline=None,
        derandomize=not OPT_IN,
        database=None,
        phases=[Phase.explicit, Phase.generate] if OPT_IN else [Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(mutated(fmt.seeds))
    def case(drawn: tuple[bytes, str]) -> None:
        data, ops = drawn
        outcome, detail = run_case(fmt, data, work, tally, ops)
        out = os.environ.get("TOPOMAP_FUZZ_OUT")
        tally.add(outcome, detail, data, f"{out}.{name}" if out else None)
        if not OPT_IN:
            assert outcome in ("accepted", "refused"), detail

    case()
    c = tally.counts
    row = f"| {name} | {c['accepted']:,} | {c['refused']:,} | {c['crash']:,} | {c['hang']:,} | {tally.viewed:,} |"
    print("\n" + row)
    out = os.environ.get("TOPOMAP_FUZZ_OUT")
    if out:
        path = Path(f"{out}.{name}.json")
        path.write_text(json.dumps({"format": name, "counts": dict(c), "viewed": tally.viewed,
                                    "examples": tally.examples}, indent=2))  # fmt: skip
    assert c["crash"] == 0 and c["hang"] == 0, json.dumps(tally.examples, indent=1)[:4000]


@pytest.mark.parametrize("name", list(FORMATS))
def test_fuzz(name: str) -> None:
    _fuzz(name)


def test_seeds_are_accepted_and_viewed() -> None:
    """Every unmutated seed is accepted and passes every view: the mutations start from valid input."""
    work = _workdir()
    for fmt in FORMATS.values():
        tally = Tally()
        for seed in fmt.seeds:
            outcome, detail = run_case(fmt, seed, work, tally, "seed")
            assert outcome == "accepted", (fmt.name, detail)
