"""Health and truth checks from sysfs fixture trees and NVML fakes: ACS, IOMMU, downtrained links, VMs, fabric."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.conftest import run_probe
from tests.fakes import machines
from tests.fakes.machine import FakeFabric, FakeMachine
from tests.fakes.sysfs import SysfsExtras, write_extras
from topomap.model.snapshot import Finding, Snapshot
from topomap.probe.health import health_findings
from topomap.probe.sysfs import SysfsReader


def _health(m: FakeMachine, root: Path, extras: SysfsExtras | None = None) -> tuple[Snapshot, list[Finding]]:
    snap = run_probe(m, root).snapshot
    if extras is not None:
        write_extras(m, root, extras)
    reader = SysfsReader(root)
    return snap, health_findings(reader, reader.read({}), snap)


def _kinds(fs: list[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in fs:
        out.setdefault(f.kind, []).append(f)
    return out


def test_acs_redirect_on_the_switch_between_two_gpus(tmp_path: Path) -> None:
    _, fs = _health(
        machines.a100_pcie(), tmp_path, SysfsExtras(acs_ctrl=0x1D)
    )  # SrcValid ReqRedir CmpltRedir UpstreamFwd
    acs = _kinds(fs)["acs-redirect"]
    pix = {f.subject for f in acs}
    assert "gpu0-gpu1" in pix and all(f.severity == "warning" for f in acs)
    f = next(f for f in acs if f.subject == "gpu0-gpu1")
    assert "NCCL_P2P_DISABLE=1" in f.text
    assert any("ReqRedir+ CmpltRedir+" in e and "SrcValid+" in e for e in f.evidence)
    assert "acs-unknown" not in _kinds(fs)


def test_acs_off_is_no_finding_and_unreadable_says_so(tmp_path: Path) -> None:
    _, off = _health(machines.a100_pcie(), tmp_path / "a", SysfsExtras(acs_ctrl=0))
    assert "acs-redirect" not in _kinds(off) and "acs-unknown" not in _kinds(off)
    _, unknown = _health(machines.a100_pcie(), tmp_path / "b", SysfsExtras(acs_ctrl=None))
    f = _kinds(unknown)["acs-unknown"][0]
    assert f.severity == "info" and "root" in f.text and "acs-redirect" not in _kinds(unknown)


def test_iommu_translation_versus_passthrough(tmp_path: Path) -> None:
    _, dma = _health(machines.a100_pcie(), tmp_path / "a", SysfsExtras(iommu_type="DMA-FQ"))
    f = _kinds(dma)["iommu-translated"][0]
    assert "iommu=pt" in f.text and len(f.evidence) == 8 and "iommu_group type DMA-FQ" in f.evidence[0]
    _, pt = _health(machines.a100_pcie(), tmp_path / "b", SysfsExtras(iommu_type="identity"))
    assert "iommu-translated" not in _kinds(pt) and "iommu-unknown" not in _kinds(pt)
    on = dataclasses.replace(machines.a100_pcie(), iommu=True)
    _, old_kernel = _health(on, tmp_path / "c", SysfsExtras())
    assert _kinds(old_kernel)["iommu-unknown"][0].severity == "info"


def test_downtrained_link_and_replay_counters(tmp_path: Path) -> None:
    m = machines.hgx_h100()
    bus = m.gpus[3].bus
    aer = "RxErr 0\nBadTLP 12\nBadDLLP 3\nRollover 1\nTimeout 0\nNonFatalErr 0\nTOTAL_ERR_COR 16\n"
    _, fs = _health(m, tmp_path, SysfsExtras(width_current={bus: 8}, aer={bus: aer}))
    k = _kinds(fs)
    assert [f.subject for f in k["pcie-downtrained"]] == ["gpu3"]
    assert "x8 of x16" in k["pcie-downtrained"][0].text
    assert [f.subject for f in k["pcie-errors"]] == ["gpu3"]
    assert "BadTLP 12, BadDLLP 3, Rollover 1" in k["pcie-errors"][0].text


def test_slot_capped_gpu_and_downtrained_nic(tmp_path: Path) -> None:
    m = machines.hgx_h100()
    gpu, nic = m.gpus[5].bus, m.nics[2].bus
    _, fs = _health(m, tmp_path, SysfsExtras(slot_max={gpu: (4, 8)}, gen_current={nic: 3, gpu: 1}))
    k = _kinds(fs)
    capped = k["pcie-slot-capped"]
    assert [f.subject for f in capped] == ["gpu5"] and "Gen4 (device Gen5) x8 (device x16)" in capped[0].text
    down = k["pcie-downtrained"]
    assert [f.subject for f in down] == ["nic2"]  # a GPU at Gen1 is idle power saving, not a finding
    assert "Gen3 of Gen5" in down[0].text and "25%" in down[0].text


def test_vm_with_a_flat_pcie_tree_is_virtual(tmp_path: Path) -> None:
    m = machines.a100_pcie()
    flat = dataclasses.replace(m, hypervisor=True, dmi_vendor="QEMU")
    _, fs = _health(flat, tmp_path / "vm")
    v = _kinds(fs)["virtual-topology"][0]
    assert "virtual; path classes are unverified" in v.text
    assert "hypervisor: kvm" in v.evidence and "every GPU's numa_node is -1" in v.evidence
    _, bare = _health(m, tmp_path / "bare")
    assert "virtual-topology" not in _kinds(bare) and "virtual-machine" not in _kinds(bare)


def test_gpudirect_readiness(tmp_path: Path) -> None:
    _, healthy = _health(machines.hgx_h100(), tmp_path / "h")
    assert "through nvidia_peermem" in _kinds(healthy)["gpudirect-ready"][0].text  # the fake's default
    _, none = _health(machines.hgx_h100(), tmp_path / "a", SysfsExtras(peermem=False))
    f = _kinds(none)["gpudirect-missing"][0]
    assert "nvidia_peermem" in f.text and any("gpu0–nic0 (PIX)" in e for e in f.evidence)
    _, peermem = _health(machines.hgx_h100(), tmp_path / "b", SysfsExtras(peermem=True))
    assert "through nvidia_peermem" in _kinds(peermem)["gpudirect-ready"][0].text
    _, dmabuf = _health(
        machines.hgx_h100(), tmp_path / "c", SysfsExtras(peermem=False, open_module=True, osrelease="6.8.0")
    )
    assert "through DMA-BUF" in _kinds(dmabuf)["gpudirect-ready"][0].text
    _, old = _health(
        machines.hgx_h100(), tmp_path / "d", SysfsExtras(peermem=False, open_module=True, osrelease="5.4.0")
    )
    assert "gpudirect-missing" in _kinds(old)


def test_inactive_nvlinks(tmp_path: Path) -> None:
    m = machines.hgx_h100()
    links = [dataclasses.replace(lk, active=i >= 6) for i, lk in enumerate(m.gpus[2].nvlinks or [])]
    m.gpus[2] = dataclasses.replace(m.gpus[2], nvlinks=links)
    _, fs = _health(m, tmp_path)
    f = _kinds(fs)["nvlink-inactive"]
    assert [x.subject for x in f] == ["gpu2"] and "6 of 18 NVLinks inactive" in f[0].text


def test_fabric_states_and_imex(tmp_path: Path) -> None:
    m = machines.hgx_h100()
    m.gpus[0] = dataclasses.replace(m.gpus[0], fabric=FakeFabric(state=2))  # in progress
    _, fs = _health(m, tmp_path / "a")
    k = _kinds(fs)
    assert [f.subject for f in k["fabric-not-ready"]] == ["gpu0"] and "in-progress" in k["fabric-not-ready"][0].text
    assert "imex-missing" not in k  # one HGX board: NVLink does not leave the box, IMEX is not needed
    _, tray = _health(machines.gb200_tray(), tmp_path / "b")
    assert "/dev/nvidia-caps-imex-channels" in _kinds(tray)["imex-missing"][0].text
    _, with_imex = _health(machines.gb200_tray(), tmp_path / "c", SysfsExtras(imex_channels=1))
    assert "imex-missing" not in _kinds(with_imex)
    z = machines.gb200_tray()
    z.gpus[:] = [
        dataclasses.replace(g, fabric=dataclasses.replace(g.fabric or FakeFabric(), clique_id=0)) for g in z.gpus
    ]
    _, zero = _health(z, tmp_path / "d", SysfsExtras(imex_channels=1))
    assert len(_kinds(zero)["fabric-clique-zero"][0].evidence) == 4


def test_probe_records_findings(tmp_path: Path) -> None:
    m = machines.a100_pcie()
    snap = run_probe(dataclasses.replace(m, hypervisor=True, dmi_vendor="QEMU"), tmp_path).snapshot
    assert any(f.kind == "virtual-topology" for f in snap.findings)
    assert not any(f.kind == "nvlink-inactive" for f in snap.findings)


def test_a_check_that_trips_is_an_info_finding_not_a_failed_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import topomap.probe.health as health

    def broken(*_: object) -> list[Finding]:
        raise PermissionError(13, "Permission denied", "/sys/module")

    monkeypatch.setattr(health, "_gpudirect", broken)
    vm = dataclasses.replace(machines.hgx_h100(), hypervisor=True, dmi_vendor="QEMU")
    _, fs = _health(vm, tmp_path)
    f = _kinds(fs)["health-check-failed"]
    assert len(f) == 1 and "GPUDirect RDMA check could not run: PermissionError" in f[0].text
    assert "virtual-topology" in _kinds(fs)  # the last check still ran


def test_pcie_cards_without_a_bridge_have_no_nvlink_not_inactive_ones(tmp_path: Path) -> None:
    """A100/H100 PCIe without a bridge: NVML lists 12 links, all down, P2P not supported (issue 25 item 8)."""
    from tests.fakes.machine import FakeLink

    m = machines.a100_pcie()
    down = [FakeLink(active=False, remote_type=0xFF, p2p_capable=False)] * 12
    m = dataclasses.replace(m, gpus=[dataclasses.replace(g, nvlinks=down) for g in m.gpus])
    snap, fs = _health(m, tmp_path / "a")
    assert "nvlink-inactive" not in _kinds(fs) and all(g.nvlinks == [] for g in snap.gpus)
    # an SXM board whose links are all down is still a warning: the links can carry P2P
    h = machines.hgx_h100()
    all_down = [dataclasses.replace(lk, active=False) for lk in h.gpus[1].nvlinks or []]
    h.gpus[1] = dataclasses.replace(h.gpus[1], nvlinks=all_down)
    _, fs = _health(h, tmp_path / "b")
    assert [x.subject for x in _kinds(fs)["nvlink-inactive"]] == ["gpu1"]
