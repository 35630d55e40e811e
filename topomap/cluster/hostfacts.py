"""The facts that may differ between hosts of one shape, read per host: driver and CUDA versions,
trained PCIe widths, NIC rates and states, NVLink fabric state and cliques, health findings. Each
is a hashable value (None: the host's source does not carry it) and a text for people."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from topomap.model.facts import fabric_clique, fabric_ready, gpu_pcie_link
from topomap.model.snapshot import Snapshot
from topomap.model.source_facts import source_knows

Widths = tuple[tuple[str, int | None, int | None], ...]  # (gpu, trained width, max width)
NicLines = tuple[tuple[str, float | None, str | None], ...]  # (nic, Gbit/s, state)
FabricState = tuple[tuple[str, str], ...]  # (gpu, "ready" | "not ready: …" | "not-supported")
Health = tuple[tuple[str, str, str], ...]  # (severity, kind, subject)
Clique = tuple[str, int]


def driver(h: Snapshot) -> str | None:
    return h.software.driver_version


def cuda(h: Snapshot) -> str | None:
    return h.software.cuda_driver_version


def pcie_widths(h: Snapshot) -> Widths | None:
    """Each GPU's trained PCIe width and the width it could train at (model/facts.gpu_pcie_link)."""
    if not source_knows(h, "pcie_link"):
        return None
    out = []
    for g in sorted(h.gpus, key=lambda g: g.index):
        link = gpu_pcie_link(g)
        out.append((f"gpu{g.index}", link.width, link.width_max))
    return tuple(out) if any(w is not None for _g, w, _m in out) else None


def nics(h: Snapshot) -> NicLines | None:
    """Each RDMA NIC's line rate and port state, by name."""
    out = tuple((n.name, n.speed_gbit_s, n.state) for n in sorted(h.nics, key=lambda n: n.index) if n.rdma)
    return out or None


def fabric(h: Snapshot) -> FabricState | None:
    """Each GPU's NVLink fabric state in words (model/facts.fabric_ready); None when the source does
    not carry the fabric (an import), so that host is unknown, never "not ready"."""
    if not h.gpus or (not source_knows(h, "fabric") and all(g.fabric is None for g in h.gpus)):
        return None
    out = []
    for g in sorted(h.gpus, key=lambda g: g.index):
        f = g.fabric
        if f is not None and f.state in (None, "not-supported"):
            out.append((f"gpu{g.index}", "not-supported"))
            continue
        ready = fabric_ready(h, g)
        if ready.value == "unknown":
            return None
        out.append((f"gpu{g.index}", "ready" if ready.yes else f"not ready: {ready.why()}"))
    return tuple(out)


def cliques(h: Snapshot) -> frozenset[Clique]:
    """The NVLink domains (cluster UUID, clique id) of the host's GPUs (model/facts.fabric_clique)."""
    return frozenset(k for g in h.gpus if (k := fabric_clique(h, g)) is not None)


def health(h: Snapshot) -> Health:
    """The host's warnings and errors (health and truth checks), sorted; info lines left out."""
    return tuple(sorted({(f.severity, f.kind, f.subject) for f in h.findings if f.severity != "info"}))


@dataclass(frozen=True)
class HostFact:
    """One per-host fact: its name for people and how each value is read and shown."""

    name: str
    read: Callable[[Snapshot], object]
    text: Callable[[object], str]


def _versions(v: object) -> str:
    return str(v)


def _widths(v: object) -> str:
    assert isinstance(v, tuple)
    return ", ".join(f"{g} x{w if w is not None else '?'}" + (f" of x{m}" if m and m != w else "") for g, w, m in v)


def _nics(v: object) -> str:
    assert isinstance(v, tuple)
    return ", ".join(
        f"{n} {f'{r:g} Gbit/s' if r is not None else 'rate unknown'} {s or 'state unknown'}" for n, r, s in v
    )


def _fabric(v: object) -> str:
    assert isinstance(v, tuple)
    states = {s for _g, s in v}
    if len(states) == 1:
        return f"every GPU {next(iter(states))}"
    return ", ".join(f"{g} {s}" for g, s in v)


def _health(v: object) -> str:
    assert isinstance(v, tuple)
    return ", ".join(f"{sev} {kind} {subject}" for sev, kind, subject in v) if v else "no warning or error"


#: The per-host facts compared across the cluster, in the order views list them.
HOST_FACTS: tuple[HostFact, ...] = (
    HostFact("driver", driver, _versions),
    HostFact("cuda", cuda, _versions),
    HostFact("pcie_widths", pcie_widths, _widths),
    HostFact("nics", nics, _nics),
    HostFact("fabric", fabric, _fabric),
    HostFact("health", health, _health),
)
FACT_NAME = {
    "driver": "driver version",
    "cuda": "CUDA driver version",
    "pcie_widths": "trained PCIe widths",
    "nics": "NIC rates and states",
    "fabric": "NVLink fabric state",
    "health": "health findings",
}
