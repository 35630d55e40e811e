"""diff --flow decided by the flow's arrows alone (issue 19 item 1), its first line a short verdict
(issue 23), and the per-medium summary that names its unknown members (issue 19 item 7).

Data: real `nvidia-smi topo -m` pastes and NCCL XML files from tests/data/real-topologies (origins in
its README) and the project's samples/ snapshots imported from them."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES, run_probe
from tests.fakes import machines
from tests.fakes.flows import flow_yaml, replicas_across, step
from topomap.cli import app
from topomap.diff import diff_snapshots
from topomap.flow import bind, gpus_of, map_flow, read_flow
from topomap.flow.mapping import medium_summary
from topomap.graph import build
from topomap.importers import import_file, load_any

runner = CliRunner()
SNAPS = SAMPLES / "snapshots"
TP = SAMPLES / "flows" / "tensor-parallel.yaml"
PIPE = SAMPLES / "flows" / "two-host-pipeline.yaml"
H200 = REAL / "nvidia-smi" / "hgx-h200-8gpu-10nic-nchc-nano4.txt"


def _nics_far(src: Path, dst: Path) -> Path:
    """The same `topo -m` paste with every GPU↔NIC cell set to SYS (in place, the columns kept): the
    GPU matrix (hence every arrow of a one-host flow) is unchanged, only the NICs are farther."""
    lines = src.read_text().splitlines()
    head = lines[0].split()
    gpus = [i for i, name in enumerate(head) if name.startswith("GPU") and name[3:].isdigit()]
    nics = [i for i, name in enumerate(head) if name.startswith("NIC") and name[3:].isdigit()]
    out = [lines[0]]
    for line in lines[1:]:
        tokens = list(re.finditer(r"\S+", line))
        label = tokens[0].group() if tokens else ""
        cols = nics if label.startswith("GPU") else gpus if label.startswith("NIC") and label[3:].isdigit() else []
        for j in cols:
            if 1 + j < len(tokens):
                t = tokens[1 + j]
                line = line[: t.start()] + "SYS".ljust(t.end() - t.start()) + line[t.end() :]
        out.append(line)
    dst.write_text("\n".join(out) + "\n")
    return dst


def test_nic_differences_no_arrow_uses_never_decide_a_one_host_flow(tmp_path: Path) -> None:
    """Case 1: a tensor-parallel flow on one host, two lots whose GPU matrices are identical and whose
    NICs differ (GPUDirect, proximity). Before: "A is better for this flow" while no arrow changed."""
    a = import_file(H200)
    b = import_file(_nics_far(H200, tmp_path / "far.txt"))
    d = diff_snapshots(a, b, names=("near", "far"), flow=read_flow(TP))
    machine = diff_snapshots(a, b, names=("near", "far"))
    assert machine.verdict == "a-better"  # without the flow, GPUDirect decides: the machines differ
    assert "8 GPUs: GPUDirect RDMA → no GPUDirect" in machine.grouped()
    assert all(r.direction == "neutral" for r in d.arrows) and len(d.arrows) == 52
    # NV18 of an unnamed model is a lower bound on both lots: equal cannot be confirmed, and no lot wins
    assert d.verdict == "cannot-confirm" and d.exit_status == 3
    assert d.summary() == (
        "cannot confirm that far equals near for this flow: no arrow differs in what both record "
        "(0 of 52 arrows better on far, 0 worse, 44 unknown on both, 8 the same)."
    )
    assert "8 GPUs: GPUDirect RDMA → no GPUDirect" in d.not_used()
    assert not any("GPUDirect" in r or "NIC" in r for r in d.reasons())


def test_one_host_flow_on_an_nvswitch_box_beats_the_hybrid_mesh() -> None:
    """Case 2: V100 hybrid mesh (DGX-1) against an A100 NVSwitch box: 28 arrows better, none worse.
    Before: "neither lot is better in everything", the tie from a NIC the flow never uses."""
    d = diff_snapshots(
        load_any(SNAPS / "dgx1-v100.json"),
        load_any(SNAPS / "hgx-a100-8gpu-8nic.json"),
        names=("dgx1", "a100"),
        flow=read_flow(TP),
    )
    assert d.verdict == "b-better" and d.exit_status == 1
    assert d.summary() == (
        "a100 is better for this flow: 28 of 52 arrows better on a100, 0 worse, 16 unknown on both, 8 the same."
    )
    assert d.reasons()[0] == "12 arrows (lot:gpu0 → lot:gpu5 …) better on a100: host-memory → gpu-link"
    assert "8 GPUs: nearest NIC PIX → PXB" in d.not_used()
    assert "12 GPU pairs: no NVLink (SYS) → NV12" in d.used()  # on the pairs the flow joins: context


def test_network_arrow_that_loses_gpudirect_and_crosses_sockets_is_worse() -> None:
    """Case 3: a two-host pipeline whose only GPU↔GPU arrow crosses the network, IBM's NCCL XML
    against an all-SYS RTX 4090 box. Before: "cannot tell" (exit 3) with "0 get worse"."""
    a = import_file(REAL / "nccl-xml" / "ibm-cloud-gx3d-h100-8gpu-vsi.xml")
    b = load_any(SNAPS / "rtx4090-8gpu-all-sys.json")
    d = diff_snapshots(a, b, names=("ibm", "rtx"), flow=read_flow(PIPE))
    assert d.verdict == "a-better" and d.exit_status == 1
    assert d.summary() == "ibm is better for this flow: 1 of 3 arrows worse on rtx, 0 better, 2 unknown on both."
    net = next(r for r in d.arrows if r.a.medium == "network")
    assert net.direction == "worse"
    assert net.qualities == [
        "loses GPUDirect RDMA at both ends",
        "crosses the inter-socket link to its NIC at both ends",
    ]
    # bandwidth recorded on one lot only: 25.0 GB/s (spec) on ibm, unknown on rtx
    assert (net.a.bandwidth_gbps, net.a.bandwidth_source, net.b.bandwidth_gbps) == (25.0, "spec", None)
    assert net.b.bandwidth_source == "unknown" and net.slower is None and not net.confirmed
    assert "28 GPU pairs: NV18 → no NVLink (SYS)" in d.not_used()  # no arrow joins two GPUs of one host


def test_replicas_that_share_one_nic_are_worse(tmp_path: Path) -> None:
    """Eight GPUs of one host send to eight of another: IBM's eight NICs (one PIX to each GPU) against
    the real RTX 4090 paste's NICs, where every replica leaves through the same NIC."""
    flow = tmp_path / "spread.yaml"
    flow.write_text(replicas_across())
    a = load_any(SNAPS / "ibm-gx3d-h100-8gpu.json")
    b = import_file(REAL / "nvidia-smi" / "rtx4090-8gpu-2nic-go-gpuallocator17.txt")
    d = diff_snapshots(a, b, names=("ibm", "rtx"), flow=read_flow(flow))
    assert d.verdict == "a-better" and len(d.arrows) == 8
    for r in d.arrows:
        assert r.direction == "worse" and "loses GPUDirect RDMA at both ends" in r.qualities
        shared = [q for q in r.qualities if q.startswith("shares a NIC with ")]
        assert shared and shared[0].endswith("other arrow(s) of the same flow arrow")


def test_a_pcie_link_trained_down_under_a_slower_nic_is_worse(tmp_path: Path) -> None:
    """A GPU trained at x8 (31.5 GB/s at Gen5) behind a 200 Gb/s NIC (25 GB/s): the network arrow's
    figure does not change, its route still crosses a link trained below its width."""
    s = run_probe(machines.hgx_h100(), tmp_path).snapshot
    s = msgspec.structs.replace(s, nics=[msgspec.structs.replace(n, speed_gbit_s=200.0) for n in s.nics])
    gpus = list(s.gpus)
    gpus[7] = msgspec.structs.replace(gpus[7], pcie=msgspec.structs.replace(gpus[7].pcie, width_current=8))
    d = diff_snapshots(s, msgspec.structs.replace(s, gpus=gpus), flow=read_flow(PIPE))
    net = next(r for r in d.arrows if r.a.medium == "network")
    assert net.a.bandwidth_gbps == net.b.bandwidth_gbps == 25.0
    assert net.direction == "worse" and net.qualities == ["node-a:gpu7's PCIe link trained below its width"]
    assert d.verdict == "a-better"


def test_nvlink_a_static_nccl_file_does_not_record_is_not_the_flows_concern() -> None:
    """Neither AWS p4d's nor Azure NDv4's static NCCL file records NVLink inside a host; a flow whose
    GPUs talk only over the network is not blocked by it. Their PCIe figures (8 GT/s x16 and 16 GT/s
    x16 on every link) are the files' placeholders, not the machines' (issue 30 item 6): the host
    arrows over PCIe cannot be ranked, and what settles them is named."""
    a = import_file(REAL / "nccl-xml" / "aws-p4d-24xlarge.xml")
    b = import_file(REAL / "nccl-xml" / "azure-ndv4.xml")
    d = diff_snapshots(a, b, names=("p4d", "ndv4"), flow=read_flow(PIPE))
    assert d.verdict == "cannot-confirm" and d.exit_status == 3
    host = [r for r in d.arrows if r.a.via == "pcie"]
    assert len(host) == 2 and all(r.direction == "unknown" for r in host)
    # the files' placeholder figures, and what settles each end
    assert all((r.a.bandwidth_source, r.b.bandwidth_source) == ("topology-file", "topology-file") for r in host)
    assert all(
        m.bandwidth_settle and m.bandwidth_settle.startswith("`nvidia-smi -q -d PCIE`")
        for r in host
        for m in (r.a, r.b)
    )
    assert not any("Gen3" in r or "Gen4" in r for r in d.reasons())
    assert "p4d does not record which GPU pairs NVLink joins" in d.not_used()
    assert any(x.startswith("8 GPU pairs: PHB → SYS (cannot tell: NVLink is not recorded") for x in d.not_used())


def test_first_line_is_the_verdict_alone_and_nics_read_as_show_says() -> None:
    """The first printed line is the verdict (no reasons, no counts of the machine); NICs are named in
    the words of show (their link layer from model.facts), not "RDMA NICs 0 → 4"."""
    a, b = SNAPS / "dgx1-v100.json", SNAPS / "hgx-a100-8gpu-8nic.json"
    r = runner.invoke(app, ["diff", str(a), str(b), "--flow", str(TP)], env={"COLUMNS": "200"})
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert (
        lines[0] == "hgx-a100-8gpu-8nic is better for this flow: 28 of 52 arrows better on hgx-a100-8gpu-8nic, "
        "0 worse, 16 unknown on both, 8 the same."
    )
    assert lines[1] == "" and lines[2] == "Why"
    assert "Not used by this flow (not in the verdict)" in r.output
    assert "  NICs: 4 NICs → 8 NICs" in r.output
    ibm = SNAPS / "ibm-gx3d-h100-8gpu.json"
    plain = runner.invoke(app, ["diff", str(a), str(ibm)], env={"COLUMNS": "200"})
    assert plain.output.splitlines()[0] == "ibm-gx3d-h100-8gpu is better than dgx1-v100 for work across its GPUs."
    assert "RDMA NICs" not in plain.output


def _mapped(flow_text: str, snap: Path, tmp_path: Path) -> list:  # type: ignore[type-arg]
    f = tmp_path / "f.yaml"
    f.write_text(flow_text)
    flow = read_flow(f)
    topos = {"lot": build(load_any(snap))}
    bind(flow, gpus_of(topos))  # type: ignore[arg-type]
    return medium_summary(map_flow(flow, topos))  # type: ignore[arg-type]


def test_summary_names_unknown_members(tmp_path: Path) -> None:
    """Four GPUs of the real DGX-1 paste (gpu0, gpu1, gpu6, gpu7): two pairs over NVLink, four
    staged through host memory at an unknown figure. The summary names those four."""
    text = flow_yaml({"ex": step("exchange", ["lot:gpu0", "lot:gpu1", "lot:gpu6", "lot:gpu7"])}, name="x")
    rows = {m.medium: m for m in _mapped(text, REAL / "nvidia-smi" / "dgx1-v100-pytorch-ddp-bench.txt", tmp_path)}
    nv, staged = rows["gpu-link"], rows["host-memory"]
    assert len(nv.arrows) == 2 and nv.slowest is not None and nv.slowest.path == "NV1"
    assert len(staged.unknown) == 4 and staged.slowest is None and staged.ceiling_gbps is None
    assert staged.text() == (
        "4 arrow(s); bandwidth unknown for all: lot:gpu0 → lot:gpu6, lot:gpu0 → lot:gpu7, "
        "lot:gpu1 → lot:gpu6, lot:gpu1 → lot:gpu7"
    )


def test_summary_bounds_unknown_pcie_members_by_their_generation() -> None:
    """IBM's NCCL XML records each H100's PCIe generation (Gen5) but not the host link's figure: the
    16 host-memory arrows are unknown, at most the Gen5 x16 rate."""
    r = runner.invoke(app, ["map", str(TP)], env={"COLUMNS": "400"})
    assert r.exit_code == 0
    line = next(x for x in r.output.splitlines() if x.startswith("  host-memory: "))
    assert line.startswith(
        "  host-memory: 16 arrow(s); bandwidth unknown for all (≤ 63.0 GB/s spec, the PCIe x16 ceiling): "
        "lot:memory → lot:gpu0"
    )
    assert line.endswith("… and 12 more")
    j = runner.invoke(app, ["map", str(TP), "--json"])
    import json

    host = next(s for s in json.loads(j.stdout)["summary"] if s["medium"] == "host-memory")
    assert host["unknown_bandwidth"] == 16 and len(host["unknown"]) == 16 and host["unknown_ceiling_gbps"] == 63.015


def test_piped_at_80_columns_no_lot_name_is_cut() -> None:
    """Piped at 80 columns the old arrows table folded lot names inside cells (`ibm-gx3d-h100-8gp` /
    `u`); the blocks keep every name whole."""
    a, b = SNAPS / "ibm-gx3d-h100-8gpu.json", SNAPS / "hgx-h200-8gpu-10nic.json"
    r = runner.invoke(app, ["diff", str(a), str(b), "--flow", str(TP)], env={"COLUMNS": "80"})
    tokens = [t for line in r.output.splitlines() for t in line.split()]
    for name in ("ibm-gx3d-h100-8gpu", "hgx-h200-8gpu-10nic"):
        assert any(t.rstrip(":,.") == name for t in tokens)
        assert not [t for t in tokens if name.startswith(t) and t != name and len(t) > 4], name


A100_ROCE = REAL / "nvidia-smi" / "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt"


def test_a_nearer_nic_on_the_arrows_route_decides_and_agrees_with_the_listing() -> None:
    """The newcomer trial: the README's two-host pipeline on the real A100 RoCE paste (gpu7's NIC
    mlx5_7 and gpu0's mlx5_0 are PXB) against the real H200 paste (each GPU has a PIX NIC). Before:
    "no arrow differs" (exit 3) while "nearest NIC PXB → PIX" sat under "differences on what the flow
    uses". The network arrow's NIC distance is a quality of that arrow (ranked as diff ranks a GPU's
    nearest NIC), so the arrow is better and every used difference is one an arrow carries."""
    a, b = import_file(A100_ROCE), import_file(H200)
    d = diff_snapshots(a, b, names=("a100", "h200"), flow=read_flow(PIPE))
    net = next(r for r in d.arrows if r.a.medium == "network")
    assert net.direction == "better" and net.qualities == ["its NIC nearer: PXB → PIX at both ends"]
    assert [r.direction for r in d.arrows if r is not net] == ["neutral", "neutral"]
    assert d.verdict == "b-better" and d.exit_status == 1
    assert d.summary() == "h200 is better for this flow: 1 of 3 arrows better on h200, 0 worse, 2 unknown on both."
    assert d.used() == ["2 GPUs: nearest NIC PXB → PIX"]
    # the listing and the verdict agree: each GPU whose nearest NIC changes under "used" is an end of
    # an arrow that changes for it; swapped, the same arrow is worse
    back = diff_snapshots(b, a, names=("h200", "a100"), flow=read_flow(PIPE))
    rev = next(r for r in back.arrows if r.a.medium == "network")
    assert rev.direction == "worse" and rev.qualities == ["its NIC farther: PIX → PXB at both ends"]
    assert back.verdict == "a-better"


def test_a_one_host_flows_network_arrow_to_an_unbound_host_takes_its_nic_distance() -> None:
    """doc-conversion sends gpu0's and gpu1's results over the network to a workstation with no
    snapshot: the lot's end of those two arrows is PXB on the A100 paste, PIX on the H200 one."""
    d = diff_snapshots(
        import_file(A100_ROCE),
        import_file(H200),
        names=("a100", "h200"),
        flow=read_flow(SAMPLES / "flows" / "doc-conversion.yaml"),
    )
    better = [r for r in d.arrows if r.direction == "better"]
    assert [(r.src, r.dst) for r in better] == [("lot:gpu0", "workstation"), ("lot:gpu1", "workstation")]
    assert all(r.qualities == ["its NIC nearer: PXB → PIX at its source"] for r in better)
    assert d.verdict == "b-better" and d.used() == ["2 GPUs: nearest NIC PXB → PIX"]
