"""Measured figures people already have → :class:`Measurement` records attached to a snapshot.

Readers: nvbandwidth text and JSON (``nvbandwidth``, ``nvbandwidth -j``) and the CUDA sample
``p2pBandwidthLatencyTest``. They name GPUs by CUDA ordinal (``cuda3`` below); :func:`attach`
joins them to the snapshot's GPUs by PCI bus id, else by CUDA ordinal, and refuses a file
whose devices are not the snapshot's.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from topomap.base.errors import ImportFailure
from topomap.base.links import PCIE_GBPS_PER_LANE, nvlinks_of
from topomap.base.parts import max_nvlinks, nvlink_parts
from topomap.base.pciaddr import same_device
from topomap.files.kind import measurement_tool
from topomap.importers import read_text
from topomap.importers.measurements import ImportedMeasurements, MeasuredDevice
from topomap.importers.nvbandwidth import parse_nvbandwidth
from topomap.importers.p2p_bandwidth import parse_p2p_bandwidth
from topomap.model.nvlink_rate import nvlink_bundle_bandwidth
from topomap.model.snapshot import Gpu, Measurement, Snapshot, hosts_of

# Where the GPUs' NVLink generation is unknown, one link may be as fast as any generation's.
_ANY_GENERATION = (max(p.gbps_per_link or 0.0 for p in nvlink_parts()), "any NVLink generation")


def parse_measurements(text: str, origin: str) -> ImportedMeasurements:
    """Read nvbandwidth (text or JSON) or p2pBandwidthLatencyTest output."""
    tool = measurement_tool(text)
    if tool == "nvbandwidth":
        result = parse_nvbandwidth(text, origin)
    elif tool == "p2pBandwidthLatencyTest":
        result = parse_p2p_bandwidth(text, origin)
    else:
        raise ImportFailure(
            f"{origin}: not a bandwidth measurement",
            hint="expected the output of nvbandwidth (text or -j JSON) or of the CUDA sample p2pBandwidthLatencyTest",
        )
    if not result.measurements:
        raise ImportFailure(f"{origin}: {tool} output with no figure in it", hint="was the run cut short?")
    return result


def load_measurements(path: str | Path) -> ImportedMeasurements:
    return parse_measurements(read_text(path), str(path))


def _gpu_for(dev: MeasuredDevice, gpus: list[Gpu], by_ordinal: bool) -> Gpu | None:
    if not by_ordinal and dev.pci_bus_id:
        return next((g for g in gpus if same_device(g.pci_bus_id, dev.pci_bus_id)), None)
    return next((g for g in gpus if g.cuda_ordinal == dev.ordinal), None) or (
        next((g for g in gpus if g.index == dev.ordinal), None) if all(g.cuda_ordinal is None for g in gpus) else None
    )


def attach(snapshot: Snapshot, imported: ImportedMeasurements) -> Snapshot:
    """The snapshot with the imported figures added, their GPUs named as the snapshot names them."""
    hosts = hosts_of(snapshot)
    if len(hosts) != 1:
        raise ImportFailure(
            f"{imported.origin}: measurements are of one machine; the snapshot is a cluster",
            hint="attach to the host's own snapshot, then merge",
        )
    gpus = snapshot.gpus
    by_ordinal = _by_ordinal(gpus, imported)
    ids: dict[str, str] = {"host": "host"}
    for dev in imported.devices:
        g = _gpu_for(dev, gpus, by_ordinal)
        if g is None:
            how = f"bus id {dev.pci_bus_id}" if not by_ordinal else f"CUDA ordinal {dev.ordinal}"
            raise ImportFailure(
                f"{imported.origin}: device {dev.ordinal} ({dev.name or '?'}, {how}) is not in the snapshot",
                hint="attach measurements to a snapshot of the machine they were taken on",
            )
        if dev.name and g.name and _norm(dev.name) != _norm(g.name):
            raise ImportFailure(
                f"{imported.origin}: device {dev.ordinal} is {dev.name!r} "
                f"but gpu{g.index} in the snapshot is {g.name!r}",
                hint="attach measurements to a snapshot of the machine they were taken on",
            )
        ids[f"cuda{dev.ordinal}"] = f"gpu{g.index}"
    notes = join_notes(snapshot, imported)
    added: list[Measurement] = []
    for m in imported.measurements:
        src, dst = ids.get(m.src), ids.get(m.dst)
        if src is None or dst is None:
            raise ImportFailure(f"{imported.origin}: a figure names {m.src}→{m.dst}, not a listed device")
        joined = msgspec.structs.replace(m, src=src, dst=dst, notes=[*m.notes, *notes])
        _within_reach(snapshot, joined, imported)
        added.append(joined)
    return msgspec.structs.replace(snapshot, measurements=[*snapshot.measurements, *added])


def _link_rate(gpus: list[Gpu]) -> tuple[float, str]:
    """The fastest one NVLink of these GPUs can be, per direction: the high end of the figure
    :func:`~topomap.model.nvlink_rate.nvlink_bundle_bandwidth` gives one link of each (an export
    variant's cap is on its total, not its links), else, where a GPU's figure has no upper end or no
    GPU is named, the fastest of any generation."""
    rates: list[tuple[float, str]] = []
    for gpu in gpus:
        one = nvlink_bundle_bandwidth(gpu, 1)
        if one.high is None:
            return _ANY_GENERATION
        rates.append((one.high, f"{gpu.name or f'gpu{gpu.index}'}: {one.tag}"))
    return max(rates) if rates else _ANY_GENERATION


def peer_ceiling_gbps(snapshot: Snapshot, a: str, b: str, models: tuple[str, ...] = ()) -> tuple[float, str]:
    """The most a peer copy between GPUs ``a`` and ``b`` could reach one way: their NVLink count at
    the fastest rate one link of these GPUs can have (``models``: the names the figures give, else
    the snapshot's named GPUs; any generation's fastest when unnamed), or without NVLink a PCIe x16
    link of the fastest generation; and what that bound rests on."""
    pair = next((p for p in snapshot.pairs if {p.a, p.b} == {a, b}), None)
    links = pair.nvlinks if pair is not None else 0
    if pair is not None and not links:
        links = nvlinks_of(pair.path)
    fastest_lane = max(PCIE_GBPS_PER_LANE.values())
    named = [Gpu(index=k, name=name) for k, name in enumerate(models)] or [
        g for g in snapshot.gpus if f"gpu{g.index}" in (a, b) and g.name
    ]
    rate, basis = _link_rate(named)
    if links:
        return links * rate, f"{links} NVLinks at most {rate:g} GB/s each ({basis})"
    if "pairs.nvlink" in snapshot.source.unknown_fields:
        most = max_nvlinks()
        return most * rate, f"NVLink not recorded: at most {most} links ({basis})"
    return 16 * fastest_lane, "no NVLink: PCIe (at most x16 of the fastest generation)"


def _within_reach(snapshot: Snapshot, m: Measurement, imported: ImportedMeasurements) -> None:
    """Refuse a peer figure the pair's links cannot carry: the file is of another machine."""
    if m.kind != "d2d" or m.route != "peer" or m.median_gbps is None or m.src == m.dst:
        return
    named = tuple(sorted({d.name for d in imported.devices if d.name}))
    ceiling, basis = peer_ceiling_gbps(snapshot, m.src, m.dst, named)
    ceiling *= 2 if m.direction == "both-way" else 1
    if m.median_gbps > ceiling * 1.1:
        models = sorted({d.name for d in imported.devices if d.name})
        raise ImportFailure(
            f"{imported.origin}: {m.src}→{m.dst} measured {m.median_gbps:g} GB/s ({m.direction}), more than "
            f"the pair can carry in this snapshot ({basis}: {ceiling:g} GB/s): the figures are not of this machine",
            hint="attach measurements to a snapshot of the machine they were taken on"
            + (f" (the figures name {', '.join(models)})" if models else ""),
        )


def join_notes(snapshot: Snapshot, imported: ImportedMeasurements) -> list[str]:
    """How the figures' devices were joined to the snapshot's GPUs, and what could not be checked;
    kept on every attached figure and printed by `attach`."""
    gpus = snapshot.gpus
    by_ordinal = _by_ordinal(gpus, imported)
    notes: list[str] = []
    models = sorted({d.name for d in imported.devices if d.name})
    if models and not any(g.name for g in gpus):
        notes.append(f"measured on {', '.join(models)}; the snapshot names no GPU model, so the match is not checked")
    if imported.hostname and snapshot.host.hostname and imported.hostname != snapshot.host.hostname:
        # not refused: a container's hostname differs from the host's on the same machine
        notes.append(f"measured on host {imported.hostname!r}; the snapshot is of {snapshot.host.hostname!r}")
    if by_ordinal:
        notes.append(
            "GPUs joined by CUDA ordinal"
            + (
                " (the snapshot has no CUDA ordinals: assumed equal to its GPU index)"
                if not _has_ordinals(gpus)
                else ""
            )
        )
    return notes


def _by_ordinal(gpus: list[Gpu], imported: ImportedMeasurements) -> bool:
    """Join by CUDA ordinal unless both sides carry bus ids (the only join that cannot be wrong)."""
    return not any(g.pci_bus_id for g in gpus) or not all(d.pci_bus_id for d in imported.devices)


def _has_ordinals(gpus: list[Gpu]) -> bool:
    return any(g.cuda_ordinal is not None for g in gpus)


def _norm(name: str) -> str:
    return " ".join(name.replace("NVIDIA", "").replace("-", " ").split()).lower()
