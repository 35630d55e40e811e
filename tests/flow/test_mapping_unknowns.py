"""map: a --probe binding that binds nothing, twice or to no file is refused; facts the source does not
carry (a GPU's NUMA node and path to host memory, NUMA nodes at all, a snapshot-less host's network)
are said to be unknown, never shown as confident values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES
from tests.fakes.flows import gpu_pair
from topomap.api import bind_snapshots
from topomap.base.notes import Note
from topomap.cli import app
from topomap.flow import parse_flow
from topomap.flow.mapping import MappedArrow, map_flow
from topomap.flow.spec import FlowError

runner = CliRunner()
DOC = str(SAMPLES / "flows" / "doc-conversion.yaml")  # hosts lot (an 8x RTX 4090 box) and workstation: null
DGX1 = SAMPLES / "snapshots" / "dgx1-v100.json"  # `nvidia-smi topo -m` with no NUMA affinity column
AZURE = SAMPLES / "snapshots" / "azure-ndv4.json"
RTX = SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json"  # SYS between GPUs the column puts on NUMA 0
NVLINK_S = REAL / "nvidia-smi" / "hpe-dl380a-gen11-2x-h100-pcie-nvlink-s.txt"  # `nvlink -s`: no PCIe path at all
# tests.fakes.flows.gpu_pair, as a person writes it: the errors below name its line 7
PAIR = """flow: pair
hosts:
  lot: null
steps:
  a: {kind: compute, on: lot:gpu0}
  b: {kind: compute, on: lot:gpu1}
  m: {kind: input, on: MEMORY}
arrows:
  - {from: m, to: a, volume: 1 GiB}
  - {from: a, to: b, volume: 1 GiB}
"""


def pair(tmp_path: Path, snap: Path, memory: str = "lot:memory") -> list[MappedArrow]:
    flow = parse_flow(gpu_pair(memory), str(tmp_path / "pair.yaml"))
    return map_flow(flow, bind_snapshots(flow, [f"lot={snap}"])).arrows


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("c") / "merged.json"
    r = runner.invoke(app, ["merge", f"node-a={DGX1}", f"node-b={AZURE}", "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out


# --- bindings --------------------------------------------------------------------------------------


def test_a_cluster_with_no_host_named_like_a_flow_host_is_refused(cluster: Path) -> None:
    r = runner.invoke(app, ["map", DOC, "--probe", str(cluster)])  # exit 0 and the flow file's lot before
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (
        f"topomap: error: --probe {cluster}: no host of the cluster is named like a flow host (flow hosts: lot, "
        "workstation; cluster hosts: node-a, node-b) (hint: NAME=FILE binds a flow host to one host's snapshot "
        "(lot=SNAPSHOT), or name the flow hosts after the cluster's hosts)\n"
    )
    reqs = str(SAMPLES / "requirements" / "doc-conversion.yaml")  # PASSed on the wrong machine before
    r = runner.invoke(app, ["check", reqs, "--flow", DOC, "--probe", str(cluster), "--json"])
    assert r.exit_code == 2 and "no host of the cluster is named like a flow host" in json.loads(r.stdout)["error"]


def test_a_cluster_binds_the_hosts_named_like_its_own(tmp_path: Path, cluster: Path) -> None:
    f = tmp_path / "f.yaml"
    f.write_text(Path(DOC).read_text().replace("lot", "node-b").replace("../snapshots/", f"{SAMPLES}/snapshots/"))
    flow = parse_flow(f.read_text(), str(f))
    topos = bind_snapshots(flow, [str(cluster)])
    assert topos["node-b"] is not None and topos["node-b"].snapshot.host.hostname == "node-b"


@pytest.mark.parametrize(
    ("probes", "message"),
    [
        (
            [f"lot={DGX1}", f"lot={AZURE}"],
            f"--probe lot={AZURE}: lot is bound twice (also by --probe lot={DGX1})",
        ),
        (["lot="], "--probe lot=: no file given"),
        ([f"={DGX1}"], f"--probe ={DGX1}: no host name before '='"),
    ],
)
def test_bindings_that_would_be_silently_wrong(probes: list[str], message: str) -> None:
    flow = parse_flow(Path(DOC).read_text(), DOC)
    with pytest.raises(FlowError) as e:
        bind_snapshots(flow, probes)
    assert str(e.value) == message


def test_a_bare_file_bound_twice_to_a_one_host_flow(tmp_path: Path) -> None:
    f = tmp_path / "pair.yaml"
    f.write_text(gpu_pair())
    r = runner.invoke(app, ["map", str(f), "--probe", str(DGX1), "--probe", str(AZURE)])
    assert r.exit_code == 2 and f"topomap: error: --probe {AZURE}: lot is bound twice" in r.stderr


# --- what the source does not carry ---------------------------------------------------------------


def test_host_memory_arrow_on_an_nvlink_s_output_has_no_path_class(tmp_path: Path) -> None:
    m, ab = pair(tmp_path, NVLINK_S)
    assert (m.medium, m.via, m.path) == ("host-memory", "pcie", None)  # was PHB
    first = m.notes[0]
    assert isinstance(first, Note) and first.template.startswith("{gpu}'s NUMA node is not recorded by this source")
    assert dict(first.subjects) == {"gpu": "gpu0"} and "`nvidia-smi topo -m` of a recent driver" in first.template
    assert not any("own NUMA node" in n for n in m.notes)
    assert any(n.startswith("path class between gpu0 and host memory not recorded by this source") for n in m.notes)
    assert ab.path == "NV12"
    r = runner.invoke(app, ["matrix", str(NVLINK_S), "--json"])  # the matrix agrees: no path, no NUMA affinity
    d = json.loads(r.stdout)
    assert d["cells"][0][1] is None and d["gpus"][0]["numa_affinity"] is None


def test_host_memory_classes_where_numa_is_recorded(tmp_path: Path) -> None:
    m, _ = pair(tmp_path, RTX)
    assert m.path == "PHB" and m.route[0] == "lot/numa0"
    m, _ = pair(tmp_path, RTX, "lot:memory@numa1")
    assert m.path == "SYS"
    m, _ = pair(tmp_path, RTX, "lot:memory@numa0")  # used to say "the snapshot has no NUMA node 0"
    assert m.path == "PHB" and m.route[0] == "lot/numa0"


def test_memory_on_a_numa_node_the_source_does_not_record(tmp_path: Path) -> None:
    f = tmp_path / "pair.yaml"
    f.write_text(PAIR.replace("MEMORY", "lot:memory@numa0"))
    r = runner.invoke(app, ["map", str(f), "--probe", f"lot={DGX1}"])
    assert r.exit_code == 2 and r.stderr.replace(str(tmp_path) + "/", "") == (
        "topomap: error: pair.yaml:7: step m: lot:memory@numa0: this source (nvidia-smi) does not record NUMA "
        "nodes, so NUMA node 0 is unknown (hint: place it on lot:memory (the memory nearest each GPU), or use a "
        "snapshot that records them: `nvidia-smi topo -m` of a recent driver (its NUMA Affinity column) or "
        "`topomap probe` on the machine)\n"
    )
    f.write_text(PAIR.replace("MEMORY", "lot:memory@numa3"))
    r = runner.invoke(app, ["map", str(f), "--probe", f"lot={RTX}"])
    assert (
        r.exit_code == 2
        and "pair.yaml:7: step m: lot:memory@numa3: the snapshot has no NUMA node 3 (it has 0, 1)" in (r.stderr)
    )


def test_network_kind_to_a_host_with_no_snapshot_is_unknown() -> None:
    r = runner.invoke(app, ["map", DOC, "--probe", f"lot={DGX1}", "--json"])
    arrows = [a for a in json.loads(r.stdout)["arrows"] if a["to"] == "workstation"]
    assert r.exit_code == 0 and len(arrows) == 2
    for a in arrows:
        assert (a["medium"], a["via"], a["path"], a["bandwidth_gbps"]) == (
            "network",
            "unknown",
            "NET",
            None,
        )  # was rdma
        assert "network kind (RDMA or TCP) unknown: workstation has no snapshot, so its NIC is unknown" in a["notes"]
