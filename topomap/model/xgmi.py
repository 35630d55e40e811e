"""XGMI (AMD Infinity Fabric) between two AMD GPUs: how many links and how fast, decided once (issue 35).

Every view asks :func:`xgmi_bandwidth` (through the graph's XGMI edges), as NVLink's views ask
``nvlink_bundle_bandwidth``. The rate per link comes from the part (:mod:`topomap.base.amd_parts`, with
its source); the link count from the pair (RCCL's ``<xgmi count>``, the KFD bandwidth's max over min) or,
on a fully connected 8-GPU board (MI300X class), one link to each other GPU. A pair reached over more
than one XGMI hop runs through other GPUs' links, which no AMD tool lists: unknown.
"""

from __future__ import annotations

from topomap.base.amd_parts import AmdPart, amd_part
from topomap.base.links import is_xgmi
from topomap.model.facts import Bandwidth
from topomap.model.snapshot import Gpu, Pair, Snapshot

SETTLE_XGMI = "`amd-smi xgmi` (its max_bandwidth per link) or `amd-smi static` (the GPU model)"


def gpu_amd_part(gpu: Gpu) -> AmdPart | None:
    """The AMD product a GPU is, by name or PCI device id (None: not an AMD part topomap knows)."""
    return amd_part(gpu.name, gpu.pci_device_id)


def xgmi_links(pair: Pair, a: Gpu, snap: Snapshot) -> tuple[int | None, str]:
    """Links joining the pair and where the count comes from."""
    x = pair.xgmi
    if x is not None and x.links:
        return x.links, "the source's link count"
    part = gpu_amd_part(a)
    xgmi_pairs = sum(1 for p in snap.pairs if is_xgmi(p.path) and a.index in (_idx(p.a), _idx(p.b)))
    if part is not None and part.xgmi_links and xgmi_pairs == part.xgmi_links and (x is None or x.hops in (None, 1)):
        return 1, f"one of the {part.xgmi_links} links of an {part.name}, one to each other GPU"
    return None, "the link count is not recorded"


def _idx(gid: str) -> int:
    return int(gid[3:]) if gid.startswith("gpu") and gid[3:].isdigit() else -1


def xgmi_bandwidth(pair: Pair, a: Gpu, b: Gpu, snap: Snapshot) -> Bandwidth:
    """GB/s per direction between two XGMI-joined GPUs, with its basis."""
    x = pair.xgmi
    if x is not None and x.hops is not None and x.hops > 1:
        return Bandwidth(
            None,
            "unknown",
            f"{x.hops} XGMI hops: the route crosses other GPUs' links, which the source does not list",
            tag="multi-hop XGMI",
        )
    links, why = xgmi_links(pair, a, snap)
    part = gpu_amd_part(a) or gpu_amd_part(b)
    rate = part.xgmi_gbps_per_link if part is not None else None
    if rate is not None and links:
        assert part is not None
        return Bandwidth(
            round(rate * links, 3),
            "spec",
            f"{links} XGMI link(s) × {rate:g} GB/s per direction ({part.name}: {part.source}); {why}",
            tag=f"XGMI {part.xgmi_gts:g} GT/s",
        )
    if x is not None and x.max_mbps:
        return Bandwidth(
            round(x.max_mbps / 1000, 3),
            "derived",
            f"the driver's (KFD) io-link bandwidth {x.min_mbps}-{x.max_mbps} MB/s, its nominal figure, not the part's",
            tag="KFD-reported",
        )
    what = "the GPU model is not recorded" if part is None else f"AMD publishes no XGMI rate for {part.name}"
    if part is not None and rate is not None:
        what = why
    return Bandwidth(None, "unknown", f"XGMI bandwidth: {what} ({SETTLE_XGMI} settles it)", tag="XGMI rate unknown")
