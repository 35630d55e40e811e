"""The packed cluster file (topomap/model/pack.py): a merged snapshot of 256 hosts or more is JSON
Lines with each shared part (pairs, PCI tree, NVSwitches, each GPU's NVLinks) written once. It
reads back to the same snapshot, plain merged files stay readable, and a damaged file is one line
naming the file and the line."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import synth  # noqa: E402

from topomap.base.errors import TopomapError  # noqa: E402
from topomap.cli import app  # noqa: E402
from topomap.model.codec import decode_snapshot, encode_snapshot, load_snapshot  # noqa: E402
from topomap.model.merge import merge  # noqa: E402
from topomap.model.pack import PACK_MIN_HOSTS, is_packed  # noqa: E402
from topomap.model.snapshot import Snapshot, SnapshotError  # noqa: E402


@pytest.fixture(scope="module")
def big() -> Snapshot:
    base = load_snapshot(synth.BASE)
    return merge([(str(i), synth.host(base, i)) for i in range(PACK_MIN_HOSTS)])


@pytest.fixture(scope="module")
def packed(big: Snapshot) -> bytes:
    return encode_snapshot(big)


def test_round_trip_is_exact_and_small(big: Snapshot, packed: bytes) -> None:
    plain = msgspec.json.encode(big)
    assert is_packed(packed)
    assert len(packed) < len(plain) / 5  # 256 copies of one build: the shared parts once
    back = decode_snapshot(packed, "c.json")
    assert msgspec.json.encode(back) == plain
    assert back.members[0].pairs is back.members[1].pairs  # one object for hosts of one build
    lines = packed.split(b"\n")
    assert lines[0].startswith(b'{"schema":"topomap.cluster-pack/1","hosts":256,"parts":')


def test_small_clusters_stay_one_plain_document(big: Snapshot) -> None:
    small = msgspec.structs.replace(big, members=big.members[:3])
    data = encode_snapshot(small)
    assert data.startswith(b'{\n  "schema": "topomap.snapshot/1"') and not is_packed(data)


def test_damaged_files_name_the_line(packed: bytes) -> None:
    lines = packed.split(b"\n")
    cut = b"\n".join(lines[:-3]) + b"\n"
    with pytest.raises(SnapshotError, match=r"^c\.json: \d+ lines, the first says \d+"):
        decode_snapshot(cut, "c.json")
    bad = list(lines)
    host = len(lines) - 5
    bad[host] = bad[host].replace(b'"parts":{"nvswitches":', b'"parts":{"nvswitches":99999,"x":', 1)
    with pytest.raises(SnapshotError, match=rf"^c\.json:{host + 1}: parts\.nvswitches: 99999 is no nvswitches part"):
        decode_snapshot(b"\n".join(bad), "c.json")
    bad = list(lines)
    bad[host] = bad[host][:40]
    with pytest.raises(SnapshotError, match=rf"^c\.json:{host + 1}: "):
        decode_snapshot(b"\n".join(bad), "c.json")


def test_duplicate_host_in_a_packed_file_is_refused(packed: bytes) -> None:
    lines = packed.split(b"\n")
    lines[-2] = lines[-3]  # the last host line repeats the one before it
    with pytest.raises(TopomapError, match=r"members\[255\]\.host\.hostname: .n0254. is also members\[254\]"):
        decode_snapshot(b"\n".join(lines), "c.json")


def test_merge_writes_packed_and_every_command_reads_it(tmp_path: Path) -> None:
    files = synth.write_hosts(PACK_MIN_HOSTS, tmp_path / "hosts")
    out = tmp_path / "cluster.json"
    res = CliRunner().invoke(app, ["merge", *map(str, files), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert is_packed(out.read_bytes())
    res = CliRunner().invoke(app, ["cluster", str(out)])
    assert res.exit_code == 0, res.output
    assert "Cluster: 256 hosts, 1 shape(s), 4 outlier(s)" in res.output
    assert "driver version: 535.104.05 (most hosts: 550.54.15): n0096, n0193\n" in res.output
    res = CliRunner().invoke(app, ["matrix", str(out)])
    assert res.exit_code == 0 and res.output.count("# n0") == PACK_MIN_HOSTS


def test_scale_bench_stages_run(tmp_path: Path) -> None:
    """bench/scale.py stays runnable: its three stages, each in its own process, on 3 hosts (the real
    sizes, 1,024 and 10,000 hosts, are for `python bench/scale.py`, not the test suite)."""
    import scale

    scale.prepare(3, tmp_path)
    results = {3: {stage: scale.measure(stage, tmp_path, 120) for stage in scale.STAGES}}
    assert all(done and rss > 0 for _t, rss, done in results[3].values())
    assert results[3]["flow"][0]["arrows"] > 0
    assert set(results[3]["merge"][0]) == {"load host files", "merge", "write (checked)"}
    text, over = scale.report(results)
    assert text.splitlines()[0].split()[:3] == ["stage", "3", "hosts"]
    assert "cluster: peak RSS (GiB)" in text and over == []
