"""A declared lot as a snapshot (``source.kind`` ``declared``), so that every command that takes a
snapshot works on it with no special case: one host, or a merged cluster of ``hosts`` identical hosts
named ``lot-1`` … ``lot-N``. What the declaration says is filled, each field recorded in
``Source.filled`` with its origin; what it leaves out is null and listed in ``unknown_fields``, and
``model.source_facts.CAN_CARRY["declared"]`` says what a declaration can never carry (paths, NUMA, P2P,
names, link states), so every rule says UNKNOWN with the command that settles it.
"""

from __future__ import annotations

import uuid

from topomap import __version__
from topomap.base.links import XGMI_PATH, nvlink_path
from topomap.model.lots.typed import DeclaredLot, LotFact
from topomap.model.snapshot import (
    P2P,
    Fabric,
    Filled,
    Gpu,
    GpuVendor,
    Host,
    LotPrice,
    LotTerms,
    Nic,
    NicKind,
    NvSwitch,
    Pair,
    PcieLink,
    Snapshot,
    Software,
    Source,
    XgmiPair,
)

#: Snapshot fields no declaration carries: where each device sits, its identity, its links' state.
NEVER_DECLARED = (
    "gpus.uuid",
    "gpus.pci_bus_id",
    "gpus.cuda_ordinal",
    "gpus.compute_capability",
    "gpus.numa_node",
    "gpus.cpu_affinity",
    "gpus.nvlinks",
    "gpus.mig",
    "pairs.path",
    "pairs.cuda",
    "pci",
    "software.driver_version",
    "nics.name",
    "nics.pci_bus_id",
)
#: Each lot fact key → the snapshot field it fills (the names ``unknown_fields`` and ``filled`` use).
FIELD_OF = {
    "gpus.model": "gpus.name",
    "gpus.count": "gpus.count",
    "gpus.memory": "gpus.memory_total_bytes",
    "gpu_links": "pairs.nvlink",
    "p2p": "pairs.p2p",
    "nvlink_domain": "gpus.fabric",
    "nics.count": "nics",
    "nics.rate": "nics.speed_gbit_s",
    "nics.fabric": "nics.kind",
    "gpudirect": "nics.gdr",
    "pcie.gen": "gpus.pcie",
    "pcie.width": "gpus.pcie",
    "cpu.model": "host.cpu_model",
    "cpu.vendor": "host.cpu_model",
    "cpu.sockets": "host.sockets",
    "cuda": "software.cuda_driver_version",
}
#: A declared fabric as a NIC's link layer, and whether it moves data by RDMA.
KIND_OF: dict[str, tuple[NicKind, bool]] = {
    "infiniband": ("infiniband", True),
    "roce": ("roce", True),
    "efa": ("efa", True),
    "slingshot": ("slingshot", True),
    "ethernet": ("ethernet", False),
    "tcpx": ("tcpx", False),
    "tcpxo": ("tcpxo", False),
}
_VENDOR_WORDS = {"intel": "Intel", "amd": "AMD", "nvidia": "NVIDIA Grace", "ampere": "Ampere", "arm": "Arm"}


def lot_snapshot(lot: DeclaredLot) -> Snapshot:
    """The snapshot of a declared lot: one host, or a merged cluster of ``lot.hosts`` hosts."""
    terms = _terms(lot)
    if lot.hosts == 1:
        return host_snapshot(lot, None, terms)
    members = [host_snapshot(lot, f"lot-{i}", terms, i) for i in range(1, lot.hosts + 1)]
    notes = [f"lot-{i}: declared {lot.origin}" for i in range(1, lot.hosts + 1)]
    source = Source(kind="merge", origin=lot.origin, tool=f"topomap {__version__}", notes=notes)
    return Snapshot(source=source, host=Host(), members=members, lot=terms)


def host_snapshot(lot: DeclaredLot, hostname: str | None, terms: LotTerms | None = None, number: int = 1) -> Snapshot:
    """One host of the lot (the ``number``-th, from 1), as its declaration describes it."""
    assert lot.model is not None and lot.gpu_count is not None  # typed_lot requires both
    pcie = PcieLink(gen_max=lot.pcie_gen, width_max=lot.pcie_width) if lot.pcie_gen or lot.pcie_width else None
    fabric = _fabric(lot, number)
    vendor: GpuVendor = "amd" if lot.model.vendor == "amd" else "nvidia"
    gpus = [
        Gpu(
            index=i,
            vendor=vendor,
            name=lot.model.name,
            memory_total_bytes=lot.gpu_memory_bytes,
            pcie=pcie,
            gdr=lot.gpudirect,
            fabric=fabric,
        )
        for i in range(lot.gpu_count)
    ]
    kind, rdma = KIND_OF.get(lot.fabric or "", ("unknown", True))
    nics = [
        Nic(index=i, name=f"NIC{i}", kind=kind, rdma=rdma, speed_gbit_s=lot.nic_rate_gbit, gdr=lot.gpudirect)
        for i in range(lot.nic_count or 0)
    ]
    links = lot.links.links if lot.links is not None else 0
    known = lot.links is not None
    p2p = None if lot.p2p is None else P2P(read="OK", write="OK") if lot.p2p else P2P(read="NS", write="NS")
    xgmi = lot.links is not None and lot.links.kind == "xgmi"
    path = XGMI_PATH if xgmi else nvlink_path(links) if links else None
    pairs = [
        Pair(
            a=f"gpu{a}",
            b=f"gpu{b}",
            path=path,
            nvlinks=0 if xgmi else links,
            p2p=p2p,
            xgmi=XgmiPair(hops=1, links=1) if xgmi else None,
        )
        for a in range(lot.gpu_count)
        for b in range(a + 1, lot.gpu_count)
        if known or p2p is not None
    ]
    switches = []
    if lot.links is not None and lot.links.kind == "nvswitch":
        switches = [NvSwitch(id="nvswitch-fabric", links={f"gpu{g.index}": links for g in gpus})]
    cpu = lot.cpu_model or (_VENDOR_WORDS[lot.cpu_vendor] if lot.cpu_vendor else None)
    source = Source(
        kind="declared",
        origin=lot.origin,
        tool=f"topomap {__version__}",
        unknown_fields=unknown_fields(lot),
        formats=["declared"],
        filled=filled(lot),
        notes=[_note(lot)],
    )
    return Snapshot(
        source=source,
        host=Host(hostname=hostname, cpu_model=cpu, sockets=lot.cpu_sockets),
        gpus=gpus,
        nics=nics,
        pairs=pairs,
        nvswitches=switches,
        software=Software(cuda_driver_version=lot.cuda),
        lot=terms,
    )


def _fabric(lot: DeclaredLot, number: int) -> Fabric | None:
    """A declared NVLink domain across hosts as the fabric state a probe of it would show: every GPU of
    the ``nvlink_domain // gpus.count`` hosts of one domain in one clique, registered (the declaration
    says the domain works; the probe's Fabric section is what shows it does)."""
    if lot.nvlink_domain is None or lot.gpu_count is None:
        return None
    per = max(1, lot.nvlink_domain // lot.gpu_count)
    domain = uuid.uuid5(uuid.NAMESPACE_URL, f"topomap-declared-lot:{lot.origin}:{lot.name}")
    return Fabric(cluster_uuid=str(domain), clique_id=(number - 1) // per + 1, state="completed", status="success")


def unknown_fields(lot: DeclaredLot) -> list[str]:
    """What the snapshot cannot know: what no declaration carries, and what this one left out."""
    given = {FIELD_OF[k] for k in lot.facts if k in FIELD_OF}
    silent = ("gpus.count", "host.cpu_model", "host.sockets")  # no fact of their own: not listed
    left_out = [f for f in dict.fromkeys(FIELD_OF.values()) if f not in given and f not in silent]
    if "nics" not in given:
        left_out = [f for f in left_out if not f.startswith("nics.")]
    return list(NEVER_DECLARED) + left_out


def filled(lot: DeclaredLot) -> list[Filled]:
    """One record per snapshot field the lot fills, with the origin of the fact that fills it."""
    out: dict[str, Filled] = {}
    for key, fact in lot.facts.items():
        target = FIELD_OF.get(key)
        if target is None or target in out:
            continue
        out[target] = _record(target, key, fact, _value(lot, key, fact))
        if key == "gpu_links" and lot.links is not None and lot.links.kind == "nvswitch":
            out["nvswitches"] = _record("nvswitches", key, fact, fact.value)
        if key == "gpudirect":
            out["gpus.gdr"] = _record("gpus.gdr", key, fact, fact.value)
    return list(out.values())


def _record(target: str, key: str, fact: LotFact, value: str) -> Filled:
    o = fact.origin
    return Filled(
        field=target, origin=o.origin, lot_field=key, value=value, detail=o.detail, source_url=o.url, says=o.says
    )


def _value(lot: DeclaredLot, key: str, fact: LotFact) -> str:
    """The value a snapshot field was filled with, in words."""
    if key == "gpu_links" and lot.links is not None:
        return lot.links.words()
    if key in ("pcie.gen", "pcie.width"):
        return f"Gen{lot.pcie_gen or '?'}" + (f" x{lot.pcie_width}" if lot.pcie_width else "")
    if key == "gpus.model" and lot.model is not None and fact.value != lot.model.name:
        return f"{fact.value} ({lot.model.name})"
    return fact.value


def _note(lot: DeclaredLot) -> str:
    base = f"declared lot {lot.name!r}"
    if lot.type:
        base += f", from the catalogue entry {lot.type} with the keys it gives itself"
    return base + ": every figure from it is declared, and what it leaves out is unknown"


def _terms(lot: DeclaredLot) -> LotTerms:
    price = None
    if lot.price is not None:
        p = lot.price
        price = LotPrice(amount=p.amount, currency=p.currency, per=p.per, text=p.text)
    return LotTerms(name=lot.name, type=lot.type, hosts=lot.hosts, price=price, periods_s=list(lot.periods_s))
