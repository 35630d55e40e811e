"""diff: semantic changes between two lots, index and structure matching, under a flow."""

from __future__ import annotations

from pathlib import Path

import msgspec
from typer.testing import CliRunner

from tests.conftest import SAMPLES, run_probe
from tests.fakes import machines
from topomap.cli import app
from topomap.diff import diff_flow, diff_snapshots
from topomap.importers import import_file, load_any
from topomap.model import P2P, Snapshot, save_snapshot

runner = CliRunner()
IBM = SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"


def renumbered(s: Snapshot, perm: dict[int, int]) -> Snapshot:
    """The same machine with GPUs renumbered: gpu i → gpu perm[i]."""

    def rid(x: str) -> str:
        return f"gpu{perm[int(x[3:])]}" if x.startswith("gpu") else x

    gpus = sorted((msgspec.structs.replace(g, index=perm[g.index]) for g in s.gpus), key=lambda g: g.index)
    pairs = []
    for p in s.pairs:
        a, b = rid(p.a), rid(p.b)
        if a.startswith("gpu") and b.startswith("gpu") and int(a[3:]) > int(b[3:]):
            a, b = b, a
        pairs.append(msgspec.structs.replace(p, a=a, b=b))
    return msgspec.structs.replace(s, gpus=gpus, pairs=pairs)


def test_snapshot_against_itself_is_empty() -> None:
    s = load_any(IBM)
    d = diff_snapshots(s, s)
    assert d.same and d.changes == [] and "equivalent" in d.summary()


def test_renumbered_copy_equal_only_under_structure_matching(real: Path) -> None:
    s = import_file(real / "nvidia-smi" / "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt")
    perm = {0: 4, 1: 5, 2: 6, 3: 7, 4: 0, 5: 1, 6: 2, 7: 3}  # swap the two sockets' GPUs
    r = renumbered(s, perm)
    by_index = diff_snapshots(s, r, "index")
    assert not by_index.same
    assert any(c.text == "nic0: PXB → SYS of gpu0" for c in by_index.changes)
    by_structure = diff_snapshots(s, r, "structure")
    assert by_structure.same, [c.text for c in by_structure.changes]
    assert {k: v for k, v in by_structure.mapping.items() if k.startswith("gpu")} != {
        f"gpu{i}": f"gpu{i}" for i in range(8)
    }
    assert "renumbered" in by_structure.summary()


def test_pair_class_and_nvlink_change() -> None:
    s = load_any(IBM)
    pairs = [
        msgspec.structs.replace(p, path="SYS", nvlinks=0) if (p.a, p.b) == ("gpu2", "gpu3") else p for p in s.pairs
    ]
    d = diff_snapshots(s, msgspec.structs.replace(s, pairs=pairs))
    assert [c.text for c in d.changes] == ["gpu2–gpu3: NV18 → SYS"]
    assert "1 GPU pair(s) change path (NV18 → SYS)" in d.summary() and "lose NVLink" in d.summary()


def test_p2p_status_change(tmp_path: Path) -> None:
    s = run_probe(machines.a100_pcie(), tmp_path).snapshot
    pairs = [
        msgspec.structs.replace(p, p2p=P2P(read="CNS", write="CNS", nvlink="NS", atomics="NS"))
        if (p.a, p.b) == ("gpu0", "gpu1")
        else p
        for p in s.pairs
    ]
    d = diff_snapshots(s, msgspec.structs.replace(s, pairs=pairs))
    assert {c.text for c in d.changes} == {"gpu0–gpu1: read OK → CNS", "gpu0–gpu1: write OK → CNS"}


def test_gpu_memory_pcie_and_driver_changes(tmp_path: Path) -> None:
    s = run_probe(machines.hgx_h100(), tmp_path).snapshot
    g3 = s.gpus[3]
    gpus = list(s.gpus)
    gpus[3] = msgspec.structs.replace(
        g3, memory_total_bytes=40 * 2**30, pcie=msgspec.structs.replace(g3.pcie, gen_max=4, width_max=8)
    )
    sw = msgspec.structs.replace(s.software, driver_version="535.104.05")
    d = diff_snapshots(s, msgspec.structs.replace(s, gpus=gpus, software=sw))
    texts = {c.text for c in d.changes}
    assert texts == {
        "gpu3: memory 80 GiB → 40 GiB",
        "gpu3: PCIe gen max 5 → 4",
        "gpu3: PCIe width max 16 → 8",
        "software: driver 550.54.15 → 535.104.05",
    }


def test_across_sources_compares_only_what_both_know(tmp_path: Path, real: Path) -> None:
    probe = run_probe(machines.hgx_h100(), tmp_path).snapshot
    paste = import_file(real / "nvidia-smi" / "gcp-gke-a4-b200-8gpu-8nic.txt")
    d = diff_snapshots(paste, probe, names=("vendor", "probe"))
    assert not any(c.kind == "gpu" and c.field == "memory" for c in d.changes)
    assert "gpus.memory_total_bytes (unknown in vendor)" in d.not_compared
    assert "pairs.p2p (unknown in vendor)" in d.not_compared
    assert d.same  # the fake HGX H100 has exactly the B200 page's matrix


def test_flow_arrows_side_by_side() -> None:
    a, b = load_any(IBM), load_any(SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json")
    d = diff_snapshots(a, b)
    diff_flow(d, str(SAMPLES / "flows" / "tensor-parallel.yaml"), a, b)
    ex = [r for r in d.arrows if r.a["from_step"] == r.a["to_step"] == "allreduce"]
    assert len(ex) == 28 and all(r.medium_changed for r in ex)
    assert ex[0].a["medium"] == "gpu-link" and ex[0].b["medium"] == "host-memory"
    assert "28 of 52 flow arrows change medium" in d.summary()


def test_cli_exit_codes(tmp_path: Path) -> None:
    same = runner.invoke(app, ["diff", str(IBM), str(IBM)])
    assert same.exit_code == 0 and "equivalent" in same.stdout
    other = runner.invoke(app, ["diff", str(IBM), str(SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json"), "--json"])
    assert other.exit_code == 1
    import json

    d = json.loads(other.stdout)
    assert d["same"] is False and any(c["text"] == "gpu0–gpu1: NV18 → SYS" for c in d["changes"])
    bad = tmp_path / "x.txt"
    bad.write_text("nonsense")
    assert runner.invoke(app, ["diff", str(IBM), str(bad)]).exit_code == 2
    assert runner.invoke(app, ["diff", str(IBM), str(IBM), "--match", "fuzzy"]).exit_code == 2
    s = load_any(IBM)
    save_snapshot(s, tmp_path / "copy.json")
    assert runner.invoke(app, ["diff", str(IBM), str(tmp_path / "copy.json"), "--match", "structure"]).exit_code == 0
