"""Every exit-2 error names what is wrong and says what to do: `(hint: …)` on stderr, `"hint"` under
--json; a run record, a requirements file or an empty NAME is called what it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.cli import app

runner = CliRunner()
SNAP = str(SAMPLES / "snapshots" / "dgx1-v100.json")
RUN = str(SAMPLES / "records" / "one-card.json")
FLOW = str(SAMPLES / "flows" / "tensor-parallel.yaml")
REQS = str(SAMPLES / "requirements" / "tensor-parallel.yaml")

CASES = [
    (["schema", "nosuch"], "unknown schema 'nosuch'", "one of: snapshot, flow, requirements, run"),
    (["render", SNAP, "--view", "x", "-o", "OUT.dot"], "--view 'x': expected machine or pipeline", "--view machine"),
    (["render", SNAP, "--hardware", "x", "-o", "OUT.dot"], "--hardware 'x': expected used or all", "--hardware used"),
    (["diff", SNAP, SNAP, "--match", "x"], "--match 'x': expected index or structure", "--match index"),
    (["diff", SNAP, SNAP, "--tolerance", "-1"], "--outputs and --tolerance compare two recorded runs", "RUN_A"),
    (["show", "nosuch.json"], "nosuch.json: cannot read (No such file or directory)", "check the path"),
    (["merge", "nosuch.json", SNAP, "-o", "OUT.json"], "nosuch.json: cannot read", "check the path"),
    (["map", FLOW, "--probe", "nosuch.json"], "nosuch.json: cannot read", "check the path"),
    (
        ["render", SNAP, "-o", "no-such-folder/x.dot"],
        "no-such-folder/x.dot: folder no-such-folder does not exist",
        "mkdir -p",
    ),
    (["check", REQS], "check needs the machines to check: snapshots, or a flow", f"topomap check {REQS} SNAP.json"),
    (["render", SNAP], "render needs -o OUT", "-o OUT.svg"),
    (["merge", f"={SNAP}", SNAP, "-o", "OUT.json"], f"={SNAP}: empty NAME before `=`", "write NAME=FILE"),
    (["check", RUN], f"{RUN}: this is a topomap run record (JSON, from `topomap record`); check takes", "show"),
    (["map", RUN], f"{RUN}: this is a topomap run record (JSON, from `topomap record`); map takes a flow", "show"),
    (["diff", SNAP, RUN], f"{RUN}: lot B is a run record (topomap record) but {SNAP} is not", "diff RUN_A.json"),
    (["map", REQS], f"{REQS}: this is a requirements file (YAML); map takes a flow file", f"topomap check {REQS}"),
    (["render", SNAP, "--view", "pipeline", "-o", "OUT.svg"], "--view pipeline draws a flow's logic", "FLOW.yaml"),
]


@pytest.mark.parametrize(("args", "message", "hint"), CASES, ids=[f"{k}-{c[0][0]}" for k, c in enumerate(CASES)])
def test_error_has_a_hint(
    args: list[str], message: str, hint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"topomap: error: {message}"), r.stderr
    assert "(hint: " in r.stderr and hint in r.stderr.split("(hint: ", 1)[1], r.stderr
    r = runner.invoke(app, [*args, "--json"])
    d = json.loads(r.stdout)
    assert r.exit_code == 2 and d["exit"] == 2 and d["error"].startswith(message) and hint in d["hint"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written


def test_permission_denied_on_write_has_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root ignores file modes, so the refusal the OS gives is simulated at the one write function."""
    import topomap.files.atomic

    def denied(path: object, data: bytes) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(topomap.files.atomic, "atomic_write", denied)
    out = tmp_path / "x.dot"
    r = runner.invoke(app, ["render", SNAP, "-o", str(out)])
    assert r.exit_code == 2
    assert r.stderr == (
        f"topomap: error: {out}: cannot write (Permission denied) "
        "(hint: check the permissions (ls -l); or write elsewhere with -o)\n"
    )


def test_output_onto_a_socket_has_a_hint(tmp_path: Path) -> None:
    import socket

    path = tmp_path / "s.dot"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        r = runner.invoke(app, ["render", SNAP, "-o", str(path)])
    assert r.exit_code == 2
    assert r.stderr == (
        f"topomap: error: {path}: is not a regular file or a character device; refusing to write to it "
        "(hint: write to a regular file, or to stdout with -o -)\n"
    )
