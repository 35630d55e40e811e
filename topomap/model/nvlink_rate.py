"""The bandwidth of an NVLink bundle: one function (:func:`nvlink_bundle_bandwidth`) every view asks.

A figure is a range over the parts the GPU could be (issue 30 item 1) and always the data rate per
direction (issue 30 item 5): a printed per-link rate (``nvidia-smi nvlink -s``: 26.562 GB/s, NVLink
4's signalling rate) is read as the 25 GB/s it stands for, so an ``nvlink -s`` paste and a ``topo
-m`` with the model of the same H100 give one figure. The figures come from the parts table
(:mod:`topomap.base.parts`) alone.
"""

from __future__ import annotations

from dataclasses import replace

from topomap.base.link_ranges import LinkRange, link_range, read_printed_rate
from topomap.base.parts import GpuPart
from topomap.base.units import fmt_gbps
from topomap.model.facts import SETTLE, Bandwidth, BandwidthSource
from topomap.model.nvlinks import nvlink_part
from topomap.model.origins import fact_origin, relabel
from topomap.model.snapshot import Gpu, Snapshot, SourceKind

#: Sources whose per-link NVLink rate is a model's figure, not the links' data rate: an NCCL INFO log's
#: topology dump prints ``NVL[370.8]``, links × NCCL's own per-link figure for the GPU generation
#: (src/graph/topo.h: SM90 20.6 GB/s, below NVLink 4's 25). The bundle's figure is then the part's (or
#: the parts' of that generation, ``derived``), and NCCL's is said in its basis, never shown as ``spec``.
MODEL_RATES: frozenset[SourceKind] = frozenset({"nccl-log"})


def nvlink_bundle_bandwidth(gpu: Gpu, count: int, snap: Snapshot | None = None) -> Bandwidth:
    """:func:`_bundle_bandwidth`, ``declared`` / ``catalogue`` where a declared lot or the catalogue gave
    the NVLink topology (:func:`topomap.model.origins.relabel`): such a figure is never ``spec``."""
    return relabel(_bundle_bandwidth(gpu, count, snap), fact_origin(snap, "pairs.nvlink"), f"NV{count}")


def _bundle_bandwidth(gpu: Gpu, count: int, snap: Snapshot | None = None) -> Bandwidth:
    """``count`` NVLinks of a GPU, per direction, as a range from the best evidence there is: a
    per-link rate the driver (or file) printed, read as the data rate it stands for (26.562 GB/s is
    NVLink 4's signalling rate for 25) and never above the part's published total; else the part's
    own figure (:func:`~topomap.model.nvlinks.nvlink_part`: the model, export variants included);
    else the range over every part the GPU could be (same NVLink generation or compute capability
    when known: :func:`~topomap.base.link_ranges.link_range`), exact where they all agree; unknown
    when no known part has that many links. A per-link rate that is a model's (:data:`MODEL_RATES`)
    is not read as the links' rate: it is said beside the part's figure."""
    if count <= 0:
        return Bandwidth(None, "unknown", "no NVLink")
    active = [x for x in gpu.nvlinks if x.active]
    speeds = {x.speed_gbps for x in active if x.speed_gbps}
    gens = {x.generation for x in active if x.generation is not None}
    gen = gens.pop() if len(gens) == 1 else None
    part = nvlink_part(gpu)
    modelled = snap is not None and snap.source.kind in MODEL_RATES and len(speeds) == 1
    if len(speeds) == 1 and not modelled:
        return _reported_bandwidth(speeds.pop(), count, gen, part, snap)
    if part is not None:
        bw = _part_bandwidth(part, count, "name" in gpu.derived)
    else:
        bw = _unnamed_bandwidth(gpu, count, gen, "derived" if gen is None or modelled else "spec")
    return _beside_nccls(bw, count, speeds.pop()) if modelled and bw.gbps is not None else bw


def _unnamed_bandwidth(gpu: Gpu, count: int, gen: int | None, source: BandwidthSource) -> Bandwidth:
    """``count`` links of a GPU whose part is not known: the range over the parts it could be."""
    cc = gpu.compute_capability or None
    what = f"NVLink {gen}" if gen is not None else f"compute capability {cc}" if cc else "model unknown"
    found = link_range(count, cc=cc if gen is None else None, generation=gen) or link_range(count)
    if found is None:
        why = f"{count} links, {what}: no known part has that many"
        return Bandwidth(
            None, "unknown", f"{why} (settle it with {SETTLE['nvlink_part']})", settle=SETTLE["nvlink_part"]
        )
    return _range_bandwidth(found, what, source)


def _beside_nccls(bw: Bandwidth, count: int, rate: float) -> Bandwidth:
    """The links' figure with NCCL's topology-model figure for them (``count`` × its per-link ``rate``)
    said in its basis and tag: NCCL's is a model's, never the figure itself."""
    nccl = f"NCCL's topology model puts it at {count * rate:.4g} GB/s ({count} × its {rate:g} GB/s per link)"
    tag = f"{bw.tag}; NCCL's model {fmt_gbps(count * rate)} GB/s"
    return replace(bw, basis=f"{bw.basis}; {nccl}, not the links' data rate", tag=tag)


def _range_bandwidth(r: LinkRange, what: str, source: BandwidthSource, printed: str = "") -> Bandwidth:
    """A figure over the parts the GPU could be: exact where they agree, else a lower bound with its
    upper end, both parts named and the command that settles it."""
    if r.exact:
        basis = f"{r.count} links: {fmt_gbps(r.low)} GB/s per direction ({what}{printed}: every such part alike)"
        return Bandwidth(
            r.low,
            source,
            basis,
            generation=r.slowest.nvlink_generation,
            tag=f"{what}, nominal",
            links=r.count,
            high_gbps=r.low,
        )
    basis = (
        f"{r.count} links, {what}{printed}: at least {fmt_gbps(r.low)} GB/s, the slowest part that can report "
        f"NV{r.count} ({r.slowest.name}), at most {fmt_gbps(r.high)} ({r.fastest.name}); "
        f"{SETTLE['nvlink_part']} settles it"
    )
    gens = {p.nvlink_generation for p in r.parts}
    return Bandwidth(
        r.low,
        source,
        basis,
        lower_bound=True,
        generation=gens.pop() if len(gens) == 1 else None,
        tag=f"lower bound, {what}",
        high_gbps=r.high,
        links=r.count,
        settle=SETTLE["nvlink_part"],
    )


def _reported_bandwidth(
    rate: float, count: int, gen: int | None, part: GpuPart | None, snap: Snapshot | None
) -> Bandwidth:
    """Links × the data rate a printed per-link rate stands for (``nvidia-smi nvlink -s`` prints the
    signalling rate, 26.562 GB/s for NVLink 4's 25): for a known part, its own figure (an export
    variant's total caps it); for an unknown one, the range over the parts that print that rate."""
    reporter = (
        {"hwloc-xml": "hwloc", "lstopo": "hwloc"}.get(snap.source.kind, "the driver")
        if snap is not None
        else "the driver"
    )
    read = read_printed_rate(rate, part, gen)
    gen = read.generation if read.generation is not None else gen
    said = f"{reporter} prints {rate:g} GB/s per link"
    said += f", NVLink {gen}'s signalling rate" if read.signalling else ", the data rate" if gen else ""
    tag = f"{reporter.removeprefix('the ')}-reported rate"
    if read.signalling:
        tag = f"data rate; {rate:g} printed is the signalling rate"
    if part is not None and part.gbps_per_link == read.data_gbps:
        bw = _part_bandwidth(part, count, False)
        return replace(bw, basis=f"{bw.basis}; {said}", tag=tag)
    if part is None:
        found = link_range(count, generation=gen, rate=read.data_gbps)
        if found is not None:
            bw = _range_bandwidth(found, f"NVLink {gen}" if gen else "model unknown", "spec", f"; {said}")
            return bw if not bw.exact else replace(bw, tag=tag)
    figure = count * read.data_gbps
    cap = part.per_direction_gbps if part is not None else None
    capped = (
        f", capped at the {part.name}'s published {part.total_gbps:g} GB/s both ways"
        if part and cap and figure > cap
        else ""
    )
    figure = min(figure, cap) if cap else figure
    return Bandwidth(
        figure,
        "spec",
        f"{count} links × {read.data_gbps:g} GB/s per link per direction ({said}){capped}",
        generation=gen,
        tag=tag,
        links=count,
        high_gbps=figure,
    )


def _part_bandwidth(part: GpuPart, count: int, derived: bool) -> Bandwidth:
    """``count`` links of a known part (:meth:`~topomap.base.parts.GpuPart.bundle`): its data rate per
    link, within its published total; a range where an export variant may run its links slower."""
    rate, cap, total = part.gbps_per_link or 0.0, part.per_direction_gbps or 0.0, part.total_gbps
    found = part.bundle(count)
    source: BandwidthSource = "derived" if derived else "spec"
    whose = f"{part.name}{' (derived from its PCI device id)' if derived else ''}"
    shown = "/".join(map(str, part.links)) if part.links else f"up to {part.full_links} (count not published)"
    published = f"{total:g} GB/s over {shown} links in total both ways, {part.source_of('nvlink')}"
    if found is None:  # more links than the part has: the file and the name disagree
        figure = min(count * rate, cap)
        basis = (
            f"{count} links × {rate:g} GB/s per link per direction ({whose} has at most {part.full_links}; {published})"
        )
        return Bandwidth(
            figure,
            source,
            basis,
            generation=part.nvlink_generation,
            tag=f"{part.name} published",
            links=count,
            high_gbps=figure,
        )
    low, high = found
    if abs(high - low) <= high * 1e-9:
        basis = f"{count} links × {low / count:.4g} GB/s per link per direction ({whose}: {published})"
        return Bandwidth(
            low,
            source,
            basis,
            generation=part.nvlink_generation,
            tag=f"{part.name} published",
            links=count,
            high_gbps=high,
        )
    basis = (
        f"{count} links of {whose}: at least {fmt_gbps(low)} GB/s (its {total:g} GB/s total shared over "
        f"{part.full_links} links), at most {fmt_gbps(high)} ({rate:g} GB/s a link); {published}"
    )
    return Bandwidth(
        low,
        source,
        basis,
        lower_bound=True,
        generation=part.nvlink_generation,
        tag=f"{part.name}, links not all trained",
        high_gbps=high,
        links=count,
        settle=SETTLE["nvlink_links"],
    )
