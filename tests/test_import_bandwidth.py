"""Importing measured figures: p2pBandwidthLatencyTest (real output) and nvbandwidth (text, JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.cli import app
from topomap.errors import ImportFailure
from topomap.importers.bandwidth import attach, load_measurements, parse_measurements
from topomap.measured import measured_bandwidth
from topomap.model import load_snapshot

P2P = "bandwidth/a100-sxm4-80gb-8gpu-p2pBandwidthLatencyTest-distserve3.txt"

# The layout nvbandwidth v0.2 prints (NVIDIA/nvbandwidth output.cpp: "Device N: name", a
# "Running <test>." line, the description, a header of column ids, rows, a SUM line); the
# figures are made up for the test.
NVB_TEXT = """nvbandwidth Version: v0.2
Built from Git version: 42e94d2

CUDA Runtime Version: 11080
CUDA Driver Version: 12000
Driver Version: 525.105.17

Device 0: NVIDIA H800
Device 1: NVIDIA H800

Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
          0         1
0     55.28     55.30

SUM host_to_device_memcpy_ce 110.58

Running device_to_host_memcpy_ce.
memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)
          0         1
0     55.15     54.10

SUM device_to_host_memcpy_ce 109.25

Running host_to_device_bidirectional_memcpy_ce.
memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)
          0         1
0     52.75     52.33

Running device_to_device_memcpy_write_ce.
memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)
          0         1
0      0.00    176.07
1       N/A      0.00

SUM device_to_device_memcpy_write_ce 176.07
"""


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
    doc = {
        "nvbandwidth": {
            "version": "v0.8",
            "Driver Version": "550.54.15",
            "GPU Device list": [
                "0: NVIDIA H100 80GB HBM3 (00000000:18:00): (node1)",
                "1: NVIDIA H100 80GB HBM3 (00000000:2a:00): (node1)",
            ],
            "bufferSize": 512,
            "testcases": [
                {"name": "device_to_device_memcpy_read_ce", "status": "Passed",
                 "bandwidth_description": "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)",
                 "bandwidth_matrix": [["N/A", "379.04"], ["380.5", "N/A"]], "sum": 759.54},
                {"name": "device_to_device_bidirectional_memcpy_read_ce", "status": "Passed",
                 "bandwidth_description": "memcpy CE GPU(row) <-> GPU(column) Total bandwidth (GB/s)",
                 "bandwidth_matrix": [["N/A", "700.1"], ["701.2", "N/A"]]},
                {"name": "host_device_latency_sm", "status": "Waived"},
            ],
        }
    }  # fmt: skip
    r = parse_measurements(json.dumps(doc, indent=2), "nvb.json")
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
NVB_NEW = """nvbandwidth Version: v0.8
Built from Git version: v0.8

CUDA Runtime Version: 12080
CUDA Driver Version: 12080
Driver Version: 570.124.06

node7
Device 0: NVIDIA H100 80GB HBM3 (00000000:18:00)
Device 1: NVIDIA H100 80GB HBM3 (00000000:2a:00)

Running host_device_latency_sm.
memory latency SM CPU(row) <-> GPU(column) (ns)
           0         1
 0    812.40    809.10

&&&& PERF host_device_latency_sm 1621.5 -ns

Running device_local_copy.
memcpy local GPU(column) bandwidth (GB/s)
           0         1
 0   1510.00   1512.30

SUM device_local_copy 3022.30

Running device_to_device_bidirectional_memcpy_write_ce.
memcpy CE GPU(row) <-> GPU(column) Write1 bandwidth (GB/s)
           0         1
 0       N/A    365.00
 1    366.00       N/A

memcpy CE GPU(row) <-> GPU(column) Total bandwidth (GB/s)
           0         1
 0       N/A    731.20
 1    732.00       N/A

SUM device_to_device_bidirectional_memcpy_write_ce 1463.20
COEFFICIENT_OF_VARIATION device_to_device_bidirectional_memcpy_write_ce 0.01
"""


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
