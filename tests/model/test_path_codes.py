"""Path codes in the snapshot are typed (issue 33 item 1): ``Pair.path`` is base/links's ``PathCode``
and ``Pair.pcie_path`` a ``PathClass``, checked when a snapshot is decoded and, for one built in
memory, by the validator, in one line naming the field; NCCL's PHB-for-NODE is ``Source.path_recorded_as``,
and a snapshot written with the old prose entry in ``unknown_fields`` reads (and shows) as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.base.links import nvlinks_of
from topomap.cli import app
from topomap.model.codec import decode_snapshot, encode_snapshot, load_snapshot
from topomap.model.merge import merge
from topomap.model.migrate import OLD_PHB_NODE
from topomap.model.validate import SnapshotInvalid, validate_snapshot
from topomap.transport.rules import path_rank

runner = CliRunner()
NCCL_SAMPLE = SAMPLES / "snapshots" / "aws-p4d-24xlarge.json"  # an NCCL topology file's snapshot


def _raw(name: str = "dgx1-v100.json") -> dict[str, Any]:
    raw: dict[str, Any] = json.loads((SAMPLES / "snapshots" / name).read_text())
    return raw


def _gpu_pair(raw: dict[str, Any]) -> int:
    return next(k for k, p in enumerate(raw["pairs"]) if p["a"].startswith("gpu") and p["b"].startswith("gpu"))


def test_nv7_decodes_and_ranks_as_nvl() -> None:
    raw = _raw()
    k = _gpu_pair(raw)
    raw["pairs"][k].update(path="NV7", nvlinks=7)
    pair = decode_snapshot(msgspec.json.encode(raw), "s.json").pairs[k]
    assert pair.path == "NV7" and nvlinks_of(pair.path) == 7
    assert path_rank(pair.path) == path_rank("NVL")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("path", "NVX", "pairs[{k}].path: 'NVX' is not NV<n>, XGMI, PIX, PXB, PHB, NODE or SYS"),
        ("path", "PIX\n", "pairs[{k}].path: 'PIX\\n' is not NV<n>"),
        ("pcie_path", "PXQ", "pairs[{k}].pcie_path: 'PXQ' is not PIX, PXB, PHB, NODE or SYS"),
    ],
)
def test_a_bad_code_is_one_line_naming_the_field(tmp_path: Path, field: str, value: str, message: str) -> None:
    raw = _raw()
    k = _gpu_pair(raw)
    raw["pairs"][k][field] = value
    bad = tmp_path / "bad.json"
    bad.write_bytes(msgspec.json.encode(raw))
    r = runner.invoke(app, ["show", str(bad)])
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and f"{bad}: {message.format(k=k)}" in r.stderr, r.stderr


def test_a_snapshot_built_in_memory_is_checked_too() -> None:
    snap = load_snapshot(SAMPLES / "snapshots" / "dgx1-v100.json")
    for field, value in (("path", "NVX"), ("path", "NV65"), ("pcie_path", "PXQ")):
        pairs = [msgspec.structs.replace(snap.pairs[0], **{field: value}), *snap.pairs[1:]]
        with pytest.raises(SnapshotInvalid, match=rf"^s: pairs\[0\]\.{field}: "):
            validate_snapshot(msgspec.structs.replace(snap, pairs=pairs), "s")


def _old_form(raw: dict[str, Any]) -> dict[str, Any]:
    """A snapshot as topomap wrote it before ``path_recorded_as``: the prose entry where FIELD_ORDER had it."""
    for host in [raw, *raw.get("members", [])]:
        src = host["source"]
        if src.pop("path_recorded_as", {}) == {"NODE": "PHB"}:
            fields = src["unknown_fields"]
            at = fields.index("software") + 1 if "software" in fields else len(fields)
            fields.insert(at, OLD_PHB_NODE)
    return raw


def test_an_old_snapshot_reads_as_a_new_one(tmp_path: Path) -> None:
    new = load_snapshot(NCCL_SAMPLE)
    assert new.source.path_recorded_as == {"NODE": "PHB"} and OLD_PHB_NODE not in new.source.unknown_fields
    old = tmp_path / NCCL_SAMPLE.name
    old.write_bytes(msgspec.json.encode(_old_form(_raw(NCCL_SAMPLE.name))))
    assert OLD_PHB_NODE.encode() in old.read_bytes()
    assert load_snapshot(old) == new
    assert encode_snapshot(load_snapshot(old)) == NCCL_SAMPLE.read_bytes()


def test_an_old_snapshot_shows_the_same_words(tmp_path: Path) -> None:
    old = tmp_path / NCCL_SAMPLE.name
    old.write_bytes(msgspec.json.encode(_old_form(_raw(NCCL_SAMPLE.name))))
    shown = [runner.invoke(app, ["show", str(f)]) for f in (old, NCCL_SAMPLE)]
    assert all(r.exit_code == 0 for r in shown)
    assert shown[0].stdout.replace(str(old), "X") == shown[1].stdout.replace(str(NCCL_SAMPLE), "X")
    assert "PHB vs NODE (recorded as PHB)" in shown[0].stdout
    other = SAMPLES / "snapshots" / "azure-ndv4.json"  # an NCCL file's too
    d = runner.invoke(app, ["diff", str(old), str(other), "--json"])
    assert "pairs.path (PHB vs NODE) (unknown in both)" in json.loads(d.stdout)["not_compared"]
    d = runner.invoke(app, ["diff", str(old), str(other)])
    assert "PHB vs NODE (recorded as PHB)" in d.stdout


def test_an_old_merged_snapshot_moves_each_host() -> None:
    snaps = [(f.name, load_snapshot(f)) for f in (NCCL_SAMPLE, SAMPLES / "snapshots" / "dgx1-v100.json")]
    snaps = [(n, msgspec.structs.replace(s, host=msgspec.structs.replace(s.host, hostname=n))) for n, s in snaps]
    merged = merge(snaps)
    old = _old_form(msgspec.to_builtins(merged))
    assert [OLD_PHB_NODE in m["source"]["unknown_fields"] for m in old["members"]] == [True, False]
    assert decode_snapshot(msgspec.json.encode(old), "m.json") == merged


def test_xgmi_on_nvidia_gpus_is_refused(tmp_path: Path) -> None:
    """XGMI is AMD's GPU link (issue 35); a pair of an NVIDIA snapshot recorded XGMI drew an XGMI edge
    beside NV18 (the trial of issue 33): a one-line error naming the field, exit 2."""
    doc = json.loads((SAMPLES / "snapshots" / "hgx-h200-8gpu-10nic.json").read_text())
    k = next(i for i, p in enumerate(doc["pairs"]) if p["path"] == "NV18")
    doc["pairs"][k]["path"] = "XGMI"
    bad = tmp_path / "xgmi.json"
    bad.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["show", str(bad)])
    assert r.exit_code == 2
    said = "XGMI joins AMD GPUs; this snapshot's GPUs are NVIDIA's"
    assert r.stderr.strip() == f"topomap: error: {bad}: pairs[{k}].path: {said}"
