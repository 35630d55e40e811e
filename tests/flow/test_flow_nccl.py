"""Arrows NCCL sends (`nccl: true` in a flow): NCCL's transport as the arrow's medium, on the real
samples (samples/snapshots: an 8× RTX 4090 box whose every GPU pair is SYS, an HGX H200 board with
NVSwitch and ten NICs), in map, render, report and plan alike."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.cli import app
from topomap.flow import bind, gpus_of, parse_flow
from topomap.flow.mapping import FlowMap, MappedArrow, map_flow
from topomap.graph import Topology, build
from topomap.importers import load_any
from topomap.transport.decide import PairFacts, decide
from topomap.transport.facts import snapshot_facts
from topomap.transport.rules import NcclEnv

SNAPS = SAMPLES / "snapshots"
TP = SAMPLES / "flows" / "tensor-parallel.yaml"


def _topo(name: str) -> Topology:
    return build(load_any(SNAPS / name))


def _tp_text(extra: str = "") -> str:
    """The sample tensor-parallel flow with its all-reduce step run by NCCL."""
    text = TP.read_text()
    old = "allreduce: {kind: exchange, on: lot:gpus, label: all-reduce activations}"
    assert old in text
    return text.replace(old, old[:-1] + ", nccl: true}") + extra


def _map(text: str, topos: dict[str, Topology | None]) -> FlowMap:
    f = parse_flow(text, "t.yaml")
    bind(f, gpus_of(topos))
    return map_flow(f, topos)


def _exchange(m: FlowMap) -> list[MappedArrow]:
    arrows = [a for a in m.arrows if a.src_step == a.dst_step == "allreduce"]
    assert len(arrows) == 28  # 8 GPUs, every pair once
    return arrows


def test_all_sys_box_uses_shm_so_the_exchange_is_host_memory() -> None:
    topo = _topo("rtx4090-8gpu-all-sys.json")
    m = _map(_tp_text(), {"lot": topo})
    for a in _exchange(m):
        assert a.nccl is not None and a.nccl.transport == "SHM" and a.nccl.rule == "p2p-level"
        assert a.medium == "host-memory"
        assert "NCCL_P2P_LEVEL" in a.nccl.env
        assert a.path == "SYS" and a.nccl.reasons == ("path SYS is beyond the P2P level (default P2P level PXB)",)
        assert a.notes[0].startswith("NCCL SHM")  # the decision is the arrow's first note
    # the arrows NCCL does not send are untouched
    assert all(a.nccl is None for a in m.arrows if a.src_step != a.dst_step)
    # one function: the arrow's transport is decide()'s for that pair
    g0, g5 = topo.gpu("gpu0"), topo.gpu("gpu5")
    assert g0 is not None and g5 is not None
    assert decide(snapshot_facts(topo, g0, g5, False), NcclEnv()).transport == "SHM"


def test_nvswitch_board_uses_p2p_over_nvlink() -> None:
    m = _map(_tp_text(), {"lot": _topo("hgx-h200-8gpu-10nic.json")})
    for a in _exchange(m):
        assert a.nccl is not None and (a.nccl.transport, a.nccl.rule) == ("P2P", "p2p-nvlink")
        assert (a.medium, a.via, a.path) == ("gpu-link", "nvswitch", "NV18")
        assert a.nccl.flavour is not None and a.nccl.flavour.over == "NVLink"
        assert not a.nccl_stands_out()


def test_p2p_disabled_turns_nvlink_into_shm() -> None:
    m = _map(_tp_text("nccl_env: {NCCL_P2P_DISABLE: 1}\n"), {"lot": _topo("hgx-h200-8gpu-10nic.json")})
    for a in _exchange(m):
        assert a.nccl is not None and (a.nccl.transport, a.nccl.rule) == ("SHM", "p2p-disabled-env")
        assert (a.medium, a.via) == ("host-memory", "pcie")  # staged over PCIe, as without NCCL
        assert a.path is None or not a.path.startswith("NV")  # the PCIe class (unrecorded here), never NV18
        assert a.route[1].startswith("lot/") and any(h.startswith("lot/numa") for h in a.route)
        assert a.nccl.env[0] == "NCCL_P2P_DISABLE" and a.nccl.flavour is None
        assert any("without NCCL topomap reads it as gpu-link" in n for n in a.notes)
        assert a.nccl_stands_out() and a.nccl_text() == "SHM (host memory)"


def test_per_host_process_gives_direct_pointer() -> None:
    m = _map(_tp_text("nccl_processes: per-host\n"), {"lot": _topo("hgx-h200-8gpu-10nic.json")})
    assert all(a.nccl is not None and a.nccl.detail.startswith("P2P/direct pointer") for a in _exchange(m))


# inline: test_nccl_arrow_needs_gpus_on_both_ends names its line 11
TWO_HOSTS = """flow: two-hosts
hosts:
  lot: null
  hgx: null
steps:
  stage1: {kind: compute, on: lot:gpu0}
  stage2: {kind: compute, on: hgx:gpu0}
  stage3: {kind: compute, on: lot:gpu0}
arrows:
  - {from: stage1, to: stage2, volume: 512 MiB, nccl: true}
  - {from: stage2, to: stage3, volume: 512 MiB, nccl: true}
"""


def test_two_hosts_nic_sys_means_network_without_gpudirect() -> None:
    topos: dict[str, Topology | None] = {
        "lot": _topo("rtx4090-8gpu-all-sys.json"),  # gpu0's NIC (NIC0) is SYS
        "hgx": _topo("hgx-h200-8gpu-10nic.json"),  # gpu0's NIC (mlx5_0) is PIX
    }
    m = _map(TWO_HOSTS, topos)
    out, back = m.arrows
    assert out.medium == back.medium == "network"
    assert out.nccl is not None and (out.nccl.transport, out.nccl.rule) == ("NET", "other-host")
    assert out.nccl.nic == "NIC0" and "NIC NIC0 is SYS from the GPU, beyond the GDR level PXB" in out.nccl.reasons
    assert "NCCL_NET_GDR_LEVEL" in out.nccl.env
    assert "no GPUDirect RDMA on lot: NCCL stages the sends through host memory" in out.notes
    assert out.nccl_text() == "NET, no GPUDirect RDMA" and out.nccl_stands_out()
    assert back.nccl is not None and (back.nccl.transport, back.nccl.nic) == ("NET+GDR", "mlx5_0")
    assert not back.nccl_stands_out()


def test_unknown_nic_stays_unknown() -> None:
    """DGX-2H's snapshot records no NIC: the network for sure, but NET or NET+GDR is not guessed."""
    topos: dict[str, Topology | None] = {"lot": _topo("dgx2h-16gpu.json"), "hgx": _topo("hgx-h200-8gpu-10nic.json")}
    a = _map(TWO_HOSTS, topos).arrows[0]
    assert a.medium == "network" and a.nccl is not None
    assert (a.nccl.transport, a.nccl.rule) == ("unknown", "other-host")
    assert a.nccl_text() == "unknown" and not a.nccl_stands_out()
    assert any("GPUDirect RDMA cannot be decided" in n for n in a.notes)
    assert "GPUDirect RDMA on lot unknown: whether NCCL uses it is not decided" in a.notes


def test_nccl_arrow_needs_gpus_on_both_ends() -> None:
    text = TWO_HOSTS.replace("stage3: {kind: compute, on: lot:gpu0}", "stage3: {kind: output, on: lot:memory}")
    with pytest.raises(
        Exception, match=r"t.yaml:11: arrow 2: NCCL moves data between GPUs, but step stage3 is on lot:memory"
    ):
        parse_flow(text, "t.yaml")


def _cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.output


@pytest.fixture()
def flow_file(tmp_path: Path) -> Path:
    p = tmp_path / "tp.yaml"
    p.write_text(_tp_text("nccl_env: {NCCL_P2P_DISABLE: '1'}\n").replace("../snapshots/", f"{SNAPS}/"))
    return p


def test_map_json_render_and_report_show_the_transport(flow_file: Path, tmp_path: Path) -> None:
    h200 = f"lot={SNAPS / 'hgx-h200-8gpu-10nic.json'}"
    rc, out = _cli("map", str(flow_file), h200, "--json")
    assert rc == 0
    arrows = [a for a in json.loads(out)["arrows"] if "nccl" in a]
    assert len(arrows) == 28 and {a["nccl"]["transport"] for a in arrows} == {"SHM"}
    assert {a["medium"] for a in arrows} == {"host-memory"}
    dot = tmp_path / "f.dot"
    rc, out = _cli("render", str(flow_file), h200, "-o", str(dot))
    assert rc == 0, out
    text = dot.read_text()
    assert "⚠ NCCL SHM (host memory)" in text and "bold,dotted" in text
    page = tmp_path / "r.html"
    rc, out = _cli("report", str(flow_file), h200, "-o", str(page))
    assert rc == 0, out
    html = page.read_text()
    assert "<th>NCCL</th>" in html and "⚠ SHM (host memory)" in html


def test_nccl_on_a_compute_step_is_a_one_line_error(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(TP.read_text().replace("label: one shard of every layer}", "nccl: true}"))
    rc, out = _cli("map", str(p), f"lot={SNAPS / 'hgx-h200-8gpu-10nic.json'}")
    assert rc == 2 and "bad.yaml:14: step shards: `nccl: true` is for exchange steps" in out
    assert "Traceback" not in out
    p.write_text(_tp_text("nccl_env: {P2P_LEVEL: SYS}\n"))
    rc, out = _cli("map", str(p))
    assert rc == 2 and "nccl_env: 'P2P_LEVEL' is not an NCCL variable" in out
    p.write_text(_tp_text("nccl_env: {NCCL_P2P_LEVEL: FAR}\n"))
    rc, out = _cli("map", str(p))
    assert rc == 2 and "is not a path level" in out


def test_two_gpus_and_unknown_cpu_vendor() -> None:
    """At most two GPUs on a path beyond PXB: an AMD CPU would raise the P2P level to SYS, so an
    unrecorded vendor leaves P2P undecided — unless NVML refuses P2P, which decides it either way."""
    f = PairFacts(same_host=True, same_process=False, path="PHB", nvlink=False, nvml_p2p=True, local_gpus=2)
    d = decide(f, NcclEnv())
    assert (d.transport, d.rule) == ("unknown", "unknown")
    assert "the CPU vendor is not recorded" in d.reasons[0]
    assert decide(f, NcclEnv((("NCCL_P2P_LEVEL", "PXB"),))).transport == "SHM"  # the level set: decided
    assert decide(dataclasses.replace(f, cpu="amd"), NcclEnv()).transport == "P2P"
    assert decide(dataclasses.replace(f, cpu="intel"), NcclEnv()).transport == "SHM"
    # the RTX 5090 pair (club-3090 #1229, a Threadripper PRO; the snapshot has no CPU model): PHB, and
    # `topo -p2p rw` says GNS, so NVML's refusal decides SHM whatever the CPU
    m = _map(_tp_text(), {"lot": _topo("rtx5090-pair-p2p-gns.json")})
    (a,) = [x for x in m.arrows if x.src_step == x.dst_step]
    assert a.nccl is not None and (a.nccl.transport, a.nccl.rule) == ("SHM", "p2p-nvml")
    assert a.medium == "host-memory" and "NCCL_IGNORE_DISABLED_P2P" in a.nccl.env


def test_nccl_version_in_the_flow_picks_the_release_family(tmp_path: Path) -> None:
    """``nccl_version:`` applies that release's rules: on the RTX 4090 paste (SYS pairs, no CPU model
    recorded) the newest rules say SHM whatever the CPU; 2.18's P2P level depends on the vendor, so the
    arrows are unknown and say `lscpu` settles it. A version that is not one is a one-line error."""
    topos: dict[str, Topology | None] = {"lot": _topo("rtx4090-8gpu-all-sys.json")}
    new = _exchange(_map(_tp_text(), topos))
    assert {a.nccl.transport for a in new if a.nccl is not None} == {"SHM"}
    old = _exchange(_map(_tp_text("nccl_version: 2.18.3\n"), topos))
    assert {a.nccl.transport for a in old if a.nccl is not None} == {"unknown"}
    assert all(a.nccl is not None and "`lscpu`" in a.nccl.reasons[0] for a in old)
    p = tmp_path / "tp.yaml"
    p.write_text(_tp_text("nccl_version: newest\n").replace("../snapshots/", f"{SNAPS}/"))
    rc, out = _cli("map", str(p))
    assert rc == 2 and "nccl_version: 'newest' is not an NCCL release" in out


def test_an_unquoted_version_is_a_yaml_number_and_the_error_says_to_quote_it(tmp_path: Path) -> None:
    """``nccl_version: 2.21`` is a float to YAML: one line naming the line and field, and the hint to
    quote it."""
    p = tmp_path / "tp.yaml"
    p.write_text(_tp_text("nccl_version: 2.21\n").replace("../snapshots/", f"{SNAPS}/"))
    rc, out = _cli("map", str(p))
    assert rc == 2 and "got `float` (at nccl_version)" in out and "quote it" in out


def test_the_flavour_left_open_is_not_said_in_the_arrows_note() -> None:
    """The arrow's note gives the medium, not the P2P flavour: the flavour's open question is a field
    of the decision (P2pFlavour.question), left out of the note by that field, not by its first words."""
    for a in _exchange(_map(_tp_text(), {"lot": _topo("gcp-a4-b200-8gpu.json")})):
        assert a.nccl is not None and a.nccl.flavour is not None
        question = a.nccl.flavour.question
        assert question.startswith("which P2P flavour: ") and question in a.nccl.reasons
        assert question not in a.notes[0] and a.notes[0].startswith("NCCL P2P")
