"""Piped output and narrow terminals never cut or hard-wrap a name or number (issue 23, README: "never
wraps or cuts a name"), for every text command of the golden list (tests/golden/cases.py) on every
sample: show, matrix, map, plan, place, check, diff, nccl, and `show`/`diff` of run records.

Each case runs three ways through the real CLI: piped at 80 columns (``COLUMNS=80``, stdout not a
terminal), on a forced 60-column terminal (``TTY_COMPATIBLE=1 COLUMNS=60``), and with ``--json``.
Facts asserted:
- no value ends in rich's cut mark (``idle 41…``, ``unkno…``): an ellipsis right after a word
  character and not followed by one; ``gpu0…gpu7`` is a range and stays allowed;
- the 60-column terminal shows as many ellipses as the piped output (none added by a cut);
- every word of the piped output is whole in the terminal's (a fold would split one);
- every name and number of the ``--json`` output that the text shows (a host, GPU or NIC name, bus
  id, UUID, lot, route node, bandwidth figure) is on one line, whole, in both. Sentences of the JSON
  (a summary, an origin) may break at a space on the narrow terminal, under a hanging indent.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.golden.cases import ROOT, cases
from topomap.cli import app

TEXT_COMMANDS = ("show", "matrix", "map", "plan", "place", "check", "diff", "nccl")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CUT = re.compile(r"\w…(?!\w)")
_BOX = {chr(c) for c in range(0x2500, 0x2580)} | {" "}


def _text_cases() -> list[tuple[str, list[str]]]:
    out = []
    for name, argv in cases():
        if argv[0] not in TEXT_COMMANDS or any(a.startswith("OUT.") or a == "-o" for a in argv):
            continue
        if "--json" in argv:
            if argv[0] != "nccl":
                continue
            argv = [a for a in argv if a != "--json"]
            name = name.replace("-json", "")
        out.append((name, argv))
    return out


CASES = _text_cases()


def _run(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        res = CliRunner().invoke(app, argv, env={"NO_COLOR": "1", **env})
    finally:
        os.chdir(old)
    return res.exit_code, _ANSI.sub("", res.stdout)


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        yield f"{value:g}"
    else:
        yield str(value)


def _words(text: str) -> set[str]:
    return {w.strip(":,;()[]") for w in text.split() if not set(w) <= _BOX} - {""}


def test_cases_cover_every_text_command() -> None:
    assert {argv[0] for _, argv in CASES} == set(TEXT_COMMANDS)
    assert any("records" in a for _, argv in CASES for a in argv)  # run records: show and diff
    assert len(CASES) > 100


@pytest.mark.parametrize(("name", "argv"), CASES, ids=[c[0] for c in CASES])
def test_names_and_numbers_whole(name: str, argv: list[str]) -> None:
    code, piped = _run(argv, {"COLUMNS": "80", "TERM": "dumb"})
    code60, narrow = _run(argv, {"COLUMNS": "60", "TERM": "xterm", "TTY_COMPATIBLE": "1"})
    assert code == code60
    for label, text in (("piped", piped), ("60 columns", narrow)):
        cut = [line for line in text.splitlines() if _CUT.search(line)]
        assert not cut, f"{name} ({label}): a value cut: {cut[:3]}"
    assert narrow.count("…") == piped.count("…"), f"{name}: the 60-column terminal cut a value"
    missing = _words(piped) - _words(narrow)
    assert not missing, f"{name}: words of the piped output split on a 60-column terminal: {sorted(missing)[:8]}"
    if argv[0] in ("matrix",) or "records" in " ".join(argv):
        return  # matrix --json is another layout; a run's JSON is its whole record (checked by words)
    _, raw = _run([*argv, "--json"], {"COLUMNS": "80", "TERM": "dumb"})
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError:
        return  # an error case: its one line is checked above
    piped_lines, narrow_lines = piped.splitlines(), narrow.splitlines()
    joined = re.sub(r"\s*\n\s*", " ", piped)
    for v in {v for v in _leaves(doc) if 2 <= len(v) <= 200 and not re.search(r"\s", v)}:
        # piped output has no width: a value it shows is on one line, whole
        if v in joined:
            assert any(v in line for line in piped_lines), f"{name} (piped): {v!r} split over lines"
        # a value the piped output shows whole is whole on the narrow terminal too (joining the
        # narrow lines without spaces would match across cells: "136" + "0" is not the value 1360)
        if any(v in line for line in piped_lines):
            assert any(v in line for line in narrow_lines), f"{name} (60 columns): {v!r} split over lines"


def test_a_line_never_breaks_before_a_commands_option() -> None:
    # rtx5090-pair-p2p-gns's origin "nvidia-smi topo -m and topo -p2p, github.com/…" broke as
    # "topo" / "-p2p" on a 60-column terminal; numbers keep their units as before
    from topomap.render.whole import breaks

    text = "unknown host — nvidia-smi from nvidia-smi topo -m and topo -p2p, github.com/noonghunna/club-3090"
    for width in range(20, len(text)):
        for at in breaks(text, width):
            assert not text[at:].startswith(("-p2p", "-m ")), (width, text[:at])
    assert breaks("a figure of 450 GB/s", 16) == [12]  # "450 GB/s" whole on the next line


def test_an_option_too_wide_to_keep_beside_its_command_breaks_before_it() -> None:
    """`show`'s "recorded by:" names `nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id
    --format=csv`: kept together with its command, each option made a line wider than a 50-column
    terminal. An option stays beside the word before it only where the two fit one line."""
    from topomap.render.whole import breaks

    text = "recorded by: `nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id --format=csv` (GPU memory)"
    lines = [text[a:b].rstrip() for a, b in zip([0, *breaks(text, 50)], [*breaks(text, 50), len(text)])]
    assert lines == [
        "recorded by: `nvidia-smi",
        "--query-gpu=index,name,memory.total,pci.bus_id",
        "--format=csv` (GPU memory)",
    ]
    assert not [at for at in breaks(text, 120)]  # wide enough: one line
