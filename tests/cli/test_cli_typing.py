"""Issue 23, typing: one rule for passing files (a flow, requirements file, snapshot, run record or
measurements file is told apart by its content wherever a command takes files; `--flow` and
`--probe` say the same), a file given to the wrong command named with the command that reads it,
`--debug` after the command, `render -o -`, `HOST:GPU3` and an assembly on a GPU, and command
summaries that are whole sentences at 80 columns."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES
from topomap.cli import app
from topomap.cli.entry import COMMANDS, debug_first
from topomap.flow import read_flow
from topomap.flow.spec import FlowError, gpu_name, parse_placement

runner = CliRunner()
SNAP = str(SAMPLES / "snapshots" / "dgx1-v100.json")
RTX = str(SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json")
IBM = str(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json")
FLOW = str(SAMPLES / "flows" / "tensor-parallel.yaml")  # one host, `lot`; no `requirements:`
PIPELINE = str(SAMPLES / "flows" / "two-host-pipeline.yaml")
DOCS = str(SAMPLES / "flows" / "eight-documents.yaml")
REQS = str(SAMPLES / "requirements" / "tensor-parallel.yaml")
RUN = str(SAMPLES / "records" / "one-card.json")
P2P = str(REAL / "bandwidth" / "a100-sxm4-80gb-8gpu-p2pBandwidthLatencyTest-distserve3.txt")
ROOT = Path(__file__).resolve().parents[2]


def _ok(args: list[str]) -> str:
    r = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert r.exit_code in (0, 1, 3), r.output
    return r.stdout


def _error(args: list[str]) -> tuple[str, str]:
    """(message, hint) of a one-line error, exit 2."""
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("topomap: error: "), r.stderr
    message, _, hint = r.stderr.removeprefix("topomap: error: ").rstrip("\n").partition(" (hint: ")
    return message, hint.removesuffix(")")


# --- one rule: the flow is recognised wherever files are given, --flow and --probe still work -----


@pytest.mark.parametrize(
    ("positional", "explicit"),
    [
        (["map", "--json", FLOW, f"lot={RTX}"], ["map", "--json", FLOW, "--probe", f"lot={RTX}"]),
        (["map", "--json", FLOW, RTX], ["map", "--json", "--flow", FLOW, "--probe", RTX]),
        (["plan", "--json", DOCS, "--cards", "1,2"], ["plan", "--json", "--flow", DOCS, "--cards", "1,2"]),
        (
            ["check", REQS, FLOW, f"lot={RTX}", "--json"],
            ["check", REQS, "--flow", FLOW, "--probe", f"lot={RTX}", "--json"],
        ),
        (
            ["check", FLOW, REQS, f"lot={RTX}", "--json"],
            ["check", REQS, "--flow", FLOW, "--probe", f"lot={RTX}", "--json"],
        ),
        (["diff", "--json", FLOW, SNAP, RTX], ["diff", "--json", SNAP, RTX, "--flow", FLOW]),
        (
            ["place", FLOW, f"lot={SNAP}", "--gpus", "4", "--json"],
            ["place", "--flow", FLOW, "--probe", f"lot={SNAP}", "--gpus", "4", "--json"],
        ),
    ],
    ids=["map-named", "map-bare", "plan", "check", "check-any-order", "diff", "place"],
)
def test_a_positional_flow_does_what_the_options_do(positional: list[str], explicit: list[str]) -> None:
    assert json.loads(_ok(positional)) == json.loads(_ok(explicit))


def test_check_takes_snapshots_as_lots(tmp_path: Path) -> None:
    gate = tmp_path / "gate.yaml"
    gate.write_text("requirements:\n  - gpus: {min_count: 8}\n")
    given = json.loads(_ok(["check", str(gate), SNAP, f"b={RTX}", "--json"]))
    assert given == json.loads(_ok(["check", str(gate), "--probe", SNAP, "--probe", f"b={RTX}", "--json"]))
    assert "dgx1-v100" in json.dumps(given) and '"b"' in json.dumps(given)


def test_check_on_a_flow_and_a_lot_gives_the_verdict_the_readme_shows() -> None:
    """The RTX 4090 box has no NVLink: the tensor-parallel gate FAILs there and PASSes on the IBM H100 lot."""
    r = runner.invoke(app, ["check", REQS, FLOW, f"lot={RTX}"])
    assert r.exit_code == 1 and r.stdout.startswith("FAIL")
    r = runner.invoke(app, ["check", REQS, FLOW, f"lot={IBM}"])
    assert r.exit_code == 0 and r.stdout.startswith("PASS")


def test_render_draws_a_flow_given_first(tmp_path: Path) -> None:
    a, b = tmp_path / "a.dot", tmp_path / "b.dot"
    _ok(["render", FLOW, f"lot={SNAP}", "-o", str(a)])
    _ok(["render", "--flow", FLOW, "--probe", f"lot={SNAP}", "-o", str(b)])
    assert (
        a.read_text() == b.read_text() and "8× GPU · 4 NIC(s)" in a.read_text()
    )  # the DGX-1 given, not the file's lot
    _ok(["render", PIPELINE, "-o", str(a)])  # the flow's own snapshots
    _ok(["render", "--flow", PIPELINE, "-o", str(b)])
    assert a.read_bytes() == b.read_bytes()


def test_report_takes_the_flow_first_and_with_flow(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    _ok(["report", FLOW, f"lot={RTX}", "-o", str(out)])
    assert "rtx4090-8gpu-all-sys.json" in out.read_text()
    _ok(["report", "--flow", FLOW, "-o", str(out)])
    assert "tensor-parallel" in out.read_text()


def test_two_flows_are_refused() -> None:
    message, hint = _error(["map", FLOW, PIPELINE])
    assert message == f"map: two flow files ({FLOW} and {PIPELINE}); it reads one" and f"topomap map {FLOW}" in hint
    message, _ = _error(["render", FLOW, "--flow", PIPELINE, "-o", "x.svg"])
    assert message.startswith("render: two flow files")


# --- the wrong file for the command: named, with the command that reads it ---------------------


def test_a_flow_given_to_check_is_called_a_flow() -> None:
    message, hint = _error(["check", FLOW])
    assert message.startswith(f"{FLOW}: this is a flow file with no `requirements:`; check takes a requirements file")
    assert hint.startswith(f"topomap check REQS.yaml {FLOW} [SNAP | NAME=SNAP …]")


def test_a_p2p_bandwidth_test_given_to_show_points_at_attach() -> None:
    for command in (["show", P2P], ["matrix", P2P], ["render", P2P, "-o", "x.svg"], ["map", FLOW, P2P]):
        message, hint = _error(command)
        assert message.startswith(f"{P2P}: this is measured bandwidth (nvbandwidth or p2pBandwidthLatencyTest"), message
        assert f"topomap attach SNAP {P2P} -o OUT.json" in hint


@pytest.mark.parametrize(
    "args",
    [
        ["place", RUN, "--gpus", "2"],
        ["matrix", RUN],
        ["nccl", RUN],
        ["merge", SNAP, RUN, "-o", "x.json"],
        ["map", FLOW, "--probe", RUN],
        ["map", FLOW, f"lot={RUN}"],
        ["check", REQS, RUN],
        ["plan", DOCS, RUN],
    ],
    ids=lambda a: "-".join(x for x in a[:2] if not x.startswith("/")) or a[0],
)
def test_a_run_record_where_a_snapshot_belongs_names_the_commands_that_read_it(args: list[str], tmp_path: Path) -> None:
    message, hint = _error(args)
    assert message.startswith(f"{RUN}: this is a topomap run record (JSON, from `topomap record`); {args[0]} takes")
    assert f"topomap show {RUN}" in hint and f"plan FLOW --observed {RUN}" in hint
    assert not (tmp_path / "x.json").exists()


def test_a_snapshot_given_where_a_flow_is_needed_points_at_show_and_render() -> None:
    message, hint = _error(["map", SNAP])
    assert message == f"{SNAP}: this is a topomap snapshot (JSON); map needs a flow file"
    assert f"topomap show {SNAP}" in hint and f"topomap render {SNAP} -o OUT.svg" in hint
    assert f"topomap map FLOW {SNAP}" in hint


def test_a_flow_given_to_show_points_at_map() -> None:
    message, hint = _error(["show", FLOW])
    assert message.startswith(f"{FLOW}: this is a flow file (YAML); show takes a snapshot")
    assert hint.startswith(f"its arrows: topomap map {FLOW}; its diagram: topomap render {FLOW} -o OUT.svg")


def test_requirements_given_to_render_point_at_check() -> None:
    message, hint = _error(["render", REQS, "-o", "x.svg"])
    assert message.startswith(f"{REQS}: this is a requirements file (YAML); render takes")
    assert f"topomap check {REQS} FLOW" in hint


def test_a_missing_flow_file_is_read_as_the_flow_and_its_reader_says_why(tmp_path: Path) -> None:
    message, hint = _error(["map", str(tmp_path / "nosuch.yaml")])
    assert (
        message == f"{tmp_path / 'nosuch.yaml'}: cannot read (No such file or directory)" and "check the path" in hint
    )
    message, hint = _error(["map"])
    assert message == "map needs a flow file" and hint == "topomap map FLOW.yaml [SNAP | NAME=SNAP …]"


# --- --debug after the command -------------------------------------------------------------------


def test_debug_is_moved_before_the_command() -> None:
    assert debug_first(["map", "f.yaml", "--debug"]) == ["--debug", "map", "f.yaml"]
    assert debug_first(["--debug", "map", "f.yaml"]) == ["--debug", "map", "f.yaml"]
    assert debug_first(["map", "f.yaml"]) == ["map", "f.yaml"]
    # after `--` it belongs to the command `record` runs; `record` without `--` runs what follows as given
    assert debug_first(["record", "--debug", "--", "x", "--debug"]) == ["--debug", "record", "--", "x", "--debug"]
    assert debug_first(["record", "python", "x.py", "--debug"]) == ["record", "python", "x.py", "--debug"]


def test_debug_after_the_command_shows_the_traceback(tmp_path: Path) -> None:
    missing = str(tmp_path / "nosuch.yaml")
    for args in (["map", missing, "--debug"], ["--debug", "map", missing]):
        r = subprocess.run([sys.executable, "-m", "topomap", *args], capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 2 and "Traceback (most recent call last)" in r.stderr
        assert r.stderr.rstrip("\n").splitlines()[-1].startswith(f"topomap: error: {missing}: cannot read")
    r = subprocess.run([sys.executable, "-m", "topomap", "map", missing], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "Traceback" not in r.stderr


# --- render -o - -----------------------------------------------------------------------------------


def test_render_writes_dot_graphml_and_json_to_stdout() -> None:
    r = runner.invoke(app, ["render", SNAP, "-o", "-", "--format", "dot"])
    # stdout is no file: nothing announces one (the newcomer trial saw "wrote stdout")
    assert r.exit_code == 0 and r.stdout.startswith("digraph topomap {") and r.stderr == ""
    r = runner.invoke(app, ["render", SNAP, "-o", "-", "--format", "graphml"])
    assert r.exit_code == 0 and "<graphml" in r.stdout
    r = runner.invoke(app, ["render", SNAP, "-o", "-", "--format", "json", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["nodes"]  # the diagram is the output, no summary after it


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")
def test_render_writes_svg_by_default_and_png_into_a_pipe() -> None:
    r = runner.invoke(app, ["render", FLOW, "-o", "-"])
    assert r.exit_code == 0 and "<svg" in r.stdout and r.stdout.rstrip().endswith("</svg>")
    p = subprocess.run(
        [sys.executable, "-m", "topomap", "render", SNAP, "-o", "-", "--format", "png"], capture_output=True, cwd=ROOT
    )
    assert p.returncode == 0 and p.stdout.startswith(b"\x89PNG\r\n\x1a\n")


def test_render_refuses_png_to_a_terminal() -> None:
    leader, follower = pty.openpty()
    try:
        p = subprocess.run(
            [sys.executable, "-m", "topomap", "render", SNAP, "-o", "-", "--format", "png"],
            stdout=follower,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert p.returncode == 2
    assert p.stderr == (
        "topomap: error: -o - --format png: png is binary and stdout is a terminal "
        "(hint: redirect it (> out.png), pipe it, or write a file: -o OUT.png)\n"
    )


def test_render_format_and_suffix_must_agree(tmp_path: Path) -> None:
    message, hint = _error(["render", SNAP, "-o", str(tmp_path / "x.dot"), "--format", "svg"])
    assert message.endswith("x.dot names .dot but --format is svg") and hint == "-o OUT.svg, or leave out --format"
    message, _ = _error(["render", SNAP, "-o", "-", "--format", "gif"])
    assert message == "--format gif: a diagram is drawn as svg, png, pdf, dot, graphml, json"
    assert not list(tmp_path.iterdir())


def test_a_run_timeline_goes_to_stdout_too() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "topomap", "render", RUN, "-o", "-", "--format", "svg"], capture_output=True, cwd=ROOT
    )
    assert p.returncode == 0 and b"<svg" in p.stdout


# --- placements name GPUs as nvidia-smi does; an assembly on a GPU --------------------------------


def test_gpu_names_in_any_case() -> None:
    assert [gpu_name(x) for x in ("gpu3", "GPU3", "Gpu03", "GPU-1a2b", "gpus", "3")] == ["gpu3"] * 3 + [None] * 3
    assert parse_placement("lot:GPU3", ["lot"], "f.yaml:1").gpu == "gpu3"
    assert parse_placement("lot:GPUs", ["lot"], "f.yaml:1").gpu == "*"
    assert parse_placement("lot:Memory@NUMA1", ["lot"], "f.yaml:1").numa == 1
    with pytest.raises(FlowError, match=r"^f\.yaml:1: lot:gpux names no GPU, memory or storage"):
        parse_placement("lot:gpux", ["lot"], "f.yaml:1")


# inline: nvidia-smi's spelling lot:GPU1 and the assembly's line 8 are under test
ASSEMBLY_FLOW = """\
flow: assembled-on-a-card
hosts:
  lot: {snap}
work:
  unit: one document
  count: 4
  duration: 10 min
  assembly: {{duration: 5 min, on: {on}}}
steps:
  docs: {{kind: input, on: lot:memory}}
  convert: {{kind: compute, on: lot:GPU1}}
arrows:
  - {{from: docs, to: convert, volume: 1 GiB}}
"""


def _assembly_flow(tmp_path: Path, on: str) -> str:
    path = tmp_path / "f.yaml"
    path.write_text(ASSEMBLY_FLOW.format(snap=SNAP, on=on))
    return str(path)


@pytest.mark.parametrize(
    ("on", "named"), [("lot:gpu0", "lot:gpu0"), ("lot:GPU3", "lot:gpu3"), ("lot", "lot"), ("docs", "docs")]
)
def test_an_assembly_is_placed_as_a_step_is(tmp_path: Path, on: str, named: str) -> None:
    path = _assembly_flow(tmp_path, on)
    flow = read_flow(path)
    assert flow.work is not None and flow.work.assembly is not None and flow.work.assembly.on == named
    plan = json.loads(_ok(["plan", path, "--cards", "1", "--json"]))
    assert plan["assembly"]["on"] == named
    assert read_flow(path).steps["convert"].placements[0].gpu == "gpu1"  # lot:GPU1, nvidia-smi's spelling


def test_an_assembly_on_a_gpu_the_lot_lacks_names_the_line(tmp_path: Path) -> None:
    path = _assembly_flow(tmp_path, "lot:gpu9")
    message, hint = _error(["plan", path])
    assert message == f"{path}:8: work: assembly on 'lot:gpu9': lot has no GPU 'gpu9'"
    assert hint == "its snapshot has: gpu0, gpu1, gpu2, gpu3, gpu4, gpu5, gpu6, gpu7"
    path = _assembly_flow(tmp_path, "lto:gpu0")
    message, hint = _error(["plan", path])
    assert message == f"{path}:8: work: assembly on 'lto:gpu0': no such host or step" and "did you mean 'lot'?" in hint


def test_gpu3_is_accepted_by_place_and_nccl() -> None:
    placed = json.loads(_ok(["place", SNAP, "--gpus", "2", "--exclude", "GPU0,gpu1", "--json"]))
    assert not {"gpu0", "gpu1"} & set(placed["gpus"])
    ranks = json.loads(_ok(["nccl", SNAP, "--ranks", "GPU0,gpu1", "--json"]))
    assert len(ranks["pairs"]) == 2


# --- --help: each command's summary is one whole sentence at 80 columns ---------------------------


def test_every_command_summary_is_one_whole_sentence_at_80_columns() -> None:
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb", "NO_COLOR": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "topomap", "--help"], capture_output=True, text=True, env=env, cwd=ROOT
    ).stdout
    rows = [row for row in out[out.index("Commands") :].splitlines()[1:] if row.startswith("│")]
    seen: dict[str, str] = {}
    for row in rows:
        m = re.match(r"^│ (\S*)\s+(.*?)\s*│$", row)
        assert m is not None and m.group(1), f"a summary runs over two lines: {row!r}"
        seen[m.group(1)] = m.group(2)
    assert set(seen) == set(COMMANDS)
    for name, summary in seen.items():
        assert summary.endswith(".") and summary[0].isupper(), f"{name}: {summary!r}"
        assert summary.count(". ") == 0, f"{name}: one sentence, not {summary!r}"


def test_a_flow_with_its_requirements_first_is_still_a_flow(tmp_path: Path) -> None:
    """`requirements:` above `flow:` (a flow carrying its own gate) is a flow wherever it is given."""
    body = Path(FLOW).read_text().replace("../snapshots/ibm-gx3d-h100-8gpu.json", IBM)
    path = tmp_path / "gated.yaml"
    path.write_text("requirements:\n  - gpus: {min_count: 8}\n" + body)
    assert json.loads(_ok(["map", "--json", str(path)]))["flow"] == "tensor-parallel"
    r = runner.invoke(app, ["check", str(path)])
    assert r.exit_code == 0 and r.stdout.startswith("PASS")  # 8 H100s on the flow's own IBM lot


def test_no_command_announces_stdout_as_a_file(tmp_path: Path) -> None:
    """The newcomer trial: `render -o -` said "wrote stdout" on stderr. Writing to stdout names no
    file: render, report and a run's timeline say nothing; merge says its count alone."""
    flow = str(ROOT / "samples" / "flows" / "tensor-parallel.yaml")
    run = str(ROOT / "samples" / "records" / "two-cards.json")
    for args in (["render", flow, "-o", "-"], ["report", flow, "-o", "-"], ["render", run, "-o", "-"]):
        r = runner.invoke(app, args)
        assert r.exit_code == 0 and r.stdout and r.stderr == "", args
    ibm = str(ROOT / "samples" / "snapshots" / "ibm-gx3d-h100-8gpu.json")
    r = runner.invoke(app, ["merge", f"a={ibm}", f"b={ibm}", "-o", "-"])
    assert r.exit_code == 0 and r.stderr == "topomap merge: 2 hosts, 0 consistency note(s)\n"
    out = tmp_path / "c.json"
    r = runner.invoke(app, ["merge", f"a={ibm}", f"b={ibm}", "-o", str(out)])
    assert r.stderr == f"wrote {out}: 2 hosts, 0 consistency note(s)\n"
