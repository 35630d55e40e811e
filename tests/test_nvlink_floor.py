"""An NVLink floor that is a floor (issue 19 item 3): a pair of unknown model is given the least its
link count can carry on any part that can report that count — export variants (H800, A800) run their
links slower than H100/A100 — and a known model keeps its own published figure."""

from __future__ import annotations

import msgspec
import pytest

from tests.conftest import REAL
from topomap.base.devices import _BY_ID
from topomap.graph import build
from topomap.graph.evidence import nvlink
from topomap.importers import import_file
from topomap.model.facts import nvlink_bundle_bandwidth
from topomap.model.nvlinks import NVLINK_PARTS, nvlink_floor, nvlink_part
from topomap.model.snapshot import Gpu, NvLink, Snapshot

H200_NV18 = REAL / "nvidia-smi" / "hgx-h200-8gpu-10nic-nchc-nano4.txt"  # NV18 all-to-all, no GPU names


def _named(snap: Snapshot, name: str) -> Snapshot:
    """The same `topo -m` with the GPU model a second source (`nvidia-smi -q`, `--query-gpu=name`) gives."""
    return msgspec.structs.replace(snap, gpus=[msgspec.structs.replace(g, name=name) for g in snap.gpus])


def test_nv18_of_unknown_model_is_at_most_the_h800s_figure() -> None:
    """Real NV18 matrix, no GPU name: "≥ 200 GB/s" (18 × 11.1, the H800's per-link share), never
    the 253 GB/s that 18 × 14.06 claimed — an H800 box shows the same NV18 and carries 200."""
    t = build(import_file(H200_NV18))
    nv = nvlink(t, "gpu0", "gpu5")
    assert nv.links == 18 and nv.bandwidth.lower_bound and nv.bandwidth.source == "derived"
    h800 = next(p for p in NVLINK_PARTS if p.name == "NVIDIA H800 80GB HBM3")
    assert nv.bandwidth.gbps is not None and nv.bandwidth.gbps <= h800.per_direction_gbps
    assert nv.bandwidth.gbps == pytest.approx(200.0)
    assert "H800" in nv.bandwidth.basis and "nvidia-smi -L" in nv.bandwidth.basis  # what settles it


def test_h800_topo_m_with_its_name_gets_the_h800_figure_not_the_h100s() -> None:
    """The real NV18 matrix with the H800's NVML name: 200 GB/s per direction (400 GB/s both ways in
    total), exact, not a bound; the same matrix named H100 keeps 450."""
    t = build(_named(import_file(H200_NV18), "NVIDIA H800 80GB HBM3"))
    nv = nvlink(t, "gpu0", "gpu1")
    assert nv.bandwidth.gbps == pytest.approx(200.0) and not nv.bandwidth.lower_bound
    assert "H800" in nv.bandwidth.basis and "400 GB/s" in nv.bandwidth.basis
    h100 = nvlink(build(_named(import_file(H200_NV18), "NVIDIA H100 80GB HBM3")), "gpu0", "gpu1")
    assert h100.bandwidth.gbps == pytest.approx(450.0) and not h100.bandwidth.lower_bound


def test_every_part_with_every_link_count_is_at_or_above_the_floor() -> None:
    for part in NVLINK_PARTS:
        gpu = Gpu(index=0, name=part.name)
        assert nvlink_part(gpu) is part, part.name
        for n in range(1, part.link_count + 1):
            floor = nvlink_floor(n).gbps
            got = nvlink_bundle_bandwidth(gpu, n).gbps
            assert floor is not None and got is not None and got >= floor - 1e-9, (part.name, n, got, floor)


def test_every_model_with_nvlink_in_the_device_table_has_a_published_figure() -> None:
    for model in _BY_ID.values():
        if model.nvlink_generation is not None:
            assert nvlink_part(Gpu(index=0, name=model.name)) is not None, model.name


def test_export_variants_are_known_by_name_and_by_pci_device_id() -> None:
    assert nvlink_part(Gpu(index=0, pci_device_id="0x2324")).name == "NVIDIA H800 80GB HBM3"  # type: ignore[union-attr]
    assert nvlink_part(Gpu(index=0, name="NVIDIA A800-SXM4-80GB")).links == 8  # type: ignore[union-attr]
    a800 = nvlink_bundle_bandwidth(Gpu(index=0, name="NVIDIA A800-SXM4-80GB"), 8)
    assert a800.gbps == pytest.approx(200.0) and not a800.lower_bound
    # H20 is the export part whose NVLink was not cut: 900 GB/s both ways over 18 links
    assert nvlink_bundle_bandwidth(Gpu(index=0, name="NVIDIA H20"), 18).gbps == pytest.approx(450.0)
    # a bridged export PCIe card: its total is published, its link count is not
    pcie = nvlink_bundle_bandwidth(Gpu(index=0, name="NVIDIA H800 PCIe"), 12)
    assert pcie.gbps == pytest.approx(200.0) and not pcie.lower_bound


def test_compute_capability_alone_is_a_floor_where_an_export_variant_shares_it() -> None:
    """An NCCL file's `sm="90"` names no model: an H800 is cc 9.0 too, so NV18 is at least 200."""
    hopper = nvlink_bundle_bandwidth(Gpu(index=0, compute_capability="9.0"), 18)
    assert hopper.gbps == pytest.approx(200.0) and hopper.lower_bound
    volta = nvlink_bundle_bandwidth(Gpu(index=0, compute_capability="7.0"), 6)  # every cc 7.0 part: 25 a link
    assert volta.gbps == pytest.approx(150.0) and not volta.lower_bound
    ga102 = nvlink_bundle_bandwidth(Gpu(index=0, compute_capability="8.6"), 4)
    assert ga102.gbps == pytest.approx(56.25) and not ga102.lower_bound


def test_a_reported_link_rate_never_exceeds_an_export_variants_published_total() -> None:
    links = [NvLink(link=k, active=True, speed_gbps=26.562) for k in range(18)]
    h800 = nvlink_bundle_bandwidth(Gpu(index=0, name="NVIDIA H800 80GB HBM3", nvlinks=links), 18)
    assert h800.gbps == pytest.approx(200.0) and "capped" in h800.basis
    h100 = nvlink_bundle_bandwidth(Gpu(index=0, name="NVIDIA H100 80GB HBM3", nvlinks=links), 18)
    assert h100.gbps == pytest.approx(18 * 26.562)  # the driver's signalling rate, not capped


def test_more_links_than_any_part_has_is_unknown_with_what_settles_it() -> None:
    bw = nvlink_bundle_bandwidth(Gpu(index=0), 24)
    assert bw.gbps is None and bw.source == "unknown" and "GPU model" in bw.basis
