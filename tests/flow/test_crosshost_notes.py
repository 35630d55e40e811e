"""A cross-host arrow's notes about each end's NIC are the evidence's reasons, made Notes where they are
made (graph.evidence, graph.gpudirect, model.facts), on that end's host: their kind and subjects are
fields, never found again in the finished words (issue 33 item 1).

Data: samples/snapshots/hgx-h200-8gpu-10nic.json (eight NICs PIX to a GPU) on two hosts."""

from __future__ import annotations

from pathlib import Path

from topomap import api
from topomap.base.notes import Note
from topomap.graph import build
from topomap.graph.evidence import nearest_nic
from topomap.importers import load_any

SNAP = Path(__file__).resolve().parents[2] / "samples" / "snapshots" / "hgx-h200-8gpu-10nic.json"


def test_the_gpudirect_reason_is_a_note_of_its_nic_and_gpu() -> None:
    gdr = nearest_nic(build(load_any(SNAP)), "gpu3").gdr
    assert gdr.yes
    [reason] = gdr.reasons
    assert isinstance(reason, Note) and reason.template == "NIC {nic} is PIX to {gpu}"
    assert dict(reason.subjects)["gpu"] == "gpu3"


def test_each_end_says_its_gpudirect_on_its_host_with_the_nic_and_gpu_as_subjects(tmp_path: Path) -> None:
    flow = tmp_path / "two.yaml"
    flow.write_text(
        f"flow: two\nhosts:\n  node-a: {SNAP}\n  node-b: {SNAP}\n"
        "steps:\n  a: {kind: compute, on: node-a:gpu3}\n  b: {kind: compute, on: node-b:gpu5}\n"
        "arrows:\n  - {from: a, to: b, volume: 1 GiB}\n"
    )
    [arrow] = api.map_flow(flow).arrows
    gdr = [n for n in arrow.notes if isinstance(n, Note) and n.template.startswith("GPUDirect RDMA possible")]
    assert [n.template for n in gdr] == ["GPUDirect RDMA possible on {host}: NIC {nic} is PIX to {gpu}"] * 2
    assert [(n.host, dict(n.subjects)["gpu"]) for n in gdr] == [("node-a", "gpu3"), ("node-b", "gpu5")]
    assert [tuple(k for k, _ in n.subjects) for n in gdr] == [("nic", "gpu")] * 2
