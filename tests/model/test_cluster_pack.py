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

ROOT = Path(__file__).resolve().parents[2]
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
    res = CliRunner().invoke(app, ["matrix", str(out), "--all"])
    assert res.exit_code == 0 and res.output.count("# n0") == PACK_MIN_HOSTS
    res = CliRunner().invoke(app, ["matrix", str(out)])  # grouped: the alike hosts' matrix once
    assert res.exit_code == 0 and res.output.count("\nGPU0\t") == 1, res.output
    assert "252 hosts alike (8 × NVIDIA H100 80GB HBM3" in res.output


def test_scale_bench_stages_run(tmp_path: Path) -> None:
    """bench/scale.py stays runnable: its three stages, each in its own process, on 3 hosts (the real
    sizes, 1,024 and 10,000 hosts, are for `python bench/scale.py`, not the test suite)."""
    import scale

    scale.prepare(3, tmp_path)
    results = {3: {stage: scale.measure(stage, tmp_path, 120) for stage in scale.STAGES}}
    assert all(done and rss > 0 for _t, rss, done in results[3].values())
    assert results[3]["flow"][0]["arrows"] > 0
    steps = {"load host files", "merge", "write (checked)"}
    assert set(results[3]["merge"][0]) == steps | {f"{s}{scale.CPU_MARK}" for s in steps}
    text, over = scale.report(results)
    assert text.splitlines()[0].split()[:3] == ["stage", "3", "hosts"]
    assert "cluster: peak RSS (GiB)" in text and over == []


BAD_HOSTS = [
    (b'"schema": "topomap.snapshot/1"', b'"schema": "topomap.snapshot/9", "future": 1'),  # newer, new field
    (b'"schema": "topomap.snapshot/1"', b'"schema": "topomap.snapshot/9"'),  # newer
    (b'"schema": "topomap.snapshot/1"', b'"schema": "topomap.snapshot/1", "schema": "topomap.snapshot/0"'),
    (b'"schema": "topomap.snapshot/1"', b'"schema": 1'),  # not a string
    (b'"index": 0', b'"index": "zero"'),  # a type
    (b'"index": 0', b'"index": -1'),  # a check beyond the schema
    (b'"index": 0', b'"index": 99999999999999999999'),  # past 64 bits
    (b'"speed_gbit_s": 200.0', b'"speed_gbit_s": 1e300'),  # past any rate
    (b'"hostname": "n0000"', b'"hostnme": "n0000"'),  # an unknown field
]


@pytest.mark.parametrize(("old", "new"), BAD_HOSTS)
def test_a_bad_host_file_is_refused_as_before(tmp_path: Path, old: bytes, new: bytes) -> None:
    """A host file that starts as topomap writes it is decoded in one pass (its schema read from the
    whole); a bad one is refused with the very line the careful path (head first) gives."""
    data = encode_snapshot(synth.host(load_snapshot(synth.BASE), 0))
    assert data.startswith(b'{\n  "schema": ') and old in data
    bad = data.replace(old, new, 1)
    with pytest.raises(TopomapError) as fast:
        decode_snapshot(bad, "n0000.json")
    with pytest.raises(TopomapError) as careful:
        decode_snapshot(b" " + bad, "n0000.json")  # not the written layout: the head is read first
    assert str(fast.value) == str(careful.value) and fast.value.hint == careful.value.hint
    assert str(fast.value).startswith("n0000.json: ") and "\n" not in str(fast.value)
    path = tmp_path / "n0000.json"
    path.write_bytes(bad)
    res = CliRunner().invoke(app, ["merge", str(path), "-o", str(tmp_path / "c.json")])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    said = str(fast.value).removeprefix("n0000.json")
    assert " ".join(res.output.split()).startswith(" ".join(f"topomap: error: {path}{said}".split())), res.output
    assert not (tmp_path / "c.json").exists()
