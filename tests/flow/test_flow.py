"""Flow files: every mistake is one line with file, line and a hint."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from topomap.api import bind_snapshots
from topomap.flow import GivenSnapshot, SnapshotFile, bind_hosts, claim_hosts, parse_flow, read_flow
from topomap.flow.spec import FlowError, parse_volume
from topomap.importers import load_any

GOOD = """flow: t
hosts:
  lot: {snap}
  ws: null
steps:
  data:  {{kind: input, on: lot:memory}}
  work:  {{kind: compute, on: lot:gpu1}}
  merge: {{kind: aggregate, on: ws}}
arrows:
  - {{from: data, to: work, volume: 1 GiB}}
  - {{from: work, to: merge}}
"""
SNAP = str(SAMPLES / "snapshots" / "rtx5090-pair-p2p-gns.json")


def err(text: str) -> FlowError:
    with pytest.raises(FlowError) as exc:
        f = parse_flow(text, "f.yaml")
        bind_snapshots(f, [])
    assert "\n" not in str(exc.value)
    return exc.value


def test_good_flow_parses_and_binds() -> None:
    f = parse_flow(GOOD.format(snap=SNAP), "f.yaml")
    bind_snapshots(f, [])
    assert [(a.src.label(), a.dst.label(), a.volume_bytes) for a in f.arrows] == [
        ("lot:memory", "lot:gpu1", 2**30),
        ("lot:gpu1", "ws", None),
    ]


def test_unknown_step_names_line_and_suggests() -> None:
    e = err(GOOD.format(snap=SNAP).replace("to: merge", "to: mergee"))
    assert (
        str(e).startswith("f.yaml:11: arrow 2: unknown step 'mergee'")
        and e.hint == "did you mean 'merge'? steps: data, work, merge"
    )


def test_typo_in_a_key() -> None:
    e = err(GOOD.format(snap=SNAP).replace("{kind: compute, on:", "{kind: compute, onn:"))
    assert str(e).startswith("f.yaml:7:") and "unknown field `onn`" in str(e) and e.hint == "did you mean `on`?"


def test_gpu_the_snapshot_does_not_have() -> None:
    e = err(GOOD.format(snap=SNAP).replace("lot:gpu1", "lot:gpu7"))
    assert str(e).startswith("f.yaml:7: step work: lot has no GPU 'gpu7'") and e.hint == "its snapshot has: gpu0, gpu1"


def test_unknown_host_and_bad_kind_and_bad_volume() -> None:
    assert "unknown host 'lto'" in str(err(GOOD.format(snap=SNAP).replace("on: lot:gpu1", "on: lto:gpu1")))
    e = err(GOOD.format(snap=SNAP).replace("kind: compute", "kind: compute-ish"))
    assert str(e).startswith("f.yaml:7:") and "Invalid enum value 'compute-ish'" in str(e)
    e = err(GOOD.format(snap=SNAP).replace("1 GiB", "lots"))
    assert str(e).startswith("f.yaml:10:") and "volume 'lots' is not a size" in str(e)


def test_cycle_is_refused() -> None:
    text = GOOD.format(snap=SNAP) + "  - {from: merge, to: data}\n"
    assert "cycle (data → work → merge → data)" in str(err(text))


def test_bad_yaml_and_empty_and_missing_steps() -> None:
    assert str(err("flow: [unclosed\n")).startswith("f.yaml:2: not valid YAML")
    assert "empty flow file" in str(err(""))
    assert "missing required field `steps`" in str(err("flow: x\n"))


def test_gpus_of_a_host_without_snapshot() -> None:
    e = err(GOOD.format(snap=SNAP).replace("on: ws}", "on: ws:gpu0}"))
    assert "ws has no snapshot" in str(e) and e.hint is not None and "ws=SNAPSHOT after the flow file" in e.hint


def test_probe_binding_on_the_command_line(tmp_path: Path) -> None:
    p = tmp_path / "f.yaml"
    p.write_text(GOOD.format(snap="null"))
    f = read_flow(p)
    topos = bind_snapshots(f, [f"lot={SNAP}"])
    assert topos["lot"] is not None and topos["ws"] is None
    with pytest.raises(FlowError, match="has no host 'nope'"):
        bind_snapshots(read_flow(p), [f"nope={SNAP}"])


def test_volumes() -> None:
    assert parse_volume("2 GiB") == 2 * 2**30 and parse_volume("500MB") == 500 * 10**6
    assert parse_volume("1.5 TB") == 1_500_000_000_000 and parse_volume("2 apples") is None


def test_sample_flows_parse() -> None:
    for f in sorted((SAMPLES / "flows").glob("*.yaml")):
        flow = read_flow(f)
        bind_snapshots(flow, [])
        assert flow.arrows


def test_binding_takes_loaded_snapshots_and_reads_no_file() -> None:
    """flow/ binds hosts to snapshots the CLI loaded: a named one binds its host, a bare one the
    only host of a one-host flow; a host bound twice names both arguments; nothing is read here."""
    f = parse_flow(GOOD.format(snap="missing-and-never-read.json"), "f.yaml")
    lot = SnapshotFile(load_any(SNAP), "pair.json")
    named = GivenSnapshot("lot", lot, "--probe lot=pair.json")
    assert claim_hosts(f, [named]) == {"lot": named}
    with pytest.raises(FlowError) as exc:
        claim_hosts(f, [named, GivenSnapshot("lot", lot, "--probe lot=other.json")])
    assert str(exc.value) == "--probe lot=other.json: lot is bound twice (also by --probe lot=pair.json)"
    with pytest.raises(FlowError, match=r"^--probe pair.json: the flow has hosts lot, ws; say which$"):
        claim_hosts(f, [GivenSnapshot(None, lot, "--probe pair.json")])
    topos = bind_hosts(f, {"lot": lot, "ws": None})
    assert topos["ws"] is None and topos["lot"] is not None and topos["lot"].snapshot is lot.snapshot
    assert [(a.src.label(), a.dst.label()) for a in f.arrows] == [("lot:memory", "lot:gpu1"), ("lot:gpu1", "ws")]
