"""Run comparison, the outputs check, and the show/render/diff views of run records."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from topomap.cli import app
from topomap.files.kind import is_run_file
from topomap.record import RunError, decode_run, encode_run, load_run
from topomap.record.compare import diff_runs
from topomap.record.model import Run
from topomap.record.outputs import check_outputs

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
RECORDS = SAMPLES / "records"
ONE, TWO = RECORDS / "one-card.json", RECORDS / "two-cards.json"
runner = CliRunner()


@pytest.fixture
def runs() -> tuple[Run, Run]:
    return load_run(ONE), load_run(TWO)


def _with(run: Run, **changes: object) -> Run:
    return msgspec.structs.replace(run, **changes)


def test_shipped_records_compare_fairly(runs: tuple[Run, Run]) -> None:
    a, b = runs
    d = diff_runs(a, b, ("one-card", "two-cards"))
    assert a.duration_s is not None and b.duration_s is not None
    faster = "A" if a.duration_s < b.duration_s else "B"
    clear = abs(a.duration_s - b.duration_s) / max(a.duration_s, b.duration_s) >= 0.02
    assert d.better == (faster if clear else None)
    assert d.warnings == []  # same command, versions, settings and machine class
    assert d.arrangement == ["CUDA_VISIBLE_DEVICES=0 vs 0,1"]
    assert d.headline[0].startswith(("one-card did better", "two-cards did better", "Neither did clearly"))
    assert any(line.startswith("Largest per-card memory peak: one-card") for line in d.headline)
    assert d.ok
    rows = {r.metric: r for r in d.rows}
    assert rows["gpu1 memory peak"].a == 0 and rows["gpu1 memory peak"].better is None  # one-card could not use it


def test_observed_for_plan_from_a_shipped_record(runs: tuple[Run, Run]) -> None:
    from topomap.record import observed_for_plan

    _, two = runs
    obs = observed_for_plan(two, units=8)
    assert obs["source"] == "observed" and obs["cards_used"] == 2 and two.duration_s is not None
    assert obs["unit_duration_s"] == two.duration_s * 2 / 8  # each card did 4 of the 8 units
    peaks = [p.peak_memory_bytes for s in two.gpus for p in s.processes if p.in_command_tree]
    assert obs["memory_per_task_bytes"] == max(p for p in peaks if p is not None)


def test_the_run_that_failed_loses_whatever_its_time(runs: tuple[Run, Run]) -> None:
    a, b = runs
    d = diff_runs(a, _with(b, exit_status=1, duration_s=0.1), ("A", "B"))
    assert d.better == "A" and d.headline[0].startswith("A did better: B failed (exit 1)")
    assert not d.ok
    both = diff_runs(_with(a, exit_status=137, signal="SIGKILL"), _with(b, exit_status=2), ("A", "B"))
    assert both.better is None and both.headline[0].startswith("Neither run succeeded: A failed (SIGKILL")


def test_faster_by_how_much_and_ties_within_noise(runs: tuple[Run, Run]) -> None:
    a, b = runs
    d = diff_runs(_with(a, duration_s=10.0), _with(b, duration_s=8.0), ("A", "B"))
    assert d.better == "B"
    assert d.headline[0] == (
        "B did better: finished in 8.00 s vs 10.00 s, 20% less time (1.25× faster; observed wall time)."
    )
    tie = diff_runs(_with(a, duration_s=10.0), _with(b, duration_s=9.9), ("A", "B"))
    assert tie.better is None and tie.headline[0].startswith("Neither did clearly better")


def test_not_comparable_runs_are_flagged(runs: tuple[Run, Run]) -> None:
    a, b = runs
    assert a.snapshot is not None
    gpus = [msgspec.structs.replace(g, name="NVIDIA H100 80GB HBM3") for g in a.snapshot.gpus]
    b2 = _with(
        b,
        command=["python", "other.py"],
        versions={**b.versions, "torch": "2.5.0"},
        environment={**b.environment, "NCCL_P2P_DISABLE": "1"},
        snapshot=msgspec.structs.replace(a.snapshot, gpus=gpus),
        interrupted_by="SIGINT",
    )
    w = diff_runs(a, b2).warnings
    assert any(x.startswith("different commands: python samples/records/work.py vs python other.py") for x in w)
    assert "different versions: torch absent vs 2.5.0" in w
    assert "different settings: NCCL_P2P_DISABLE=(unset) vs 1" in w
    assert any(x.startswith("different machine class: 2× NVIDIA GeForce RTX 4090") for x in w)
    assert "B was interrupted (SIGINT)" in w


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def test_outputs_check_names_counts_and_tolerance(tmp_path: Path) -> None:
    a = _tree(tmp_path / "a", {"x.txt": b"n 1\n", "sub/y.csv": b"a,1.0000001\nb,2\n", "only-a.bin": b"\0"})
    b = _tree(tmp_path / "b", {"x.txt": b"n 1\n", "sub/y.csv": b"a,1.0000002\nb,2\n", "only-b.txt": b"z"})
    exact = check_outputs(str(a), str(b))
    assert not exact.same and exact.missing_in_b == ["only-a.bin"] and exact.missing_in_a == ["only-b.txt"]
    assert [d.name for d in exact.different] == ["sub/y.csv"] and exact.identical == 1
    assert exact.summary() == "outputs differ: 1 missing in B, 1 missing in A, 1 different (3 files in A, 3 in B)"
    (a / "only-a.bin").unlink()
    (b / "only-b.txt").unlink()
    loose = check_outputs(str(a), str(b), tolerance=1e-6)
    assert loose.same and loose.within_tolerance == ["sub/y.csv"]
    tight = check_outputs(str(a), str(b), tolerance=1e-9)
    assert not tight.same
    assert tight.different[0].reason == "line 1: 1.0000001 vs 1.0000002 (differ by 1e-07, beyond 1e-09)"


def test_outputs_check_text_around_numbers_must_match(tmp_path: Path) -> None:
    a = _tree(tmp_path / "a", {"r.txt": b"loss 0.5\nstep 2\n"})
    b = _tree(tmp_path / "b", {"r.txt": b"loss 0.5\nstop 2\n"})
    c = check_outputs(str(a), str(b), tolerance=1.0)
    assert c.different[0].reason == "line 2: text differs"
    with pytest.raises(Exception, match="not a folder"):
        check_outputs(str(a), str(tmp_path / "missing"))


def test_is_run_file_tells_runs_from_snapshots_and_raw_files(tmp_path: Path) -> None:
    assert is_run_file(ONE)
    snap = next((SAMPLES / "snapshots").glob("*.json"))
    assert not is_run_file(snap)
    raw = tmp_path / "topo.txt"
    raw.write_text("\tGPU0\tGPU1\nGPU0\t X \tNV4\n")
    assert not is_run_file(raw) and not is_run_file(tmp_path / "absent.json")


def test_bad_run_files_fail_in_one_line_naming_the_field() -> None:
    data = json.loads(ONE.read_bytes())
    data["sampling"]["samples"] = "many"
    with pytest.raises(RunError, match=r"x.json: Expected `int`, got `str` - at `\$.sampling.samples`"):
        decode_run(json.dumps(data).encode(), "x.json")
    data = json.loads(ONE.read_bytes())
    data["schema"] = "topomap.run/9"
    with pytest.raises(RunError, match=r"run schema topomap\.run/9 is not the one this topomap reads"):
        decode_run(json.dumps(data).encode(), "x.json")
    assert decode_run(encode_run(load_run(ONE))) == load_run(ONE)


def test_show_a_run_prints_peaks_timeline_and_busiest_resource() -> None:
    r = runner.invoke(app, ["show", str(TWO)])
    assert r.exit_code == 0, r.output
    out = r.output
    assert "Run of python samples/records/work.py [two-cards]" in out
    assert "Per card (observed, NVML): 2× NVIDIA GeForce RTX 4090" in out
    assert "gpu0" in out and "gpu1" in out and "memory" in out and "Busiest shared resource:" in out
    js = runner.invoke(app, ["show", str(TWO), "--json"])
    assert js.exit_code == 0 and json.loads(js.output)["schema"] == "topomap.run/1"


def test_render_a_run_as_svg_is_deterministic_and_png_works(tmp_path: Path) -> None:
    svg1, svg2, png = tmp_path / "a.svg", tmp_path / "b.svg", tmp_path / "t.png"
    for out in (svg1, svg2, png):
        r = runner.invoke(app, ["render", str(TWO), "-o", str(out)])
        assert r.exit_code == 0, r.output
    text = svg1.read_text()
    assert "memory per card (observed, NVML" in text and "gpu1 peak" in text
    assert svg1.read_bytes() == svg2.read_bytes()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = runner.invoke(app, ["render", str(TWO), "-o", str(tmp_path / "t.dot")])
    assert bad.exit_code == 2


def test_diff_cli_exit_status_and_outputs(tmp_path: Path) -> None:
    outs = [str(RECORDS / "out" / "one-card"), str(RECORDS / "out" / "two-cards")]
    r = runner.invoke(app, ["diff", str(ONE), str(TWO), "--outputs", *outs, "--tolerance", "1e-6", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["outputs"]["same"] and data["source"] == "observed"
    assert data["outputs"]["within_tolerance"] == ["total.txt"]  # summation order differs between arrangements
    exact = runner.invoke(app, ["diff", str(ONE), str(TWO), "--outputs", *outs, "--json"])
    assert exact.exit_code == 1
    assert [d["name"] for d in json.loads(exact.output)["outputs"]["different"]] == ["total.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    r = runner.invoke(app, ["diff", str(ONE), str(TWO), "--outputs", outs[0], str(empty)])
    assert r.exit_code == 1
    assert r.output.startswith("Not the same result, so neither did better: outputs differ: 9 missing in B")
    snap = next((SAMPLES / "snapshots").glob("*.json"))
    mixed = runner.invoke(app, ["diff", str(ONE), str(snap)])
    assert mixed.exit_code == 2


def _render(renderable: object) -> str:
    from rich.console import Console

    console = Console(width=140, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def test_show_marks_a_lost_gpu_and_mig_devices_and_draws_them(tmp_path: Path) -> None:
    from tests.fakes import machines
    from tests.fakes.machine import GIB
    from tests.fakes.record_nvml import ScriptedNvml
    from topomap.record.model import Sampling
    from topomap.record.sampler import GpuSampler
    from topomap.render.record_view import run_view
    from topomap.render.timeline import timeline_image

    m = machines.hgx_h100()
    m.gpus = m.gpus[:2]
    m.gpus[1].mig = (1, 1)
    fake = ScriptedNvml(m, memory={0: [GIB, 3 * GIB, 2 * GIB, 2 * GIB]}, mig_memory={(1, 0): [GIB, 5 * GIB]})
    s = GpuSampler(fake, pcie_period_s=0.0)
    assert s.open()
    fake.m.lost_after = {0: 6}
    for k in range(4):
        fake.step = k
        s.sample(k * 1.0, set())
    run = Run(
        tool="t",
        command=["python", "train.py"],
        started_at="2026-11-30T00:00:00Z",
        duration_s=4.0,
        exit_status=0,
        sampling=Sampling(interval_s=1.0, samples=4, gpu_sampled=True),
        gpus=[c.series for c in s.cards],
        problems=s.problems,
    )
    text = _render(run_view(run))
    assert "gpu0" in text and "LOST at" in text
    assert "gpu1/mig0" in text and "5 GiB" in text
    assert "GpuIsLost" in text  # the problem is listed
    svg = timeline_image(run, "svg").decode()
    assert "gpu1/mig0" in svg
    host_only = _with(run, gpus=[], sampling=Sampling(interval_s=1.0, gpu_note="no GPU sampled: NVML did not start"))
    assert "no GPU sampled: NVML did not start" in timeline_image(host_only, "svg").decode()
    assert "no GPU sampled: NVML did not start" in _render(run_view(host_only))


def test_run_series_must_line_up_with_their_times(tmp_path: Path) -> None:
    """Found by the 10,000-case fuzz of run records: a series one value short of `t_s` made `show`
    fail with IndexError (exit 4), and deep nesting overflowed the decoder. Both are one line, exit 2."""
    data = json.loads(ONE.read_bytes())
    data["host"]["net_tx_bytes"] = data["host"]["net_tx_bytes"][:-1]
    n = len(data["host"]["t_s"])
    with pytest.raises(RunError, match=rf"^x\.json: host\.net_tx_bytes: {n - 1} values for {n} times in t_s$"):
        decode_run(json.dumps(data).encode(), "x.json")
    data = json.loads(ONE.read_bytes())
    data["gpus"][0]["t_s"] = list(reversed(data["gpus"][0]["t_s"]))
    with pytest.raises(RunError, match=r"gpus\[0\]\.t_s: times go backwards"):
        decode_run(json.dumps(data).encode(), "x.json")
    deep = b'{"schema": "topomap.run/1", "x": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    with pytest.raises(RunError, match="nested deeper"):
        decode_run(deep, "x.json")
    f = tmp_path / "deep.json"
    f.write_bytes(deep)
    assert is_run_file(f)  # its schema names a run record; the record loader then refuses it
    r = CliRunner().invoke(app, ["show", str(f)])
    assert r.exit_code == 2 and "nested deeper" in r.output


def test_runs_of_different_commands_are_not_comparable_before_anything_is_ranked(runs: tuple[Run, Run]) -> None:
    """The newcomer trial: a nvbandwidth run against an nccl-tests run was ranked ("B did better:
    … 1.62× faster") and only then flagged "not fully comparable". Now the first line says they do
    not compare, nothing is ranked or marked, and the exit status is 1 (both succeeded)."""
    a, b = runs
    nvb = _with(a, command=["nvbandwidth", "-t", "device_to_device_memcpy_read_ce"], label="nvbandwidth")
    nccl = _with(b, command=["./build/all_reduce_perf", "-b", "8", "-e", "128M", "-g", "2"], label="nccl-tests")
    assert a.duration_s is not None and b.duration_s is not None and b.duration_s < a.duration_s * 0.9
    d = diff_runs(nvb, nccl, ("nvbandwidth", "nccl-tests"))
    assert d.verdict == "different commands" and d.better is None
    assert d.headline[0] == "Not comparable, so neither is ranked: the two runs ran different commands (below)."
    assert not any("did better" in line for line in d.headline)
    assert all(r.better is None for r in d.rows) and not d.rows_marked and not d.ok
    # a failed run does not make the other "better" either, when they ran different commands
    failed = diff_runs(nvb, _with(nccl, exit_status=1), ("nvbandwidth", "nccl-tests"))
    assert failed.better is None and failed.headline[0].startswith("Not comparable")
    assert "nccl-tests failed (exit 1)" in failed.headline[1]


def test_the_cli_says_not_comparable_first_for_two_commands(runs: tuple[Run, Run], tmp_path: Path) -> None:
    a, b = runs
    pa, pb = tmp_path / "nvbandwidth.json", tmp_path / "nccl-tests.json"
    pa.write_bytes(encode_run(_with(a, command=["nvbandwidth"], label=None)))
    pb.write_bytes(encode_run(_with(b, command=["./build/all_reduce_perf", "-g", "2"], label=None)))
    r = runner.invoke(app, ["diff", str(pa), str(pb)], env={"COLUMNS": "200"})
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert lines[0].startswith("Not comparable, so neither is ranked")
    assert "did better" not in r.output and "Not fully comparable" not in r.output
    j = json.loads(runner.invoke(app, ["diff", str(pa), str(pb), "--json"]).stdout)
    assert j["better"] is None and j["verdict"] == "different commands"
