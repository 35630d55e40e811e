"""Fault run of `topomap nccl --log LOG [SNAP]` (issue 20): "a malformed or truncated log is a one-line
error or a partial reading that says what it skipped, never a traceback".

The inputs are the real logs of tests/data/real-nccl-logs (origins in its README), mutated the ways
logs arrive broken: cut at every line boundary and mid-line, lines dropped, duplicated, shuffled, two
logs interleaved, launcher prefixes, CRLF, a byte-order mark, NUL and invalid UTF-8 bytes, absurd
numbers in channel lines, ranks out of range, dump rows naming GPUs not in the tree, odd values in
"set by environment" lines, rich console markup in the log's words; and files that are no log at all
(empty, binary, a directory, missing).
Each goes through the real command line (typer's CliRunner on ``topomap.cli.app``), with and without
``--json``, with and without a snapshot beside it. What must hold every time: exit 0 or 2; on 2 one
error line naming the file; never a traceback; on 0 with ``--json`` every pair's ``predicted`` and
``observed`` is a transport family of the JSON contract.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from topomap.cli import app

LOGS = Path(__file__).parents[1] / "data" / "real-nccl-logs"
SAMPLES = Path(__file__).parents[2] / "samples" / "snapshots"
TOPOS = Path(__file__).parents[1] / "data" / "real-topologies" / "nvidia-smi"
NAMES = sorted(p.name for p in LOGS.glob("*.log"))
# snapshots a log may be read against: the one its README names, others of the same GPUs, and one
# of another machine entirely (its bus ids are not the log's: the reader must say so, not crash)
SNAPS: dict[str, list[Path]] = {
    "a100-p4d-ipc-read-nccl527.log": [SAMPLES / "aws-p4d-24xlarge.json"],
    "rtx4090-8gpu-shm-nccltests307.log": [
        SAMPLES / "rtx4090-8gpu-all-sys.json",
        TOPOS / "rtx4090-8gpu-2nic-go-gpuallocator17.txt",
    ],
    "h20-2node-cumem-gdrdma-nccl1189.log": [SAMPLES / "h20-8gpu-vm.json"],
}
for _log in LOGS.glob("*.log"):  # nvidia-smi topo -m saved beside a log (name.topo.txt), where there is one
    if _log.with_suffix(".topo.txt").is_file():
        SNAPS.setdefault(_log.name, []).append(_log.with_suffix(".topo.txt"))
OTHER_SNAP = SAMPLES / "dgx1-v100.json"
FAMILIES = {"P2P", "SHM", "NET", "NET+GDR", "COLLNET", "unknown"}
PREFIXES = (b"[1,0]<stdout>:", b"[rank3]:", b"host-7: ")
ODD_ENV = (
    b"NCCL_P2P_LEVEL set by environment to 99",
    b"NCCL_P2P_LEVEL set by environment to FOO",
    b"NCCL_P2P_LEVEL set by environment to -1",
    b"NCCL_NET_GDR_LEVEL set by environment to -1",
    b"NCCL_NET_GDR_LEVEL set by environment to PHBX",
    b"NCCL_P2P_DISABLE set by environment to yes",
    b"NCCL_SHM_DISABLE set by environment to 2",
    b"NCCL_IB_HCA set by environment to =mlx5_0:1,^",
    b"NCCL_CROSS_NIC set by environment to ",
    b"NCCL_NET_GDR_READ set by environment to 99999999999999999999999",
)
ODD_NUMBERS = (b"99999", b"-1", b"0x1f", b"zz", b"18446744073709551617", b"007", b"")
ODD_ROWS = (
    b"h:1:2 [0] NCCL INFO GPU/ffff0 :GPU/eeee0 (1/40.0/NVL) GPU/ffff0 (0/5000.0/LOC) NET/9 (4/12.0/PIX)",
    b"h:1:2 [0] NCCL INFO GPU/0-dead0 :GPU/0-beef0 (2/0.0/SYS) CPU/0 (1/1.0/PHB)",
    b"h:1:2 [0] NCCL INFO GPU/- :GPU/- (1/1/PIX)",
    b"h:1:2 [0] NCCL INFO NET/99999999999999999999 :GPU/18000 (6/10.0/SYS)",
    b"h:1:2 [0] NCCL INFO + PCI[48.0] - GPU/0-fffff (99999)",
    b"h:1:2 [0] NCCL INFO CPU/0-0 (9/9/9)",
    b"h:1:2 [0] NCCL INFO comm 0x1 rank 99999 nranks 2 cudaDev 99999 nvmlDev 99999 busId fffff000 - Init COMPLETE",
    b"h:1:2 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 0-ffff0 / HCA 99999 (distance 99 <= -1)",
    b"h:1:2 [0] NCCL INFO NET/IB : Using [99999]mlx5_0:1/IB [-1]x ; OOB ib0:1.2.3.4<0>",
)
_RUNNER = CliRunner()
_T = TypeVar("_T")


def _lines(name: str) -> list[bytes]:
    return (LOGS / name).read_bytes().splitlines(keepends=True)


# --- the mutations: each takes the log's lines and a seeded random source, and returns lines ---


def _drop(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    return [ln for ln in lines if rnd.random() > 0.3]


def _duplicate(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    return [ln for ln in lines for _ in range(2 if rnd.random() < 0.4 else 1)]


def _shuffle(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    out = list(lines)
    rnd.shuffle(out)
    return out


def _interleave(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    other = _lines(rnd.choice(NAMES))
    out: list[bytes] = []
    for i in range(max(len(lines), len(other))):
        out += lines[i : i + 1] + other[i : i + 1]
    return out


def _prefix(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    one = rnd.choice(PREFIXES)
    return [(rnd.choice(PREFIXES) if rnd.random() < 0.2 else one) + ln for ln in lines]


def _crlf(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    return [ln.rstrip(b"\r\n") + b"\r\n" for ln in lines]


def _bom(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    return [b"\xef\xbb\xbf" + b"".join(lines)]


def _bad_bytes(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    out = list(lines)
    for _ in range(rnd.randint(1, 3)):
        if not out:
            break
        i = rnd.randrange(len(out))
        at = rnd.randint(0, len(out[i]))
        out[i] = out[i][:at] + rnd.choice((b"\x00", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80")) + out[i][at:]
    return out


def _odd_numbers(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    """Channel and ring numbers, ranks and device ids replaced by huge, negative, hex or empty values."""
    number = re.compile(rb"(?<=Channel )\d+|(?<=: )\d+(?=\[)|(?<=-> )\d+|(?<=\[)[0-9a-f]+(?=\])|(?<=/)\d+(?=/GDR)")
    return [number.sub(lambda m: rnd.choice(ODD_NUMBERS), ln) if rnd.random() < 0.5 else ln for ln in lines]


def _odd_lines(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    """Environment lines with odd values, dump rows of GPUs not in the tree, ranks out of range."""
    out = list(lines)
    host = re.match(rb"^(\S+:\d+:\d+ \[\d+\]) NCCL INFO ", out[0]) if out else None
    head = host.group(1) if host else b"h:1:2 [0]"
    for _ in range(rnd.randint(1, 4)):
        extra = rnd.choice((*ODD_ROWS, *(head + b" NCCL INFO " + e for e in ODD_ENV)))
        out.insert(rnd.randint(0, len(out)), extra + b"\n")
    return out


MARKUP = (b"[/]", b"[bold]", b"[link=x]", b"[/bold]", b"\\[", b"[#ff0000 on red]")


def _markup(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    """Rich console markup in the log's words (a via, a NIC or host name): text, never a style or a crash."""
    out = []
    for ln in lines:
        body = ln.rstrip(b"\r\n")
        if body and rnd.random() < 0.4:
            at = rnd.choice([len(body), *(m.end() for m in re.finditer(rb"[/\]]", body))])
            body = body[:at] + rnd.choice(MARKUP) + body[at:]
        out.append(body + ln[len(ln.rstrip(b"\r\n")) :])
    return out


MUTATIONS: dict[str, Callable[[list[bytes], random.Random], list[bytes]]] = {
    "markup": _markup,
    "drop": _drop,
    "duplicate": _duplicate,
    "shuffle": _shuffle,
    "interleave": _interleave,
    "prefix": _prefix,
    "crlf": _crlf,
    "bom": _bom,
    "bad-bytes": _bad_bytes,
    "odd-numbers": _odd_numbers,
    "odd-lines": _odd_lines,
}


# --- running the command and what must hold ---


def _run(log: Path | str, snap: Path | None, as_json: bool) -> Result:
    args = ["nccl", "--log", str(log), *([str(snap)] if snap else []), *(["--json"] if as_json else [])]
    return _RUNNER.invoke(app, args)


def _check(r: Result, log: Path | str, as_json: bool) -> None:
    where = f"{log}: exit {r.exit_code}\nstdout: {r.stdout[-2000:]}\nstderr: {r.stderr[-2000:]}"
    assert r.exit_code in (0, 2), where
    assert r.exception is None or isinstance(r.exception, SystemExit), where
    assert "Traceback" not in r.output, where
    if r.exit_code == 2:
        errs = r.stderr.splitlines()
        assert 1 <= len(errs) <= 2 and errs[0].startswith("topomap: error: "), where
        assert str(log) in errs[0], where
        if as_json:
            assert json.loads(r.stdout)["exit"] == 2, where
        return
    assert r.stderr == "", where
    if not as_json:
        assert r.stdout.startswith(("NCCL transports (", "RCCL transports (")), where  # RCCL logs (issue 35)
        return
    data = json.loads(r.stdout)
    for pair in data["pairs"]:
        assert pair["predicted"] in FAMILIES, where
        assert pair["observed"] is None or pair["observed"] in FAMILIES, where
    assert all(isinstance(s, str) for s in data["skipped"]), where


def _feed(tmp: Path, data: bytes, snap: Path | None, as_json: bool) -> Result:
    log = tmp / "fuzzed.log"
    log.write_bytes(data)
    r = _run(log, snap, as_json)
    _check(r, log, as_json)
    return r


# --- every cut of every real log ---


def _spread(items: list[_T], most: int) -> list[_T]:
    """At most ``most`` of ``items``, evenly spread, the first and the last among them."""
    if len(items) <= most:
        return items
    return [items[round(i * (len(items) - 1) / (most - 1))] for i in range(most)]


@pytest.mark.parametrize("name", NAMES)
def test_every_cut(name: str, tmp_path: Path) -> None:
    """Cut at every line boundary (--json) and in the middle of every line (text): exit 0 or 2. A log
    longer than 20 lines is cut at 20 boundaries and in 20 lines, spread over it (the run time)."""
    raw = (LOGS / name).read_bytes()
    ends = [0] + [m.end() for m in re.finditer(rb"\n", raw)]
    for at in _spread(ends, 20):
        _feed(tmp_path, raw[:at], None, as_json=True)
    for a, b in _spread(list(itertools.pairwise(ends)), 20):
        _feed(tmp_path, raw[: (a + b) // 2], None, as_json=False)


# --- random combinations, with and without a snapshot ---


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    name=st.sampled_from(NAMES),
    ops=st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=1, max_size=3),
    seed=st.integers(0, 2**16),
    cut=st.none() | st.floats(0.0, 1.0),
    snap=st.integers(0, 3),
    as_json=st.booleans(),
)
def test_mutated_logs(
    name: str, ops: list[str], seed: int, cut: float | None, snap: int, as_json: bool, tmp_path: Path
) -> None:
    rnd = random.Random(seed)
    lines = _lines(name)
    for op in ops:
        lines = MUTATIONS[op](lines, rnd)
    data = b"".join(lines)
    if cut is not None:
        data = data[: int(len(data) * cut)]
    beside = SNAPS.get(name, [])
    choice = [None, *beside, OTHER_SNAP][snap % (len(beside) + 2)]
    _feed(tmp_path, data, choice, as_json)


# --- files that are no log at all ---


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize(
    "content",
    [b"", b"\n\n\n", b"\xef\xbb\xbf", b"\x00" * 64, bytes(range(256)) * 8, b"\xff\xfe\x00\x00garbage"],
    ids=["0-byte", "blank", "bom-only", "nul", "binary", "utf32-bom-garbage"],
)
def test_not_a_log_is_one_error_line(content: bytes, as_json: bool, tmp_path: Path) -> None:
    r = _feed(tmp_path, content, None, as_json)
    assert r.exit_code == 2


@pytest.mark.parametrize("as_json", [False, True])
def test_directory_and_missing_file(as_json: bool, tmp_path: Path) -> None:
    for log in (tmp_path, tmp_path / "no-such.log"):
        r = _run(log, None, as_json)
        _check(r, log, as_json)
        assert r.exit_code == 2


# --- what the fault run found: minimal reproducers ---


def _pairs(tmp: Path, text: str) -> tuple[Result, list[tuple[int, int, str, str | None]]]:
    """Run a small log given as text (--json); the result and its (src, dst, predicted, observed) pairs."""
    r = _feed(tmp, text.encode(), None, as_json=True)
    if r.exit_code != 0:
        return r, []
    pairs = json.loads(r.stdout)["pairs"]
    return r, sorted((p["src_rank"], p["dst_rank"], p["predicted"], p["observed"]) for p in pairs)


_PLX = (  # two GPUs under one PLX switch: the first lines of h100-plx-dump-nccl1519.log, shortened
    "h:1:2 [0] NCCL INFO CPU/1 (1/1/2)\n"
    "h:1:2 [0] NCCL INFO + PCI[24.0] - PCI/82000 (10b5879610b58796)\n"
    "h:1:2 [0] NCCL INFO               + PCI[24.0] - GPU/84000 (4)\n"
    "h:1:2 [0] NCCL INFO               + PCI[24.0] - GPU/85000 (5)\n"
)


def test_plx_dump_reproducer_base(tmp_path: Path) -> None:
    """The base of the dump reproducers below: two GPUs behind one switch, P2P both ways."""
    r, pairs = _pairs(tmp_path, _PLX)
    assert r.exit_code == 0 and pairs == [(0, 1, "P2P", None), (1, 0, "P2P", None)]


def test_repeated_gpu_line_is_one_gpu(tmp_path: Path) -> None:
    lines = _PLX.splitlines(keepends=True)
    r, pairs = _pairs(tmp_path, "".join([*lines[:3], lines[2], *lines[3:]]))
    assert r.exit_code == 0 and pairs == [(0, 1, "P2P", None), (1, 0, "P2P", None)]


def test_repeated_cpu_line_keeps_the_tree(tmp_path: Path) -> None:
    lines = _PLX.splitlines(keepends=True)
    r, pairs = _pairs(tmp_path, "".join([lines[0], *lines]))
    assert r.exit_code == 0 and pairs == [(0, 1, "P2P", None), (1, 0, "P2P", None)]


def test_a_dump_cut_after_its_cpu_line_does_not_hide_the_next(tmp_path: Path) -> None:
    header = "h:1:2 [0] NCCL INFO === System : maxBw 24.0 totalBw 24.0 ===\n"
    r, pairs = _pairs(tmp_path, header + _PLX.splitlines(keepends=True)[0] + header + _PLX)
    assert r.exit_code == 0 and pairs == [(0, 1, "P2P", None), (1, 0, "P2P", None)]


def test_cut_last_channel_line_is_skipped_not_read_as_plain_net(tmp_path: Path) -> None:
    text = (
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n"
        "h:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDR"
    )
    r, pairs = _pairs(tmp_path, text)
    assert r.exit_code == 0 and {p[3] for p in pairs} == {"NET+GDR"}
    assert any("line 2" in s for s in json.loads(r.stdout)["skipped"])


def test_an_unreadable_dump_is_named_with_its_line(tmp_path: Path) -> None:
    """A dump cut right after its CPU line and no channel lines: the error names the dump's line (it said
    "no topology dump" before: the importer's reason was dropped by cli/nccl.py)."""
    header = "h:1:2 [0] NCCL INFO === System : maxBw 24.0 totalBw 24.0 ===\n"
    r, _ = _pairs(tmp_path, header + _PLX.splitlines(keepends=True)[0])
    assert r.exit_code == 2
    assert f"{tmp_path / 'fuzzed.log'}:1: NCCL topology dump with no GPU and no NIC" in r.stderr


def test_what_the_dump_lacks_is_said() -> None:
    """h100-plx-dump-nccl1519.log is an excerpt: its dump's start and end were cut. The reading says so."""
    r = _run(LOGS / "h100-plx-dump-nccl1519.log", None, as_json=True)
    notes = json.loads(r.stdout)["notes"]
    assert any("start is cut" in n for n in notes)
    assert any("cut after log line 16" in n for n in notes)


@pytest.mark.parametrize(
    ("value", "pair_0_1"),
    [("SYS", "P2P"), ("99", "P2P"), ("FOO", "SHM"), ("-1", "SHM"), ("PHB", "P2P"), ("PXB", "SHM")],
)
def test_odd_p2p_level_from_the_log_is_read_as_nccl_reads_it(value: str, pair_0_1: str, tmp_path: Path) -> None:
    """nccl-tests#307's 8x RTX 4090 (PHB between GPU 0 and 1; NCCL's default level PXB gives SHM) with an
    NCCL_P2P_LEVEL line put in front. NCCL's ncclGetLevel (src/graph/paths.cc) takes a path name, or an
    old-style integer (clamped: 99 is SYS), and ignores anything else (FOO, -1: its default applies)."""
    env = f"node031:1936469:1936469 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to {value}\n"
    r, pairs = _pairs(tmp_path, env + (LOGS / "rtx4090-8gpu-shm-nccltests307.log").read_text())
    assert r.exit_code == 0
    assert next(p for p in pairs if p[:2] == (0, 1))[2] == pair_0_1


# logs with a topology tree ("=== System", "CPU/…"): printed twice, its tree is read wrong (the importer's
# bug, kept by the reproducers above: test_repeated_gpu_line_is_one_gpu, test_repeated_cpu_line_keeps_the_tree)
_TREE = re.compile(r"NCCL INFO (?:=== System|CPU/)")
NO_TREE = [n for n in NAMES if not _TREE.search((LOGS / n).read_text(errors="replace"))]


@pytest.mark.parametrize("name", NO_TREE)
def test_a_log_printed_twice_reads_the_same(name: str, tmp_path: Path) -> None:
    """Every line twice (stdout and stderr both captured into one file): the same pairs as the log."""
    base = _run(LOGS / name, None, as_json=True)
    twice = _feed(tmp_path, b"".join(ln for ln in _lines(name) for _ in (0, 1)), None, as_json=True)
    assert twice.exit_code == base.exit_code
    if base.exit_code == 0:
        assert json.loads(twice.stdout)["pairs"] == json.loads(base.stdout)["pairs"]


@pytest.mark.parametrize("name", NAMES)
def test_launcher_prefix_crlf_and_bom_read_the_same(name: str, tmp_path: Path) -> None:
    """mpirun's ``[1,0]<stdout>:``, torchrun's ``[rank3]:``, Windows line ends, a byte-order mark and
    UTF-16 (PowerShell's ``>``) change nothing that is read."""
    base = _run(LOGS / name, None, as_json=True)
    rnd = random.Random(0)
    for op in ("prefix", "crlf", "bom", "utf-16"):
        if op == "utf-16":
            data = (LOGS / name).read_text().encode("utf-16")
        else:
            data = b"".join(MUTATIONS[op](_lines(name), rnd))
        r = _feed(tmp_path, data, None, as_json=True)
        assert r.exit_code == base.exit_code, op
        if base.exit_code == 0:
            assert json.loads(r.stdout)["pairs"] == json.loads(base.stdout)["pairs"], op


def _finishes_within(seconds: float, log: Path) -> int | None:
    """`topomap nccl --log LOG --json` in a forked child: its exit status, or None when it had not
    finished after ``seconds`` (then it is killed)."""
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=lambda: os._exit(_run(log, None, as_json=True).exit_code))
    child.start()
    child.join(seconds)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return child.exitcode


_REAL = (LOGS / "l20-1proc-direct-nccl1817.log").read_text()


def test_a_long_line_of_name_characters_does_not_hang(tmp_path: Path) -> None:
    log = tmp_path / "long.log"
    log.write_text("." * 200_000 + "\n" + _REAL)
    assert _finishes_within(3, log) == 0


def test_a_channel_line_with_many_slashes_does_not_hang(tmp_path: Path) -> None:
    log = tmp_path / "slashes.log"
    bad = "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via " + "/".join(["ab"] * 40) + " !\n"
    log.write_text(bad + _REAL)
    assert _finishes_within(3, log) == 0


def test_console_markup_in_a_log_is_text(tmp_path: Path) -> None:
    """A via or NIC name with rich markup in it was parsed as markup by the text view's table: MarkupError,
    exit 4 (render/nccl_view.py now puts every cell in as Text)."""
    text = (
        "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_[/]:1/IB ; OOB ib0:1.2.3.4<0>\n"
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC[/]\n"
        "h:1:2 [0] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via SHM/[bold]x\n"
    )
    r = _feed(tmp_path, text.encode(), None, as_json=False)
    assert r.exit_code == 0 and "P2P/IPC[/]" in r.stdout and "SHM/[bold]x" in r.stdout


@pytest.mark.parametrize("cut", ["GPU/85", "GPU/8"])
def test_a_dump_cut_mid_id_at_the_end_is_a_partial_reading(cut: str, tmp_path: Path) -> None:
    lines = _PLX.splitlines(keepends=True)
    r, pairs = _pairs(tmp_path, "".join(lines[:3]) + lines[3].split("GPU/")[0] + cut)
    assert r.exit_code == 0 and pairs == []  # one whole GPU: 84000
