"""The graph's node ids and route hops both ways (topomap.graph.nodeid): each maker's id reads back as
its kind and name, a NIC's name (the snapshot's data, so anything a hostile file holds) never confuses a
hop, and an inferred PCI part is said in the same words in the route table and in the notes."""

from __future__ import annotations

import pytest

from tests.conftest import REAL
from topomap.base.errors import TopomapError
from topomap.flow.spec import parse_placement
from topomap.graph import build, nodeid
from topomap.graph.nodeid import (
    FABRIC,
    HOST,
    bare_id,
    gpu_id,
    gpu_index,
    gpu_node,
    hop_node,
    hop_words,
    inferred_host_bridge,
    inferred_port,
    inferred_switch,
    inferred_upper_switch,
    join_hop,
    nic_name,
    nic_node,
    node_kind,
    node_words,
    numa_direct,
    numa_id,
    numa_unknown,
    numa_unknown_part,
    pci_node,
    split_hop,
)
from topomap.graph.query import bottleneck_note
from topomap.importers import import_file
from topomap.model.snapshot import Gpu, Nic
from topomap.plan.links import route_hops
from topomap.render.terminal import short_node

TREE = REAL / "nvidia-smi" / "pcie-8gpu-pix-pxb-switch-tree-vllm11122.txt"  # inferred switches, ports

# real NIC names (RDMA devices, netdevs, a bus id where nothing else names it), then hostile ones
REAL_NICS = ["mlx5_0", "mlx5_11", "ibp24s0", "eth0", "enp1s0f1np1", "bnxt_re0", "0000:17:00.0"]
HOSTILE_NICS = ["nic:x", "a/b", "/", "lot/gpu0", "pci:inferred-sw-gpu0", "gpu3", "numa0", ":"]


def test_each_maker_reads_back_as_its_kind() -> None:
    assert node_kind(HOST) == "host"
    assert node_kind(FABRIC) == "nvswitch"
    assert node_kind(gpu_id(3)) == "gpu" and gpu_index(gpu_id(3)) == 3 and gpu_id(3) == "gpu3"
    assert gpu_node(Gpu(index=12)) == "gpu12" and gpu_index("gpu12") == 12
    for numa in (0, 1, 7, None):
        assert node_kind(numa_id(numa)) == "numa" and numa_unknown(numa_id(numa)) == (numa is None)
    assert numa_id(1) == "numa1" and numa_id(None) == "numa-unknown"
    assert node_kind(numa_unknown_part(2)) == "numa" and numa_unknown(numa_unknown_part(2))
    assert numa_direct(0) == "numa0:direct"
    bus = "0000:17:00.0"
    assert pci_node(bus) == "pci:0000:17:00.0" and node_kind(pci_node(bus)) == "pci"
    assert node_words(pci_node(bus)) == bus and bare_id(pci_node(bus)) == bus
    for dev in ("gpu0", "nic:mlx5_0"):
        assert node_kind(inferred_host_bridge(dev)) == "inferred-host-bridge"
        assert node_kind(inferred_switch(dev)) == "inferred-switch"
        assert node_kind(inferred_upper_switch(dev)) == "inferred-switch"  # a switch over switches
        assert node_kind(inferred_port(dev)) == "inferred-port"
    assert inferred_switch("nic:mlx5_0") == "pci:inferred-sw-nic-mlx5_0"  # ids stay one token each
    # no other kind's reader answers for an id
    for node in (HOST, FABRIC, "numa0", pci_node(bus), inferred_switch("gpu0")):
        assert gpu_index(node) is None and nic_name(node) is None


@pytest.mark.parametrize("name", REAL_NICS + HOSTILE_NICS)
def test_a_nic_id_reads_back_as_its_name_whatever_the_name(name: str) -> None:
    node = nic_node(name)
    assert node == nic_node(Nic(index=0, name=name)) == f"nic:{name}"
    assert node_kind(node) == "nic" and nic_name(node) == name
    assert gpu_index(node) is None and not numa_unknown(node)
    # in a route hop, the NIC's name is never taken for the host or cut at a '/' of its own
    for host in ("lotA", "n1.example", "lot_2-b", "h:1"):
        assert split_hop(join_hop(host, node)) == (host, node)
        assert hop_node(join_hop(host, node)) == node
        assert nic_name(hop_node(join_hop(host, node))) == name


def test_gpu_ids_are_gpu_and_digits_only() -> None:
    assert [gpu_index(x) for x in ("gpu0", "gpu10", "gpu", "gpu-1", "gpux", "gpu٣", "gpus")] == [
        0,
        10,
        None,
        None,
        None,
        None,
        None,
    ]
    assert node_kind("gpus") == "other"


def test_a_hop_splits_at_its_first_slash() -> None:
    assert split_hop("lot/gpu3") == ("lot", "gpu3")
    assert split_hop("lot/nic:a/b") == ("lot", "nic:a/b")
    assert split_hop("workstation") == ("workstation", "")  # a host with no snapshot: its bare name
    assert hop_node("workstation") == ""
    # a host with ':' (a file's name) splits fine; one with '/' cannot be a flow host at all
    assert split_hop(join_hop("a:b", "numa0")) == ("a:b", "numa0")
    with pytest.raises(ValueError, match="'/'"):
        join_hop("a/b", "gpu0")
    with pytest.raises(TopomapError):
        parse_placement("a/b:gpu0", ["a/b"], "f.yaml:3")


def test_hop_words_keep_the_host_and_say_the_node() -> None:
    assert hop_words("lot/pci:inferred-hb-gpu0") == "lot/host bridge (inferred)"
    assert hop_words("lot/pci:inferred-sw-upper-gpu0") == "lot/PCIe switch (inferred)"
    assert hop_words("lot/pci:inferred-port-gpu2") == "lot/switch port (inferred)"
    assert hop_words("lot/pci:0000:17:00.0") == "lot/0000:17:00.0"
    assert hop_words("lot/nic:pci:inferred-sw-x") == "lot/nic:pci:inferred-sw-x"  # a NIC's name, not a part
    assert hop_words("lot/gpu3") == "lot/gpu3" and hop_words("workstation") == "workstation"


def test_inferred_parts_are_said_alike_in_the_route_table_and_the_notes() -> None:
    t = build(import_file(TREE))
    inferred = [n for n in t.graph.nodes if node_kind(n).startswith("inferred-")]
    assert {node_kind(n) for n in inferred} >= {"inferred-switch", "inferred-port"}
    for n in inferred:
        assert t.graph.nodes[n]["inferred"] is True
        words = short_node(join_hop("lot", n)).removeprefix("lot/")  # the route table (topomap map)
        assert words == node_words(n) and "(inferred)" in words
        for peer in t.graph.neighbors(n):
            note = str(bottleneck_note(t.graph, (peer, n)))  # the notes
            assert f"({short_node(join_hop('lot', peer))[4:]} – {words})" in note


def test_plan_hops_read_hostile_nic_names_whole() -> None:
    hops = route_hops({"lot": None, "far": None}, ("lot/gpu0", "lot/nic:a/b", "far/nic:nic:c", "far/gpu1"))
    names = [h.what for h in hops if h.kind == "nic"]
    assert names == ["NIC a/b (out) on lot", "NIC nic:c (in) on far"]


def test_the_module_is_the_graphs_public_face_for_ids() -> None:
    from topomap import graph

    assert graph.FABRIC is nodeid.FABRIC and graph.gpu_node is gpu_node and graph.nic_node is nic_node
