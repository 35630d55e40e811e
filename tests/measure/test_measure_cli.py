"""`topomap measure` and `matrix --bandwidth` from the command line; device-check captures when present."""

from __future__ import annotations

import ctypes.util
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES, run_probe
from tests.fakes import machines
from topomap.cli import app
from topomap.model.codec import save_snapshot

runner = CliRunner()
P2P = REAL / "bandwidth" / "a100-sxm4-80gb-8gpu-p2pBandwidthLatencyTest-distserve3.txt"


def test_measure_an_imported_snapshot_exits_3(tmp_path: Path) -> None:
    r = runner.invoke(
        app, ["measure", str(SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json"), "-o", str(tmp_path / "m")]
    )
    assert r.exit_code == 3
    assert "none of the snapshot's 8 GPU(s) has a CUDA ordinal" in r.stderr and not (tmp_path / "m").exists()


@pytest.mark.skipif(ctypes.util.find_library("cuda") is not None, reason="a CUDA driver is installed here")
def test_measure_without_a_driver_exits_3_through_the_real_bindings(tmp_path: Path) -> None:
    """The default path: a spawned worker imports cuda.bindings, and cuInit finds no libcuda."""
    snap = run_probe(machines.consumer_pair(), tmp_path / "root").snapshot
    save_snapshot(snap, tmp_path / "probe.json")
    r = runner.invoke(app, ["measure", str(tmp_path / "probe.json"), "--quick", "-o", str(tmp_path / "m.json")])
    assert r.exit_code == 3, r.output
    assert "CUDA cannot be used here" in r.stderr and not (tmp_path / "m.json").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [(["--pairs", "0-0"], "is not a pair of two GPUs"), (["--size", "12 bananas"], "expected a size like 64MiB")],
)
def test_measure_bad_options_exit_2(args: list[str], needle: str) -> None:
    r = runner.invoke(app, ["measure", str(SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json"), *args])
    assert r.exit_code == 2 and needle in r.stderr


def test_matrix_bandwidth(tmp_path: Path) -> None:
    plain = runner.invoke(app, ["matrix", "--bandwidth", str(SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json")])
    assert plain.exit_code == 0 and "no measured bandwidth in this snapshot" in plain.stdout
    out = tmp_path / "a100.json"
    assert (
        runner.invoke(
            app, ["attach", str(SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json"), str(P2P), "-o", str(out)]
        ).exit_code
        == 0
    )
    r = runner.invoke(app, ["matrix", "--bandwidth", str(out)])
    assert r.exit_code == 0
    rows = {
        line.split()[0]: line.split()[1:] for line in r.stdout.splitlines() if line.startswith("GPU") and "X" in line
    }
    assert rows["GPU0"][:3] == ["X", "268.9", "269.4"] and rows["GPU1"][0] == "265.1"
    assert "p2pBandwidthLatencyTest (size not recorded, 5 per sample)" in r.stdout


CAPTURES = sorted(p.parent for p in (SAMPLES / "device-check").glob("*/probe.json"))


# Collected only where a capture exists (scripts/device-check.sh on a GPU machine writes one):
# no capture, no test — rather than a skip in every run.
if CAPTURES:

    @pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
    def test_real_probe_matrix_equals_the_captured_nvidia_smi(capture: Path) -> None:
        """A real probe and `nvidia-smi topo -m` captured beside it (scripts/device-check.sh) agree cell by cell."""
        from topomap.importers import import_file
        from topomap.model.codec import load_snapshot

        probe = load_snapshot(capture / "probe.json")
        smi = import_file(capture / "nvidia-smi-topo_m.txt")
        ours = {frozenset({p.a, p.b}): p.path for p in probe.pairs if p.a.startswith("gpu") and p.b.startswith("gpu")}
        theirs = {frozenset({p.a, p.b}): p.path for p in smi.pairs if p.a.startswith("gpu") and p.b.startswith("gpu")}
        assert {k: v for k, v in ours.items() if k in theirs} == theirs


def test_bandwidth_views_of_a_measured_snapshot(tmp_path: Path) -> None:
    """What `measure` prints after a run: the matrix (staged, unusable, nominal) and the table."""
    import functools

    from rich.console import Console

    from tests.fakes.cuda import FakeCudaMemory
    from topomap.measure.run import MeasureOptions, measure
    from topomap.render.bandwidth_matrix import measurements_table, render_bandwidth_matrix

    m = machines.a100_pcie()
    snap = run_probe(m, tmp_path / "root").snapshot
    opts = MeasureOptions(size_bytes=2**20, repetitions=2, samples=2, warmup=1, latency_copies=2, remote_numa=False,
                          pairs=[(0, 1), (0, 4)])  # fmt: skip
    fake = functools.partial(FakeCudaMemory, m, corrupt_pairs=frozenset({frozenset({0, 1})}))
    s = measure(snap, opts, driver_factory=fake, start_method="fork").snapshot
    text = render_bandwidth_matrix(s)
    row0 = next(line.split() for line in text.splitlines() if line.startswith("GPU0 ") and "X" in line)
    assert row0[1:3] == ["X", "UNUSABLE"] and row0[5] != "—"  # gpu0→gpu4 measured, gpu0→gpu2 not
    host0 = next(line.split() for line in text.splitlines() if line.startswith("GPU0 ") and "X" not in line)
    assert float(host0[3]) == pytest.approx(31.5, rel=1e-3)  # Gen4 x16 nominal, spec
    assert "topomap measure (1 MiB copies, 2 per sample, median of 2)" in text
    console = Console(record=True, width=200)
    console.print(measurements_table(s))
    table = console.export_text()
    assert "WRONG DATA" in table and "host → gpu0 (host NUMA 0)" in table and "µs" in table


@pytest.mark.skipif(ctypes.util.find_library("cuda") is not None, reason="a CUDA driver is installed here")
def test_python_dash_m_spawns_workers_without_rerunning_the_cli(tmp_path: Path) -> None:
    """`python -m topomap measure`: the spawned worker must not run the command line again."""
    import subprocess
    import sys

    snap = run_probe(machines.consumer_pair(), tmp_path / "root").snapshot
    save_snapshot(snap, tmp_path / "probe.json")
    r = subprocess.run(
        [sys.executable, "-m", "topomap", "measure", str(tmp_path / "probe.json"), "-o", str(tmp_path / "m.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 3 and r.stderr.count("CUDA cannot be used here") == 1, r.stderr


def test_measure_command_on_the_fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole command with the fake driver swapped in: snapshot written, matrix, table, findings, summary."""
    import functools

    import topomap.measure.run as measure_mod
    from tests.fakes.cuda import FakeCudaMemory
    from topomap.model.codec import load_snapshot

    m = machines.a100_pcie()
    save_snapshot(run_probe(m, tmp_path / "root").snapshot, tmp_path / "probe.json")
    fake = functools.partial(FakeCudaMemory, m, hang_pairs=frozenset({frozenset({0, 1})}))
    monkeypatch.setattr(
        measure_mod, "measure", functools.partial(measure_mod.measure, driver_factory=fake, start_method="fork")
    )
    out = tmp_path / "measured.json"
    args = [
        "measure",
        str(tmp_path / "probe.json"),
        "--quick",
        "--pairs",
        "0-1,2-3",
        "--size",
        "1MiB",
        "--timeout",
        "1",
    ]
    r = runner.invoke(app, [*args, "--table", "-o", str(out)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    snap = load_snapshot(out)
    assert {x.origin for x in snap.measurements} == {"topomap measure"}
    assert "[error] gpu0-gpu1: gpu0 ↔ gpu1 did not finish within 1 s" in r.stdout
    assert "UNUSABLE" in r.stdout and "verified" in r.stdout
    assert "10 test(s), 1 failed; used at most 2 MiB per GPU and 3 MiB of pinned host memory" in r.stderr


def test_probe_measure_flag_on_a_machine_without_gpus_still_writes_the_snapshot(tmp_path: Path) -> None:
    """`probe --measure` is `probe` then `measure --quick`; with no GPU the probe's exit 3 stands."""
    out = tmp_path / "p.json"
    r = runner.invoke(app, ["probe", "--measure", "--root", str(tmp_path), "-o", str(out)])
    assert r.exit_code == 3 and out.exists()
