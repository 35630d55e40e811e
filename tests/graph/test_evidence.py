"""Every answer follows from evidence: one scenario per class of wrong answer seen on real outputs
(issue 9), each checked in map, check and show, which ask the same evidence functions."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES, run_probe
from tests.fakes import machines
from tests.fakes.flows import arrow as flow_arrow
from tests.fakes.flows import cross_host, map_text, one_arrow, step, write_flow
from topomap.check import Lot, check, parse_requirements
from topomap.cli import app
from topomap.flow.mapping import MappedArrow, map_flow
from topomap.graph import build
from topomap.graph.evidence import gpu_link, nearest_nic, nvlink
from topomap.graph.routes import route
from topomap.importers import import_file, load_any
from topomap.model.nvlink_rate import nvlink_bundle_bandwidth
from topomap.model.snapshot import P2P, Fabric, Mig, Snapshot
from topomap.render.terminal import show

runner = CliRunner()


def arrow(snap: Snapshot, src: str, dst: str, volume: str = "1 GiB") -> MappedArrow:
    return map_text(one_arrow(f"lot:{src}", f"lot:{dst}", volume), {"lot": build(snap)}).arrows[0]


def verdict(snap: Snapshot, rules: str) -> tuple[str, list[str], str]:
    reqs, _ = parse_requirements("requirements:\n" + rules, "r.yaml")
    r = check(reqs, [Lot("lot", build(snap))], None).results[0]
    return r.status, r.evidence, r.summary


def show_text(snap: Snapshot) -> str:
    from rich.console import Console

    console = Console(width=250, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(show(snap, build(snap)))
    return console.export_text()


@pytest.fixture(scope="module")
def h100(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return run_probe(machines.hgx_h100(), tmp_path_factory.mktemp("h100")).snapshot


def with_gpus(s: Snapshot, **changes: object) -> Snapshot:
    return msgspec.structs.replace(s, gpus=[msgspec.structs.replace(g, **changes) for g in s.gpus])


# 1. relaying over a third GPU -----------------------------------------------------------------------


def test_dgx1_pair_without_direct_nvlink_is_not_relayed_over_a_third_gpu() -> None:
    s = load_any(SAMPLES / "snapshots" / "dgx1-v100.json")
    t = build(s)
    assert nvlink(t, "gpu0", "gpu5").usable.no  # gpu0–gpu5 is SYS on the DGX-1 cube mesh
    r = route(t, "gpu0", "gpu5")
    assert r.via == "pcie" and r.path == "SYS" and "gpu1" not in r.nodes
    a = arrow(s, "gpu0", "gpu5")
    assert a.medium == "host-memory" and not any(n.endswith("/gpu1") for n in a.route)
    status, ev, _ = verdict(s, "  - gpu_links: {min: nvlink}\n")
    assert status == "fail" and "gpu0–gpu5: no usable NVLink: no NVLink between them (path SYS)" in ev
    direct = arrow(s, "gpu0", "gpu1")  # a real NV1 bundle
    assert (direct.medium, direct.via, direct.path) == ("gpu-link", "nvlink", "NV1")


# 2. absent evidence is unknown, not "no" --------------------------------------------------------------


def test_static_nccl_file_without_gpu_or_nvlink_elements_leaves_nvlink_unknown() -> None:
    # AWS p4d (8x A100 on NVSwitch): the vendor's NCCL_TOPO_FILE has the PCI tree and NICs only
    s = import_file(REAL / "nccl-xml" / "aws-p4d-24xlarge.xml")
    assert "pairs.nvlink" in s.source.unknown_fields
    t = build(s)
    nv = nvlink(t, "gpu0", "gpu4")
    assert nv.usable.value == "unknown" and nv.usable.settle and "nvidia-smi topo -m" in nv.usable.settle
    a = arrow(s, "gpu0", "gpu4")
    assert a.medium == "unknown" and a.bandwidth_gbps is None and a.bandwidth_source == "unknown"
    assert "gpu-link over NVLink" in a.candidates and a.settle and "topo -m" in a.settle
    status, _, _ = verdict(s, "  - gpu_links: {min: nvlink}\n")
    assert status == "unknown"
    text = show_text(s)
    assert "cannot know: which GPUs NVLink joins" in text and "unknown: this source does not record NVLink" in text
    assert "recorded by: `nvidia-smi topo -m` (which GPUs NVLink joins)" in text


def test_nccl_file_with_nvlink_elements_records_nvlink() -> None:
    s = import_file(REAL / "nccl-xml" / "ibm-cloud-gx3d-h100-8gpu-vsi.xml")
    assert "pairs.nvlink" not in s.source.unknown_fields
    a = arrow(s, "gpu0", "gpu7")
    assert (a.medium, a.via, a.path) == ("gpu-link", "nvswitch", "NV18")


# 3. NVLink is usable only when the evidence says so ---------------------------------------------------


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"fabric": Fabric(state="in-progress", clique_id=0)}, "fabric state in-progress"),
        ({"fabric": Fabric(state="completed", status="NVML_ERROR_NOT_READY", clique_id=1)}, "registration failed"),
        ({"mig": Mig(enabled=True)}, "MIG mode is on"),
    ],
)
def test_nvlink_not_usable_when_fabric_or_mig_say_so(h100: Snapshot, change: dict[str, object], reason: str) -> None:
    s = with_gpus(h100, **change)
    t = build(s)
    nv = nvlink(t, "gpu0", "gpu1")
    assert nv.usable.no and nv.links == 18 and any(reason in r for r in nv.usable.reasons)
    a = arrow(s, "gpu0", "gpu1")
    assert a.medium != "gpu-link" or a.via == "pcie-p2p"  # map agrees: not over NVLink
    status, ev, _ = verdict(s, "  - gpu_links: {min: nvlink}\n")
    assert status == "fail" and any(reason in e for e in ev)


def test_nvml_nvlink_p2p_status_and_cuda_peer_access_are_looked_at(h100: Snapshot) -> None:
    pairs = [
        msgspec.structs.replace(p, p2p=P2P(read="OK", write="OK", nvlink="NS", atomics="OK"))
        if (p.a, p.b) == ("gpu0", "gpu1")
        else p
        for p in h100.pairs
    ]
    s = msgspec.structs.replace(h100, pairs=pairs)
    assert nvlink(build(s), "gpu0", "gpu1").usable.no
    assert arrow(s, "gpu0", "gpu1").via == "pcie-p2p"
    assert arrow(s, "gpu0", "gpu2").via == "nvswitch"


def test_all_links_inactive_is_no_nvlink_everywhere(h100: Snapshot) -> None:
    s = with_gpus(h100, nvlinks=[msgspec.structs.replace(x, active=False) for x in h100.gpus[0].nvlinks])
    s = msgspec.structs.replace(
        s, pairs=[msgspec.structs.replace(p, path=p.pcie_path, nvlinks=0) if p.nvlinks else p for p in s.pairs]
    )
    t = build(s)
    assert nvlink(t, "gpu0", "gpu1").usable.no
    status, ev, _ = verdict(s, "  - gpu_links: {min: nvlink}\n")
    assert status == "fail" and "inactive" in " ".join(ev)  # not UNKNOWN
    assert "0/18 active: no NVLink" not in show_text(s) and "0 of 18 links active: no NVLink" in show_text(s)


def test_two_gpu_bridge_is_a_bridge_not_a_switch() -> None:
    s = import_file(REAL / "nvidia-smi" / "hpe-dl380a-gen11-2x-h100-pcie-nvlink-s.txt")
    t = build(s)
    assert "nvswitch:fabric" not in t.graph
    nv = nvlink(t, "gpu0", "gpu1")
    assert nv.usable.yes and nv.via == "nvlink" and nv.links == 12
    # `nvlink -s` prints 26.562 GB/s a link, NVLink 4's signalling rate: the figure is the data rate (issue 30)
    assert nv.bandwidth.gbps == pytest.approx(12 * 25) and nv.bandwidth.exact and nv.bandwidth.source == "spec"
    assert nv.bandwidth.tag == "data rate; 26.562 printed is the signalling rate"


# 4. a lost GPU never counts ---------------------------------------------------------------------------


def test_lost_gpu_is_not_counted_and_arrows_to_it_say_why(h100: Snapshot) -> None:
    gpus = list(h100.gpus)
    gpus[3] = msgspec.structs.replace(gpus[3], lost=True)
    s = msgspec.structs.replace(h100, gpus=gpus)
    status, ev, summary = verdict(s, "  - gpus: {min_count: 8}\n")
    assert status == "fail" and summary == "7 GPUs qualify < 8 needed"
    assert any(e.startswith("gpu3: not counted: gpu3 was lost during the probe") for e in ev)
    a = arrow(s, "gpu0", "gpu3")
    assert a.medium == "unknown" and "gpu3 was lost during the probe" in a.notes[0]
    assert gpu_link(build(s), "gpu0", "gpu3").medium == "unknown"
    assert "LOST during the probe" in show_text(s)


# 5. trained PCIe width --------------------------------------------------------------------------------


def test_gpu_trained_at_x8_maps_at_x8_with_a_warning(h100: Snapshot) -> None:
    gpus = list(h100.gpus)
    assert gpus[0].pcie is not None
    gpus[0] = msgspec.structs.replace(gpus[0], pcie=msgspec.structs.replace(gpus[0].pcie, width_current=8))
    s = msgspec.structs.replace(h100, gpus=gpus)
    a = arrow(s, "memory", "gpu0")
    assert a.bandwidth_gbps == pytest.approx(31.508)  # Gen5 x8, not x16
    assert any("gpu0 trained at x8 of x16" in n for n in a.notes)
    assert "trained below its x16" in show_text(s)


def test_idle_gpu_speed_does_not_lower_its_bandwidth(h100: Snapshot) -> None:
    s = with_gpus(h100, pcie=msgspec.structs.replace(h100.gpus[0].pcie, gen_current=1))
    assert arrow(s, "memory", "gpu0").bandwidth_gbps == pytest.approx(63.015)


# 7. check explains itself ------------------------------------------------------------------------------


def test_nv18_of_unknown_generation_passes_100_gbps() -> None:
    s = import_file(REAL / "nvidia-smi" / "hgx-h200-8gpu-10nic-nchc-nano4.txt")
    t = build(s)
    bw = nvlink(t, "gpu0", "gpu1").bandwidth
    assert bw.lower_bound and bw.gbps is not None and bw.gbps >= 100
    a = arrow(s, "gpu0", "gpu1")
    assert a.lower_bound and a.bandwidth_source == "derived"


def test_one_gpu_lot_does_not_pass_gpu_links(tmp_path: Path) -> None:
    s = import_file(REAL / "nvidia-smi" / "gh200-1gpu-4nic-bluefield3-aerial.txt")
    status, ev, _ = verdict(s, "  - gpu_links: {min: nvlink}\n")
    assert status == "fail" and ev[0].startswith("applies to no GPU pair")


def test_unknown_verdict_has_its_own_exit_status_and_names_the_command(tmp_path: Path) -> None:
    reqs = tmp_path / "r.yaml"
    reqs.write_text("requirements:\n  - driver: {min: '535'}\n")
    r = runner.invoke(app, ["check", str(reqs), "--probe", str(SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json")])
    assert r.exit_code == 3 and r.stdout.startswith("UNKNOWN: 1 of 1 rules cannot be told")
    assert "to answer it: `nvidia-smi --query-gpu=driver_version --format=csv`" in r.stdout
    j = runner.invoke(
        app, ["check", str(reqs), "--json", "--probe", str(SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json")]
    )
    d = json.loads(j.stdout)
    assert j.exit_code == 3 and d["verdict"] == "unknown" and d["rules"][0]["settle"]


def test_evidence_is_complete_in_json(h100: Snapshot, tmp_path: Path) -> None:
    from topomap.model.codec import save_snapshot

    save_snapshot(h100, tmp_path / "h.json")
    reqs = tmp_path / "r.yaml"
    reqs.write_text("requirements:\n  - gpu_links: {min: nvlink}\n")
    j = runner.invoke(app, ["check", str(reqs), "--json", "--probe", str(tmp_path / "h.json")])
    d = json.loads(j.stdout)
    assert len(d["rules"][0]["evidence"]) == 1 + 28  # the count, then every pair
    t = runner.invoke(app, ["check", str(reqs), "--probe", str(tmp_path / "h.json")])
    assert "28 of them" in t.stdout  # identical evidence collapsed in text, never silently cut


# 8. nothing invented -----------------------------------------------------------------------------------


def test_matrix_with_nv_pairs_gets_no_phantom_numa_groups() -> None:
    s = import_file(REAL / "nvidia-smi" / "hgx-h200-8gpu-10nic-nchc-nano4.txt")
    t = build(s)
    numas = [d["label"] for _, d in t.graph.nodes(data=True) if d.get("kind") == "numa"]
    assert not any("part" in n or "#" in n or "?" in n for n in numas), numas
    assert not any("SYS" in n for n in t.notes)


def test_rdma_nic_of_unknown_link_layer_is_not_called_ethernet_and_down_ports_are_skipped(h100: Snapshot) -> None:
    nics = [msgspec.structs.replace(n, kind="unknown") for n in h100.nics]
    nics[0] = msgspec.structs.replace(nics[0], state="down")
    s = msgspec.structs.replace(h100, nics=nics)
    t = build(s)
    choice = nearest_nic(t, "gpu0")
    assert choice.nic is not None and choice.nic.name == "mlx5_1" and choice.path == "PIX"
    assert any("mlx5_0: port down" in r for r in choice.reasons)
    m = map_text(cross_host("gpu0"), {"a": t, "b": build(h100)}).arrows[0]
    assert m.medium == "network" and m.via != "ethernet"


def test_one_nvlink_figure_with_its_source(h100: Snapshot) -> None:
    g = h100.gpus[0]
    bw = nvlink_bundle_bandwidth(g, 18, h100)
    assert bw.gbps == pytest.approx(18 * 25) and bw.source == "spec" and "signalling rate" in bw.tag
    text = show_text(h100)
    assert "450 GB/s spec (data rate; 26.562 printed is the signalling rate)" in text and "478" not in text


# findings and measurements (issue 11) feed the same evidence ---------------------------------------------


def test_measured_figure_replaces_the_nominal_and_flags_a_slow_link(h100: Snapshot) -> None:
    from topomap.model.snapshot import Measurement

    m = [
        Measurement(
            kind="h2d",
            src="host",
            dst="gpu0",
            method="copy engine",
            origin="topomap measure",
            size_bytes=256 * 2**20,
            median_gbps=24.0,
            verified=True,
        ),
        Measurement(kind="d2d", src="gpu0", dst="gpu1", method="copy engine", origin="nvbandwidth", median_gbps=389.0),
    ]
    s = msgspec.structs.replace(h100, measurements=m)
    a = arrow(s, "memory", "gpu0")
    assert (a.bandwidth_gbps, a.bandwidth_source) == (
        24.0,
        "measured",
    ) and "nominal 63.0 GB/s spec" in a.bandwidth_basis
    assert any("38% of 63.0 GB/s nominal" in n for n in a.notes)
    b = arrow(s, "gpu0", "gpu1")
    assert (b.bandwidth_gbps, b.bandwidth_source, b.via) == (389.0, "measured", "nvswitch")
    assert not any("nominal:" in n for n in b.notes)  # 81 % of nominal: healthy
    assert arrow(s, "gpu1", "gpu0").bandwidth_source == "spec"  # the other direction was not measured


def test_corrupt_peer_copies_and_acs_redirect_make_p2p_unusable(tmp_path: Path) -> None:
    from topomap.model.snapshot import Finding

    s = run_probe(machines.a100_pcie(), tmp_path).snapshot
    bad = Finding(kind="p2p-corrupt", subject="gpu1-gpu0", severity="error", text="peer copies return wrong data")
    acs = Finding(kind="acs-redirect", subject="gpu2-gpu3", severity="warning", text="ACS redirects gpu2↔gpu3")
    s = msgspec.structs.replace(s, findings=[bad, acs])
    a = arrow(s, "gpu0", "gpu1")
    assert a.medium == "host-memory" and any("wrong data" in n for n in a.notes)
    assert arrow(s, "gpu2", "gpu3").medium == "host-memory"
    status, ev, _ = verdict(s, "  - gpu_links: {min: PIX}\n")
    assert status == "fail" and any("gpu0–gpu1" in e and "wrong data" in e for e in ev)


def test_missing_nvidia_peermem_means_no_gpudirect(h100: Snapshot) -> None:
    from topomap.model.snapshot import Finding

    missing = Finding(
        kind="gpudirect-missing", subject="host", severity="warning", text="GPUDirect RDMA impossible: nvidia_peermem"
    )
    s = msgspec.structs.replace(h100, findings=[missing])
    choice = nearest_nic(build(s), "gpu0")
    assert choice.path == "PIX" and choice.gdr.no and "nvidia_peermem" in choice.gdr.why()
    status, _, _ = verdict(s, "  - gdr_nic: {max_path: PXB}\n")
    assert status == "fail"


def test_map_views_show_an_unknown_medium_with_its_candidates() -> None:
    flow = str(SAMPLES / "flows" / "tensor-parallel.yaml")
    lot = f"lot={SAMPLES / 'snapshots' / 'aws-p4d-24xlarge.json'}"
    for extra in ([], ["--all"]):
        r = runner.invoke(app, ["map", flow, "--probe", lot, *extra])
        assert r.exit_code == 0, r.stderr
        assert "medium unknown: gpu-link over NVLink" in r.stdout and "nvidia-smi topo -m" in r.stdout
    j = json.loads(runner.invoke(app, ["map", flow, "--probe", lot, "--json"]).stdout)
    unknown = [a for a in j["arrows"] if a["medium"] == "unknown"]
    assert len(unknown) == 28 and unknown[0]["candidates"] and unknown[0]["settle"]


def test_diagram_marks_nvlink_the_evidence_calls_unusable(h100: Snapshot) -> None:
    from topomap.render.dot import topology_dot

    ok = topology_dot([build(h100)])
    assert "NOT USABLE" not in ok
    broken = topology_dot([build(with_gpus(h100, fabric=Fabric(state="in-progress", clique_id=0)))])
    assert broken.count("NOT USABLE: gpu") == 8 and "style=dashed" in broken


def test_show_puts_measured_figures_and_findings_beside_the_machine(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    bw = REAL / "bandwidth" / "a100-sxm4-80gb-8gpu-p2pBandwidthLatencyTest-distserve3.txt"
    snap = SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json"
    assert runner.invoke(app, ["attach", str(snap), str(bw), "-o", str(out)]).exit_code == 0
    text = show_text(load_any(out))
    assert "Measured bandwidth" in text and "268.9" in text  # gpu0 → gpu1, p2pBandwidthLatencyTest
    a = arrow(load_any(out), "gpu0", "gpu1")
    assert a.bandwidth_source == "measured" and a.bandwidth_gbps == pytest.approx(268.9, abs=0.05)


def test_virtual_bridge_rate_is_unknown_on_routes_and_on_the_diagram_alike() -> None:
    """IBM Cloud gx3d (a VM) declares its emulated root ports Gen1 x1. The route's figure skips
    them (pcie_edge_bandwidth says unknown) and the diagram's tooltip says the same, not 0.25 GB/s."""
    from topomap.graph.query import is_virtual_bridge, pcie_edge_bandwidth, pcie_leg
    from topomap.render.dot import topology_dot

    s = import_file(REAL / "nccl-xml" / "ibm-cloud-gx3d-h100-8gpu-vsi.xml")
    topo = build(s)
    g = topo.graph
    virtual = [e for e in g.edges if g.edges[e].get("kind") == "pcie" and is_virtual_bridge(g, e)]
    assert len(virtual) == 8 and all(pcie_edge_bandwidth(g, e) is None for e in virtual)
    _, bw, _, notes = pcie_leg(topo, "gpu0", "gpu1")
    assert bw != 0.25 and any("virtual bridge" in n and "rate is unknown" in n for n in notes)
    dot = topology_dot([topo])
    assert dot.count("Gen1 x1 declared: a VM's virtual bridge, not the real link (rate unknown)") == 8
    assert "Gen1 x1 · 0.25" not in dot and "0.25 GB/s" not in dot


def test_azure_nc_a100_v4_links_to_itself_leave_each_pair_unknown_not_a_switch() -> None:
    """Azure's NCCL file for NC A100 v4 gives each GPU 12 NVLinks whose target is the GPU's own bus
    (a bridge partner NCCL cannot name). That is no NVSwitch: which pairs are bridged is unknown."""
    from topomap.graph import FABRIC

    s = import_file(REAL / "nccl-xml" / "azure-ncv4.xml")
    topo = build(s)
    assert FABRIC not in topo.graph and not s.nvswitches
    assert topo.nvlink_unresolved == {"gpu0", "gpu1", "gpu2", "gpu3"}
    fact = nvlink(topo, "gpu0", "gpu1")
    assert fact.usable.value == "unknown" and fact.via == "none" and fact.usable.settle
    assert any("a partner the source does not name" in n for n in topo.notes)
    a = arrow(s, "gpu0", "gpu1")
    assert a.medium == "unknown" and "nvswitch" not in (a.via or "")


def test_nvlink_r_alone_names_peer_buses_but_not_the_gpus_own_a_bridge_not_a_switch() -> None:
    """`nvidia-smi nvlink -R` lists each link's remote bus but not the GPU's own bus: with two
    GPUs each reaching one device, that is the bridge between them (inferred), as `nvlink -s`
    and `topo -m` of the same HPE DL380a say; never an NVSwitch."""
    from topomap.graph import FABRIC

    for kind in ("R", "s", "bridge"):
        s = import_file(REAL / "nvidia-smi" / f"hpe-dl380a-gen11-2x-h100-pcie-nvlink-{kind}.txt")
        topo = build(s)
        fact = nvlink(topo, "gpu0", "gpu1")
        assert FABRIC not in topo.graph, kind
        assert (fact.usable.value, fact.via, fact.links) == ("yes", "nvlink", 12), kind


def test_all_to_all_nv_is_a_switch_only_when_a_gpu_has_too_few_links_for_a_mesh() -> None:
    """4x H100 NV6 (NCCL#1617, no NVSwitch): 3 peers x 6 = 18 links, what one GPU has: direct.
    HGX A100 8-GPU NV12: 7 x 12 = 84 links, more than any GPU has: the NVSwitch fabric."""
    from topomap.graph import FABRIC

    mesh = build(import_file(REAL / "nvidia-smi" / "h100-4gpu-nv6-4nic-nccl1617.txt"))
    assert FABRIC not in mesh.graph
    assert all(nvlink(mesh, a, b).via == "nvlink" for a, b in (("gpu0", "gpu1"), ("gpu2", "gpu3")))
    assert any("within the 18 links any GPU has" in n for n in mesh.notes)
    switched = build(load_any(SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json"))
    assert FABRIC in switched.graph and nvlink(switched, "gpu0", "gpu7").via == "nvswitch"


def test_matrix_says_when_its_gpu_cells_cannot_show_nvlink() -> None:
    """A static NCCL file (AWS p4d) and Azure NC A100 v4's self-bridges leave NVLink unknown: the
    matrix (text and JSON) says its GPU cells are PCIe paths, as map, check and show say unknown."""
    from topomap.render.matrix import NVLINK_UNKNOWN, render_matrix

    for name in ("aws-p4d-24xlarge.xml", "azure-ncv4.xml"):
        s = import_file(REAL / "nccl-xml" / name)
        assert "pairs.nvlink" in s.source.unknown_fields
        assert render_matrix(s).endswith(NVLINK_UNKNOWN)
        r = CliRunner().invoke(app, ["matrix", "--json", str(REAL / "nccl-xml" / name)])
        assert r.exit_code == 0 and json.loads(r.output)["nvlink_recorded"] is False
    known = load_any(SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json")
    assert NVLINK_UNKNOWN not in render_matrix(known)


def test_network_arrow_names_roce_apart_from_plain_ethernet() -> None:
    """IBM gx3d's ConnectX ports have PCI class 0x0200 (Ethernet) and are RDMA devices: RoCE. The
    arrow says roce, not ethernet (which reads as TCP) nor a bare rdma."""
    from topomap.api import bind_snapshots
    from topomap.flow import read_flow

    flow = read_flow(SAMPLES / "flows" / "two-host-pipeline.yaml")
    arrows = map_flow(flow, bind_snapshots(flow, [])).arrows
    net = [a for a in arrows if a.medium == "network"]
    assert len(net) == 1 and net[0].via == "roce" and net[0].bandwidth_gbps == 25.0


def test_grace_hopper_host_memory_is_nvlink_c2c_not_pcie(tmp_path: Path) -> None:
    """GH200 (topo -m prints GPU NUMA ID 1: the GPU's own memory is NUMA node 1): the CPU's memory
    reaches the GPU over NVLink-C2C, routed straight, not through an inferred PCIe host bridge; its
    450 GB/s a direction is Grace Hopper's (spec), unknown where the model is not recorded;
    memory@numa1 is the GPU's own memory, and the error says so."""

    def write(out: str) -> Path:  # host memory to gpu0, then gpu0 to ``out``
        steps = {"load": step("input", "lot:memory"), "a": step("compute", "lot:gpu0"), "out": step("output", out)}
        arrows = [flow_arrow("load", "a", "1 GiB"), flow_arrow("a", "out")]
        return write_flow(tmp_path / "f.yaml", steps, arrows, name="gh")

    flow = write("lot:memory")
    gh200 = REAL / "nvidia-smi" / "gh200-1gpu-4nic-bluefield3-aerial.txt"
    r = CliRunner().invoke(app, ["map", str(flow), "--probe", f"lot={gh200}", "--json"])
    arrows = json.loads(r.stdout)["arrows"]
    # topo -m names no model: GH200's 450 GB/s is not claimed for a part it cannot name
    assert [(x["medium"], x["via"], x["bandwidth_gbps"]) for x in arrows] == [("host-memory", "c2c", None)] * 2
    assert arrows[0]["route"] == ["lot/numa0", "lot/gpu0"]
    from topomap.model.facts import c2c_bandwidth
    from topomap.model.snapshot import Gpu

    assert c2c_bandwidth(Gpu(index=0, name="NVIDIA GH200 480GB")).gbps == 450.0
    assert c2c_bandwidth(Gpu(index=0, name="NVIDIA GB200")).gbps is None
    write("lot:memory@numa1")
    r = CliRunner().invoke(app, ["map", str(flow), "--probe", f"lot={gh200}"])
    assert r.exit_code == 2 and "NUMA node 1 is gpu0's own memory (its GPU NUMA ID), not host memory" in r.output
