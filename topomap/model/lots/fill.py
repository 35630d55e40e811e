"""A paste beside its catalogue entry (``--lot-type aws/p4de.24xlarge``): the catalogue fills only what
the paste does not carry (``model.source_facts``), each filled field recorded with its origin
(``Source.filled``: "catalogue (aws/p4de.24xlarge)"). A fact the paste does carry wins; where the two
disagree, that is a finding (``catalogue-disagrees``) that `show` and `check` print.

Nothing is added where the paste cannot place it: the catalogue never adds GPUs, and NICs only to a
paste that shows none (their place then unknown).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from topomap.base.links import is_nvlink, nvlink_path, nvlinks_of, pcie_class_of
from topomap.base.part_names import model_of
from topomap.model.facts import gpu_pcie_link, nic_family
from topomap.model.lots.build import _VENDOR_WORDS, FIELD_OF, KIND_OF, _value
from topomap.model.lots.catalogue import entry
from topomap.model.lots.typed import DeclaredLot
from topomap.model.snapshot import Filled, Finding, Gpu, LotTerms, Nic, NvSwitch, Pair, PcieLink, Snapshot
from topomap.model.source_facts import Fact, SourceFacts, source_facts

FINDING = "catalogue-disagrees"
_TRANSPORT = {"infiniband": "infiniband", "roce": "roce", "efa": "efa", "ethernet": "ethernet"}
_VENDOR_IN_CPU = {"intel": ("intel",), "amd": ("amd",), "nvidia": ("grace", "nvidia"), "arm": ("arm", "neoverse")}


def with_lot_type(snap: Snapshot, type_: str, where: str = "--lot-type") -> Snapshot:
    """``snap`` with what its source does not carry filled from the catalogue entry ``type_`` (every host
    of a merged cluster); an unknown entry is a one-line error naming ``where``."""
    lot = entry(type_, where).lot()
    if snap.source.kind == "merge":
        return msgspec.structs.replace(snap, members=[_fill(m, lot) for m in snap.members])
    return _fill(snap, lot)


@dataclass
class _Host:
    """One host being filled: its parts, what was filled, what disagrees."""

    snap: Snapshot
    lot: DeclaredLot
    facts: SourceFacts
    gpus: list[Gpu]
    nics: list[Nic]
    pairs: list[Pair]
    switches: list[NvSwitch]
    filled: list[Filled] = field(default_factory=list)
    known: set[str] = field(default_factory=set)  # unknown fields the catalogue settles
    findings: list[Finding] = field(default_factory=list)

    def fill(self, key: str, target: str | None = None) -> None:
        """Record that ``key``'s fact filled ``target`` (its snapshot field)."""
        fact = self.lot.facts[key]
        target = target or FIELD_OF[key]
        o = fact.origin
        value = _value(self.lot, key, fact)
        record = Filled(field=target, origin="catalogue", lot_field=key, value=value, detail=o.detail)
        self.filled.append(msgspec.structs.replace(record, source_url=o.url, says=o.says))
        self.known.add(target)

    def disagree(self, key: str, subject: str, paste: str) -> None:
        """The paste and the catalogue disagree about ``key``: the paste's fact is kept, and said."""
        fact = self.lot.facts[key]
        o = fact.origin
        text = f"the paste shows {paste}; the catalogue ({o.detail}) says {_value(self.lot, key, fact)}"
        evidence = [x for x in (o.url, f"the page says: {o.says}" if o.says else None) if x]
        self.findings.append(
            Finding(kind=FINDING, subject=subject, severity="warning", text=text, evidence=evidence, source="catalogue")
        )


def _fill(snap: Snapshot, lot: DeclaredLot) -> Snapshot:
    h = _Host(snap, lot, source_facts(snap), list(snap.gpus), list(snap.nics), list(snap.pairs), list(snap.nvswitches))
    _models(h)
    _memory(h)
    _links(h)
    _nics(h)
    _pcie(h)
    _cpu(h)
    src = snap.source
    unknown = [u for u in src.unknown_fields if not any(u == k or u.startswith(k + ".") for k in h.known)]
    notes = list(src.notes)
    if h.filled:
        notes.append(
            f"catalogue {lot.type} filled what this paste does not carry "
            f"({', '.join(dict.fromkeys(f.lot_field for f in h.filled))}); a fact the paste carries is kept"
        )
    return msgspec.structs.replace(
        h.snap,
        source=msgspec.structs.replace(src, unknown_fields=unknown, filled=[*src.filled, *h.filled], notes=notes),
        gpus=h.gpus, nics=h.nics, pairs=h.pairs, nvswitches=h.switches, findings=[*snap.findings, *h.findings],
        lot=snap.lot or LotTerms(name=lot.name, type=lot.type),
    )  # fmt: skip


def _models(h: _Host) -> None:
    """GPU model (filled where the paste names none) and count (compared only: no GPU is added)."""
    model = h.lot.model
    if model is None:
        pass
    elif h.gpus and not h.facts.knows(Fact.GPU_MODEL) and all(g.name is None for g in h.gpus):
        h.gpus = [msgspec.structs.replace(g, name=model.name) for g in h.gpus]
        h.fill("gpus.model")
    else:
        seen = {m.name for g in h.gpus if (m := model_of(g.name, g.pci_device_id)) is not None}
        odd = sorted(seen - {model.name})
        if odd:
            h.disagree("gpus.model", "host", f"{', '.join(odd)}")
    count = h.lot.gpu_count
    if count is not None and h.facts.knows(Fact.GPU_COUNT) and h.gpus and len(h.gpus) != count:
        h.disagree("gpus.count", "host", f"{len(h.gpus)} GPUs")


def _memory(h: _Host) -> None:
    want = h.lot.gpu_memory_bytes
    if want is None or not h.gpus:
        return
    if not h.facts.knows(Fact.GPU_MEMORY) and all(g.memory_total_bytes is None for g in h.gpus):
        h.gpus = [msgspec.structs.replace(g, memory_total_bytes=want) for g in h.gpus]
        h.fill("gpus.memory")
        return
    have = sorted({g.memory_total_bytes for g in h.gpus if g.memory_total_bytes is not None})
    if have and abs(have[0] - want) > 0.10 * want:  # 80 GB sold reads 81,559 MiB: within 10 %
        h.disagree("gpus.memory", "host", f"{have[0] / 1e9:.1f} GB per GPU")


def _links(h: _Host) -> None:
    """NVLink between every GPU pair: filled where the paste cannot say (an NCCL XML records none)."""
    links = h.lot.links
    if links is None or len(h.gpus) < 2:
        return
    ids = [f"gpu{g.index}" for g in h.gpus]
    listed = any(x.active for g in h.gpus for x in g.nvlinks)
    if h.facts.knows(Fact.NVLINK) or listed:
        counts = {_nv(p) for p in _gpu_pairs(h)}
        worst = min(counts) if counts else 0
        if counts and worst != links.links:
            shown = f"NV{worst} between some GPU pair" if worst else "a GPU pair without NVLink"
            h.disagree("gpu_links", "host", shown)
        return
    by_key = {frozenset((p.a, p.b)): p for p in h.pairs}
    k = links.links
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            old = by_key.get(frozenset((a, b)))
            pcie = pcie_class_of(old.path) if old is not None else None
            new = Pair(a=a, b=b, path=nvlink_path(k) if k else pcie, nvlinks=k, pcie_path=pcie if k else None)
            if old is not None:
                new = msgspec.structs.replace(old, path=new.path, nvlinks=k, pcie_path=new.pcie_path)
            by_key[frozenset((a, b))] = new
    h.pairs = list(by_key.values())
    h.fill("gpu_links")
    if links.kind == "nvswitch" and not h.switches:
        h.switches = [NvSwitch(id="nvswitch-fabric", links=dict.fromkeys(ids, k))]
        h.fill("gpu_links", "nvswitches")


def _nv(p: Pair) -> int:
    """A GPU pair's NVLink count as the paste gives it: its NV# cell, else its link count."""
    return nvlinks_of(p.path) if is_nvlink(p.path) else p.nvlinks


def _gpu_pairs(h: _Host) -> list[Pair]:
    return [p for p in h.pairs if p.a.startswith("gpu") and p.b.startswith("gpu")]


def _nics(h: _Host) -> None:
    """NIC count, rate, fabric and GPUDirect: filled where not carried, else compared."""
    lot = h.lot
    kind, rdma = KIND_OF.get(lot.fabric or "", ("unknown", True))
    if lot.nic_count is None:
        pass  # the entry does not say how many: none added, none compared
    elif not h.nics and not h.facts.knows(Fact.NICS):
        h.nics = [Nic(index=i, name=f"NIC{i}", kind=kind, rdma=rdma) for i in range(lot.nic_count)]
        h.fill("nics.count")
    else:
        rdma_nics = [n for n in h.nics if n.rdma]
        if h.facts.knows(Fact.NICS) and len(rdma_nics) != lot.nic_count:
            h.disagree("nics.count", "host", f"{len(rdma_nics)} RDMA NICs")
    _rate(h)
    _fabric(h, kind)
    _gdr(h)


def _rate(h: _Host) -> None:
    rate = h.lot.nic_rate_gbit
    if rate is None or not h.nics:
        return
    if all(n.speed_gbit_s is None for n in h.nics):  # none recorded, whatever the source could carry
        h.nics = [msgspec.structs.replace(n, speed_gbit_s=rate) if n.rdma else n for n in h.nics]
        h.fill("nics.rate")
        return
    have = sorted({n.speed_gbit_s for n in h.nics if n.rdma and n.speed_gbit_s is not None})
    if have and have[0] != rate:
        h.disagree("nics.rate", "host", f"{have[0]:g} Gb/s NICs")


#: The fabrics each NIC family (told by its ids or device name) can carry: a ConnectX is never an EFA.
_CARRIES = {
    "connectx": ("infiniband", "roce", "ethernet"),
    "efa": ("efa",),
    "broadcom": ("roce", "ethernet"),
    "intel": ("roce", "ethernet"),
    "gvnic": ("tcpx", "tcpxo", "ethernet"),
    "cassini": ("slingshot",),
}


def _fabric(h: _Host, kind: str) -> None:
    fabric = h.lot.fabric
    if fabric is None or not h.nics:
        return
    families = [nic_family(n) for n in h.nics if n.rdma]
    wrong = sorted({f.label for f in families if fabric not in _CARRIES.get(f.family, (fabric,))})
    if wrong:  # the paste's NICs are of a family that never carries the declared fabric: a finding, not a fill
        h.disagree("nics.fabric", "host", ", ".join(wrong))
        return
    if families and all(f.transport in ("rdma", "network") for f in families):  # no NIC's link layer decided
        h.nics = [msgspec.structs.replace(n, kind=kind) if n.rdma and n.kind == "unknown" else n for n in h.nics]
        h.fill("nics.fabric")
        return
    want = _TRANSPORT.get(fabric)
    odd = sorted({f.label for f in families if want is not None and f.transport not in (want, "rdma", "network")})
    if odd:
        h.disagree("nics.fabric", "host", ", ".join(odd))


def _gdr(h: _Host) -> None:
    gdr = h.lot.gpudirect
    if gdr is None or not h.nics:
        return
    denied = [(n, nic_family(n).gdr) for n in h.nics if n.rdma and nic_family(n).gdr.no]
    if gdr and denied:
        n, why = denied[0]
        subject = n.name if len(denied) == 1 else "host"
        h.disagree("gpudirect", subject, why.why() + (f" (and {len(denied) - 1} more NICs)" if len(denied) > 1 else ""))
        return
    if all(n.gdr is None for n in h.nics):
        h.nics = [msgspec.structs.replace(n, gdr=gdr) if n.rdma else n for n in h.nics]
        h.fill("gpudirect")


def _pcie(h: _Host) -> None:
    gen = h.lot.pcie_gen
    if gen is None or not h.gpus:
        return
    if not h.facts.knows(Fact.PCIE_LINK) and all(g.pcie is None for g in h.gpus):
        link = PcieLink(gen_max=gen, width_max=h.lot.pcie_width)
        h.gpus = [msgspec.structs.replace(g, pcie=link) for g in h.gpus]
        h.fill("pcie.gen")
        return
    gens = sorted({x for g in h.gpus if (x := gpu_pcie_link(g).gen) is not None})
    if gens and gens[0] != gen:
        h.disagree("pcie.gen", "host", f"GPUs on PCIe Gen{gens[0]}")


def _cpu(h: _Host) -> None:
    lot, host = h.lot, h.snap.host
    vendor = lot.cpu_vendor
    if vendor is not None or lot.cpu_model is not None:
        key = "cpu.model" if lot.cpu_model is not None else "cpu.vendor"
        if host.cpu_model is None:
            text = lot.cpu_model or _VENDOR_WORDS[vendor or ""]
            h.snap = msgspec.structs.replace(h.snap, host=msgspec.structs.replace(host, cpu_model=text))
            h.fill(key)
        elif vendor is not None and not any(w in host.cpu_model.lower() for w in _VENDOR_IN_CPU.get(vendor, (vendor,))):
            h.disagree("cpu.vendor", "host", f"CPU {host.cpu_model}")
    host = h.snap.host
    if lot.cpu_sockets is not None:
        if host.sockets is None:
            h.snap = msgspec.structs.replace(h.snap, host=msgspec.structs.replace(host, sockets=lot.cpu_sockets))
            h.fill("cpu.sockets")
        elif host.sockets != lot.cpu_sockets:
            h.disagree("cpu.sockets", "host", f"{host.sockets} CPU sockets")
