"""merge: per-host snapshots joined into a cluster that every view reads host by host."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.base.errors import TopomapError
from topomap.cli import app
from topomap.importers import load_any
from topomap.model.merge import merge
from topomap.model.snapshot import hosts_of

runner = CliRunner()
IBM = str(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json")
P4D = str(SAMPLES / "snapshots" / "aws-p4d-24xlarge.json")


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    out = tmp_path / "cluster.json"
    r = runner.invoke(app, ["merge", f"node-a={IBM}", f"node-b={IBM}", f"edge={P4D}", "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    return out


def test_merge_keeps_each_host(cluster: Path) -> None:
    s = load_any(cluster)
    assert s.source.kind == "merge" and [m.host.hostname for m in s.members] == ["edge", "node-a", "node-b"]
    assert [len(m.gpus) for m in hosts_of(s)] == [8, 8, 8]
    assert s.gpus == [] and s.source.notes[0].startswith("edge: nccl-xml")


def test_duplicate_and_nameless_hosts_are_refused() -> None:
    ibm = load_any(IBM)
    with pytest.raises(TopomapError, match="names no host"):
        merge([("a.json", ibm), ("b.json", ibm)])
    r = runner.invoke(app, ["merge", f"x={IBM}", f"x={P4D}", "-o", "/tmp/never.json"])
    assert r.exit_code == 2 and "host 'x' is also in" in r.stderr and not Path("/tmp/never.json").exists()


def test_show_and_matrix_read_a_cluster(cluster: Path) -> None:
    r = runner.invoke(app, ["show", str(cluster)])
    assert r.exit_code == 0 and r.stdout.startswith("Cluster (merge of 3 hosts), 2 groups of alike hosts: ")
    assert "2 hosts alike (8 × NVIDIA H100 80GB HBM3, NV18 all pairs, 8 NICs" in r.stdout
    assert "group B: 1 host (8 × GPU of unknown model, NVLink unknown, 4 NICs): edge\n" in r.stdout
    r = runner.invoke(app, ["show", str(cluster), "--all"])
    assert r.exit_code == 0 and "Cluster: 3 hosts" in r.stdout and r.stdout.count("GPUs: identity") == 3
    r = runner.invoke(app, ["matrix", str(cluster), "--all"])
    assert r.exit_code == 0 and r.stdout.count("# node-") == 2 and "# edge" in r.stdout


def test_map_binds_flow_hosts_by_host_name(cluster: Path) -> None:
    flow = SAMPLES / "flows" / "two-host-pipeline.yaml"
    r = runner.invoke(app, ["map", str(flow), "--probe", str(cluster), "--json"])
    assert r.exit_code == 0, r.stderr
    arrows = json.loads(r.stdout)["arrows"]
    assert arrows[1]["medium"] == "network" and arrows[1]["route"][0] == "node-a/gpu7"


def test_check_and_diff_host_by_host(cluster: Path, tmp_path: Path) -> None:
    reqs = tmp_path / "r.yaml"
    reqs.write_text("requirements:\n  - gpu_links: {min: nvlink}\n")
    r = runner.invoke(app, ["check", str(reqs), "--probe", str(cluster), "--json"])
    d = json.loads(r.stdout)
    # the p4d vendor file does not record NVLink: UNKNOWN there, which is not a pass (exit 3)
    assert r.exit_code == 3 and {x["lot"]: x["status"] for x in d["rules"]} == {
        "edge": "unknown",
        "node-a": "pass",
        "node-b": "pass",
    }
    other = tmp_path / "other.json"
    assert runner.invoke(app, ["merge", f"node-a={IBM}", f"node-b={P4D}", "-o", str(other)]).exit_code == 0
    r = runner.invoke(app, ["diff", str(cluster), str(other), "--json"])
    d = json.loads(r.stdout)
    assert r.exit_code == 1 and d["only_in_a"] == ["edge"] and d["hosts"]["node-a"]["same"]
    assert not d["hosts"]["node-b"]["same"]


@pytest.mark.skipif(shutil.which("dot") is None, reason="no dot")
def test_render_collapses_identical_hosts(tmp_path: Path) -> None:
    out = tmp_path / "big.json"
    args = [f"node{i:02d}={IBM}" for i in range(10)]
    assert runner.invoke(app, ["merge", *args, "-o", str(out)]).exit_code == 0
    dot = tmp_path / "big.dot"
    assert runner.invoke(app, ["render", str(out), "-o", str(dot)]).exit_code == 0
    text = dot.read_text()
    assert "node00 … node09 (10 identical hosts)" in text and text.count('label="GPU0') == 1
