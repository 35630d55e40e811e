"""What a run record says at a glance: per-card peaks and when, host totals, the busiest shared resource.

Pure functions of a :class:`~topomap.record.model.Run`. Observed values come from the record;
capacities come from the run's snapshot (nominal PCIe/NVLink rates: spec) or psutil (CPU count,
host memory), and each is labelled with that provenance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from topomap.model.facts import gpu_pcie_link
from topomap.model.nvlink_rate import nvlink_bundle_bandwidth
from topomap.model.snapshot import Gpu
from topomap.record.model import GpuSeries, Run


@dataclass
class CardSummary:
    id: str
    name: str | None
    memory_total_bytes: int | None
    peak_memory_bytes: int | None  # observed: largest nvmlDeviceGetMemoryInfo().used
    peak_at_s: float | None  # seconds after start when the peak was first reached
    command_memory_bytes: int | None  # sum of the peaks of the command's own processes on this card
    util_mean_pct: float | None
    util_peak_pct: int | None
    busy_s: float | None  # time with utilisation > 0, from samples
    pcie_rx_peak_bytes_s: int | None
    pcie_tx_peak_bytes_s: int | None
    nvlink_rx_peak_bytes_s: float | None
    nvlink_tx_peak_bytes_s: float | None
    visible_to_command: bool | None
    lost_at_s: float | None
    processes: int


@dataclass
class ResourceUse:
    """One shared resource: peak observed use against its capacity (None when unknown)."""

    name: str  # "host CPU", "host memory", "PCIe gpu0", "NVLink gpu0", "disk", "network"
    peak: float | None
    unit: str  # "B/s", "B", "CPU"
    capacity: float | None
    capacity_source: str  # "spec (PCIe Gen5 x16)", "psutil", "unknown: …"

    @property
    def fraction(self) -> float | None:
        if self.peak is None or not self.capacity:
            return None
        return self.peak / self.capacity


def _peak(values: list[Any]) -> tuple[Any, int | None]:
    best, at = None, None
    for i, v in enumerate(values):
        if v is not None and (best is None or v > best):
            best, at = v, i
    return best, at


def _busy_s(t: list[float], util: list[int | None]) -> float | None:
    if not any(u is not None for u in util):
        return None
    busy = 0.0
    for i in range(len(t) - 1):
        u = util[i]
        if u is not None and u > 0:
            busy += t[i + 1] - t[i]
    return round(busy, 3)


def card_summary(s: GpuSeries) -> CardSummary:
    peak, at = _peak(s.memory_used_bytes)
    utils = [u for u in s.util_gpu_pct if u is not None]
    own = [p.peak_memory_bytes for p in s.processes if p.in_command_tree and p.peak_memory_bytes is not None]
    return CardSummary(
        id=s.id,
        name=s.name,
        memory_total_bytes=s.memory_total_bytes,
        peak_memory_bytes=peak,
        peak_at_s=s.t_s[at] if at is not None else None,
        command_memory_bytes=sum(own) if own else None,
        util_mean_pct=round(sum(utils) / len(utils), 1) if utils else None,
        util_peak_pct=max(utils) if utils else None,
        busy_s=_busy_s(s.t_s, s.util_gpu_pct),
        pcie_rx_peak_bytes_s=_peak(s.pcie_rx_bytes_s)[0],
        pcie_tx_peak_bytes_s=_peak(s.pcie_tx_bytes_s)[0],
        nvlink_rx_peak_bytes_s=_peak(s.nvlink_rx_bytes_s)[0],
        nvlink_tx_peak_bytes_s=_peak(s.nvlink_tx_bytes_s)[0],
        visible_to_command=s.visible_to_command,
        lost_at_s=s.lost_at_s,
        processes=len(s.processes),
    )


def cards(run: Run) -> list[CardSummary]:
    return [card_summary(s) for s in run.gpus]


def snapshot_gpu(run: Run, s: GpuSeries) -> Gpu | None:
    """The snapshot's GPU for a sampled card (by UUID, else NVML index)."""
    if run.snapshot is None or "/mig" in s.id:
        return None
    for g in run.snapshot.gpus:
        if s.uuid and g.uuid == s.uuid:
            return g
    return next((g for g in run.snapshot.gpus if g.index == s.index), None)


def host_peaks(run: Run) -> dict[str, tuple[float | None, float | None]]:
    """(peak, when in s) of the host series: tree CPU %, tree RSS bytes."""
    h = run.host
    out: dict[str, tuple[float | None, float | None]] = {}
    for key, values in (("tree_cpu_pct", h.tree_cpu_pct), ("tree_rss_bytes", h.tree_rss_bytes)):
        v, at = _peak(list(values))
        out[key] = (v, h.t_s[at] if at is not None else None)
    return out


def _rate_peak(t: list[float], cumulative: list[int | None]) -> float | None:
    best: float | None = None
    for i in range(1, len(t)):
        a, b = cumulative[i - 1], cumulative[i]
        if a is not None and b is not None and t[i] > t[i - 1]:
            r = (b - a) / (t[i] - t[i - 1])
            best = r if best is None or r > best else best
    return best


def last(values: list[int | None]) -> int | None:
    return next((v for v in reversed(values) if v is not None), None)


def shared_resources(run: Run) -> list[ResourceUse]:
    """Every shared resource with its observed peak, busiest (largest fraction of capacity) first."""
    h = run.host
    peaks = host_peaks(run)
    cpu_peak = peaks["tree_cpu_pct"][0]
    out = [
        ResourceUse(
            "host CPU",
            cpu_peak / 100 if cpu_peak is not None else None,
            "CPU",
            float(h.cpu_count) if h.cpu_count else None,
            "psutil.cpu_count (logical CPUs)",
        ),
        ResourceUse("host memory", peaks["tree_rss_bytes"][0], "B", h.memory_total_bytes, "psutil.virtual_memory"),
    ]
    for s in run.gpus:
        if "/mig" in s.id:
            continue
        g = snapshot_gpu(run, s)
        pcie = [v for v in (*s.pcie_rx_bytes_s, *s.pcie_tx_bytes_s) if v is not None]
        if pcie:
            link = gpu_pcie_link(g) if g is not None else None  # trained width, best generation (not the idle one)
            cap = link.gbps if link is not None else None
            src = (
                f"spec (PCIe Gen{link.gen} x{link.width}, per direction)"
                if cap and link is not None
                else "unknown: the snapshot has no PCIe link"
            )
            out.append(ResourceUse(f"PCIe {s.id}", float(max(pcie)), "B/s", cap * 1e9 if cap else None, src))
        nvl = [v for v in (*s.nvlink_rx_bytes_s, *s.nvlink_tx_bytes_s) if v is not None]
        if nvl:
            cap = None
            src = "unknown: the snapshot has no NVLink rate"
            if g is not None and g.nvlinks:
                bw = nvlink_bundle_bandwidth(g, sum(x.active for x in g.nvlinks), run.snapshot)
                if bw.gbps is not None and not bw.lower_bound:
                    cap, src = bw.gbps, f"{bw.source} (NVLink, {bw.tag}, per direction)"
            out.append(ResourceUse(f"NVLink {s.id}", max(nvl), "B/s", cap * 1e9 if cap else None, src))
    disk = [_rate_peak(h.t_s, h.disk_read_bytes), _rate_peak(h.t_s, h.disk_write_bytes)]
    disk_peak = max((d for d in disk if d is not None), default=None)
    out.append(ResourceUse("disk (whole host)", disk_peak, "B/s", None, "unknown: disks do not state a rate"))
    net = [_rate_peak(h.t_s, h.net_rx_bytes), _rate_peak(h.t_s, h.net_tx_bytes)]
    net_peak = max((n for n in net if n is not None), default=None)
    nic_cap = None
    if run.snapshot is not None:
        # every NIC's line rate; the counters see socket traffic only (RDMA verbs bypass the kernel)
        speeds = [n.speed_gbit_s for n in run.snapshot.nics if n.speed_gbit_s]
        nic_cap = sum(speeds) / 8 * 1e9 if speeds else None
    out.append(
        ResourceUse(
            "network (whole host, kernel counters: RDMA traffic not seen)",
            net_peak,
            "B/s",
            nic_cap,
            "spec (sum of NIC line rates)" if nic_cap else "unknown: the snapshot lists no NIC speed",
        )
    )
    return sorted(out, key=lambda r: (r.fraction is None, -(r.fraction or 0.0)))


def busiest(run: Run) -> ResourceUse | None:
    """The shared resource closest to its capacity; None when no capacity is known."""
    ranked = shared_resources(run)
    return ranked[0] if ranked and ranked[0].fraction is not None else None


def _used(c: CardSummary) -> bool:
    """The command used this card: its processes were listed there, else it was visible and busy."""
    if c.command_memory_bytes is not None:
        return True
    return c.visible_to_command is not False and bool(c.busy_s)


def observed_for_plan(run: Run, units: int | None = None) -> dict[str, Any]:
    """Observed figures a plan can use in place of assumed ones, each labelled ``observed``.

    ``cards_used``: cards where the command's processes were listed (else visible and busy).
    ``unit_duration_s``: wall time × cards used ÷ ``units`` — each card worked through its share
    of the units in the wall time (an average over an even split); without ``units`` the whole
    command is one unit. Not rounded: 7 s over 200,000 units is 35 µs a unit, which rounding to
    0.1 ms would turn into 0 (a plan would then read "no wall time"). ``memory_per_task_bytes``:
    the largest memory peak among the cards used (the command's own processes where NVML listed
    them, else the card's). Per card: peaks and
    the time it was busy (utilisation > 0).
    """
    used = [c for c in cards(run) if _used(c)]
    mig_parents = {c.id.split("/")[0] for c in used if "/mig" in c.id}
    used = [c for c in used if c.id not in mig_parents]  # a MIG GPU lists its instances' processes too
    peaks = [c.command_memory_bytes or c.peak_memory_bytes for c in used]
    n_used = len(used) or None
    per_card: dict[str, dict[str, Any]] = {}
    for c in cards(run):
        per_card[c.id] = {
            "memory_peak_bytes": c.peak_memory_bytes,
            "memory_peak_at_s": c.peak_at_s,
            "command_memory_bytes": c.command_memory_bytes,
            "memory_total_bytes": c.memory_total_bytes,
            "busy_s": c.busy_s,
            "visible_to_command": c.visible_to_command,
            "lost": c.lost_at_s is not None,
        }
    duration = run.duration_s
    unit_s = None
    if duration is not None:
        unit_s = duration * (n_used or 1) / units if units else duration
    return {
        "source": "observed",
        "run": {"command": run.command, "label": run.label, "started_at": run.started_at},
        "succeeded": run.exit_status == 0,
        "duration_s": duration,
        "units": units,
        "cards_used": n_used,
        "unit_duration_s": unit_s,  # full precision: a short run over many units is well below 0.1 ms a unit
        "memory_per_task_bytes": max((p for p in peaks if p is not None), default=None),
        "interval_s": run.sampling.interval_s,
        "gpu_sampled": run.sampling.gpu_sampled,
        "cards": per_card,
        "host": {
            "cpu_s": _sum_opt(run.host.cpu_user_s, run.host.cpu_system_s),
            "max_rss_bytes": run.host.max_rss_bytes,
        },
    }


def _sum_opt(a: float | None, b: float | None) -> float | None:
    return round(a + b, 3) if a is not None and b is not None else None
