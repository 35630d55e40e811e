"""`topomap map`: summary by default (one line per bundle, slowest per medium, grouped notes),
--all for every arrow, piped output never wrapped or cut, JSON unchanged in content."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES
from topomap.cli import app

runner = CliRunner()
TP = str(SAMPLES / "flows" / "tensor-parallel.yaml")
PIPE = str(SAMPLES / "flows" / "two-host-pipeline.yaml")


def test_summary_is_one_line_per_bundle() -> None:
    r = runner.invoke(app, ["map", TP])
    assert r.exit_code == 0, r.output
    rows = [line for line in r.output.splitlines() if line.strip()[:2] in ("1 ", "2 ", "3 ", "4 ", "5 ")]
    assert len(rows) == 4  # 52 arrows in 4 lines
    assert "52 arrow(s) in 4 line(s)" in r.output
    exchange = next(line for line in rows if "allreduce ↔ allreduce" in line)
    assert "28" in exchange and "gpu-link" in exchange and "450 GB/s derived" in exchange and "lot:gpu0–6" in exchange
    assert "gpu-link: 28 arrow(s); slowest 450 GB/s derived: allreduce → allreduce" in r.output
    assert "local: 8 arrow(s) stay on their device (no transfer)" in r.output
    assert len(r.output.splitlines()) < 40


def test_notes_are_grouped_each_once() -> None:
    r = runner.invoke(app, ["map", TP])
    notes = [line for line in r.output.splitlines() if line.startswith("  • ")]
    assert len(notes) == len(set(notes))
    same = [n for n in notes if "same device" in n]
    assert same == ["  • same device  [#2, 8 arrows]"]
    numa = next(n for n in notes if n.startswith("  • host memory taken on the NUMA node of"))
    # eight notes (one per GPU) said once, with the GPUs each NUMA node serves
    assert "gpu0–3 ↔ numa0, gpu4–7 ↔ numa1" in numa and "[#1, 8 arrows]" in numa


def test_all_lists_every_arrow_with_route() -> None:
    r = runner.invoke(app, ["map", TP, "--all"])
    assert r.exit_code == 0
    assert "Flow tensor-parallel: 52 arrow(s)" in r.output
    assert r.output.count("\n#") == 52  # one route line per arrow


def test_piped_output_is_not_wrapped_or_cut() -> None:
    """Issue 13: piped to a file the table wrapped at 80 columns and cut `mlx5_gd…`."""
    probes = [
        "--probe",
        f"node-a={REAL / 'nvidia-smi' / 'hgx-h200-8gpu-10nic-nchc-nano4.txt'}",
        "--probe",
        f"node-b={REAL / 'nvidia-smi' / 'a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt'}",
    ]
    r = runner.invoke(app, ["map", PIPE, *probes, "--all"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert max(len(line) for line in lines) > 80
    assert not any(line != line.rstrip() for line in lines)
    assert "…" not in r.output.replace("(and", "")  # nothing truncated
    route = next(line for line in lines if line.startswith("#2 "))
    assert "node-a/nic:" in route and "node-b/nic:" in route
    summary = runner.invoke(app, ["map", PIPE, *probes]).output.splitlines()
    row = next(line for line in summary if "stage1 → stage2" in line)
    assert "activations" in row and "node-a:gpu7 → node-b:gpu0" in row  # one line, not folded


def test_json_carries_label_and_every_arrow() -> None:
    r = runner.invoke(app, ["map", PIPE, "--json"])
    data = json.loads(r.output)
    assert [a["label"] for a in data["arrows"]] == [None, "activations", None]
    assert len(runner_json(TP)["arrows"]) == 52


def runner_json(flow: str) -> dict[str, object]:
    out: dict[str, object] = json.loads(runner.invoke(app, ["map", flow, "--json"]).output)
    return out


def test_narrow_terminal_never_splits_a_word() -> None:
    """Issue 13: at 80 columns words split mid-way (`node-a:memor` / `y →`, `host-memo` / `ry`)."""
    import io

    from rich.console import Console

    from topomap.api import bind_snapshots
    from topomap.flow import read_flow
    from topomap.flow.mapping import map_flow
    from topomap.render.mapview import arrows_view, summary_view
    from topomap.render.whole import whole

    flow = read_flow(PIPE)
    fmap = map_flow(flow, bind_snapshots(flow, []))
    for view in (summary_view, arrows_view):  # the views build full tables; whole() fits them to 80 columns
        console = Console(width=80, file=io.StringIO(), color_system=None)
        with console.capture() as cap:
            console.print(whole(console, view(fmap), 80), crop=False, overflow="ignore")
        out = cap.get()
        assert max(len(line) for line in out.splitlines()) <= 80
        for word in ("host-memory", "node-a:memory", "node-b:gpu0", "activations", "25.0 GB/s spec"):
            assert word in out, (view.__name__, word)
        wide = Console(width=300, file=io.StringIO(), color_system=None)
        with wide.capture() as cap:
            wide.print(whole(wide, view(fmap), 300))
        assert "─────" in cap.get()  # a table when it fits


def test_long_nic_names_reach_a_pipe_whole(tmp_path: Path) -> None:
    """`grep mlx5_gdr…` must find the name: piped output keeps every name whole, however long."""
    import msgspec

    from topomap.importers import load_any
    from topomap.model.codec import save_snapshot

    s = load_any(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json")
    long = "mlx5_gdr_rail{}_with_a_name_much_longer_than_any_terminal_column"
    s = msgspec.structs.replace(s, nics=[msgspec.structs.replace(n, name=long.format(n.index)) for n in s.nics])
    snap = tmp_path / "long.json"
    save_snapshot(s, snap)
    probes = ["--probe", f"node-a={snap}", "--probe", f"node-b={snap}"]
    for extra in ([], ["--all"]):
        r = runner.invoke(app, ["map", PIPE, *probes, *extra])
        assert r.exit_code == 0, r.output
        hits = [line for line in r.output.splitlines() if "mlx5_gdr_rail" in line]
        assert hits and all(
            re.search(r"mlx5_gdr_rail\d+_with_a_name_much_longer_than_any_terminal_column", h) for h in hits
        )


def test_the_slowest_arrow_keeps_its_lower_bound() -> None:
    """DGX-1's `topo -m` gives NV1/NV2 but no model: the NVLink figures are lower bounds. The
    "slowest arrow per medium" line printed "slowest 14.1 GB/s derived" (a floor stated as the
    figure); every view now writes an arrow's bandwidth through MappedArrow.bandwidth()."""
    flow = str(SAMPLES / "flows" / "tensor-parallel.yaml")
    r = runner.invoke(app, ["map", flow, "--probe", f"lot={SAMPLES / 'snapshots' / 'dgx1-v100.json'}"])
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("gpu-link:"))
    assert "slowest ≥ 11.1 GB/s derived" in line
    assert "gpu0 → lot:gpu1" in line
