"""No view hard-codes a figure's kind: a static topology file's PCIe figure, a declared lot's NIC rate and
memory say where they come from in the diagram's tooltips and the report's machines table as in `show`."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.cli import app
from topomap.graph import build
from topomap.importers import load_any
from topomap.render.dot import topology_dot
from topomap.render.hostdot import _pcie_tip
from topomap.render.report import PROVENANCE, _machine


def test_a_topology_files_pcie_figure_is_not_spec_in_the_diagram() -> None:
    dot = topology_dot([build(load_any(SAMPLES / "snapshots" / "aws-p4d-24xlarge.json"))])
    assert 'tooltip="PCIe Gen3 x16 · 15.8 GB/s, from the topology file; not the machine\'s"' in dot
    assert "GB/s spec" not in dot
    probed = load_any(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json")
    assert _pcie_tip((5, 16, 63.0), probed) == "PCIe Gen5 x16 · 63.0 GB/s spec"  # a probe's: the machine's nominal


def test_the_reports_machines_table_says_a_declared_lots_kinds(tmp_path: Path) -> None:
    lot = load_any(SAMPLES / "lots" / "two-host-ib.yaml").members[0]
    row = _machine("lot-1", build(lot))
    assert "400 Gb/s (declared)" in row["nics"] and "spec" not in row["nics"]
    probed = _machine("m", build(load_any(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json")))
    assert "200 Gb/s spec" in probed["nics"]
    assert any(line.startswith("declared / catalogue:") for line in PROVENANCE)
    assert any(line.startswith("model:") for line in PROVENANCE)
    out = CliRunner().invoke(
        app, ["render", str(SAMPLES / "lots" / "one-host-nvswitch.yaml"), "-o", str(tmp_path / "x.dot")]
    )
    assert out.exit_code == 0 and "GB/s per direction, each with its kind" in (tmp_path / "x.dot").read_text()
