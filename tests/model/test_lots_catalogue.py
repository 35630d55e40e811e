"""The catalogue of public instance types (topomap/model/lots/catalogue/, sources in its README): every
entry loads, every fact has its public page, and each entry agrees with the real pastes of that instance
type kept in tests/data (origins in the READMEs there) — or disagrees exactly where the README says."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from topomap.cli import app
from topomap.graph import build
from topomap.graph.evidence import nvlink
from topomap.importers import load_any
from topomap.model.lots import FINDING, catalogue, read_lot, with_lot_type
from topomap.model.lots.spec import FACT_KEYS
from topomap.model.origins import fact_origin

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "real-topologies"
REQUIRED = (
    "aws/p4d.24xlarge", "aws/p4de.24xlarge", "aws/p5.48xlarge", "aws/p5e.48xlarge", "aws/p5en.48xlarge",
    "aws/p6-b200.48xlarge", "azure/nd-a100-v4", "azure/nd-h100-v5", "azure/nd-h200-v5", "azure/nd-gb200-v6",
    "gcp/a3-highgpu-8g", "gcp/a3-megagpu-8g", "gcp/a3-ultragpu-8g", "gcp/a4-highgpu-8g",
    "nvidia/dgx-a100", "nvidia/dgx-h100", "nvidia/dgx-h200", "nvidia/dgx-b200",
)  # fmt: skip
#: (entry, real paste of that instance type, the catalogue facts the paste is expected to disagree with)
PASTES = [
    ("aws/p4d.24xlarge", REAL / "nccl-xml/aws-p4d-24xlarge.xml", set()),
    ("aws/p4d.24xlarge", ROOT / "samples/snapshots/aws-p4d-24xlarge.json", set()),
    # AWS's p4de file gives its NICs the id 0xefa0, which p3dn (no GPUDirect) and p4d (GPUDirect) share: the
    # id settles nothing (issue 30 item 2), so the paste leaves GPUDirect open and the catalogue fills it
    ("aws/p4de.24xlarge", REAL / "nccl-xml/aws-p4de-24xlarge.xml", set()),
    ("aws/p5.48xlarge", REAL / "nccl-xml/aws-p5-48xlarge.xml", set()),
    ("azure/nd-a100-v4", REAL / "nccl-xml/azure-ndv4.xml", set()),
    ("azure/nd-a100-v4", ROOT / "samples/snapshots/azure-ndv4.json", set()),
    ("azure/nd-h100-v5", REAL / "nccl-xml/azure-ndv5.xml", set()),
    ("gcp/a4-highgpu-8g", REAL / "nvidia-smi/gcp-gke-a4-b200-8gpu-8nic.txt", set()),
    ("gcp/a4-highgpu-8g", ROOT / "samples/snapshots/gcp-a4-b200-8gpu.json", set()),
]


def test_the_catalogue_covers_the_instance_types_renters_meet_most() -> None:
    types = [e.type for e in catalogue()]
    assert len(types) == len(set(types))
    assert set(REQUIRED) <= set(types)


@pytest.mark.parametrize("entry", catalogue(), ids=lambda e: e.type)
def test_every_fact_has_its_public_page_and_what_the_page_says(entry: object) -> None:
    from topomap.model.lots import Entry

    assert isinstance(entry, Entry)
    lot = entry.lot()
    facts = entry.written.facts()
    assert facts and set(facts) <= set(FACT_KEYS) and set(lot.facts) == set(facts)
    for key, fact in lot.facts.items():
        o = fact.origin
        assert o.origin == "catalogue" and o.detail == entry.type
        assert o.url is not None and o.url.startswith("https://"), key
        assert o.says is not None and len(o.says) > 20, key
    if "gpus.model" in facts:
        assert lot.model is not None  # every catalogue spelling is in the parts table
    assert lot.price is None and not lot.periods_s  # prices change: never in the catalogue


@pytest.mark.parametrize(("type_", "paste", "expected"), PASTES, ids=[f"{t}-{p.name}" for t, p, _ in PASTES])
def test_each_entry_against_the_real_pastes_of_its_instance_type(type_: str, paste: Path, expected: set[str]) -> None:
    raw = load_any(paste)
    filled = with_lot_type(raw, type_)
    lot = next(e for e in catalogue() if e.type == type_).lot()
    disagree = {f.text for h in (filled.members or [filled]) for f in h.findings if f.kind == FINDING}
    keys = {k for k in lot.facts if any(f"({type_}) says" in t and _said_of(k, t, lot) for t in disagree)}
    assert keys == expected, disagree
    assert len(raw.gpus) == lot.gpu_count  # what the paste and the catalogue both carry agrees
    if lot.nic_count is not None and type_ != "aws/p5.48xlarge":  # p5: NCCL's file lists the 32 EFA
        assert len([n for n in raw.nics if n.rdma]) == lot.nic_count
    if lot.links is not None and len(raw.gpus) > 1:
        nv = nvlink(build(filled), "gpu0", "gpu1")
        assert nv.usable.yes and nv.links == lot.links.links
        if fact_origin(filled, "pairs.nvlink") is not None:  # filled, because the paste records no NVLink
            assert nv.bandwidth.source == "catalogue"


def _said_of(key: str, text: str, lot: object) -> bool:
    """Which fact a disagreement names, by the catalogue value it quotes."""
    from topomap.model.lots import DeclaredLot
    from topomap.model.lots.build import _value

    assert isinstance(lot, DeclaredLot)
    return text.endswith(f"says {_value(lot, key, lot.facts[key])}")


def test_a_p5_nics_count_is_the_32_efa_devices_of_awss_own_file() -> None:
    raw = load_any(REAL / "nccl-xml/aws-p5-48xlarge.xml")
    assert len([n for n in raw.nics if n.rdma]) == 32


def test_check_of_tensor_parallel_on_the_p4de_xml_turns_from_unknown_to_decided(tmp_path: Path) -> None:
    reqs = tmp_path / "tp.yaml"
    reqs.write_text("requirements:\n  - gpu_links: {min: nvlink}\n")
    xml = str(REAL / "nccl-xml/aws-p4de-24xlarge.xml")
    before = CliRunner().invoke(app, ["check", str(reqs), xml])
    assert before.exit_code == 3 and "NVLink unknown" in before.stdout
    after = CliRunner().invoke(app, ["check", str(reqs), xml, "--lot-type", "aws/p4de.24xlarge"])
    assert after.exit_code == 0
    assert "NV12 (catalogue aws/p4de.24xlarge)" in after.stdout
    assert "paste and catalogue disagree" not in after.stdout  # 0xefa0 settles nothing (issue 30 item 2)
    tp = [str(ROOT / "samples/requirements/tensor-parallel.yaml"), str(ROOT / "samples/flows/tensor-parallel.yaml")]
    whole = CliRunner().invoke(app, ["check", *tp, f"lot={xml}", "--lot-type", "aws/p4de.24xlarge"])
    assert whole.exit_code == 0, whole.stdout  # every rule decided: none UNKNOWN, none FAIL
    assert "gpu0, gpu1: 0000:10:1b.0 PIX (catalogue aws/p4de.24xlarge)" in whole.stdout  # gdr_nic, with its origin


def test_nccl_log_of_a_p4d_run_has_its_nvlink_pairs_decided_by_the_catalogue() -> None:
    log = str(ROOT / "tests/data/real-nccl-logs/a100-p4d-ipc-read-nccl527.log")
    xml = str(REAL / "nccl-xml/aws-p4d-24xlarge.xml")
    before = CliRunner().invoke(app, ["nccl", "--json", "--log", log, xml])
    after = CliRunner().invoke(app, ["nccl", "--json", "--log", log, xml, "--lot-type", "aws/p4d.24xlarge"])
    assert before.exit_code == after.exit_code == 0
    assert '"unknown"' in before.stdout
    import json

    doc = json.loads(after.stdout)
    pairs = doc["pairs"]
    assert len(pairs) == 5 and all(e["predicted"] == e["observed"] == "P2P" for e in pairs)
    assert all(e["rule"] == "p2p-nvlink" for e in pairs)  # NVLink from the catalogue, as NCCL saw it
    assert any("catalogue aws/p4d.24xlarge" in n for n in doc["notes"])


def test_a_declared_lot_of_a_type_against_its_real_paste_reports_only_what_the_paste_shows() -> None:
    """The acceptance diff: a topo -m has no GPU models and no NIC kinds: those are "cannot check"."""
    lot = read_lot("lot: A4 as rented\ntype: gcp/a4-highgpu-8g\n", "a4.yaml")
    paste = str(REAL / "nvidia-smi/gcp-gke-a4-b200-8gpu-8nic.txt")
    from topomap.diff.promise import check_promise

    result = check_promise(lot, load_any(paste), ("a4.yaml", paste))
    status = {x.fact: x.status for x in result.lines}
    assert status == {
        "GPUs": "as promised",
        "GPU model": "cannot check",
        "NVLink": "as promised",
        "NICs": "as promised",
        "NIC fabric": "cannot check",
        "GPUDirect RDMA": "as promised",
    }
    assert result.verdict == "cannot tell" and result.exit_status == 3


def test_promise_of_p4de_against_awss_file_cannot_tell_and_claims_nothing_the_file_cannot_show() -> None:
    from topomap.diff.promise import check_promise

    lot = read_lot("lot: p4de\ntype: aws/p4de.24xlarge\n", "p4de.yaml")
    xml = REAL / "nccl-xml/aws-p4de-24xlarge.xml"
    result = check_promise(lot, load_any(xml), ("p4de.yaml", str(xml)))
    assert not [x.fact for x in result.lines if x.status == "short"] and result.verdict == "cannot tell"
    unchecked = {x.fact for x in result.lines if x.status == "cannot check"}
    # a static NCCL file records none of them; its 0xefa0 NICs leave GPUDirect open (issue 30 item 2)
    assert {"GPU memory", "NVLink", "CPU sockets", "GPUDirect RDMA"} <= unchecked
    assert "PCIe link" not in {x.fact for x in result.lines}  # the catalogue takes no PCIe fact from a static file


def test_the_catalogues_readme_counts_what_the_entries_hold() -> None:
    """The README's table said 14 facts for p4d and 15 for ND H100 v5 after facts were left out: each
    row's counts are the entry's, and the total is theirs."""
    import re

    from topomap.model.lots import catalogue

    text = (ROOT / "topomap/model/lots/catalogue/README.md").read_text()
    rows = {m[1]: (int(m[2]), int(m[3])) for m in re.finditer(r"^\| ([a-z]+/\S+) \| (\d+) \| (\d+) \|", text, re.M)}
    held = {
        e.type: (len(e.given()), sum(1 for k in e.given() if e.source_kind(k) == "third-party")) for e in catalogue()
    }
    assert rows == held
    total = re.search(r"(\d+) facts in all, (\d+) of them from third-party pages", text)
    assert total is not None and (int(total[1]), int(total[2])) == tuple(map(sum, zip(*held.values(), strict=True)))


def test_dgx_h100_and_h200_count_the_compute_nics_nccl_runs_on() -> None:
    """MLPerf's "10x 400Gbe Infiniband" counts DGX H100's two dual-port storage and management cards too;
    NVIDIA's DGX BasePOD pages say the compute fabric is the eight single-port ConnectX-7 behind four OSFP."""
    from topomap.model.lots import entry

    for name in ("nvidia/dgx-h100", "nvidia/dgx-h200"):
        lot = entry(name, "test").lot()
        assert (lot.nic_count, lot.nic_rate_gbit, lot.fabric) == (8, 400, "infiniband"), name
        assert "docs.nvidia.com/dgx-basepod" in entry(name, "test").given()["nics.count"].origin.url
