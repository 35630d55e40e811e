"""Promised against received (``topomap diff declared.yaml probe.json``): a declared lot's facts held
against what was probed or pasted after the lot was handed over, fact by fact: GPUs missing or of
another model, NVLink below the promise, NICs fewer or slower or of another fabric, GPUDirect absent, a
PCIe link trained narrower or slower, the CPU.

Only what the received side can show is judged. A fact its source does not carry (a `topo -m` has no
NIC rates), or that was itself filled from a declaration or the catalogue (``--lot-type``), is "cannot
check" with the command whose output shows it, never "short". The verdict: ``as promised`` (exit 0),
``short of the promise`` (exit 1), ``cannot tell`` (exit 3: nothing short, something unchecked).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

from topomap.base.lotunits import same_memory_class
from topomap.base.part_names import model_of
from topomap.graph import Topology, build
from topomap.graph.evidence import nearest_nic, nvlink
from topomap.model.facts import gpu_memory, gpu_pcie_link, nic_family
from topomap.model.filled_facts import nic_speed
from topomap.model.origins import filled_fields
from topomap.model.snapshot import Snapshot, hosts_of
from topomap.model.source_facts import Fact, settle, source_facts

Status = Literal["as promised", "short", "cannot check"]
Verdict = Literal["as promised", "short of the promise", "cannot tell"]
EXIT: dict[Verdict, int] = {"as promised": 0, "short of the promise": 1, "cannot tell": 3}
_TRANSPORT = {"infiniband": "infiniband", "roce": "roce", "efa": "efa", "ethernet": "ethernet"}
_VENDOR_IN_CPU = {"intel": ("intel",), "amd": ("amd",), "nvidia": ("grace", "nvidia"), "arm": ("arm",)}


@dataclass(frozen=True)
class PromiseLine:
    """One fact held against what was received: promised, received (or why it cannot be checked)."""

    fact: str
    status: Status
    promised: str
    received: str
    host: str | None = None
    settle: str | None = None  # for "cannot check": the command whose output shows it

    def to_json(self) -> dict[str, object]:
        return {
            "fact": self.fact,
            "host": self.host,
            "status": self.status,
            "promised": self.promised,
            "received": self.received,
            "settle": self.settle,
        }


@dataclass
class PromiseResult:
    """Every fact of the promise, judged; the verdict over them."""

    promised: str  # the declared lot's name
    received: str  # the received snapshot's file
    lines: list[PromiseLine] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        if any(x.status == "short" for x in self.lines):
            return "short of the promise"
        if any(x.status == "cannot check" for x in self.lines):
            return "cannot tell"
        return "as promised"

    @property
    def exit_status(self) -> int:
        return EXIT[self.verdict]

    def to_json(self) -> dict[str, object]:
        return {
            "kind": "promise",
            "promised": self.promised,
            "received": self.received,
            "verdict": self.verdict,
            "facts": [x.to_json() for x in self.lines],
            "cannot_check": sorted({x.settle for x in self.lines if x.status == "cannot check" and x.settle}),
        }


def is_declared(snap: Snapshot) -> bool:
    """A declared lot (one host, or the merged hosts of ``hosts: N``)."""
    return all(h.source.kind == "declared" for h in hosts_of(snap))


def check_promise(promised: Snapshot, received: Snapshot, names: tuple[str, str]) -> PromiseResult:
    """Hold the declared lot ``promised`` against the ``received`` snapshot, host by host."""
    lot = promised.lot.name if promised.lot is not None else names[0]
    out = PromiseResult(lot, names[1])
    want = hosts_of(promised)[0]
    got = hosts_of(received)
    if len(hosts_of(promised)) > 1 or len(got) > 1:
        out.lines.append(_hosts(len(hosts_of(promised)), len(got)))
    for host in got:
        name = host.host.hostname if len(got) > 1 else None
        out.lines += [_named(x, name) for x in _host_lines(want, host, build(host))]
    return out


def _named(line: PromiseLine, host: str | None) -> PromiseLine:
    return line if host is None else dataclasses.replace(line, host=host)


def _hosts(promised: int, received: int) -> PromiseLine:
    status: Status = "as promised" if received >= promised else "cannot check"
    text = f"{received} host(s) in what was received"
    how = None if received >= promised else "probe every host and merge them: topomap merge HOST.json … -o LOT.json"
    return PromiseLine("hosts", status, str(promised), text, settle=how)


class _Host:
    """One received host and what its source can show (a fact filled from a declaration cannot)."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.facts = source_facts(snap)
        self.filled = filled_fields(snap)

    def shows(self, fact: Fact, field_name: str) -> bool:
        return self.facts.knows(fact) and field_name not in self.filled

    def cannot(self, fact: str, promised: str, carried: Fact) -> PromiseLine:
        return PromiseLine(fact, "cannot check", promised, self.facts.why_not(carried), settle=settle(carried))


def _host_lines(want: Snapshot, snap: Snapshot, topo: Topology) -> list[PromiseLine]:
    h = _Host(snap)
    said = filled_fields(want)
    out: list[PromiseLine] = []
    out += _gpus(want, h) if "gpus.count" in said else []
    out += _model(want, h) if "gpus.name" in said else []
    out += _memory(want, h) if "gpus.memory_total_bytes" in said else []
    out += _nvlink(want, h, topo) if "pairs.nvlink" in said else []
    out += _nics(want, h, topo) if "nics" in said else []
    out += _pcie(want, h) if "gpus.pcie" in said else []
    out += _cpu(want, h) if "host.cpu_model" in said or "host.sockets" in said else []
    return out


def _gpus(want: Snapshot, h: _Host) -> list[PromiseLine]:
    promised = f"{len(want.gpus)} GPUs"
    if not h.shows(Fact.GPU_COUNT, "gpus.count"):
        return [h.cannot("GPUs", promised, Fact.GPU_COUNT)]
    have = len([g for g in h.snap.gpus if not g.lost])
    status: Status = "short" if have < len(want.gpus) else "as promised"
    lost = sum(g.lost for g in h.snap.gpus)
    text = f"{have} GPUs" + (f" ({lost} lost during the probe)" if lost else "")
    return [PromiseLine("GPUs", status, promised, text)]


def _model(want: Snapshot, h: _Host) -> list[PromiseLine]:
    promised = want.gpus[0].name or "?"
    names = [g.name for g in h.snap.gpus]
    if not h.shows(Fact.GPU_MODEL, "gpus.name") or not names or None in names:
        return [h.cannot("GPU model", promised, Fact.GPU_MODEL)]
    seen = {(m.name if (m := model_of(g.name, g.pci_device_id)) else g.name) for g in h.snap.gpus}
    odd = sorted(s for s in seen if s != promised and s is not None)
    derived = " (derived from the PCI device id)" if any("name" in g.derived for g in h.snap.gpus) else ""
    text = ", ".join(sorted(s for s in seen if s)) + derived
    return [PromiseLine("GPU model", "short" if odd else "as promised", promised, text)]


def _memory(want: Snapshot, h: _Host) -> list[PromiseLine]:
    need = want.gpus[0].memory_total_bytes or 0
    promised = f"{need / 1e9:g} GB per GPU"
    mems = [gpu_memory(g, h.snap) for g in h.snap.gpus]
    if not h.shows(Fact.GPU_MEMORY, "gpus.memory_total_bytes") or any(m.kind != "snapshot" for m in mems):
        return [h.cannot("GPU memory", promised, Fact.GPU_MEMORY)]
    least = min((m.total_bytes or 0) for m in mems) if mems else 0
    short = least < need and not same_memory_class(least, need)  # 80 GB sold, 81559 MiB read: one class
    status: Status = "short" if short else "as promised"
    return [PromiseLine("GPU memory", status, promised, f"{least / 1e9:.1f} GB on the smallest GPU")]


def _nvlink(want: Snapshot, h: _Host, topo: Topology) -> list[PromiseLine]:
    k = max((p.nvlinks for p in want.pairs), default=0)
    promised = f"NV{k} every GPU pair" if k else "no NVLink"
    gids = [f"gpu{g.index}" for g in h.snap.gpus]
    if k == 0 or len(gids) < 2:
        return [PromiseLine("NVLink", "as promised", promised, "nothing promised to check" if k == 0 else "one GPU")]
    if "pairs.nvlink" in h.filled:
        return [h.cannot("NVLink", promised, Fact.NVLINK)]
    below: list[str] = []
    unknown: list[str] = []
    for i, a in enumerate(gids):
        for b in gids[i + 1 :]:
            nv = nvlink(topo, a, b)
            if nv.usable.value == "unknown":
                unknown.append(f"{a}–{b}")
            elif not nv.usable.yes or (nv.links or 0) < k:
                below.append(f"{a}–{b} " + (f"NV{nv.links}" if nv.usable.yes else "no usable NVLink"))
    pairs = len(gids) * (len(gids) - 1) // 2
    if below:
        return [PromiseLine("NVLink", "short", promised, f"{len(below)} of {pairs} pairs below: {_few(below)}")]
    if unknown:
        return [h.cannot("NVLink", promised, Fact.NVLINK)]
    return [PromiseLine("NVLink", "as promised", promised, f"{pairs} of {pairs} pairs NV{k} or more")]


def _few(items: list[str], n: int = 3) -> str:
    return ", ".join(items[:n]) + (f" … ({len(items)} in all)" if len(items) > n else "")


def _nics(want: Snapshot, h: _Host, topo: Topology) -> list[PromiseLine]:
    """NIC count, rate, fabric and GPUDirect RDMA, as far as the received source shows them."""
    out: list[PromiseLine] = []
    n = len(want.nics)
    first = want.nics[0] if want.nics else None
    if not h.shows(Fact.NICS, "nics"):
        return [h.cannot("NICs", f"{n} NICs", Fact.NICS)]
    rdma = [x for x in h.snap.nics if x.rdma]
    out.append(PromiseLine("NICs", "short" if len(rdma) < n else "as promised", f"{n} NICs", f"{len(rdma)} RDMA NICs"))
    if first is not None and first.speed_gbit_s is not None:
        promised = f"{first.speed_gbit_s:g} Gb/s each"
        speeds = [nic_speed(x, h.snap) for x in rdma]
        if not h.shows(Fact.NIC_SPEED, "nics.speed_gbit_s") or any(s.gbit_s is None for s in speeds) or not speeds:
            out.append(h.cannot("NIC rate", promised, Fact.NIC_SPEED))
        else:
            slow = min(s.gbit_s or 0 for s in speeds)
            status: Status = "short" if slow < first.speed_gbit_s else "as promised"
            out.append(PromiseLine("NIC rate", status, promised, f"slowest {slow:g} Gb/s"))
    if first is not None and first.kind in _TRANSPORT:
        families = [nic_family(x) for x in rdma]
        undecided = [f for f in families if f.transport in ("rdma", "network")]
        if "nics.kind" in h.filled or undecided or not families:
            out.append(h.cannot("NIC fabric", first.kind, Fact.NIC_KIND))
        else:
            odd = sorted({f.label for f in families if f.transport != _TRANSPORT[first.kind]})
            seen = {f.label if f.family != "rdma" else f"{f.transport} (its link layer)" for f in families}
            text = ", ".join(sorted(seen))
            out.append(PromiseLine("NIC fabric", "short" if odd else "as promised", first.kind, text))
    if first is not None and first.gdr:
        out.append(_gdr(h, topo))
    return out


def _gdr(h: _Host, topo: Topology) -> PromiseLine:
    answers = {f"gpu{g.index}": nearest_nic(topo, f"gpu{g.index}").gdr for g in h.snap.gpus if not g.lost}
    no = [g for g, a in answers.items() if a.no]
    if "nics.gdr" in h.filled:
        return PromiseLine("GPUDirect RDMA", "cannot check", "yes", "filled from a declaration, not received")
    if no:
        why = answers[no[0]].why()
        return PromiseLine("GPUDirect RDMA", "short", "yes", f"absent for {_few(no)}: {why}")
    unknown = [a for a in answers.values() if a.value == "unknown"]
    if unknown:
        how = unknown[0].settle or settle(Fact.PATH)
        return PromiseLine("GPUDirect RDMA", "cannot check", "yes", unknown[0].why(), settle=how)
    return PromiseLine("GPUDirect RDMA", "as promised", "yes", f"possible for all {len(answers)} GPUs")


def _pcie(want: Snapshot, h: _Host) -> list[PromiseLine]:
    p = want.gpus[0].pcie
    gen, width = (p.gen_max, p.width_max) if p is not None else (None, None)
    promised = f"Gen{gen or '?'}" + (f" x{width}" if width else "")
    links = [gpu_pcie_link(g) for g in h.snap.gpus]
    if not h.shows(Fact.PCIE_LINK, "gpus.pcie") or any(x.gen is None for x in links) or not links:
        return [h.cannot("PCIe link", promised, Fact.PCIE_LINK)]
    slower = [f"gpu{g.index} Gen{x.gen}" for g, x in zip(h.snap.gpus, links) if gen and (x.gen or 0) < gen]
    narrower = [
        f"gpu{g.index} x{x.width}"
        for g, x in zip(h.snap.gpus, links)
        if x.downtrained or (width and x.width is not None and x.width < width)
    ]
    if slower or narrower:
        return [PromiseLine("PCIe link", "short", promised, "trained lower: " + _few(slower + narrower))]
    if width and any(x.width is None for x in links):
        gens = ", ".join(sorted({f"Gen{x.gen}" for x in links}))
        text = f"{gens}, width not recorded"
        return [PromiseLine("PCIe link", "cannot check", promised, text, settle=settle(Fact.PCIE_LINK))]
    text = ", ".join(sorted({f"Gen{x.gen} x{x.width}" if x.width else f"Gen{x.gen}" for x in links}))
    return [PromiseLine("PCIe link", "as promised", promised, text)]


def _cpu(want: Snapshot, h: _Host) -> list[PromiseLine]:
    out: list[PromiseLine] = []
    cpu, sockets = want.host.cpu_model, want.host.sockets
    have = h.snap.host
    if cpu is not None:
        vendor = next((v for v, words in _VENDOR_IN_CPU.items() if any(w in cpu.lower() for w in words)), None)
        if have.cpu_model is None or "host.cpu_model" in h.filled:
            out.append(PromiseLine("CPU", "cannot check", cpu, "CPU model not recorded", settle="`lscpu`"))
        elif vendor is not None:
            ok = any(w in have.cpu_model.lower() for w in _VENDOR_IN_CPU[vendor])
            out.append(PromiseLine("CPU", "as promised" if ok else "short", cpu, have.cpu_model))
    if sockets is not None:
        if have.sockets is None or "host.sockets" in h.filled:
            out.append(PromiseLine("CPU sockets", "cannot check", str(sockets), "not recorded", settle="`lscpu`"))
        else:
            status: Status = "short" if have.sockets < sockets else "as promised"
            out.append(PromiseLine("CPU sockets", status, str(sockets), str(have.sockets)))
    return out
