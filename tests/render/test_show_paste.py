"""`show` of a `topo -m` paste (issue 23): no table of dashes, no "NIC NIC0". A column unknown in every
row is left out and named once with what records it; a table with nothing known but its first
column is one line; NICs go by the paste's legend name, or by the matrix column where the paste has
no NIC legend.

Data: tests/data/real-topologies/nvidia-smi/h20-3e-8gpu-vm-tencent.txt (a Tencent H20 VM's `topo -m`,
no NIC legend) and hgx-h200-8gpu-10nic-nchc-nano4.txt (with a NIC legend: mlx5_0 … mlx5_9)."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from topomap.cli import app

REAL = Path(__file__).resolve().parents[1] / "data" / "real-topologies" / "nvidia-smi"
runner = CliRunner()


def _show(name: str) -> str:
    r = runner.invoke(app, ["show", str(REAL / name)])
    assert r.exit_code == 0, r.output
    return r.stdout


def test_no_table_of_dashes_and_what_is_missing_said_once() -> None:
    out = _show("h20-3e-8gpu-vm-tencent.txt")
    assert "GPUs: identity: not in this source (CUDA, UUID, bus id, name); `topomap probe` on the machine" in out
    assert not re.search(r"^\s*\d+\s+—\s+—", out, re.M)  # no row of a GPU table is dashes
    caps = out[out.index("GPUs: memory, placement and links") : out.index("NICs")]
    header = next(line for line in caps.splitlines() if line.strip().startswith("NVML"))
    assert header.split() == ["NVML", "NUMA", "CPUs", "NVLink"]  # memory, CC, PCIe, MIG, fabric: unknown
    assert "not in this source: memory, CC, PCIe, MIG, fabric" in caps
    assert re.search(r"^\s+0\s+0\s+0-63\s+NV18 to 7 GPU\(s\) \(from the matrix\)$", caps, re.M)


def test_nics_by_their_legend_name_never_nic_nic0() -> None:
    bare = _show("h20-3e-8gpu-vm-tencent.txt")
    assert "NIC NIC" not in bare
    assert "└── NIC7 (link layer unknown)" in bare  # GPU0's PIX NIC, by its matrix column
    named = _show("hgx-h200-8gpu-10nic-nchc-nano4.txt")
    assert "NIC mlx5_0 (link layer unknown)" in named
    # the NIC table keeps id and legend name (and the family the name tells: mlx5 is ConnectX)
    assert re.search(r"^\s+nic0\s+mlx5_0\s+IB/RoCE \(CX\)\s+yes\s*$", named, re.M)  # GDR: nic_gdr
