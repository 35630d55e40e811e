"""`topomap cluster`: hosts by shape, where they differ, rails, NVLink cliques, outliers with reasons.

The hosts are real probes (fake NVML, CUDA and sysfs of an HGX H100: tests/fakes/machines.py) of
machines changed one way each: one on an older driver, one whose gpu3 trained at x8 of x16 (the
probe reads the width and raises its pcie-downtrained finding), one whose NICs mlx5_0 and mlx5_2
sit in each other's slots (so rail 0 is another NIC there). Also a real sample (IBM gx3d H100) and
an import that cannot carry the NVLink fabric.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from tests.conftest import run_probe
from tests.fakes import machines
from tests.fakes.flows import arrow, step, write_flow
from tests.fakes.machine import FakeMachine
from topomap.cli import app
from topomap.cluster import ClusterReport, analyse
from topomap.model.codec import load_snapshot, save_snapshot
from topomap.model.merge import merge
from topomap.model.snapshot import Finding, Snapshot
from topomap.render.cluster_view import cluster_view

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "snapshots"


def _named(s: Snapshot, name: str) -> Snapshot:
    return msgspec.structs.replace(s, host=msgspec.structs.replace(s.host, hostname=name))


def _old_driver(m: FakeMachine) -> FakeMachine:
    return dataclasses.replace(m, driver="535.104.05")


def _gpu3_x8(m: FakeMachine) -> FakeMachine:
    gpus = [dataclasses.replace(g, pcie=(5, 8, 5, 16)) if i == 3 else g for i, g in enumerate(m.gpus)]
    return dataclasses.replace(m, gpus=gpus)


def _nics_swapped(m: FakeMachine) -> FakeMachine:
    swap = {"mlx5_0": "mlx5_2", "mlx5_2": "mlx5_0"}
    return dataclasses.replace(m, nics=[dataclasses.replace(n, name=swap.get(n.name, n.name)) for n in m.nics])


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Snapshot]:
    base = machines.hgx_h100()
    variants = {"node01": _old_driver, "node02": _gpu3_x8, "node03": _nics_swapped}
    out = {}
    for i in range(6):
        name = f"node{i:02d}"
        m = variants[name](base) if name in variants else base
        out[name] = _named(run_probe(m, tmp_path_factory.mktemp(name)).snapshot, name)
    return out


@pytest.fixture(scope="module")
def merged(hosts: dict[str, Snapshot]) -> Snapshot:
    return merge(list(hosts.items()))


@pytest.fixture(scope="module")
def report(merged: Snapshot) -> ClusterReport:
    return analyse(merged)


def test_outliers_are_named_with_their_reasons(report: ClusterReport) -> None:
    reasons = {o.host: o.reasons for o in report.outliers}
    assert sorted(reasons) == ["node01", "node02", "node03"]
    assert reasons["node01"] == ["driver version: 535.104.05 (most hosts: 550.54.15)"]
    assert "trained PCIe widths: gpu3 x8 of x16 (most hosts: gpu3 x16)" in reasons["node02"]
    assert reasons["node02"] == ["trained PCIe widths: gpu3 x8 of x16 (most hosts: gpu3 x16)"]
    (rail,) = [r for r in reasons["node03"] if r.startswith("GPU↔NIC rails")]
    assert "gpu0→mlx5_1/mlx5_2 PIX (most hosts: gpu0→mlx5_0/mlx5_1 PIX)" in rail
    assert "gpu2→mlx5_0/mlx5_3 PIX (most hosts: gpu2→mlx5_2/mlx5_3 PIX)" in rail


def test_shapes_group_hosts_of_one_build(report: ClusterReport) -> None:
    """The swapped-NIC host is its own shape (its rails differ); driver and link width are per-host
    facts, not shape: the other five are one shape."""
    assert [(s.label, s.hosts) for s in report.shapes] == [
        ("A", ["node00", "node01", "node02", "node04", "node05"]),
        ("B", ["node03"]),
    ]
    a = report.shapes[0]
    assert a.gpus == "8 × NVIDIA H100 80GB HBM3 (80.0 GiB)"
    assert a.nvlink == "28 GPU pairs on NVLink: 28 × NV18"
    assert a.pcie_tree == "8 GPUs under host-bridge>bridge>switch-upstream>switch-downstream; " + (
        "8 NICs under host-bridge>bridge>switch-upstream>switch-downstream"
    )


def test_rails_inconsistent_names_the_host_and_the_rail(report: ClusterReport) -> None:
    assert report.rails.consistent is False
    rail0 = report.rails.rails[0]
    assert rail0.gpu == "gpu0" and not rail0.same_on_every_host
    assert [(p.value, p.hosts) for p in rail0.positions] == [
        ("mlx5_0/mlx5_1 PIX", ["node00", "node01", "node02", "node04", "node05"]),
        ("mlx5_1/mlx5_2 PIX", ["node03"]),
    ]
    assert report.rails.rails[4].same_on_every_host  # gpu4's NICs (mlx5_4/5) are where they were


def test_one_nvlink_clique_and_facts_that_agree(report: ClusterReport) -> None:
    assert report.fabric.one_clique is True
    assert [(c.cluster_uuid, c.clique_id, len(c.hosts)) for c in report.fabric.cliques] == [
        ("00000000-0000-0000-0000-0000000000c1", 32766, 6)
    ]
    cuda = report.fact("cuda")
    assert (cuda.common, cuda.common_hosts, cuda.others, cuda.unknown) == ("12.4", 6, [], [])
    assert report.fact("nvlink").others == []


def test_health_findings_outlier(hosts: dict[str, Snapshot]) -> None:
    """A warning only one host has (the probe's ACS finding, as health.py writes it) makes it an outlier."""
    acs = Finding(kind="acs-redirect", subject="gpu0-gpu1", severity="warning", text="ACS redirects P2P")
    odd = msgspec.structs.replace(hosts["node05"], findings=[*hosts["node05"].findings, acs])
    r = analyse(merge([("a", hosts["node00"]), ("b", hosts["node04"]), ("c", odd)]))
    assert [(o.host, o.reasons) for o in r.outliers] == [
        ("node05", ["health findings: warning acs-redirect gpu0-gpu1 (most hosts: no warning or error)"])
    ]


def test_fabric_unknown_when_a_source_cannot_carry_it(hosts: dict[str, Snapshot]) -> None:
    """A host imported from `nvidia-smi topo -m` has no fabric: unknown, not "not in the clique"."""
    imported = _named(load_snapshot(SAMPLES / "hgx-h200-8gpu-10nic.json"), "imp01")
    r = analyse(merge([("a", hosts["node00"]), ("b", hosts["node04"]), ("c", imported)]))
    assert r.fabric.one_clique is None
    assert r.fabric.unknown == ["imp01"]
    assert "imp01" not in r.fabric.not_ready


def test_real_sample_cluster_view_and_json(tmp_path: Path) -> None:
    """Three copies of the IBM gx3d H100 sample, one on another driver: the command's page and JSON."""
    base = load_snapshot(SAMPLES / "ibm-gx3d-h100-8gpu.json")
    snaps = []
    for i, drv in enumerate(["550.54.15", "550.54.15", "535.104.05"]):
        s = _named(base, f"gx3d-{i}")
        snaps.append(
            (
                s.host.hostname or "",
                msgspec.structs.replace(s, software=msgspec.structs.replace(s.software, driver_version=drv)),
            )
        )
    path = tmp_path / "cluster.json"
    save_snapshot(merge(snaps), path)
    res = CliRunner().invoke(app, ["cluster", str(path)])
    assert res.exit_code == 0, res.output
    assert "Cluster: 3 hosts, 1 shape(s), 1 outlier(s)" in res.output
    assert "  driver version: 535.104.05 (most hosts: 550.54.15): gx3d-2\n" in res.output
    assert "gpu0: mlx5_7 PIX on every host" in res.output
    assert "NVLink fabric: cannot be told" in res.output
    js = CliRunner().invoke(app, ["cluster", str(path), "--json"])
    doc = json.loads(js.output)
    assert doc["schema"] == "topomap.cluster/1" and doc["hosts"] == 3
    assert doc["outliers"] == [{"host": "gx3d-2", "reasons": ["driver version: 535.104.05 (most hosts: 550.54.15)"]}]
    assert [f["fact"] for f in doc["facts"]] == [
        "gpus", "nvlink", "rails", "pcie_tree", "driver", "cuda", "pcie_widths", "nics", "fabric", "health",
    ]  # fmt: skip


def test_long_names_are_never_cut(hosts: dict[str, Snapshot]) -> None:
    long = "gpu-node-" + "x" * 200
    snaps = [("a", hosts["node00"]), ("b", hosts["node04"]), ("c", _named(hosts["node01"], long))]
    lines = cluster_view(analyse(merge(snaps)))
    assert any(line.endswith(f": {long}") for line in lines)


def test_one_host_snapshot_is_refused(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["cluster", str(SAMPLES / "dgx1-v100.json")])
    assert res.exit_code == 2
    assert "one host's snapshot, not a merged cluster" in res.output
    assert "Traceback" not in res.output


# --- check: the cluster rule ---------------------------------------------------------------------


def _check(tmp_path: Path, merged: Snapshot, rules: str) -> tuple[int, dict[str, object]]:
    path, reqs = tmp_path / "cluster.json", tmp_path / "req.yaml"
    save_snapshot(merged, path)
    reqs.write_text(rules)
    res = CliRunner().invoke(app, ["check", str(reqs), "--probe", str(path), "--json"])
    assert "Traceback" not in res.output
    doc: dict[str, object] = json.loads(res.output)
    return res.exit_code, doc


def _cluster_results(doc: dict[str, object]) -> list[tuple[str, str]]:
    rules = doc["rules"]
    assert isinstance(rules, list)
    return [(r["status"], r["summary"]) for r in rules if r["rule"] == "cluster"]


def test_check_rails_consistent_fails_naming_the_host(tmp_path: Path, merged: Snapshot) -> None:
    rc, doc = _check(tmp_path, merged, "requirements:\n  - cluster: {rails_consistent: true}\n")
    assert rc == 1
    assert _cluster_results(doc) == [("fail", "1 host(s) differ: node03")]


def test_check_every_host_passes_names_the_failing_hosts(tmp_path: Path, merged: Snapshot) -> None:
    rules = (
        "requirements:\n  - driver: {min: '550'}\n  - gpus: {min_count: 8}\n"
        "  - cluster: {every_host_passes: true, one_nvlink_clique: true}\n"
    )
    rc, doc = _check(tmp_path, merged, rules)
    assert rc == 1
    assert _cluster_results(doc) == [
        ("fail", "node01: fails driver"),
        ("pass", "all 6 hosts in clique 00000000-0000-0000-0000-0000000000c1/32766"),
    ]


def test_check_one_clique_unknown_not_fail_for_a_host_without_fabric(
    tmp_path: Path, hosts: dict[str, Snapshot]
) -> None:
    imported = _named(load_snapshot(SAMPLES / "hgx-h200-8gpu-10nic.json"), "imp01")
    cluster = merge([("a", hosts["node00"]), ("b", hosts["node04"]), ("c", imported)])
    rc, doc = _check(tmp_path, cluster, "requirements:\n  - cluster: {one_nvlink_clique: true}\n")
    assert rc == 3
    assert _cluster_results(doc) == [("unknown", "fabric not recorded by the source of 1 host(s)")]
    rules = doc["rules"]
    assert isinstance(rules, list)
    assert rules[0]["settle"] == ["`nvidia-smi -q` (section Fabric) or `topomap probe`"]


def test_check_cluster_rule_without_an_option_is_a_one_line_error(tmp_path: Path, merged: Snapshot) -> None:
    path, reqs = tmp_path / "cluster.json", tmp_path / "req.yaml"
    save_snapshot(merged, path)
    reqs.write_text("requirements:\n  - cluster: {}\n")
    res = CliRunner().invoke(app, ["check", str(reqs), "--probe", str(path)])
    assert res.exit_code == 2
    assert f"{reqs}:2: rule cluster sets no option to true" in res.output


def test_html_report_has_the_cluster_section(tmp_path: Path, merged: Snapshot) -> None:
    """A flow bound to the merged cluster: the report's Cluster section names the outliers and why."""
    path, flow = tmp_path / "cluster.json", tmp_path / "flow.yaml"
    save_snapshot(merged, path)
    names = [f"node{i:02d}" for i in range(6)]
    steps = {f"s{i}": step("compute", f"{n}:gpu0") for i, n in enumerate(names)}
    write_flow(flow, steps, [arrow("s0", "s1", "1 GiB")], name="spread", hosts=dict.fromkeys(names))
    out = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["report", str(flow), "--probe", str(path), "-o", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert "<h2>Cluster</h2>" in page
    assert "<p>6 hosts, 2 shape(s), 3 outlier(s)" in page
    assert "<tr><td>node01</td><td>driver version: 535.104.05 (most hosts: 550.54.15)</td></tr>" in page
    assert "Rails (rail i: GPU i's nearest RDMA NIC): not consistent." in page


def test_no_value_held_by_most_hosts_blames_no_host(tmp_path: Path) -> None:
    """Two different real machines merged (IBM gx3d H100 and the NCHC H200 paste): a 1–1 split has no
    "most hosts" value, so no host is an outlier and check's rails rule names no host as the odd one."""
    samples = Path(__file__).parents[2] / "samples" / "snapshots"
    runner = CliRunner()
    out = tmp_path / "two.json"
    r = runner.invoke(
        app,
        ["merge", f"node-a={samples / 'ibm-gx3d-h100-8gpu.json'}", f"node-b={samples / 'hgx-h200-8gpu-10nic.json'}",
         "-o", str(out)],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    rep = analyse(load_snapshot(out))
    rails = rep.fact("rails")
    assert rails.common is None and {h for o in rails.others for h in o.hosts} == {"node-a", "node-b"}
    assert not rep.outliers
    text = "\n".join(cluster_view(rep))
    assert "GPU↔NIC rails: no value held by most of the 2 hosts" in text and "most hosts:" not in text
    reqs = tmp_path / "reqs.yaml"
    reqs.write_text("requirements:\n  - cluster: {rails_consistent: true}\n")
    chk = runner.invoke(app, ["check", str(reqs), str(out), "--json"])
    rule = json.loads(chk.stdout)["rules"][0]
    assert (
        rule["status"] == "fail" and "none held by most" in rule["summary"] and "host(s) differ" not in rule["summary"]
    )
