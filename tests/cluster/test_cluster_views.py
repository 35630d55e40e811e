"""Every view of a merged cluster says what its alike hosts share once, then the hosts that differ and
how, then where the per-host listing is (issue 34). The cluster: 600 hosts of the shipped 8 × H200
node (samples/snapshots/hgx-h200-8gpu-10nic.json, with the GPU model, driver, PCIe links and NIC
ports its paste would gain from `nvidia-smi --query-gpu` and `ibstat`: bench/synth.py), six of them
different: gpu3 lost from the bus (h00050, h00550), mlx5_0 down (h00150), an older driver (h00250),
gpu5's PCIe link trained at x8 (h00350), gpu0–gpu1 on NV12 instead of NV18 (h00450)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import synth  # noqa: E402

from topomap.cli import app  # noqa: E402
from topomap.cluster.groups import group_hosts  # noqa: E402
from topomap.model.codec import decode_snapshot, encode_snapshot, save_snapshot  # noqa: E402
from topomap.model.pack import decode_pack, is_packed  # noqa: E402
from topomap.model.snapshot import Snapshot  # noqa: E402

ODD = {
    "h00050": "gpu3 lost: yes (the 594 alike: no)",
    "h00550": "gpu3 lost: yes (the 594 alike: no)",
    "h00150": "NIC rates and states: mlx5_0 400 Gbit/s down (the 594 alike: mlx5_0 400 Gbit/s active)",
    "h00250": "driver version: 535.104.05 (the 594 alike: 550.54.15)",
    "h00350": "trained PCIe widths: gpu5 x8 of x16 (the 594 alike: gpu5 x16)",
    "h00450": "NVLink matrix: gpu0–gpu1 NV12 (the 594 alike: gpu0–gpu1 NV18)",
}
ALIKE = "594 hosts alike (8 × NVIDIA H200, NV18 all pairs, 10 NICs, driver 550.54.15)"
REQS = """requirements:
  - gpus: {min_count: 8}
  - driver: {min: "550"}
  - gdr_nic: {max_path: PXB}
  - cluster: {every_host_passes: true, rails_consistent: true}
"""


@pytest.fixture(scope="module")
def merged() -> Snapshot:
    return synth.h200_cluster(600, 6)


@pytest.fixture(scope="module")
def cluster(merged: Snapshot, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cluster") / "cluster.json"
    save_snapshot(merged, out)
    return out


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout


def _differing(text: str) -> None:
    """The six hosts named, each under its group with its difference."""
    assert "Hosts that differ from the 594 alike: 6 hosts in 5 groups" in text
    for host, why in ODD.items():
        assert host in text and f"      {why}\n" in text, host
    assert "group B: 2 hosts alike (7 × NVIDIA H200 (1 lost from the bus), NV18 all pairs" in text


def test_the_grouping_names_the_six_and_how_they_differ(merged: Snapshot) -> None:
    g = group_hosts(merged)
    assert g.main.headline() == ALIKE and len(g.main) == 594 and g.main.hosts[0] == "h00000"
    assert {h: grp.differs[0] for grp in g.others for h in grp.hosts} == ODD
    assert [len(grp) for grp in g.groups] == [594, 2, 1, 1, 1, 1]


def test_show_describes_the_alike_hosts_once(cluster: Path) -> None:
    code, text = _run("show", str(cluster))
    assert code == 0
    assert text.startswith(
        f"Cluster (merge of 600 hosts), 6 groups of alike hosts: {ALIKE}: one description, of h00000\n"
    )
    assert "└── NVSwitch fabric" not in text and "recorded by:" not in text  # the tree and settle: --host
    assert text.count("GPUs: identity") == 1 and text.count("NVIDIA H200") > 8
    _differing(text)
    assert "--host h00000 shows one host in full" in text
    assert len(text.splitlines()) < 80  # a screen and the six


def test_show_host_gives_one_host_in_full(cluster: Path) -> None:
    code, text = _run("show", str(cluster), "--host", "h00150")
    assert code == 0 and text.startswith("h00150 — ")
    assert "└── NVSwitch fabric (inferred)" in text and "recorded by:" in text  # a host in full
    nic0 = next(line for line in text.splitlines() if line.strip().startswith("nic0 "))
    assert "mlx5_0" in nic0 and "down" in nic0
    code, text = _run("show", str(cluster), "--host", "h0015")
    assert code == 2


def test_show_json_round_trips_every_host_with_its_groups(cluster: Path, merged: Snapshot) -> None:
    r = CliRunner().invoke(app, ["show", str(cluster), "--json"])
    assert r.exit_code == 0
    data = r.stdout_bytes
    assert is_packed(data)
    head = json.loads(data.split(b"\n", 1)[0])
    groups = head["groups"]
    assert [len(g["hosts"]) for g in groups] == [594, 2, 1, 1, 1, 1] and groups[0]["summary"] in ALIKE
    assert sum(len(g["hosts"]) for g in groups) == 600 and groups[3]["differs"] == [ODD["h00250"]]
    back = decode_snapshot(data, "show.json")
    assert encode_snapshot(back) == encode_snapshot(merged)  # every host, every field
    assert decode_pack(data, "show.json").members[450].pairs[0].path == "NV12"


def test_matrix_once_and_the_rows_that_differ(cluster: Path) -> None:
    code, text = _run("matrix", str(cluster))
    assert code == 0 and text.count("\nGPU0\t") == 1 and "594 hosts alike" in text
    _differing(text)
    assert "      GPU0\t X \tNV12\tNV18" in text and text.count("its matrix: the same") == 4
    code, raw = _run("matrix", str(cluster), "--json")
    doc = json.loads(raw)
    assert doc["hosts"] == 600 and doc["groups"][5]["hosts"] == ["h00450"]
    assert doc["groups"][5]["matrix"] != doc["groups"][0]["matrix"]
    code, text = _run("matrix", str(cluster), "--host", "h00450")
    assert code == 0 and text.startswith("\tGPU0\tGPU1") and "GPU0\t X \tNV12" in text


def test_nccl_predicts_once_and_one_cross_host_line_per_rail(cluster: Path) -> None:
    code, text = _run("nccl", str(cluster))
    assert code == 0 and f"{ALIKE}: one prediction, of h00000" in text
    assert "Inside each host: predicted for 56 rank pairs: 56 P2P (p2p-nvlink)" in text
    across = text[text.index("Across hosts:") : text.index("PXN:")]
    rails = [line.split() for line in across.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rails] == [str(k) for k in range(8)]  # one line per rail
    assert all(r[6] == "A->A" and r[7] == "NET+GDR" for r in rails)
    assert "  0      gpu0->gpu0 of the next host   A->A     NET+GDR     via mlx5_0 with GPUDirect RDMA" in across
    _differing(text)
    assert "its prediction: rail 0 (gpu0, group C to A): NET via mlx5_1, staged through host memory" in text
    assert len(text.splitlines()) < 90


def test_nccl_json_keeps_every_pair_of_every_host(cluster: Path) -> None:
    code, raw = _run("nccl", str(cluster), "--json")
    assert code == 0
    doc = json.loads(raw)
    pairs = doc["pairs"]
    inside = [p for p in pairs if p["src_gpu"].split(":")[0] == p["dst_gpu"].split(":")[0]]
    assert len(inside) == 594 * 56 + 6 * 56 and len(pairs) - len(inside) == 2 * 8 * 599
    assert {p["src_gpu"].split(":")[0] for p in pairs} == {f"h{i:05d}" for i in range(600)}
    assert len(doc["nics"]) == len(doc["features"]) == 600 * 8
    assert [len(g["hosts"]) for g in doc["groups"]] == [594, 2, 1, 1, 1, 1]
    rail0 = [a for a in doc["across"] if a["rail"] == 0 and a["src_group"] == a["dst_group"] == "A"]
    assert rail0[0]["predicted"] == "NET+GDR" and rail0[0]["detail"] == "via mlx5_0 with GPUDirect RDMA"
    assert sum(a["pairs"] for a in doc["across"]) == len(pairs) - len(inside)


def test_nccl_host_gives_its_pairs_and_its_ring_neighbours(cluster: Path) -> None:
    code, raw = _run("nccl", str(cluster), "--host", "h00150", "--json")
    assert code == 0
    doc = json.loads(raw)
    assert doc["group"] == "C" and len(doc["pairs"]) == 56 + 4 * 8
    assert {p["src_rank"] for p in doc["pairs"] if p["src_gpu"] == "h00150:gpu0"} == {1200}
    to_next = next(p for p in doc["pairs"] if p["src_rank"] == 1200 and p["dst_rank"] == 1208)
    assert to_next["predicted"] == "NET" and to_next["dst_gpu"] == "h00151:gpu0"


def test_check_gives_a_rules_result_per_group(cluster: Path, tmp_path: Path) -> None:
    reqs = tmp_path / "reqs.yaml"
    reqs.write_text(REQS)
    code, text = _run("check", str(reqs), str(cluster))
    assert code == 1 and text.startswith("FAIL: ")
    assert "600 hosts in 6 groups of alike hosts: each rule's result once per group" in text
    assert "FAIL     driver [group D: h00250]: driver ≥ 550 — driver 535.104.05 < 550\n" in text
    assert "PASS     driver [groups A, B, C, E, F: 599 hosts]: driver ≥ 550\n" in text
    assert "FAIL     gpus [group B: h00050, h00550]: ≥ 8 GPUs" in text
    assert "FAIL     gdr_nic [group C: h00150]:" in text and "nearest usable NIC mlx5_1 is NODE" in text
    assert "h00050, h00550: fails gpus, gdr_nic" in text  # every_host_passes names them
    _differing(text)
    code, raw = _run("check", str(reqs), str(cluster), "--json")
    doc = json.loads(raw)
    assert code == 1 and len(doc["rules"]) == 3 * 600 + 2  # every host's rules, then the cluster's
    assert {r["lot"]: r["status"] for r in doc["rules"] if r["rule"] == "driver"}["h00250"] == "fail"
    assert [g["label"] for g in doc["groups"]] == ["A", "B", "C", "D", "E", "F"]
    code, text = _run("check", str(reqs), str(cluster), "--host", "h00250")
    assert code == 1 and "driver [h00250]" in text and "[h00251]" not in text


def test_diff_compares_each_pair_of_groups_once(cluster: Path, tmp_path: Path) -> None:
    other = tmp_path / "b.json"
    save_snapshot(synth.h200_cluster(600, 6, shift=1), other)
    code, text = _run("diff", str(cluster), str(other))
    assert code == 1 and text.startswith("600 host(s) in both; 12 differ")
    assert "588 hosts alike in A and in B (A's group A, B's group A): one comparison, of h00000" in text
    assert "1 host (A's group D, B's group A): h00250\n      B differs from A.\n        software: driver" in text
    code, raw = _run("diff", str(cluster), str(other), "--json")
    doc = json.loads(raw)
    assert len(doc["hosts"]) == 600 and doc["hosts"]["h00451"]["summary"].startswith("A:h00451 is better")
    assert sum(len(g["hosts"]) for g in doc["groups"]) == 600 and len(doc["groups"]) == 11
    code, text = _run("diff", str(cluster), str(other), "--host", "h00450")
    assert code == 1 and "B:h00450 is better than A:h00450" in text and "gpu0–gpu1: NV12 → NV18" in text


def test_place_once_per_group(cluster: Path) -> None:
    code, text = _run("place", str(cluster), "--gpus", "8")
    assert code == 0 and f"{ALIKE}: one placement, of h00000" in text
    assert "its placement: cannot place: 8 GPUs asked, 7 usable of 8" in text  # the lost GPU
    code, raw = _run("place", str(cluster), "--gpus", "8", "--json")
    doc = json.loads(raw)
    assert doc["groups"][0]["placement"]["gpus"] == [f"gpu{i}" for i in range(8)]
    assert "error" in doc["groups"][1]["placement"] and doc["groups"][1]["hosts"] == ["h00050", "h00550"]
    code, text = _run("place", str(cluster), "--gpus", "4", "--host", "h00150", "--nics")
    assert code == 0 and text.startswith("4 GPU(s) for pattern tp with a NIC each: gpu4, gpu5, gpu6, gpu7")


def test_all_lists_every_host(tmp_path: Path) -> None:
    small = tmp_path / "small.json"
    save_snapshot(synth.h200_cluster(12, 2), small)
    code, text = _run("show", str(small), "--all")
    assert code == 0 and text.count("GPUs: identity") == 12
    code, text = _run("matrix", str(small), "--all")
    assert code == 0 and text.count("# h000") == 12


def test_a_host_differing_in_a_field_no_fact_covers_is_named_by_the_field(merged: Snapshot) -> None:
    h = merged.members[7]
    odd = msgspec.structs.replace(h, host=msgspec.structs.replace(h.host, cpu_model="AMD EPYC 9654"))
    g = group_hosts(msgspec.structs.replace(merged, members=[*merged.members[:7], odd, *merged.members[8:]]))
    b = next(x for x in g.others if x.hosts == ("h00007",))
    assert b.differs == ("host cpu model: AMD EPYC 9654 (the 593 alike: none)",)


def test_the_views_bench_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """bench/views.py stays runnable (the real sizes, 512 to 10,000 hosts, are `python bench/views.py`'s):
    two views on 4 hosts, alike and with one host apart, each in its own process."""
    import views

    rc = views.main(["--hosts", "4", "--views", "show", "nccl", "--work", str(tmp_path)])
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(("show ", "nccl "))]
    assert rc == 0 and len(rows) == 4, out
    assert all(float(r[-7]) > 0 and int(r[-1]) > 10 for r in rows)  # wall seconds, lines printed


def test_the_fast_json_writer_lays_out_as_every_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    """cli/cluster_views.print_json_fast (nccl --json of a cluster) writes what _print_json writes:
    lists filled chunk by chunk, empty lists and chunks, non-ASCII escaped (surrogate pairs above U+FFFF)."""
    from topomap.cli.cluster_views import print_json_fast
    from topomap.cli.wiring import _print_json

    head = {"a": 1, "pairs": [], "mid": {"x": [1, {}], "y": "é–😀"}, "empty": [], "z": None}
    chunks = [[{"r": 1, "s": "h–1", "t": []}], [], [{"r": 2, "s": "b\\x1b", "t": [True, None]}]]
    whole = {**head, "pairs": [x for c in chunks for x in c]}
    _print_json(whole)
    want = capsys.readouterr().out
    print_json_fast(head, {"pairs": iter(chunks), "empty": iter([[], []])})
    assert capsys.readouterr().out == want
