"""`topomap diff CLUSTER_A CLUSTER_B` says what it could not compare, as a diff of two hosts does: the
cluster views dropped the "Not compared" line (trial of issue 32), so two clusters of `topo -m` pastes
read "cannot confirm … nothing differs" with no word of what no source records."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from topomap.cli import app
from topomap.diff import diff_clusters
from topomap.importers import load_any

REAL = Path(__file__).resolve().parents[2] / "tests" / "data" / "real-topologies" / "nvidia-smi"
ROOT = Path(__file__).resolve().parents[2]
PASTE = REAL / "hgx-h200-8gpu-10nic-nchc-nano4.txt"


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout


def _clusters(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for out in (a, b):
        code, _ = _run("merge", f"n1={PASTE}", f"n2={PASTE}", "-o", str(out))
        assert code == 0
    return a, b


def test_each_comparison_says_what_it_could_not_compare(tmp_path: Path) -> None:
    a, b = _clusters(tmp_path)
    d = diff_clusters(load_any(str(a)), load_any(str(b)))
    assert d.exit_status == 3 and [g.hosts for g in d.groups] == [["n1", "n2"]]
    unknown = {(x.field, x.side) for x in d.groups[0].not_compared}
    assert ("gpus.uuid", "both") in unknown and ("pairs.p2p", "both") in unknown
    code, text = _run("diff", str(a), str(b))
    assert code == 3
    line = next(ln for ln in text.splitlines() if "Not compared" in ln)
    assert line.startswith("    Not compared (a source could not know): unknown in both: ")
    assert "GPU UUIDs" in line and "P2P status" in line
    code, every = _run("diff", str(a), str(b), "--all")
    assert code == 3 and every.count("Not compared (a source could not know)") == 2  # n1 and n2


def test_json_lists_a_groups_unknowns_as_its_hosts_do(tmp_path: Path) -> None:
    a, b = _clusters(tmp_path)
    code, raw = _run("diff", str(a), str(b), "--json")
    doc = json.loads(raw)
    assert code == 3 and doc["groups"][0]["not_compared"] == doc["hosts"]["n1"]["not_compared"]
    assert "gpus.uuid (unknown in both)" in doc["groups"][0]["not_compared"]
