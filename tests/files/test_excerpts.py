"""No error quotes another file's content (issue 36 item 4: a flow's `work.durations_csv: /etc/shadow`
printed `header: root:*:20228:…`, `../.env` printed `API_KEY=sk-live-…`, whole for short secrets).

A flow's paths (`hosts:`, `work.durations_csv`) may be absolute or climb out with `../` — people keep
snapshots in `../snapshots/`, as the shipped samples do — so what is guarded is the message: a file that
is not of the kind expected is said to be so without a word of its content, and a bad value in a file of
the kind is shown by a few characters at most."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from tests.fakes.flows import WorkSpec, step, write_flow
from topomap.cli import app
from topomap.files.excerpt import EXCERPT_CHARS, excerpt

runner = CliRunner()
SECRETS = {
    ".env": "API_KEY=sk-live-abcdef123456\nDB_PASSWORD=hunter2hunter2\n",
    "shadow": "root:*:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n",
    "key.json": json.dumps({"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----MIIEvQ"}),
    "secret.yaml": "apiVersion: v1\nkind: Secret\ndata:\n  password: aHVudGVyMmh1bnRlcjI=\n",
    "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
    "one-line": "sk-live-0123",
}
#: Pieces of each secret no output may hold (any longer quote holds one of them).
PIECES = ["sk-live", "abcdef", "hunter2", "root:*", "20228", "daemon", "BEGIN PRIVATE", "MIIEvQ", "aHVudGVy",
          "b3BlbnNz", "0123"]  # fmt: skip


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    (root / "flows").mkdir(parents=True)
    for name, text in SECRETS.items():
        (root / name).write_text(text)
    return root


def _clean(r: object) -> str:
    out = r.stdout + r.stderr  # type: ignore[attr-defined]
    assert r.exit_code == 2, out  # type: ignore[attr-defined]
    assert r.stderr.startswith("topomap: error: ") and r.stderr.count("\n") == 1, out  # type: ignore[attr-defined]
    for piece in PIECES:
        assert piece not in out, (piece, out)
    return str(r.stderr)


def _flow(root: Path, lot: str | None, work: WorkSpec | None = None) -> Path:
    """root/flows/f.yaml: one step on host lot, bound to the file ``lot`` (relative to the flow file)."""
    return write_flow(root / "flows" / "f.yaml", {"a": step("compute", "lot")}, name="x", hosts={"lot": lot}, work=work)


@pytest.mark.parametrize("name", sorted(SECRETS))
@pytest.mark.parametrize("how", ["../", "absolute"])
def test_a_durations_csv_that_is_another_file_is_named_not_quoted(secrets: Path, name: str, how: str) -> None:
    path = f"../{name}" if how == "../" else str(secrets / name)
    f = _flow(secrets, None, WorkSpec(count=2, durations_csv=path))
    for command in (["map", str(f)], ["plan", str(f)], ["plan", "--json", str(f)]):
        err = _clean(runner.invoke(app, command))
        assert ": not a durations CSV" in err or "cannot read" in err, err


@pytest.mark.parametrize("name", sorted(SECRETS))
@pytest.mark.parametrize("how", ["../", "absolute"])
def test_a_host_bound_to_another_file_is_named_not_quoted(secrets: Path, name: str, how: str, tmp_path: Path) -> None:
    path = f"../{name}" if how == "../" else str(secrets / name)
    f = _flow(secrets, path)
    for command in (["map", str(f)], ["render", str(f), "-o", str(tmp_path / "x.svg")], ["plan", str(f)]):
        _clean(runner.invoke(app, command))


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_another_file_given_as_snapshot_flow_or_requirements_is_not_quoted(secrets: Path, name: str) -> None:
    path = str(secrets / name)
    snap = str(SAMPLES / "snapshots" / "dgx1-v100.json")
    flow = str(SAMPLES / "flows" / "tensor-parallel.yaml")
    for command in (
        ["show", path],
        ["matrix", path],
        ["import", path],
        ["map", flow, f"lot={path}"],
        ["check", path, flow],
        ["diff", snap, path],
        ["nccl", "--log", path],
        ["attach", snap, path, "-o", str(secrets / "out.json")],
        ["merge", path, snap, "-o", str(secrets / "m.json")],
        ["place", path, "--gpus", "2"],
        ["cluster", path],
    ):
        _clean(runner.invoke(app, command))


def test_snapshots_in_a_parent_folder_still_bind(tmp_path: Path) -> None:
    """The shipped samples keep their snapshots in ../snapshots/: such paths stay allowed."""
    r = runner.invoke(app, ["map", str(SAMPLES / "flows" / "doc-conversion.yaml"), "--json"])
    assert r.exit_code == 0, r.output
    arrows = json.loads(r.stdout)["arrows"]
    assert arrows and any(a["medium"] != "unknown" for a in arrows)  # lot bound to ../snapshots/…: media known
    absolute = (SAMPLES / "flows" / "eight-documents.yaml").read_text()
    absolute = absolute.replace("../snapshots/", str(SAMPLES / "snapshots") + "/")
    (tmp_path / "f.yaml").write_text(absolute)
    r = runner.invoke(app, ["plan", str(tmp_path / "f.yaml"), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["arrangements"], r.output


def test_a_bad_value_in_a_durations_csv_shows_a_few_characters(tmp_path: Path) -> None:
    csv = tmp_path / "d.csv"
    csv.write_text("duration\n12 min\nAPI_KEY=sk-live-abcdef123456\n")
    f = write_flow(
        tmp_path / "f.yaml",
        {"a": step("compute", "ws")},
        name="x",
        hosts={"ws": None},
        work=WorkSpec(durations_csv="d.csv"),
    )
    r = runner.invoke(app, ["plan", str(f)])
    assert r.exit_code == 2
    assert f"{csv}:3: 'API_KEY=sk-l…' (28 characters) is not a duration" in r.stderr, r.stderr
    assert "abcdef" not in r.stderr


def test_an_excerpt_is_a_few_characters_whatever_the_text() -> None:
    assert excerpt("12 mins") == "'12 mins'"
    for text in ("x" * 13, "a" * 10_000, "é" * 50):
        shown = excerpt(text)
        assert shown.split("…")[0].count(text[0]) == EXCERPT_CHARS and f"({len(text):,} characters)" in shown
