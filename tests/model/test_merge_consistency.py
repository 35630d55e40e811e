"""merge checks a cluster for consistency: driver, GPUs, GPU↔NIC rails, NIC rates and states,
NVLink fabric cliques. Hosts are one fake probe of an HGX H100 with one thing changed each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from tests.conftest import run_probe
from tests.fakes import machines
from topomap.cli import app
from topomap.model.codec import encode_snapshot
from topomap.model.merge import NOTE, consistency, merge, merge_reported
from topomap.model.snapshot import Fabric, Snapshot

Change = Callable[[Snapshot], Snapshot]


@pytest.fixture(scope="module")
def hgx(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return run_probe(machines.hgx_h100(), tmp_path_factory.mktemp("hgx")).snapshot


def host(base: Snapshot, name: str, change: Change | None = None) -> Snapshot:
    s = msgspec.structs.replace(base, host=msgspec.structs.replace(base.host, hostname=name))
    return change(s) if change else s


def cluster(base: Snapshot, changes: dict[str, Change]) -> list[Snapshot]:
    """node00..node05, the named ones changed."""
    return [host(base, f"node{i:02d}", changes.get(f"node{i:02d}")) for i in range(6)]


def with_nic(s: Snapshot, index: int, **kw: object) -> Snapshot:
    nics = [msgspec.structs.replace(n, **kw) if n.index == index else n for n in s.nics]
    return msgspec.structs.replace(s, nics=nics)


def test_identical_hosts_are_consistent(hgx: Snapshot) -> None:
    assert consistency(cluster(hgx, {})) == []


def test_driver_version_outlier(hgx: Snapshot) -> None:
    def old(s: Snapshot) -> Snapshot:
        return msgspec.structs.replace(s, software=msgspec.structs.replace(s.software, driver_version="535.104.05"))

    assert consistency(cluster(hgx, {"node03": old})) == ["driver version: node03 535.104.05; 5 of 6 hosts 550.54.15"]


def test_nic_rate_and_state_outliers(hgx: Snapshot) -> None:
    lines = consistency(
        cluster(
            hgx,
            {
                "node01": lambda s: with_nic(s, 3, speed_gbit_s=200.0),
                "node04": lambda s: with_nic(s, 5, state="down"),
            },
        )
    )
    assert lines == [
        "NIC mlx5_3 line rate: node01 200 Gbit/s (as the host reports it); "
        "5 of 6 hosts 400 Gbit/s (as the host reports it)",
        "NIC state: mlx5_5 down on node04",
    ]


def test_rail_layout_outlier_names_the_gpus_that_differ(hgx: Snapshot) -> None:
    """Two NICs on one PCIe switch swapping names is no rail change; a GPU whose nearest NICs
    are farther than on the other hosts is, and the line names that GPU."""

    def swapped(s: Snapshot) -> Snapshot:
        names = {"mlx5_0": "mlx5_1", "mlx5_1": "mlx5_0"}
        return msgspec.structs.replace(
            s, nics=[msgspec.structs.replace(n, name=names.get(n.name, n.name)) for n in s.nics]
        )

    base_rails = consistency(cluster(hgx, {"node02": swapped}))
    assert base_rails == []  # both NICs are PIX to gpu0 and gpu1: the layout is the same

    def moved(s: Snapshot) -> Snapshot:  # gpu0's switch lost its NICs: rail falls back to another switch
        pairs = [
            msgspec.structs.replace(p, path="NODE", pcie_path="NODE")
            if {p.a, p.b} in ({"gpu0", "nic0"}, {"gpu0", "nic1"})
            else p
            for p in s.pairs
        ]
        return msgspec.structs.replace(s, pairs=pairs)

    lines = consistency(cluster(hgx, {"node02": moved}))
    assert len(lines) == 1
    assert lines[0].startswith("GPU↔NIC rail layout: node02 differs from 5 of 6 hosts: gpu0→")
    assert lines[0].endswith("(most hosts: mlx5_0/mlx5_1 PIX)")


def test_unknown_is_not_an_outlier(hgx: Snapshot) -> None:
    def imported(s: Snapshot) -> Snapshot:
        return msgspec.structs.replace(s, software=msgspec.structs.replace(s.software, driver_version=None))

    assert consistency(cluster(hgx, {"node05": imported})) == [
        "driver version: unknown on node05 (not in their source)"
    ]


def test_fabric_cliques_keyed_by_cluster_and_clique(hgx: Snapshot) -> None:
    def clique(cluster_uuid: str, clique_id: int, state: str = "completed") -> Change:
        def change(s: Snapshot) -> Snapshot:
            f = Fabric(cluster_uuid=cluster_uuid, clique_id=clique_id, state=state, status="success")  # type: ignore[arg-type]
            return msgspec.structs.replace(s, gpus=[msgspec.structs.replace(g, fabric=f) for g in s.gpus])

        return change

    same_id_other_cluster = clique("11111111-0000-0000-0000-000000000000", 32766)
    lines = consistency(cluster(hgx, {"node04": same_id_other_cluster, "node05": same_id_other_cluster}))
    base = hgx.gpus[0].fabric
    assert base is not None
    assert base.cluster_uuid == "00000000-0000-0000-0000-0000000000c1"
    assert lines == [  # same clique id, different cluster UUID: two cliques
        "NVLink fabric: clique 00000000-0000-0000-0000-0000000000c1/32766: node00, node01, node02, node03",
        "NVLink fabric: clique 11111111-0000-0000-0000-000000000000/32766: node04, node05",
    ]

    def half(s: Snapshot) -> Snapshot:
        gpus = list(s.gpus)
        gpus[7] = msgspec.structs.replace(
            gpus[7], fabric=Fabric(cluster_uuid=base.cluster_uuid, clique_id=1, state="completed", status="success")
        )
        gpus[6] = msgspec.structs.replace(
            gpus[6], fabric=Fabric(cluster_uuid=base.cluster_uuid, clique_id=32766, state="in-progress")
        )
        return msgspec.structs.replace(s, gpus=gpus)

    lines = consistency(cluster(hgx, {"node01": half}))
    assert lines[0].startswith("NVLink fabric: node01 gpu6 state in-progress, status unknown (not ready")
    assert lines[1] == f"NVLink fabric: node01 has GPUs in 2 cliques ({base.cluster_uuid}/1, {base.cluster_uuid}/32766)"


def test_merge_records_the_notes_and_the_cli_prints_them(hgx: Snapshot, tmp_path: Path) -> None:
    hosts = cluster(hgx, {"node01": lambda s: with_nic(s, 3, speed_gbit_s=200.0, state="down")})
    merged, found = merge_reported([(f"{h.host.hostname}.json", h) for h in hosts])
    assert found == consistency(hosts) and len(found) == 2
    assert merged == merge([(f"{h.host.hostname}.json", h) for h in hosts])
    assert [n for n in merged.source.notes if n.startswith(NOTE)] == [NOTE + line for line in found]  # the file's
    files = []
    for h in hosts:
        f = tmp_path / f"{h.host.hostname}.json"
        f.write_bytes(encode_snapshot(h))
        files.append(str(f))
    r = CliRunner().invoke(app, ["merge", *files, "-o", str(tmp_path / "cluster.json")])
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines() == [
        "topomap: merge: NIC mlx5_3 line rate: node01 200 Gbit/s (as the host reports it); "
        "5 of 6 hosts 400 Gbit/s (as the host reports it)",
        "topomap: merge: NIC state: mlx5_3 down on node01",
        f"wrote {tmp_path / 'cluster.json'}: 6 hosts, 2 consistency note(s)",
    ]


def test_merge_output_is_byte_identical_across_hash_seeds(hgx: Snapshot, tmp_path: Path) -> None:
    import subprocess
    import sys

    hosts = cluster(
        hgx, {"node01": lambda s: with_nic(s, 3, speed_gbit_s=200.0), "node04": lambda s: with_nic(s, 5, state="down")}
    )
    files = []
    for h in reversed(hosts):  # given out of order: the output is sorted by host
        f = tmp_path / f"{h.host.hostname}.json"
        f.write_bytes(encode_snapshot(h))
        files.append(str(f))
    outs = []
    for seed in ("0", "1", "4242"):
        out = tmp_path / f"cluster-{seed}.json"
        env = {"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}
        r = subprocess.run(
            [sys.executable, "-m", "topomap", "merge", *files, "-o", str(out)], env=env, capture_output=True, timeout=60
        )
        assert r.returncode == 0, r.stderr
        outs.append((out.read_bytes(), r.stderr.replace(str(out).encode(), b"OUT")))
    assert outs[0] == outs[1] == outs[2]


def test_fabric_readiness_is_the_one_check_asks(hgx: Snapshot) -> None:
    """merge used its own readiness test and grouped hosts whose GPUs registered clique id 0 as one
    clique, while `check`'s fabric_ready fails them (never registered in a clique). One function now."""
    from topomap.model.facts import fabric_ready

    def zero(s: Snapshot) -> Snapshot:
        uuid = "00000000-0000-0000-0000-0000000000c1"
        f = Fabric(cluster_uuid=uuid, clique_id=0, state="completed", status="success")
        return msgspec.structs.replace(s, gpus=[msgspec.structs.replace(g, fabric=f) for g in s.gpus])

    hosts = cluster(hgx, {"node02": zero})
    lines = consistency(hosts)
    node02 = next(h for h in hosts if h.host.hostname == "node02")
    ready = fabric_ready(node02, node02.gpus[0])
    assert ready.no
    assert f"NVLink fabric: node02 gpu0 state completed, status success (not ready: {ready.why()}" in "\n".join(lines)
    assert not any("clique" in ln and "/0:" in ln for ln in lines)
