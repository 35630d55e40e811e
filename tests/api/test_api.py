"""The library's calls (issue 33 item 5): ``topomap.load``, ``topomap.load_flow``, ``topomap.map_flow``, what
the CLI and the tests use to load a machine and bind a flow; the module's example runs as a doctest."""

from __future__ import annotations

import doctest
import re
import subprocess
import sys
from pathlib import Path

import pytest

import topomap
import topomap.api
from topomap.base.errors import TopomapError

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


def test_the_modules_example_prints_what_it_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = doctest.testmod(topomap.api, raise_on_error=False)
    assert result.attempted >= 5 and result.failed == 0


def test_the_python_guides_examples_print_what_they_show(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    page = (ROOT / "docs" / "guides" / "python.md").read_text()
    blocks = re.findall(r"```pycon\n(.*?)```", page, re.S)
    assert blocks
    for block in blocks:
        test = doctest.DocTestParser().get_doctest(block, {}, "python.md", "docs/guides/python.md", 0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test)
        assert runner.failures == 0 and runner.tries >= 3


def test_import_topomap_loads_no_heavy_dependency() -> None:
    code = "import sys, topomap; print(sorted(m for m in ('networkx', 'msgspec', 'topomap.api') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_map_flow_answers_what_topomap_map_prints() -> None:
    fmap = topomap.map_flow(SAMPLES / "flows" / "two-host-pipeline.yaml")
    net = [a for a in fmap.arrows if a.medium == "network"]
    assert len(fmap.arrows) == 3 and len(net) == 1
    assert (net[0].src, net[0].dst, net[0].bandwidth_gbps, net[0].bandwidth_source) == (
        "node-a:gpu7",
        "node-b:gpu0",
        25.0,
        "spec",
    )
    assert net[0].src_place.host == "node-a" and net[0].dst_place.host == "node-b"


def test_load_flow_binds_a_machine_given_by_name() -> None:
    lot = SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json"
    bound = topomap.load_flow(SAMPLES / "flows" / "tensor-parallel.yaml", f"lot={lot}")
    topo = bound.topologies["lot"]
    assert topo is not None and len(topo.snapshot.gpus) == 8
    arrows = topomap.map_flow(bound).arrows
    pairs = [a for a in arrows if a.src_place.kind == a.dst_place.kind == "gpu" and a.src != a.dst]
    assert len(pairs) == 28 and {(a.medium, a.path) for a in pairs} == {("host-memory", "SYS")}  # staged


def test_load_reads_a_declared_lot_and_a_catalogue_type() -> None:
    snap = topomap.load(SAMPLES / "lots" / "one-host-nvswitch.yaml")
    assert snap.source.kind == "declared" and len(snap.gpus) == 8
    filled = topomap.load(
        ROOT / "tests/data/real-topologies/nccl-xml/aws-p4de-24xlarge.xml", lot_type="aws/p4de.24xlarge"
    )
    assert any(f.origin == "catalogue" for f in filled.source.filled)


def test_a_bad_binding_is_one_line_error() -> None:
    with pytest.raises(TopomapError) as err:
        topomap.load_flow(SAMPLES / "flows" / "tensor-parallel.yaml", "nope=x.json")
    assert "has no host 'nope'" in str(err.value) and "\n" not in str(err.value)
