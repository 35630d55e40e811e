"""Issue 30 item 8 (NIC half): one table of NIC families (model/nic_ids), one GPUDirect RDMA answer per
NIC (model.facts.nic_gdr) and per GPU (graph.evidence.nearest_nic) — and `show`, `map`, `check`, `diff`,
`nccl` and `place` say the same of every NIC of every shipped snapshot and every real paste."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from tests.conftest import REAL, SAMPLES
from tests.fakes.flows import cross_host, map_text
from topomap.check import Lot, check, parse_requirements
from topomap.diff import diff_snapshots
from topomap.graph import Topology, build
from topomap.graph.evidence import nearest_nic, nics_at_best_class
from topomap.importers import load_any
from topomap.model.facts import nic_family, nic_gdr
from topomap.model.nic_ids import FAMILIES, RDMA_NAMES, family_of_ids, family_of_name, is_rdma_name
from topomap.nccl.predict import predict_snapshot
from topomap.place import place_gpus
from topomap.render.terminal import nic_table
from topomap.transport.rules import NcclEnv

FILES = sorted((SAMPLES / "snapshots").glob("*.json")) + sorted(
    p for p in REAL.rglob("*") if p.suffix in (".txt", ".xml") and "bandwidth" not in p.parts
)
GDR_RULE, _ = parse_requirements("requirements:\n  - gdr_nic: {max_path: SYS}\n", "r.yaml")


def _map_notes(t: Topology, gid: str) -> list[str]:
    """The notes of one network arrow from ``gid`` on host a to the same GPU on host b (same snapshot)."""
    return map_text(cross_host(gid), {"a": t, "b": t}).arrows[0].notes


def _map_says(notes: list[str]) -> str | None:
    """What the arrow's notes say of GPUDirect RDMA on host a (crosshost's three phrasings), or None."""
    for n in notes:
        if n.startswith("GPUDirect RDMA possible on a"):
            return "yes"
        if n.startswith("no GPUDirect RDMA on a"):
            return "no"
        if n.startswith("GPUDirect RDMA on a") and " unknown" in n.split(":")[0]:
            return "unknown"
    return None


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_view_gives_each_gpu_the_same_gpudirect_answer(path: Path) -> None:
    snap = load_any(path)
    t = build(snap)
    gpus = [f"gpu{g.index}" for g in snap.gpus if not g.lost]
    if not gpus:
        return
    said = {gid: nearest_nic(t, gid) for gid in gpus}
    # check: gdr_nic at SYS (the path class never decides it here), one finding per GPU
    result = check(GDR_RULE, [Lot("lot", t)], None).results[0]
    verdict = {f.subject: f.status for f in result.findings}
    status = {"yes": "pass", "no": "fail", "unknown": "unknown"}
    nccl = {n.gpu: n.gdr for n in predict_snapshot(snap, NcclEnv()).nics}
    placed = {g.gid: g.gdr for g in place_gpus(t, len(gpus), nics=True).gpus}
    for gid, choice in said.items():
        ans = choice.gdr.value
        if choice.nic is None and ans == "no":  # no NIC at all: check fails the GPU, as the evidence says
            assert verdict[gid] == "fail", (gid, choice)
        elif verdict[gid] != "unknown" or ans == "unknown":
            assert verdict[gid] == status[ans], (gid, verdict[gid], choice.gdr)
        else:  # check's own unknown: the source lists no NIC
            assert choice.nic is None, (gid, choice)
        # nccl: NCCL's GDR rule (reads may need more), never more sure than the evidence
        if ans == "no" and choice.path is not None:
            assert nccl[gid] == "no", (gid, nccl[gid], choice.gdr)
        if ans == "unknown":
            assert nccl[gid] == "unknown", (gid, nccl[gid], choice.gdr)
        if ans == "yes":
            assert nccl[gid] != "no", (gid, nccl[gid])
        # place: the NIC it gives the GPU is one of its equally near ones, with that one's answer
        options = {c.gdr.value for c in nics_at_best_class(t, gid)}
        assert placed[gid] in options, (gid, placed[gid], options)
        # map: a network arrow from this GPU notes the same answer
        if choice.nic is not None:
            assert _map_says(_map_notes(t, gid)) == ans, (gid, ans, _map_notes(t, gid))
        # show: the NIC's own answer never contradicts the pair's
        if choice.nic is not None:
            own = nic_gdr(choice.nic).value
            assert not (own == "no" and ans != "no") and not (own == "unknown" and ans == "yes"), (gid, own, ans)
    # show's GDR column is nic_gdr, NIC by NIC; diff of a snapshot with itself changes nothing
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(nic_table(snap))
    text = console.export_text()
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.strip()}
    shown = any(line.split()[-1:] == ["GDR"] for line in text.splitlines())  # a column unknown everywhere is left out
    for n in snap.nics:
        assert (rows[f"nic{n.index}"][-1] if shown else "unknown") == nic_gdr(n).value, (n.name, rows[f"nic{n.index}"])
    assert diff_snapshots(snap, snap).changes == []
    for n in snap.nics:
        fam = nic_family(n)
        assert fam.transport in ("infiniband", "roce", "efa", "ethernet", "rdma", "network"), (n.name, fam)
        if n.gdr is None:
            assert nic_gdr(n) == fam.gdr  # nothing said by the source: the family's rule, one decision


def test_one_table_names_every_family_and_rdma_name() -> None:
    """The importers' RDMA name tests and the family table are the same table: every family prefix is an
    RDMA name, ids and names of each row tell the same family, and netdevs are not RDMA names."""
    for row in FAMILIES:
        for prefix in row.names:
            assert prefix in RDMA_NAMES and family_of_name(prefix + "_0") == row.family
        if row.vendor:
            device = row.devices[0] if row.devices else None
            assert family_of_ids(row.vendor, device, rdma=True) == row.family
    assert family_of_ids("0x1d0f", "0xec20") is None  # Amazon's ENA: plain Ethernet, not EFA
    assert family_of_ids("0x15b3", "0x101e", rdma=False) is None  # a ConnectX port without RDMA: Ethernet
    assert is_rdma_name("ibp12s0") and is_rdma_name("rocep1s0f0") and is_rdma_name("rdmap16s27")
    assert not any(is_rdma_name(n) for n in ("ib0", "eth0", "ens5", "enp6s0", "bond0"))


def _nic_text(snap: object) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(nic_table(snap))  # type: ignore[arg-type]
    return console.export_text()


def test_the_line_rate_header_names_a_kind_only_where_every_rate_has_it(tmp_path: Path) -> None:
    """A declared lot's or the catalogue's rate is never spec: its cell says its origin under a plain
    header; a tool's rates (spec, all of them) keep "(spec)" in the header."""
    lot = tmp_path / "lot.yaml"
    lot.write_text("lot: 2x DGX H100\ntype: nvidia/dgx-h100\nhosts: 2\ngpudirect: true\n")
    text = _nic_text(load_any(lot).members[0])
    assert "400 Gb/s (catalogue nvidia/dgx-h100)" in text and "line rate" in text and "spec" not in text
    probed = _nic_text(load_any(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"))
    assert "(spec)" in probed and "200 Gb/s " in probed and "Gb/s spec" not in probed
