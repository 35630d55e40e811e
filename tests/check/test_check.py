"""check: each rule passing and failing with the right evidence; exit codes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES, run_probe
from tests.fakes import machines
from topomap.check import Lot, RequirementsError, check, parse_requirements
from topomap.cli import app
from topomap.graph import build
from topomap.importers import load_any

runner = CliRunner()
IBM = SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"
RTX = SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json"


def run(rules: str, lot: Lot) -> list[tuple[str, str, list[str]]]:
    reqs, _ = parse_requirements("requirements:\n" + rules, "r.yaml")
    return [(r.rule, r.status, r.evidence) for r in check(reqs, [lot], None).results]


@pytest.fixture(scope="module")
def h100(tmp_path_factory: pytest.TempPathFactory) -> Lot:
    return Lot("h100", build(run_probe(machines.hgx_h100(), tmp_path_factory.mktemp("h")).snapshot))


def test_gpus_rule(h100: Lot) -> None:
    assert run("  - gpus: {min_count: 8, model: '*H100*', min_memory_gib: 80}\n", h100)[0][1] == "pass"
    ((_, status, ev),) = run("  - gpus: {min_count: 8, min_memory_gib: 96}\n", h100)
    assert status == "fail" and ev[0] == "0 GPUs qualify < 8 needed" and ev[1] == "gpu0: 80 GiB = 85.9 GB < 96 GB"
    # memory is compared the way vendors sell it: an 80 GB card (81559 MiB = 79.6 GiB) passes 80
    assert run("  - gpus: {min_count: 8, min_memory_gb: 80}\n", h100)[0][1] == "pass"
    # the NCCL dump names no model; its PCI device id (0x2330) does, labelled as derived
    ((_, status, ev),) = run("  - gpus: {min_count: 2, model: '*H100*'}\n", Lot("ibm", build(load_any(IBM))))
    assert status == "pass" and "gpu0: NVIDIA H100 80GB HBM3 (derived from the PCI device id)" in ev
    ((_, status, ev),) = run("  - gpus: {min_count: 2, model: '*H100*'}\n", Lot("rtx", build(load_any(RTX))))
    assert status == "unknown" and "gpu0: model not recorded" in ev


def test_driver_and_cuda_rules(h100: Lot) -> None:
    res = run("  - driver: {min: '535'}\n  - cuda: {min: '12.6'}\n", h100)
    assert res[0][:2] == ("driver", "pass") and res[0][2] == ["driver 550.54.15"]
    assert res[1][:2] == ("cuda", "fail") and res[1][2] == ["cuda 12.4"]
    assert run("  - driver: {min: '535'}\n", Lot("ibm", build(load_any(IBM))))[0][1] == "unknown"


def test_gpu_links_rule(tmp_path: Path, h100: Lot) -> None:
    assert run("  - gpu_links: {min: nvlink}\n", h100)[0][1] == "pass"
    a100 = Lot("a100", build(run_probe(machines.a100_pcie(), tmp_path).snapshot))
    ((_, status, ev),) = run("  - gpu_links: {min: nvlink}\n", a100)
    assert status == "fail" and "gpu0–gpu1: no usable NVLink: no NVLink between them (path PIX)" in ev
    ((_, status, ev),) = run("  - gpu_links: {min: PXB}\n", a100)
    assert status == "fail" and "gpu0–gpu4: SYS (beyond PXB)" in ev
    assert not any(e.startswith("gpu0–gpu1:") and "beyond" in e for e in ev)
    pair = Lot("pair", build(run_probe(machines.consumer_pair(), tmp_path / "c").snapshot))
    ((_, status, ev),) = run("  - gpu_links: {min: PHB}\n", pair)
    assert status == "fail" and ev[1] == "gpu0–gpu1: PHB but P2P read GNS, write GNS; cuDeviceCanAccessPeer = 0"


def test_gdr_nic_rule(h100: Lot) -> None:
    ((_, status, ev),) = run("  - gdr_nic: {max_path: PIX, min_gbit_s: 400}\n", h100)
    assert status == "pass" and "gpu0: mlx5_0 PIX" in ev
    ((_, status, ev),) = run("  - gdr_nic: {max_path: PIX, min_gbit_s: 800}\n", h100)
    assert status == "fail" and ev[0] == "0 of 8 GPUs qualify" and "gpu0: NIC mlx5_0 (PIX) runs at 400 Gb/s" in ev
    ((_, status, ev),) = run("  - gdr_nic: {max_path: PXB}\n", Lot("rtx", build(load_any(RTX))))
    assert status == "fail" and "gpu0: nearest usable NIC NIC0 is SYS" in ev


def test_fabric_ready_rule(tmp_path: Path, h100: Lot) -> None:
    assert run("  - fabric_ready: {}\n", h100)[0][1] == "pass"
    m = machines.gb200_tray()
    m.gpus = [dataclasses.replace(g, fabric=dataclasses.replace(g.fabric, clique_id=0)) for g in m.gpus]  # type: ignore[arg-type]
    tray = Lot("tray", build(run_probe(m, tmp_path).snapshot))
    ((_, status, ev),) = run("  - fabric_ready: {}\n", tray)
    assert status == "fail" and "gpu0: fabric completed but clique id 0 (never registered in a clique)" in ev
    pair = Lot("pair", build(run_probe(machines.consumer_pair(), tmp_path / "c").snapshot))
    assert run("  - fabric_ready: {}\n", pair)[0][2][1].startswith("gpu0: the GPU reports no NVLink fabric")


def test_flow_rules_through_the_cli() -> None:
    flow = str(SAMPLES / "flows" / "tensor-parallel.yaml")
    reqs = str(SAMPLES / "requirements" / "tensor-parallel.yaml")
    ok = runner.invoke(app, ["check", reqs, "--flow", flow])
    assert ok.exit_code == 0 and ok.stdout.startswith("PASS: 4 of 4 rules pass")
    bad = runner.invoke(app, ["check", reqs, "--flow", flow, "--probe", f"lot={RTX}", "--json"])
    assert bad.exit_code == 1
    d = json.loads(bad.stdout)
    status = {r["rule"]: r["status"] for r in d["rules"]}
    assert status == {"gpus": "pass", "gpu_links": "fail", "gdr_nic": "fail", "arrow_bandwidth": "unknown"}
    doc = runner.invoke(
        app,
        [
            "check",
            str(SAMPLES / "requirements" / "doc-conversion.yaml"),
            "--flow",
            str(SAMPLES / "flows" / "doc-conversion.yaml"),
            "--json",
        ],
    )
    rules = json.loads(doc.stdout)["rules"]
    assert doc.exit_code == 0 and ("same_numa", "lot", "pass") in [(r["rule"], r["lot"], r["status"]) for r in rules]


def test_requirements_in_the_flow_file(tmp_path: Path) -> None:
    flow = (
        (SAMPLES / "flows" / "two-host-pipeline.yaml")
        .read_text()
        .replace("../snapshots/", str(SAMPLES / "snapshots") + "/")
    )
    f = tmp_path / "f.yaml"
    f.write_text(flow + "requirements:\n  - arrow_time: {max_seconds: 0.01, medium: network}\n")
    r = runner.invoke(app, ["check", str(f), "--json"])
    (rule,) = json.loads(r.stdout)["rules"]
    assert (r.exit_code, rule["rule"], rule["status"]) == (1, "arrow_time", "fail")
    assert rule["evidence"][-1] == "node-a:gpu7→node-b:gpu0: 0.0215 s > 0.01 s over network"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("requirements:\n  - gpu: {min_count: 2}\n", "r.yaml:2: unknown rule `gpu` (hint: did you mean `gpus`?)"),
        ("requirements:\n  - gpus: {min_cout: 2}\n", "r.yaml:2: Object contains unknown field `min_cout`"),
        (
            "requirements:\n  - gpu_links: {min: fast}\n",
            "Invalid enum value 'fast'; expected one of NODE, PHB, PIX, PXB, SYS, gpu-link, nvlink, xgmi",
        ),
        ("requirements: []\n", "must be a non-empty list"),
        ("rules:\n  - gpus: {}\n", "no `requirements:` list"),
    ],
)
def test_requirement_errors(tmp_path: Path, text: str, needle: str) -> None:
    f = tmp_path / "r.yaml"
    f.write_text(text)
    r = runner.invoke(app, ["check", str(f), "--probe", str(IBM)])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    full = r.stderr.replace(str(tmp_path) + "/", "")
    assert needle in full, full
    with pytest.raises(RequirementsError):
        parse_requirements(text, "r.yaml")


def test_flow_rule_without_flow_is_an_error() -> None:
    f = str(SAMPLES / "requirements" / "doc-conversion.yaml")
    r = runner.invoke(app, ["check", f, "--probe", str(RTX)])
    assert r.exit_code == 2 and "needs a flow" in r.stderr


def test_plan_total_rule_uses_the_plan(tmp_path: Path) -> None:
    flow = str(SAMPLES / "flows" / "eight-documents.yaml")  # 8 × 12 min + 10 min assembly
    reqs = tmp_path / "r.yaml"
    reqs.write_text("requirements:\n  - plan_total: {max_minutes: 60, cards: 2}\n")
    r = runner.invoke(app, ["check", str(reqs), "--flow", flow, "--json"])
    d = json.loads(r.stdout)
    assert r.exit_code == 0 and d["rules"][0]["status"] == "pass" and "58 min" in d["rules"][0]["summary"]
    reqs.write_text("requirements:\n  - plan_total: {max_minutes: 60, cards: 1}\n")
    r = runner.invoke(app, ["check", str(reqs), "--flow", flow, "--json"])
    d = json.loads(r.stdout)
    assert r.exit_code == 1 and "106 min" in d["rules"][0]["summary"] and "> 60 min" in d["rules"][0]["summary"]
    r = runner.invoke(app, ["check", str(reqs), "--probe", str(IBM)])
    assert r.exit_code == 2 and "needs a flow" in r.stderr


def test_gpu_links_beyond_the_class_is_unknown_where_nvlink_is_unknown() -> None:
    """AWS p4d's static NCCL file records PCIe paths but no NVLink (NCCL adds NVLink from NVML at run
    time): a pair PHB or SYS apart may still be NVLinked, so `min: PXB` is UNKNOWN there, never FAIL.
    The RTX 4090 box's `topo -m` does record NVLink (none): its SYS pairs FAIL."""
    rules, _ = parse_requirements("requirements:\n  - gpu_links: {min: PXB}\n", "q.yaml")
    p4d = load_any(SAMPLES / "snapshots" / "aws-p4d-24xlarge.json")
    r = check(rules, [Lot("p4d", build(p4d))], None).results[0]
    assert r.status == "unknown"
    assert any("SYS (beyond PXB); NVLink unknown" in f.text for f in r.findings)
    assert any("topo -m" in s for s in r.settle)
    rtx = load_any(SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json")
    assert check(rules, [Lot("rtx", build(rtx))], None).results[0].status == "fail"


L40S_P2P = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "real-topologies"
    / "nvidia-smi"
    / ("l40s-8gpu-1nic-topo-query-gpu-p2p-record.txt")
)


def test_gpu_links_names_the_p2p_status_the_source_lacks_and_what_settles_it() -> None:
    """The newcomer trial: the real L40S record carries `nvidia-smi topo -p2p` once (read as the write
    status: OK for every pair), no read status; check said "P2P status not recorded" and pointed at
    `topo -p2p rw`. It names the read status as the one missing and `topo -p2p r` as what settles it."""
    lot = Lot("l40s", build(load_any(L40S_P2P)))
    reqs, _ = parse_requirements("requirements:\n  - gpu_links: {min: SYS}\n", "r.yaml")
    (result,) = check(reqs, [lot], None).results
    status, ev = result.status, result.evidence
    assert status == "unknown"
    assert "gpu0–gpu1: PIX, P2P read status not recorded (write OK; P2P needs both)" in ev
    assert "gpu0–gpu5: SYS, P2P read status not recorded (write OK; P2P needs both)" in ev
    assert result.settle == ["`nvidia-smi topo -p2p r` (or `topomap probe`)"]
    assert not any(e.endswith("P2P status not recorded") for e in ev)


def test_one_p2p_status_recorded_not_ok_is_no_p2p() -> None:
    """P2P needs both read and write: a write status recorded as NS decides "no" though the read one
    is missing (the real L40S record with one pair's write status set to NS)."""
    import msgspec

    from topomap.graph.evidence import pcie_p2p
    from topomap.model.snapshot import P2P

    snap = load_any(L40S_P2P)
    pairs = [
        msgspec.structs.replace(p, p2p=P2P(write="NS")) if {p.a, p.b} == {"gpu0", "gpu1"} else p for p in snap.pairs
    ]
    topo = build(msgspec.structs.replace(snap, pairs=pairs))
    no = pcie_p2p(topo, "gpu0", "gpu1")
    assert no.value == "no" and not no.assumed
    assert no.reasons == ("P2P read status not recorded by this source (write NS; P2P needs both)",)
    ok = pcie_p2p(topo, "gpu2", "gpu3")  # write OK, read missing: NCCL's rule, saying which status lacks
    assert ok.assumed and ok.settle == "`nvidia-smi topo -p2p r` (or `topomap probe`)"
    assert ok.reasons[0].startswith("P2P read status not recorded by this source (write OK; P2P needs both): ")
