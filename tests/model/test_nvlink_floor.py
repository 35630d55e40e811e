"""NVLink figures that hold for every part (issue 19 item 3; issue 30 items 1, 5): a pair of unknown
model is given the range of its link count over every part that can report that count — export
variants (H800, A800) run their links slower than H100/A100 — and a known model keeps its own
published figure, always the data rate per direction."""

from __future__ import annotations

import msgspec
import pytest

from tests.conftest import REAL
from topomap.base.link_ranges import link_range
from topomap.base.parts import GPU_PARTS, nvlink_parts
from topomap.graph import build
from topomap.graph.evidence import nvlink
from topomap.importers import import_file
from topomap.model.nvlink_rate import nvlink_bundle_bandwidth
from topomap.model.nvlinks import nvlink_part
from topomap.model.snapshot import Gpu, NvLink, Snapshot

H200_NV18 = REAL / "nvidia-smi" / "hgx-h200-8gpu-10nic-nchc-nano4.txt"  # NV18 all-to-all, no GPU names


def _named(snap: Snapshot, name: str) -> Snapshot:
    """The same `topo -m` with the GPU model a second source (`nvidia-smi -q`, `--query-gpu=name`) gives."""
    return msgspec.structs.replace(snap, gpus=[msgspec.structs.replace(g, name=name) for g in snap.gpus])


def test_nv18_of_unknown_model_is_a_range_from_the_h800_to_the_b200() -> None:
    """Real NV18 matrix, no GPU name: "≥ 200 GB/s" (an H800's 400 GB/s both ways) up to 900 (a B200's
    18 NVLink 5 links), never one figure — an H800 box shows the same NV18 and carries 200."""
    t = build(import_file(H200_NV18))
    nv = nvlink(t, "gpu0", "gpu5")
    bw = nv.bandwidth
    assert nv.links == 18 and bw.lower_bound and bw.source == "derived" and bw.links == 18
    assert bw.gbps == pytest.approx(200.0) and bw.high == pytest.approx(900.0)
    assert bw.range_text() == "200–900 GB/s" and bw.text() == "≥ 200 GB/s derived"
    assert "H800" in bw.basis and "B200" in bw.basis and "nvidia-smi -L" in bw.basis  # what settles it
    assert bw.settle is not None and "--query-gpu=index,name" in bw.settle


def test_h800_topo_m_with_its_name_gets_the_h800_figure_not_the_h100s() -> None:
    """The real NV18 matrix with the H800's NVML name: 200 GB/s per direction (400 GB/s both ways in
    total), exact, not a bound; the same matrix named H100 keeps 450."""
    t = build(_named(import_file(H200_NV18), "NVIDIA H800 80GB HBM3"))
    nv = nvlink(t, "gpu0", "gpu1")
    assert nv.bandwidth.gbps == pytest.approx(200.0) and not nv.bandwidth.lower_bound
    assert nv.bandwidth.source == "spec" and nv.bandwidth.high == pytest.approx(200.0)
    assert "H800" in nv.bandwidth.basis and "400 GB/s" in nv.bandwidth.basis
    h100 = nvlink(build(_named(import_file(H200_NV18), "NVIDIA H100 80GB HBM3")), "gpu0", "gpu1")
    assert h100.bandwidth.gbps == pytest.approx(450.0) and not h100.bandwidth.lower_bound


def test_an_h800_showing_nv8_carries_its_whole_total() -> None:
    """vllm#40755's H800 box shows NV8 between every pair: the H800's 8 active links at 25 GB/s are its
    whole 200 GB/s, exact, as its NV18 is."""
    gpu = Gpu(index=0, name="NVIDIA H800 80GB HBM3")
    for links in (8, 18):
        bw = nvlink_bundle_bandwidth(gpu, links)
        assert bw.exact and bw.gbps == pytest.approx(200.0), links
    partial = nvlink_bundle_bandwidth(gpu, 4)  # fewer than it shows: its links may run at 200/18 each
    assert partial.lower_bound and partial.gbps == pytest.approx(4 * 200 / 18) and partial.high == pytest.approx(100)


def test_every_part_with_every_link_count_lies_inside_the_unknown_range() -> None:
    """An unknown GPU's range holds for every part it could be: each part's own figure for n links
    lies between the range's low and high."""
    for part in nvlink_parts():
        gpu = Gpu(index=0, name=part.name)
        assert nvlink_part(gpu) is part, part.name
        for n in range(1, part.full_links + 1):
            r = link_range(n)
            got = nvlink_bundle_bandwidth(gpu, n)
            assert r is not None and got.gbps is not None and got.high is not None
            assert r.low - 1e-9 <= got.gbps and got.high <= r.high + 1e-9, (part.name, n, got, r)


def test_every_part_with_a_link_generation_has_a_rate_and_a_published_total() -> None:
    for part in GPU_PARTS:
        if part.nvlink_generation is not None:
            assert part.gbps_per_link and part.total_gbps and part.full_links, part.name
            assert nvlink_part(Gpu(index=0, name=part.name)) is part


def test_export_variants_are_known_by_name_and_by_pci_device_id() -> None:
    h800 = nvlink_part(Gpu(index=0, pci_device_id="0x2324"))
    assert h800 is not None and h800.name == "NVIDIA H800 80GB HBM3" and h800.export
    a800 = nvlink_part(Gpu(index=0, name="NVIDIA A800-SXM4-80GB"))
    assert a800 is not None and a800.links == (8,)
    bw = nvlink_bundle_bandwidth(Gpu(index=0, name="NVIDIA A800-SXM4-80GB"), 8)
    assert bw.gbps == pytest.approx(200.0) and not bw.lower_bound
    # H20 is the export part whose NVLink was not cut: 900 GB/s both ways over 18 links
    assert nvlink_bundle_bandwidth(Gpu(index=0, name="NVIDIA H20"), 18).gbps == pytest.approx(450.0)
    # a bridged export PCIe card: its total is published, its link count is not
    pcie = nvlink_bundle_bandwidth(Gpu(index=0, name="NVIDIA H800 PCIe"), 12)
    assert pcie.gbps == pytest.approx(200.0) and not pcie.lower_bound
    # a part known only by its PCI device id: the figure is the part's, its identity derived
    derived = nvlink_bundle_bandwidth(Gpu(index=0, name="NVIDIA H800 80GB HBM3", derived=["name"]), 18)
    assert derived.source == "derived" and "PCI device id" in derived.basis


def test_compute_capability_alone_is_a_range_where_an_export_variant_shares_it() -> None:
    """An NCCL file's `sm="90"` names no model: an H800 is cc 9.0 too, so NV18 is 200 to 450."""
    hopper = nvlink_bundle_bandwidth(Gpu(index=0, compute_capability="9.0"), 18)
    assert hopper.gbps == pytest.approx(200.0) and hopper.lower_bound and hopper.high == pytest.approx(450.0)
    volta = nvlink_bundle_bandwidth(Gpu(index=0, compute_capability="7.0"), 6)  # every cc 7.0 part: 25 a link
    assert volta.gbps == pytest.approx(150.0) and not volta.lower_bound
    ga102 = nvlink_bundle_bandwidth(Gpu(index=0, compute_capability="8.6"), 4)
    assert ga102.gbps == pytest.approx(56.25) and not ga102.lower_bound


def test_a_printed_signalling_rate_is_read_as_the_data_rate_it_stands_for() -> None:
    """`nvidia-smi nvlink -s` prints 26.562 GB/s per NVLink 4 link: the signalling rate of a 25 GB/s
    data rate per direction (issue 30 item 5). 18 such links of an H100 are 450, the H100's spec; of
    an H800, its 200 GB/s total; of a GPU not named, the range over the parts that print 26.562."""
    links = [NvLink(link=k, active=True, speed_gbps=26.562) for k in range(18)]
    h100 = nvlink_bundle_bandwidth(Gpu(index=0, name="NVIDIA H100 80GB HBM3", nvlinks=links), 18)
    assert h100.gbps == pytest.approx(450.0) and h100.exact and h100.source == "spec"
    assert "prints 26.562 GB/s per link" in h100.basis and "signalling rate" in h100.basis
    h800 = nvlink_bundle_bandwidth(Gpu(index=0, name="NVIDIA H800 80GB HBM3", nvlinks=links), 18)
    assert h800.gbps == pytest.approx(200.0) and h800.exact
    unnamed = nvlink_bundle_bandwidth(Gpu(index=0, nvlinks=links), 18)
    assert unnamed.lower_bound and unnamed.gbps == pytest.approx(200.0) and unnamed.high == pytest.approx(450.0)


def test_more_links_than_any_part_has_is_unknown_with_what_settles_it() -> None:
    bw = nvlink_bundle_bandwidth(Gpu(index=0), 24)
    assert bw.gbps is None and bw.source == "unknown" and "GPU model" in bw.basis
