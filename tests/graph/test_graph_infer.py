"""The structure inferred from a bare `nvidia-smi topo -m`: it reproduces every class the file gives
(nested switches where PXB demands them), keeps each GPU on the NUMA node the file records, names only
NUMA nodes users can bind to, and says in a note which cell contradicts the NUMA column."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import REAL, SAMPLES
from tests.fakes.flows import arrow as flow_arrow
from tests.fakes.flows import gpu_pair, step, write_flow
from topomap.api import bind_snapshots
from topomap.base.links import PCIE_CLASSES
from topomap.base.notes import Note
from topomap.flow import parse_flow
from topomap.flow.mapping import MappedArrow, map_flow
from topomap.graph import Topology, build
from topomap.graph.query import numa_of, structural_class
from topomap.graph.routes import route
from topomap.importers import import_file
from topomap.model.snapshot import Gpu, Nic, Pair, Snapshot, Source

SMI = REAL / "nvidia-smi"
H200 = SMI / "hgx-h200-8gpu-10nic-nchc-nano4.txt"  # NUMA 0 for GPU0-3, 1 for GPU4-7, NODE everywhere
TREE = SMI / "pcie-8gpu-pix-pxb-switch-tree-vllm11122.txt"  # GPU0-GPU1 PIX, GPU2 and GPU3 PXB to all
RTX = SMI / "rtx4090-8gpu-2nic-go-gpuallocator17.txt"  # SYS between GPUs of one NUMA node
SETTLE = "`lscpu`, `numactl -H` or `topomap probe` on the machine settles it"


def numa_nodes(t: Topology) -> list[str]:
    return sorted(n for n, d in t.graph.nodes(data=True) if d.get("kind") == "numa")


def assert_every_class(s: Snapshot) -> Topology:
    """Every PCIe class the file gives is the class of the inferred structure, and of the route."""
    t = build(s)
    for p in s.pairs:
        want = p.pcie_path or (p.path if p.path in PCIE_CLASSES else None)
        if want is None:
            continue
        a, b = t.endpoint(p.a), t.endpoint(p.b)
        assert structural_class(t, a, b) == want, (p.a, p.b)
        assert route(t, p.a, p.b).path == want, (p.a, p.b)
    return t


@pytest.mark.parametrize("f", sorted(SMI.glob("*.txt")), ids=lambda f: f.stem)
def test_the_inferred_tree_reproduces_every_class_of_every_real_file(f: Path) -> None:
    assert_every_class(import_file(f))


# --- 1. H200: NODE between the NUMA nodes the column records ----------------------------------------


def test_h200_keeps_numa_0_and_1_as_recorded_and_names_the_conflicting_cell() -> None:
    t = build(import_file(H200))
    assert numa_nodes(t) == ["numa-unknown", "numa0", "numa1"]  # was one node, numa0+1
    assert [numa_of(t, f"gpu{i}") for i in range(8)] == ["numa0"] * 4 + ["numa1"] * 4
    assert numa_of(t, "nic:mlx5_0") == "numa0" and numa_of(t, "nic:mlx5_6") == "numa1"  # PIX to GPU0 / GPU4
    assert numa_of(t, "nic:mlx5_1") == "numa-unknown"  # no column, NODE to both: not guessed
    assert t.notes[0] == (
        "the matrix contradicts the NUMA column: GPU0–NIC6 is NODE (one NUMA node), yet GPU0 is on NUMA 0 and "
        "NIC6 shares a host bridge with GPU4 (NUMA 1); NUMA nodes 0, 1 kept as recorded. Devices NODE to each "
        "other across them may share one socket (sub-NUMA clustering, SNC/NPS), so the link between these nodes "
        f"need not be the inter-socket one; {SETTLE}"
    )
    assert t.notes[1] == (
        "NIC1 (mlx5_1), NIC2 (mlx5_2): NUMA node not recorded, and the matrix puts them NODE to devices of NUMA "
        "nodes 0, 1: drawn on an unknown NUMA node; `topomap probe` on the machine settles it"
    )
    r = route(t, "gpu0", "nic6")
    assert r.path == "NODE" and "numa0" in r.nodes and "numa1" in r.nodes
    assert t.graph.edges["numa0", "numa1"]["matrix_class"] == "NODE"  # for the route's words (query)


def pair(tmp_path: Path, snap: Path, memory: str = "lot:memory") -> list[MappedArrow]:
    flow = parse_flow(gpu_pair(memory), str(tmp_path / "pair.yaml"))
    return map_flow(flow, bind_snapshots(flow, [f"lot={snap}"])).arrows


def test_h200_map_pins_on_numa0_and_takes_memory_on_numa1(tmp_path: Path) -> None:
    m, _ = pair(tmp_path, H200)
    pinned = [n for n in m.notes if isinstance(n, Note) and n.template.startswith("host memory taken on the NUMA node")]
    assert [(n.host, dict(n.subjects)) for n in pinned] == [("lot", {"gpu": "gpu0", "numa": "numa0"})]
    m, _ = pair(tmp_path, H200, "lot:memory@numa1")  # was refused: the snapshot had no NUMA node 1
    assert m.route[0] == "lot/numa1" and m.route[-1] == "lot/gpu0"


# --- 2. nested switches where PXB demands them ------------------------------------------------------


def test_pxb_between_lone_gpus_puts_each_under_a_switch_of_its_own() -> None:
    t = assert_every_class(import_file(TREE))  # GPU2–GPU3 was PIX in the structure
    r = route(t, "gpu0", "gpu2")
    assert r.path == "PXB" and r.nodes == (
        "gpu0",
        "pci:inferred-sw-gpu0",
        "pci:inferred-port-gpu0",
        "pci:inferred-sw-upper-gpu0",
        "pci:inferred-port-gpu2",
        "pci:inferred-sw-gpu2",
        "gpu2",
    )  # was gpu0 → one switch → gpu2: a PIX route for a PXB class
    assert route(t, "gpu0", "gpu1").nodes == ("gpu0", "pci:inferred-sw-gpu0", "gpu1")  # PIX: one switch
    assert structural_class(t, "gpu2", "gpu3") == "PXB"


def test_the_a100_keeps_its_nics_switch_under_the_upper_one() -> None:
    t = assert_every_class(import_file(SMI / "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt"))
    r = route(t, "gpu0", "nic0")
    assert r.path == "PXB" and r.nodes[1] == "pci:inferred-sw-upper-gpu0"
    assert "pci:inferred-sw-gpu0" not in t.graph  # GPU0 and GPU1 are NV12: nothing demands a switch each


# --- 3. 8x RTX 4090: SYS between GPUs of one NUMA node ---------------------------------------------


def test_sys_within_one_numa_node_keeps_the_recorded_node_and_says_so() -> None:
    t = build(import_file(RTX))
    assert numa_nodes(t) == ["numa0", "numa1"]  # was numa0-part1 … numa1-part4
    assert [numa_of(t, f"gpu{i}") for i in range(8)] == ["numa0"] * 4 + ["numa1"] * 4
    r = route(t, "gpu0", "gpu1")
    assert r.path == "SYS" and r.nodes == ("gpu0", "pci:inferred-hb-gpu0", "numa0", "pci:inferred-hb-gpu1", "gpu1")
    assert not any("inter-socket" in n for n in r.notes)  # the file does not say the nodes differ
    assert any("inter-socket" in n for n in route(t, "gpu0", "gpu4").notes)  # it does here: NUMA 0 and 1
    assert t.notes[0] == (
        "the matrix contradicts the NUMA column: GPU0–GPU1 is SYS (crosses the interconnect between NUMA nodes; "
        "5 more cells like it), yet the column puts GPU0 and GPU1 on NUMA 0; kept on NUMA 0 as recorded. SYS "
        "within one NUMA node may mean sub-NUMA clustering (NPS/SNC) that the column folds into one node, or "
        f"firmware that reports the affinity wrongly; {SETTLE}"
    )
    assert t.notes[1].startswith("the matrix contradicts the NUMA column: GPU4–GPU5 is SYS")


def test_map_on_the_4090_names_a_real_numa_node(tmp_path: Path) -> None:
    m, ab = pair(tmp_path, SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json")
    assert m.path == "PHB" and m.route[0] == "lot/numa0"  # was lot/numa0-part1
    assert ab.path == "SYS" and not any("inter-socket" in n for n in ab.notes)


# --- any matrix a tree can print -------------------------------------------------------------------


@st.composite
def tree_matrices(draw: st.DrawFn) -> Snapshot:
    """A matrix from a tree: each device has a (side, host bridge, PXB group, PIX group); the class of two
    devices is the first level where they differ. NUMA nodes are drawn per host bridge, so the column may
    contradict the classes (NODE across nodes, SYS within one); some cells are NV# or missing."""
    n_gpu, n_nic = draw(st.integers(1, 7)), draw(st.integers(0, 3))
    place = [tuple(draw(st.integers(0, 2)) for _ in range(4)) for _ in range(n_gpu + n_nic)]
    numa = {p[:2]: draw(st.sampled_from([0, 1, None])) for p in place}
    ids = [f"gpu{i}" for i in range(n_gpu)] + [f"nic{i}" for i in range(n_nic)]
    pairs = []
    for (i, a), (j, b) in itertools.combinations(enumerate(ids), 2):
        level = next((k for k in range(4) if place[i][k] != place[j][k]), 4)
        cell = draw(st.sampled_from(["class", "class", "class", "NV", "none"]))
        if cell == "none" or (cell == "NV" and not b.startswith("gpu")):
            continue
        path = "NV4" if cell == "NV" else ["SYS", "NODE", "PHB", "PXB", "PIX"][level]
        pairs.append(Pair(a=a, b=b, path=path, nvlinks=4 if cell == "NV" else 0))
    gpus = [Gpu(index=i, numa_node=numa[place[i][:2]]) for i in range(n_gpu)]
    nics = [Nic(index=i, name=f"mlx5_{i}") for i in range(n_nic)]
    return Snapshot(source=Source(kind="nvidia-smi", origin="tree", tool="test"), gpus=gpus, nics=nics, pairs=pairs)


@settings(max_examples=150, deadline=None)
@given(tree_matrices())
def test_any_tree_matrix_is_reproduced_on_its_recorded_numa_nodes(s: Snapshot) -> None:
    t = assert_every_class(s)
    for node in numa_nodes(t):
        assert node.startswith("numa-unknown") or node[4:].isdigit(), node  # no invented parts or joins
    for g in s.gpus:
        if g.numa_node is not None:
            assert numa_of(t, f"gpu{g.index}") == f"numa{g.numa_node}"


def test_h200_numa_crossing_the_matrix_calls_node_is_not_called_inter_socket() -> None:
    """H200 GPU-NIC cells are NODE across the two recorded NUMA nodes: a route from numa1's memory
    to gpu0 crosses between them, and says the matrix puts them on one socket; the B200 file,
    whose cells are SYS across, keeps the inter-socket wording."""
    from topomap.graph import build
    from topomap.graph.query import pcie_leg

    h200 = build(import_file(REAL / "nvidia-smi" / "hgx-h200-8gpu-10nic-nchc-nano4.txt"))
    _, _, _, notes = pcie_leg(h200, "numa1", "gpu0")
    assert "crosses between NUMA nodes the matrix puts on one socket (NODE; bandwidth not recorded)" in notes
    assert not any("inter-socket" in n for n in notes)
    b200 = build(import_file(REAL / "nvidia-smi" / "gcp-gke-a4-b200-8gpu-8nic.txt"))
    assert any("crosses the inter-socket link" in n for n in pcie_leg(b200, "numa1", "gpu0")[3])


def test_h200_memory_on_the_other_numa_node_is_node_as_the_matrix_says(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from topomap.cli import app

    flow = write_flow(
        tmp_path / "f.yaml",
        {"m": step("input", "lot:memory@numa1"), "a": step("compute", "lot:gpu0")},
        [flow_arrow("m", "a")],
        name="h",
    )
    h200 = REAL / "nvidia-smi" / "hgx-h200-8gpu-10nic-nchc-nano4.txt"
    r = CliRunner().invoke(app, ["map", str(flow), "--probe", f"lot={h200}", "--json"])
    arrow = __import__("json").loads(r.stdout)["arrows"][0]
    assert (arrow["medium"], arrow["via"], arrow["path"]) == ("host-memory", "pcie", "NODE")
