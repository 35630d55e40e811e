"""AMD facts → snapshot (issue 35): the GPUs as printed, each pair as
:func:`topomap.model.amd_pairs.amd_pair` reads it."""

from __future__ import annotations

from collections.abc import Callable

from topomap import __version__
from topomap.base.amd_parts import amd_part
from topomap.base.pciaddr import normalize_bus_id
from topomap.importers.amd_facts import AmdFacts, AmdGpu
from topomap.model.amd_pairs import AmdPairFacts, amd_pair
from topomap.model.snapshot import Gpu, Host, Pair, PcieLink, Snapshot, Software, Source


def build_amd(facts: AmdFacts, origin: str) -> Snapshot:
    """The snapshot of one AMD paste; what it lacks is listed in ``source.unknown_fields``."""
    gpus = [_gpu(facts.gpus[i]) for i in sorted(facts.gpus)]
    pairs: list[Pair] = []
    notes: list[str] = list(dict.fromkeys(facts.notes))
    for x, a in enumerate(gpus):
        for b in gpus[x + 1 :]:
            pairs.append(_pair(facts, a, b, notes))
    unknown = _unknown(facts, gpus, pairs)
    return Snapshot(
        source=Source(
            kind="amd-smi",
            origin=origin,
            tool=f"topomap {__version__}",
            formats=list(facts.formats),
            unknown_fields=unknown,
            notes=list(dict.fromkeys(notes)),
        ),
        host=Host(hostname=facts.hostname, cpu_model=facts.cpu_model),
        software=Software(driver_version=next((g.driver for g in facts.gpus.values() if g.driver), None)),
        gpus=gpus,
        pairs=pairs,
    )


def _gpu(r: AmdGpu) -> Gpu:
    part = amd_part(r.name, r.device_id)
    derived: list[str] = []
    name = r.name
    if name is None and part is not None:
        name, derived = part.name, ["name"]
    memory = r.memory_bytes
    if memory is None and part is not None and part.memory_gb is not None:
        memory = int(part.memory_gb * 1e9)
        derived.append("memory_total_bytes")
    pcie = PcieLink(gen_max=r.pcie_gen_max, width_max=r.pcie_width_max) if r.pcie_width_max or r.pcie_gen_max else None
    return Gpu(
        index=r.index,
        uuid=r.uuid,
        name=name,
        pci_bus_id=normalize_bus_id(r.bus) if r.bus else None,
        numa_node=r.numa,
        memory_total_bytes=memory,
        architecture=part.architecture if part is not None else None,
        pcie=pcie,
        pci_device_id=r.device_id,
        vendor="amd",
        derived=derived,
    )


def _cell(table: dict[tuple[int, int], object], i: int, j: int) -> object | None:
    return table.get((i, j), table.get((j, i)))


def _pair(facts: AmdFacts, a: Gpu, b: Gpu, notes: list[str]) -> Pair:
    i, j = a.index, b.index

    def num(table: dict[tuple[int, int], int]) -> int | None:
        v = _cell(table, i, j)  # type: ignore[arg-type]
        return v if isinstance(v, int) else None

    link, bw, access = _cell(facts.link, i, j), _cell(facts.bw, i, j), _cell(facts.access, i, j)  # type: ignore[arg-type]
    f = AmdPairFacts(
        link=link if isinstance(link, str) else None,
        weight=num(facts.weight),
        hops=num(facts.hops),
        bw=bw if isinstance(bw, tuple) else None,
        links=num(facts.xgmi_links),
        access=access if isinstance(access, bool) else None,
    )
    return amd_pair(a, b, f, notes)


def _unknown(facts: AmdFacts, gpus: list[Gpu], pairs: list[Pair]) -> list[str]:
    out = ["nics", "gpus.nvlinks", "gpus.fabric", "gpus.mig", "pci"]
    if any(p.path is None for p in pairs):
        out.append("pairs.path")
    if not facts.access:
        out.append("pairs.p2p")
    checks: tuple[tuple[str, Callable[[Gpu], bool]], ...] = (
        ("gpus.name", lambda g: g.name is None or "name" in g.derived),
        ("gpus.memory_total_bytes", lambda g: g.memory_total_bytes is None or "memory_total_bytes" in g.derived),
        ("gpus.pci_bus_id", lambda g: g.pci_bus_id is None),
        ("gpus.numa_node", lambda g: g.numa_node is None),
        ("gpus.uuid", lambda g: g.uuid is None),
        ("gpus.pcie", lambda g: g.pcie is None),
    )
    for field, missing in checks:
        if gpus and any(missing(g) for g in gpus):
            out.append(field)
    if not any(g.driver for g in facts.gpus.values()):
        out.append("software.driver_version")
    return out
