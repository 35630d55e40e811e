"""Words and colours of a flow picture (issue 23): the network arrow's NICs as sets, not a route
through eight NICs; a purple legend line wherever an arrow is drawn purple (unknown medium); host
memory → storage never `local`; an all-reduce between two hosts drawn both ways.

Data: samples/snapshots/hgx-h200-8gpu-10nic.json (8x H200, eight NICs PIX to GPUs) and
ibm-gx3d-h100-8gpu.json (IBM Cloud gx3d NCCL dump) bound to two flow hosts."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from tests.fakes.flows import ArrowSpec, StepSpec, step, write_flow
from tests.fakes.flows import arrow as flow_arrow
from topomap.cli import app

SNAPS = Path(__file__).resolve().parents[2] / "samples" / "snapshots"
runner = CliRunner()
PURPLE = "#8e24aa"


def _flow(
    tmp_path: Path, steps: dict[str, StepSpec], arrows: list[ArrowSpec], snap: str = "hgx-h200-8gpu-10nic.json"
) -> Path:
    """A flow over hosts node-a and node-b, both on the sample snapshot ``snap``."""
    return write_flow(tmp_path / "f.yaml", steps, arrows, hosts={"node-a": SNAPS / snap, "node-b": SNAPS / snap})


def _dot(flow: Path, tmp_path: Path) -> str:
    out = tmp_path / "f.dot"
    r = runner.invoke(app, ["render", "--flow", str(flow), "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out.read_text()


REPLICAS = {"a": step("compute", "node-a:gpus"), "b": step("compute", "node-b:gpus")}
GRADIENTS = [flow_arrow("a", "b", "1 GiB", label="gradients")]


def test_a_bundles_nics_are_sets_and_one_arrows_nics_a_route(tmp_path: Path) -> None:
    dot = _dot(_flow(tmp_path, REPLICAS, GRADIENTS), tmp_path)
    label = re.search(r'label="gradients\\n[^"]*"', dot)
    assert label is not None
    assert "via 8 NICs mlx5_0, mlx5_3–9 → 8 NICs mlx5_0, mlx5_3–9" in label.group()
    assert "mlx5_0 → mlx5_3" not in dot  # no list of NICs that reads as a route
    one = _flow(
        tmp_path,
        {"a": step("compute", "node-a:gpu7"), "b": step("compute", "node-b:gpu0")},
        [flow_arrow("a", "b", "1 GiB")],
    )
    assert "NIC mlx5_9 → mlx5_0" in _dot(one, tmp_path)  # out by gpu7's NIC, in by gpu0's: a route


def test_memory_to_storage_is_unknown_and_says_what_settles_it(tmp_path: Path) -> None:
    flow = _flow(
        tmp_path,
        {"buf": step("input", "node-a:memory"), "disk": step("output", "node-a:storage")},
        [flow_arrow("buf", "disk", "1 GiB")],
    )
    [arrow] = json.loads(runner.invoke(app, ["map", "--json", str(flow)]).stdout)["arrows"]
    assert (arrow["medium"], arrow["via"], arrow["bandwidth_source"]) == ("unknown", "storage", "unknown")
    assert "findmnt" in (arrow["settle"] or "")
    assert any("network (a network file system)" in n for n in arrow["notes"])
    dot = _dot(flow, tmp_path)
    # drawn purple, and the legend has the purple line
    assert f'color="{PURPLE}"' in dot
    assert re.search(
        rf'<font color="{PURPLE}"[^>]*><b>&#9472;&#9472;</b></font></td><td align="left">medium unknown', dot
    )


def test_no_purple_legend_line_without_a_purple_arrow(tmp_path: Path) -> None:
    dot = _dot(_flow(tmp_path, REPLICAS, GRADIENTS), tmp_path)
    assert PURPLE not in dot


def test_an_all_reduce_between_two_hosts_is_drawn_both_ways(tmp_path: Path) -> None:
    flow = _flow(
        tmp_path,
        REPLICAS,
        [flow_arrow("a", "b", "1 GiB", label="all-reduce", both_ways=True)],
        "ibm-gx3d-h100-8gpu.json",
    )
    doc = json.loads(runner.invoke(app, ["map", "--json", str(flow)]).stdout)
    assert len(doc["arrows"]) == 8 and all(a["both_ways"] and a["medium"] == "network" for a in doc["arrows"])
    text = runner.invoke(app, ["map", str(flow)]).stdout
    assert re.search(r"a ↔ b +all-reduce +8 +network", text) and "node-a:gpu0–7 ↔ node-b:gpu0–7" in text
    edge = re.search(r'-> \S+ \[label="all-reduce[^"]*"[^\]]*', _dot(flow, tmp_path))
    assert edge is not None and "dir=both" in edge.group()


def test_an_arrow_back_is_a_cycle_whose_hint_names_both_ways(tmp_path: Path) -> None:
    flow = _flow(
        tmp_path,
        {"a": step("compute", "node-a:gpu0"), "b": step("compute", "node-b:gpu0")},
        [flow_arrow("a", "b"), flow_arrow("b", "a")],
    )
    r = runner.invoke(app, ["map", str(flow)])
    assert r.exit_code == 2 and "cycle" in r.stderr and "both_ways: true" in r.stderr
