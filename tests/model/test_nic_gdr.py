"""Issue 30, the NIC and log items, each on a real output kept with its origin (READMEs of
tests/data/real-topologies and tests/data/real-nccl-logs):

2. EFA's GPUDirect RDMA is what aws-ofi-nccl checks, not the PCI device id: a p4d.24xlarge run whose
   topology file lists its NICs as 1d0f:efa0 reads ``NET/AWS Libfabric/N/GDRDMA`` on every network
   channel, so 0xefa0 cannot mean "no GPUDirect"; where nothing says, it is unknown in every view.
3. The lines that choose an EFA are libfabric's and the plugin's, not NCCL_IB_HCA.
4. A `nvidia-smi nvlink -s` whose GPUs all say "all links are inActive" is a status: no NVLink.
7. `nccl --log` compares the P2P flavour and the NIC (NET/n through the log's legend), not only the
   transport.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES
from tests.fakes.flows import cross_host
from topomap.check import Lot, check, parse_requirements
from topomap.cli import app
from topomap.graph import build
from topomap.graph.evidence import nearest_nic, nvlink
from topomap.importers import import_text, load_any
from topomap.model.facts import nic_family, nic_gdr
from topomap.model.source_facts import source_knows
from topomap.nccl.logread import read_log
from topomap.nccl.predict import predict_snapshot
from topomap.place import place_gpus
from topomap.transport.rules import NcclEnv

LOGS = Path(__file__).parents[1] / "data" / "real-nccl-logs"
XML = REAL / "nccl-xml"
P4DE = XML / "aws-p4de-24xlarge.xml"  # aws-ofi-nccl topology/p4de-24xl-topo.xml @2daf7d3 (1d0f:efa0)
P4D_RUN = XML / "aws-p4d-24xlarge-ofi-1.11.0.xml"  # the p4d file aws-ofi-nccl 1.11.0-aws ships (1d0f:efa0)
P4D_SAMPLE = SAMPLES / "snapshots" / "aws-p4d-24xlarge.json"  # the 2020 p4d file: no PCI ids
P4D_LOG = LOGS / "p4d-efa-gdrdma-ofi715.log"  # aws-ofi-nccl#715: p4d.24xlarge, NET/AWS Libfabric/N/GDRDMA
REQS = SAMPLES / "requirements" / "tensor-parallel.yaml"
TP_FLOW = SAMPLES / "flows" / "tensor-parallel.yaml"


def _json(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    r = CliRunner().invoke(app, [*args, "--json"])
    return r.exit_code, json.loads(r.stdout)


def test_the_p4d_log_uses_gpudirect_over_efa_0xefa0() -> None:
    """The run's own lines: aws-ofi-nccl on p4d.24xlarge, its topology file p4d-24xl-topo.xml (whose NICs
    are 1d0f:efa0 in every release since v1.1.3-aws), and every network channel GDRDMA."""
    text = P4D_LOG.read_text()
    assert "Running on p4d.24xlarge platform, Setting NCCL_TOPO_FILE" in text and "p4d-24xl-topo.xml" in text
    log = read_log(text, P4D_LOG.name)
    net = [h for h in log.hops if h.via.startswith("NET/")]
    assert len(net) == 9 and all(h.transport == "NET+GDR" and h.via.startswith("NET/AWS Libfabric/") for h in net)
    topo = load_any(P4D_RUN)
    assert {(n.pci_vendor_id, n.pci_device_id) for n in topo.nics} == {("0x1d0f", "0xefa0")}
    for n in topo.nics:  # the fact the log contradicts was "0xefa0: no RDMA read, no GPUDirect RDMA"
        assert nic_family(n).family == "efa" and not nic_gdr(n).no
        assert "fi_info -p efa" in (nic_gdr(n).settle or "")


def test_check_of_a_tensor_parallel_lot_on_p4de_is_never_a_fail() -> None:
    """The held-out case: `check` of the tensor-parallel requirements on aws-ofi-nccl's p4de file; the p4d
    sample (no PCI ids) and the p4de file of the same hardware answer alike."""
    for lot in (P4DE, P4D_SAMPLE, P4D_RUN):
        code, doc = _json("check", str(REQS), str(TP_FLOW), f"lot={lot}")
        gdr = next(r for r in doc["rules"] if r["rule"] == "gdr_nic")
        assert gdr["status"] == "unknown" and code != 1 and doc["verdict"] == "unknown", (lot.name, gdr, code)
        assert not any("no GPUDirect" in line or "first-generation" in line for line in gdr["evidence"])


def test_nccl_map_place_and_diff_follow_the_one_answer_on_p4de() -> None:
    snap = load_any(P4DE)
    t = build(snap)
    assert {nearest_nic(t, f"gpu{g.index}").gdr.value for g in snap.gpus} == {"unknown"}
    report = predict_snapshot(snap, NcclEnv())
    assert {n.gdr for n in report.nics} == {"unknown"} and all("FI_HMEM" in n.why for n in report.nics)
    placed = place_gpus(t, 2, nics=True)
    assert {g.gdr for g in placed.gpus} == {"unknown"}
    assert not any("without GPUDirect RDMA" in n for n in placed.notes)
    assert all("GPUDirect RDMA unknown" in n for n in placed.notes if "NIC 0000:10:1b.0" in n)
    _, mapped = _json("map", str(TP_FLOW), f"lot={P4DE}")
    assert not any("no GPUDirect" in note for a in mapped["arrows"] for note in a["notes"])


def test_diff_of_a_connectx_lot_and_p4de_does_not_say_gpudirect_is_lost(tmp_path: Path) -> None:
    """`diff` said a network arrow onto the p4de "loses GPUDirect RDMA at both ends"; unknown is not lost."""
    flow = tmp_path / "two.yaml"
    flow.write_text(cross_host("gpu0", volume="512 MiB", name="two"))
    cx = SAMPLES / "snapshots" / "hgx-h200-8gpu-10nic.json"
    r = CliRunner().invoke(app, ["diff", "--flow", str(flow), str(cx), str(P4DE), "--json"])
    doc = json.loads(r.stdout)
    (row,) = doc["arrows"]
    assert r.exit_code in (0, 1) and (row["direction"], row["qualities"]) == ("neutral", [])  # nothing lost
    assert not any(c["kind"] == "gdr" for c in doc["changes"])  # and no machine difference in GPUDirect


def test_the_p4d_log_against_its_topology_file_never_blames_the_input() -> None:
    """`nccl --log` used to say "GPUDirect RDMA used although not predicted: the NIC is closer than
    recorded" on EFA; the prediction now says unknown where the file does not settle it."""
    code, doc = _json("nccl", str(P4D_RUN), "--log", str(P4D_LOG))
    assert code == 0
    for p in doc["pairs"]:
        assert "closer than recorded" not in (p["why_different"] or "")
        if p["observed"] == "NET+GDR":
            assert p["predicted"] == "unknown"


def test_efa_nics_are_chosen_by_libfabric_not_nccl_ib_hca() -> None:
    """aws-ofi-nccl's p5 file (rdmap names, four EFAs per GPU): the lines name FI_EFA_IFACE with every EFA
    the two GPUs' channels use, and no NCCL_IB_HCA; a ConnectX lot keeps NCCL_IB_HCA."""
    efa = place_gpus(build(load_any(XML / "aws-p5-48xlarge.xml")), 2, nics=True)
    text = "\n".join(line for _what, line in efa.commands)
    assert "NCCL_IB_HCA" not in text.replace("not NCCL_IB_HCA", "")
    iface = next(line for what, line in efa.commands if line.startswith("FI_EFA_IFACE="))
    assert len(iface.split()[0].removeprefix("FI_EFA_IFACE=").split(",")) == 8
    cx = place_gpus(build(load_any(SAMPLES / "snapshots" / "hgx-h200-8gpu-10nic.json")), 2, nics=True)
    assert any(line.startswith("NCCL_IB_HCA==mlx5_") for _what, line in cx.commands)
    assert not any("FI_EFA" in line for _what, line in cx.commands)


def test_an_all_inactive_nvlink_status_says_no_nvlink() -> None:
    """HPE's notes on a DL380 Gen11 with 2x A100 PCIe: `nvidia-smi nvlink -s` prints "NVML: Unable to
    retrieve NVLink information as all links are inActive" under each GPU. Not a `nvidia-smi -L`: no
    NVLink between them, and the settle hint for a bridge that should be there."""
    path = REAL / "nvidia-smi" / "hpe-dl380-gen11-2x-a100-pcie-nvlink-s-all-inactive.txt"
    snap = load_any(path)
    assert snap.source.formats == ["nvlink-status"] and source_knows(snap, "nvlink")
    t = build(snap)
    assert nvlink(t, "gpu0", "gpu1").usable.no
    found = {f.subject: f for f in snap.findings if f.kind == "nvlink-inactive"}
    assert set(found) == {"gpu0", "gpu1"} and "reseat it" in found["gpu0"].text
    rule, _ = parse_requirements("requirements:\n  - gpu_links: {min: nvlink}\n", "r.yaml")
    verdict = check(rule, [Lot("lot", t)], None).results[0]
    assert verdict.status == "fail"  # NVLink is known absent, not unknown (before: read as `nvidia-smi -L`)


def test_p2p_read_means_nvlink_when_the_prediction_has_no_read() -> None:
    """nccl#527 (p4d, P2P/IPC/read on every pair) with the p4d sample (NVLink not recorded): the
    prediction leaves read and the medium open, never "over PCIe" (which /read contradicts). With
    NCCL_P2P_READ_ENABLE=0 given, the same log's /read lines are told apart from the prediction."""
    code, doc = _json("nccl", str(P4D_SAMPLE), "--log", str(LOGS / "a100-p4d-ipc-read-nccl527.log"))
    assert code == 0
    decided = [p for p in doc["pairs"] if p["predicted"] == "P2P"]
    assert decided and all(p["same"] and "over PCIe" not in p["detail"] and "[/read]" in p["detail"] for p in decided)
    log = LOGS / "a100sxm4-4gpu-nv-pairs-shm-cumem-read.log"
    args = ("nccl", str(log.with_suffix(".topo.txt")), "--log", str(log), "--env", "NCCL_P2P_READ_ENABLE=0")
    _, forced = _json(*args)
    read = [p for p in forced["pairs"] if p["observed"] == "P2P" and p["via"].endswith("/read")]
    assert read and all(not p["same"] and p["why_different"].startswith("NCCL reads (/read)") for p in read)


def _error(path: Path) -> tuple[int, str]:
    r = CliRunner().invoke(app, ["show", str(path)])
    return r.exit_code, r.output


def test_an_empty_file_says_empty(tmp_path: Path) -> None:
    """Issue 30 item 9: "empty", not "unknown format"."""
    (tmp_path / "paste.txt").write_text("")
    (tmp_path / "blank.txt").write_text("\n \n")
    for name, said in (("paste.txt", "is empty (0 bytes)"), ("blank.txt", "holds only blank space")):
        code, out = _error(tmp_path / name)
        assert code == 2 and said in out and "unknown format" not in out and out.count("\n") == 1


def test_a_json_that_is_not_a_snapshot_says_what_it_is(tmp_path: Path) -> None:
    """A saved `topomap nccl --json` given where a snapshot goes, a JSON Schema, another tool's JSON."""
    _, doc = _json("nccl", str(P4DE))
    (tmp_path / "nccl.json").write_text(json.dumps(doc))
    (tmp_path / "other.json").write_text('{"metadata": {"x": 1}, "results": []}')
    code, out = _error(tmp_path / "nccl.json")
    assert code == 2 and "`topomap nccl --json` output, not a snapshot" in out and "missing or invalid" not in out
    code, out = _error(tmp_path / "other.json")
    assert code == 2 and "keys metadata, results" in out and "topomap import" in out
    code, out = _error(Path(__file__).parents[2] / "topomap" / "schema" / "snapshot.schema.json")
    assert code == 2 and "a JSON Schema" in out


def test_hwloc_subtrees_side_by_side_are_read_and_a_trimmed_excerpt_is_named() -> None:
    """NVIDIA's GPUDirect Storage guide publishes a DGX-2's NUMANode L#3 I/O as five hwloc subtrees, each
    trimmed ("..." and no closing tags): refused as an excerpt, not "junk after document element". The
    DGX-2H's own hwloc XML cut into its four host-bridge subtrees, side by side, reads as one fragment."""
    code, out = _error(REAL / "hwloc" / "nvidia-gds-guide-dgx2-numa3-io-excerpt.partial")
    assert code == 2 and "not all closed" in out and "junk after" not in out
    import xml.etree.ElementTree as ET

    whole = ET.parse(REAL / "hwloc" / "nvidia-dgx2h.xml").getroot()
    bridges = [e for e in whole.iter("object") if e.get("type") == "Bridge" and e.get("depth") == "0"]
    text = "\n".join(ET.tostring(b, encoding="unicode") for b in bridges)
    snap = import_text(text, "dgx2h-io.xml")
    assert len(snap.gpus) == 16 and any("sibling <object> subtrees" in n for n in snap.source.notes)
    assert len(snap.gpus) == len(load_any(REAL / "hwloc" / "nvidia-dgx2h.xml").gpus)
