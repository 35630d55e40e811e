"""Measured figures for the views: one function per question, each answer with its record.

``measured_bandwidth`` picks the figure a view shows beside the nominal one; ``nominal_gbps``
is the theoretical rate it is compared with, as the evidence functions decide it (the NVLink
bundle's rate, or the GPU's PCIe link at its trained width and best generation);
``degraded_links`` lists links delivering under :data:`DEGRADED_FRACTION` of nominal;
``unusable_pairs`` lists GPU pairs whose peer copies returned wrong data or hung. All GB/s are
1e9 bytes per second, one direction unless the measurement says both-way.
"""

from __future__ import annotations

from topomap.base.units import fmt_gbps
from topomap.model.facts import Bandwidth, gpu_pcie_link
from topomap.model.nvlink_rate import nvlink_bundle_bandwidth
from topomap.model.snapshot import Gpu, MeasureKind, Measurement, Snapshot

# A link delivering under this fraction of its nominal rate is flagged. Copy-engine copies
# reach ~80-90% of PCIe and NVLink nominal on healthy machines (nvml-cuda.md §8.3); 60% leaves
# room for protocol overhead and still catches a link at half width or half generation.
DEGRADED_FRACTION = 0.6
_ORIGIN_RANK = {"topomap measure": 0, "nvbandwidth": 1, "p2pBandwidthLatencyTest": 2}


def remote_host_memory(snapshot: Snapshot, m: Measurement) -> bool:
    """A host copy (h2d, d2h) whose pinned buffer was on another NUMA node than the GPU's own: not the
    GPU's own path to host memory. Decided by the record's ``host_numa_node`` and the GPU's node, not by
    its notes' words; unknown either way is not remote."""
    if m.kind not in ("h2d", "d2h") or m.host_numa_node is None:
        return False
    g = _gpu(snapshot, m.dst if m.kind == "h2d" else m.src)
    return g is not None and g.numa_node is not None and g.numa_node != m.host_numa_node


def _rank(snapshot: Snapshot, m: Measurement) -> tuple[int, int, int, int]:
    remote = remote_host_memory(snapshot, m)  # host memory on another node: not the GPU's own path
    return (_ORIGIN_RANK.get(m.origin, 3), 0 if m.route != "staged" else 1, int(remote), -(m.size_bytes or 0))


def measured_bandwidth(
    snapshot: Snapshot, a: str, b: str, kind: MeasureKind = "d2d"
) -> tuple[float, Measurement] | None:
    """The measured one-way GB/s from ``a`` to ``b`` (ids, or ``host``) and its record; None when unmeasured.

    Figures whose data check failed are never returned. Preference: topomap's own verified
    measurement, then nvbandwidth, then p2pBandwidthLatencyTest; a peer figure before a staged one.
    """
    found = [
        m
        for m in snapshot.measurements
        if m.kind == kind
        and m.direction == "one-way"
        and m.src == a
        and m.dst == b
        and m.verified is not False
        and m.median_gbps is not None
    ]
    if not found:
        return None
    best = min(found, key=lambda m: _rank(snapshot, m))
    assert best.median_gbps is not None
    return best.median_gbps, best


def _gpu(snapshot: Snapshot, gid: str) -> Gpu | None:
    return next((g for g in snapshot.gpus if f"gpu{g.index}" == gid), None)


def nominal_gbps(snapshot: Snapshot, a: str, b: str) -> tuple[float, str] | None:
    """Theoretical one-way GB/s between two ends (``gpuN`` or ``host``) and what it is, or None. The
    figures come from the evidence functions every view uses: the GPU's PCIe link at its trained width
    and best generation, the NVLink bundle's rate (a lower bound is no nominal: None)."""

    if a == "host" or b == "host":
        g = _gpu(snapshot, b if a == "host" else a)
        link = gpu_pcie_link(g) if g else None
        if link is None or link.gbps is None:
            return None
        return link.gbps, f"PCIe Gen{link.gen} x{link.width} (spec)"
    ga, gb = _gpu(snapshot, a), _gpu(snapshot, b)
    if ga is None or gb is None:
        return None
    pair = next((p for p in snapshot.pairs if {p.a, p.b} == {a, b}), None)
    if pair is not None and pair.nvlinks:
        bw = nvlink_bundle_bandwidth(ga, pair.nvlinks, snapshot)
        if bw.gbps is None or bw.lower_bound:
            return None
        return bw.gbps, f"NVLink x{pair.nvlinks} ({bw.tag})"
    pa, pb = gpu_pcie_link(ga).gbps, gpu_pcie_link(gb).gbps
    if pa is None or pb is None:
        return None
    return min(pa, pb), "PCIe, narrower of the two GPU links (spec)"


def degraded_links(snapshot: Snapshot, fraction: float = DEGRADED_FRACTION) -> list[str]:
    """One line per measured link delivering under ``fraction`` of its nominal rate."""
    out: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for m in sorted(snapshot.measurements, key=lambda m: _rank(snapshot, m)):
        if m.direction != "one-way" or m.kind not in ("h2d", "d2h", "d2d") or m.route == "staged":
            continue
        key = (m.kind, m.src, m.dst)
        if key in seen or m.median_gbps is None or m.verified is False:
            continue
        seen.add(key)
        nominal = nominal_gbps(snapshot, m.src, m.dst)
        if nominal is None:
            continue
        bw, what = nominal
        if m.median_gbps < fraction * bw:
            out.append(
                f"{m.src} → {m.dst} ({m.kind}) delivers {m.median_gbps:.1f} GB/s measured, "
                f"{m.median_gbps / bw:.0%} of {bw:g} GB/s nominal over {what}; "
                f"under {fraction:.0%} suggests a downtrained link, ACS/IOMMU redirection or contention"
            )
    return out


def unusable_pairs(snapshot: Snapshot) -> dict[frozenset[str], str]:
    """GPU pairs whose peer copies returned wrong data or hung → the finding's text."""
    out: dict[frozenset[str], str] = {}
    for f in snapshot.findings:
        if f.kind in ("p2p-corrupt", "measure-hang") and f.subject.count("-") == 1:
            a, b = f.subject.split("-")
            out.setdefault(frozenset({a, b}), f.text)
    return out


def with_measurement(snap: Snapshot, src: str, dst: str, kind: str, nominal: Bandwidth) -> tuple[Bandwidth, str | None]:
    """The figure an arrow shows: a verified (or imported) measurement of this copy when there is one,
    labelled measured with the nominal beside it, else the nominal. Second value: a warning when the
    measured figure is under :data:`DEGRADED_FRACTION` of nominal."""
    found = measured_bandwidth(snap, src, dst, kind)  # type: ignore[arg-type]
    if found is None:
        return nominal, None
    gbps, m = found
    size = f", {m.size_bytes / 2**20:g} MiB copies" if m.size_bytes else ""
    basis = f"measured by {m.origin} (median{size}); nominal {nominal.text()}"
    warning = None
    if nominal.gbps and not nominal.lower_bound and gbps < DEGRADED_FRACTION * nominal.gbps:
        warning = (
            f"{src} → {dst} delivers {fmt_gbps(gbps)} GB/s measured, {gbps / nominal.gbps:.0%} of "
            f"{fmt_gbps(nominal.gbps)} GB/s nominal: a downtrained link, ACS/IOMMU redirection or contention"
        )
    return Bandwidth(gbps, "measured", basis, tag=f"measured by {m.origin}"), warning
