"""Importing measured figures: p2pBandwidthLatencyTest (real output) and nvbandwidth (text, JSON)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.base.errors import ImportFailure
from topomap.cli import app
from topomap.importers import import_file
from topomap.importers.bandwidth import attach, load_measurements, parse_measurements
from topomap.model.codec import load_snapshot
from topomap.model.measured import measured_bandwidth

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"
P2P = "bandwidth/a100-sxm4-80gb-8gpu-p2pBandwidthLatencyTest-distserve3.txt"

# The layout nvbandwidth v0.2 prints (NVIDIA/nvbandwidth output.cpp: "Device N: name", a
# "Running <test>." line, the description, a header of column ids, rows, a SUM line); the
# figures are made up for the test.
NVB_TEXT = (FIXTURES / "nvbandwidth-v0.2-2gpu-h800.txt").read_text()


def test_p2p_bandwidth_latency_test_real_output(real: Path) -> None:
    r = load_measurements(real / P2P)
    assert r.tool == "p2pBandwidthLatencyTest" and len(r.devices) == 8
    assert r.devices[3].pci_bus_id == "0000:4a:00.0" and r.devices[3].name == "NVIDIA A100-SXM4-80GB"
    assert len(r.measurements) == 6 * 56  # six matrices, 8×8 minus the diagonal

    def one(kind: str, direction: str, route: str, src: str, dst: str) -> float | None:
        m = [
            x
            for x in r.measurements
            if (x.kind, x.direction, x.route, x.src, x.dst) == (kind, direction, route, src, dst)
        ]
        assert len(m) == 1
        return m[0].median_us if kind == "latency" else m[0].median_gbps

    assert one("d2d", "one-way", "staged", "cuda0", "cuda1") == 16.92
    assert one("d2d", "one-way", "peer", "cuda0", "cuda1") == 268.94
    assert one("d2d", "one-way", "peer", "cuda1", "cuda0") == 265.05  # row = source
    assert one("d2d", "both-way", "peer", "cuda4", "cuda5") == 517.80
    assert one("latency", "one-way", "staged", "cuda0", "cuda1") == 23.59
    assert one("latency", "one-way", "peer", "cuda7", "cuda6") == 2.95
    assert all(m.verified is None and m.size_bytes is None for m in r.measurements)
    assert any("CPU-timed" in s for s in r.skipped)


def test_attach_p2p_figures_to_a_snapshot_of_that_model(real: Path) -> None:
    snap = load_snapshot(SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json")
    new = attach(snap, load_measurements(real / P2P))
    assert len(new.measurements) == 336 and not snap.measurements
    got = measured_bandwidth(new, "gpu0", "gpu1")
    assert got is not None and got[0] == 268.94 and got[1].route == "peer"  # the peer figure, not the staged one
    assert got[1].origin == "p2pBandwidthLatencyTest"
    assert any("joined by CUDA ordinal" in n for n in got[1].notes)


def test_attach_refuses_another_machine(real: Path) -> None:
    snap = load_snapshot(SAMPLES / "snapshots" / "rtx5090-pair-p2p-gns.json")
    with pytest.raises(ImportFailure, match=r"device 2 \(NVIDIA A100-SXM4-80GB, CUDA ordinal 2\) is not in"):
        attach(snap, load_measurements(real / P2P))


def test_nvbandwidth_text() -> None:
    r = parse_measurements(NVB_TEXT, "nvb.txt")
    assert r.tool == "nvbandwidth" and [d.name for d in r.devices] == ["NVIDIA H800"] * 2
    assert r.devices[0].pci_bus_id is None
    kinds = sorted((m.kind, m.src, m.dst, m.median_gbps) for m in r.measurements)
    assert kinds == [
        ("d2d", "cuda1", "cuda0", 176.07),  # "GPU(row) <- GPU(column)": column 1 writes to row 0
        ("d2h", "cuda0", "host", 55.15),
        ("d2h", "cuda1", "host", 54.10),
        ("h2d", "host", "cuda0", 55.28),
        ("h2d", "host", "cuda1", 55.30),
    ]
    assert any("host_to_device_bidirectional_memcpy_ce" in s for s in r.skipped)
    assert all(m.route in ("host", "peer") and m.size_bytes is None for m in r.measurements)


def test_nvbandwidth_json_with_bus_ids_and_a_waived_test() -> None:
    r = parse_measurements((FIXTURES / "nvbandwidth-v0.8-2gpu-h100.json").read_text(), "nvb.json")
    assert r.hostname == "node1"
    assert [d.pci_bus_id for d in r.devices] == ["0000:18:00.0", "0000:2a:00.0"]
    m = {(x.kind, x.direction, x.src, x.dst): x for x in r.measurements}
    assert m[("d2d", "one-way", "cuda0", "cuda1")].median_gbps == 379.04
    assert m[("d2d", "one-way", "cuda0", "cuda1")].size_bytes == 512 * 2**20
    assert "destination reads" in m[("d2d", "one-way", "cuda0", "cuda1")].method
    assert m[("d2d", "both-way", "cuda1", "cuda0")].median_gbps == 701.2
    assert any("Waived" in s for s in r.skipped)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("hello\n", "not a bandwidth measurement"),
        (NVB_TEXT.replace("0     55.28     55.30", "0     55.28     fast"), "'fast' is not a number"),
        (NVB_TEXT.replace("0     55.28     55.30", "0     55.28"), "nvb.txt:14: 1 values for 2 columns"),
        ('{"nvbandwidth": {"testcases": []}}', "without its device list"),
    ],
)
def test_bad_measurement_files_fail_in_one_line(text: str, needle: str) -> None:
    with pytest.raises(ImportFailure, match=None) as err:
        parse_measurements(text, "nvb.txt")
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_cli_attach(real: Path, tmp_path: Path) -> None:
    out = tmp_path / "a100-measured.json"
    r = CliRunner().invoke(
        app, ["attach", str(SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json"), str(real / P2P), "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert "336 p2pBandwidthLatencyTest figure(s) attached" in r.stderr
    assert len(load_snapshot(out).measurements) == 336
    bad = CliRunner().invoke(app, ["attach", str(out), str(out), "-o", str(tmp_path / "x.json")])
    assert bad.exit_code == 2 and "not a bandwidth measurement" in bad.stderr


# The newer layout (v0.5 and later: hostname line, bus ids in the device list, "&&&& PERF"
# latency lines, COEFFICIENT_OF_VARIATION); figures made up for the test.
NVB_NEW = (FIXTURES / "nvbandwidth-v0.8-2gpu-h100.txt").read_text()


def test_nvbandwidth_text_newer_layout_and_attach(tmp_path: Path) -> None:
    import dataclasses

    from tests.conftest import run_probe
    from tests.fakes import machines

    r = parse_measurements(NVB_NEW, "nvb-new.txt")
    assert r.hostname == "node7" and parse_measurements(NVB_TEXT, "old.txt").hostname is None
    assert [d.pci_bus_id for d in r.devices] == ["0000:18:00.0", "0000:2a:00.0"]
    lat = [m for m in r.measurements if m.kind == "latency"]
    assert [(m.src, m.dst, m.median_us) for m in lat] == [("host", "cuda0", 0.8124), ("host", "cuda1", 0.8091)]
    both = {(m.src, m.dst): m.median_gbps for m in r.measurements if m.direction == "both-way"}
    assert both == {("cuda0", "cuda1"): 731.2, ("cuda1", "cuda0"): 732.0}  # Total kept, Write1 skipped
    assert any("Write1" in s for s in r.skipped) and any("memcpy local" in s for s in r.skipped)
    # joined to a probe of the same machine by bus id, whatever the CUDA order
    m = dataclasses.replace(machines.hgx_h100(), cuda_order=[1, 0, 2, 3, 4, 5, 6, 7])
    snap = run_probe(m, tmp_path / "root").snapshot
    new = attach(snap, r)
    by_bus = {g.pci_bus_id: f"gpu{g.index}" for g in snap.gpus}
    assert {(x.src, x.dst) for x in new.measurements if x.direction == "both-way"} == {
        (by_bus["0000:18:00.0"], by_bus["0000:2a:00.0"]),
        (by_bus["0000:2a:00.0"], by_bus["0000:18:00.0"]),
    }
    assert not any("joined by CUDA ordinal" in n for x in new.measurements for n in x.notes)
    assert "measured on host 'node7'; the snapshot is of 'hgx-h100'" in new.measurements[0].notes


def test_attach_to_a_snapshot_without_gpu_models_says_the_match_is_unchecked() -> None:
    """A `topo -m` snapshot names no GPU model: H800 figures attach to it by ordinal, and every
    figure (and attach's own message) says the model could not be checked."""
    snap = load_snapshot(SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json")
    assert not any(g.name for g in snap.gpus)
    new = attach(snap, parse_measurements(NVB_TEXT, "nvb.txt"))
    added = new.measurements[len(snap.measurements) :]
    assert added and all(
        "measured on NVIDIA H800; the snapshot names no GPU model, so the match is not checked" in m.notes
        for m in added
    )


def test_figures_the_snapshots_links_cannot_carry_are_refused(real: Path) -> None:
    """An A100 node's p2pBandwidthLatencyTest (269 GB/s gpu0→gpu1) attached to DGX-1 V100's
    snapshot, where gpu0–gpu1 is NV1: no NVLink generation carries that over one link (50 GB/s at
    most). The file is of another machine: one line, exit 2, nothing written."""
    from topomap.importers.bandwidth import peer_ceiling_gbps

    dgx1 = load_snapshot(SAMPLES / "snapshots" / "dgx1-v100.json")
    assert peer_ceiling_gbps(dgx1, "gpu0", "gpu1") == (50.0, "1 NVLinks at most 50 GB/s each (any NVLink generation)")
    rtx = import_file(real / "nvidia-smi" / "rtx3090-2gpu-nv4-club3090-rig-report.txt")  # NV4, no model named
    # the figures name the model: a GA102 bridge link carries 14.06 GB/s, so NV4 at most 56.25 GB/s
    assert peer_ceiling_gbps(rtx, "gpu0", "gpu1", ("NVIDIA GeForce RTX 3090",))[0] == 56.25
    too_fast = r"gpu0→gpu1 measured 268\.94 GB/s \(one-way\), more than the pair can carry"
    with pytest.raises(ImportFailure, match=too_fast):
        attach(dgx1, load_measurements(real / P2P))
    hgx = load_snapshot(SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json")  # NV12: up to 600 GB/s
    assert len(attach(hgx, load_measurements(real / P2P)).measurements) == 336


@pytest.mark.parametrize(
    ("fixture", "old", "new", "needle"),
    [
        (P2P, "   D\\D     0      1", "   D\\D     2.5      1", "'2.5' is not a device number"),
        (P2P, "   D\\D     0      1", "   D\\D     1e309      1", "'1e309' is not a device number"),
        ("nvbandwidth-v0.2-2gpu-h800.txt", "Device 0: NVIDIA", "Device " + "7" * 5000 + ": NVIDIA", "not a listed"),
        ("nvbandwidth-v0.8-2gpu-h100.json", '"testcases": [', '"testcases": 7, "x": [', "`testcases` is not a list"),
        ("nvbandwidth-v0.2-2gpu-h800.txt", "55.28     55.30", "55.28     1e999", "is not a finite number"),
        ("nvbandwidth-v0.8-2gpu-h100.json", '"bufferSize": 512', '"bufferSize": 1e999', "`bufferSize` 'inf' is not"),
        ("nvbandwidth-v0.8-2gpu-h100.json", '"bufferSize": 512', '"x": ' + "[" * 5000 + "]" * 5000, "nested deeper"),
        ("nvbandwidth-v0.8-2gpu-h100.json", '"bufferSize": 512', '"bufferSize": ' + "7" * 5000, "a number too long"),
    ],
)
def test_mutations_the_fuzz_found_are_one_line(
    real: Path, tmp_path: Path, fixture: str, old: str, new: str, needle: str
) -> None:
    """Found by the 10,000-case fuzz of measured figures: unbounded ordinals (int() of 5000 digits),
    a float where a device number belongs, a non-list `testcases`, an infinite figure."""
    src = (real / fixture) if fixture == P2P else (FIXTURES / fixture)
    text = src.read_text()
    assert old in text, old
    bad = tmp_path / src.name
    bad.write_text(text.replace(old, new, 1))
    hgx = load_snapshot(SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json")
    with pytest.raises(ImportFailure) as err:
        attach(hgx, load_measurements(bad))
    assert needle in str(err.value) and "\n" not in str(err.value)
