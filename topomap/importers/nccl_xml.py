"""NCCL topology XML → Snapshot: `NCCL_TOPO_FILE` inputs and `NCCL_TOPO_DUMP_FILE` dumps.

Shape (formats-and-pitfalls.md §2): ``<system>`` → ``<cpu numaid affinity>`` → nested
``<pci busid class link_speed link_width>`` → ``<gpu dev sm gdr>`` with ``<nvlink target
count tclass>``, or ``<nic><net name dev speed gdr/></nic>``. NCCL has no host bridges, so
two devices under one CPU without a common bridge are PHB here; nvidia-smi may call the
same pair NODE. The snapshot says so.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import msgspec

from topomap import __version__
from topomap.base.cpus import cpus_from_hex_mask, format_cpulist
from topomap.base.devices import format_device_id, parse_device_id
from topomap.base.errors import ImportFailure
from topomap.base.links import PathClass, pcie_gen_from_speed_text
from topomap.base.part_names import model_from_device_id
from topomap.base.parts import nvlink_generation_of_cc
from topomap.base.pciaddr import normalize_bus_id, parse_bus_id
from topomap.importers._tree import Placed, parse_xml, tree_pairs
from topomap.importers.rccl_xml import RCCL_NOTE, rccl_xgmi
from topomap.model.nic_ids import is_rdma_name, layer_of_name, pci_id
from topomap.model.nvlinks import nvswitches_from_links
from topomap.model.snapshot import (
    Gpu,
    Host,
    Nic,
    NicKind,
    NumaNode,
    NvLink,
    PciDevice,
    PcieLink,
    Snapshot,
    Source,
    SourceKind,
)
from topomap.model.source_facts import unknown_fields_of

MAX_LINKS_PER_ELEMENT = 64  # <nvlink count=...>: no GPU has more than 18
NVLINK_ABSENT_NOTE = (
    "NVLink is not in this file: static NCCL topology files (NCCL_TOPO_FILE) carry the PCI tree and NICs, "
    "and NCCL adds NVLink from NVML at run time; GPU pairs show their PCIe class. "
    "`nvidia-smi topo -m` on the machine would settle NVLink"
)
#: What NCCL's topology (file or dump) never records and no :class:`~topomap.model.source_facts.Fact`
#: covers: CUDA ordinals, CUDA peer access.
NCCL_UNRECORDED = ("gpus.cuda_ordinal", "pairs.cuda")
#: Nor PHB told from NODE (no host bridges): a NODE pair is recorded PHB (``Source.path_recorded_as``).
NCCL_RECORDED_AS: dict[PathClass, PathClass] = {"NODE": "PHB"}


def nccl_source(kind: SourceKind, origin: str, unknown: list[str], notes: list[str]) -> Source:
    """The Source of a snapshot read from NCCL's topology (its XML or a log's dump): NODE recorded as PHB."""
    return Source(
        kind=kind,
        origin=origin,
        tool=f"topomap {__version__}",
        unknown_fields=unknown,
        path_recorded_as=dict(NCCL_RECORDED_AS),
        notes=notes,
    )


PHB_NOTE = (
    "NCCL's topology joins the host bridges of a CPU into one (drawn as host bridge cpuN): pairs under one "
    "CPU without a common PCI bridge are recorded PHB; nvidia-smi on the same machine may print NODE"
)


@dataclass
class _GpuRec:
    bus: str
    dev: int | None
    numa: int | None
    cpus: str | None
    sm: int | None
    gdr: bool | None
    gen: int | None
    width: int | None
    device_id: str | None = None  # PCI device id "0x2330" (vendor NVIDIA), from <pci device=...>
    links: list[tuple[str, int, str]] = field(default_factory=list)  # target, count, tclass
    amd: bool = False  # an RCCL topology file's AMD GPU (issue 35): <pci vendor="0x1002"> or <gpu gcn=...>
    xgmi: list[tuple[str, int]] = field(default_factory=list)  # RCCL's <xgmi target count>


@dataclass
class _NicRec:
    name: str
    bus: str | None
    dev: int | None
    numa: int | None
    speed_mbit: int | None
    gdr: bool | None
    pci_class: int | None
    vendor: str | None = None  # <pci vendor= device=>: the NIC family (model.facts.nic_family)
    device: str | None = None


def _int(v: str | None, base: int = 10) -> int | None:
    if v is None or v == "":
        return None
    try:
        return int(v, base)
    except ValueError:
        return None


def _bus(el: ET.Element, origin: str) -> str:
    raw = el.get("busid")
    if raw is None:
        raise ImportFailure(f"{origin}: <pci> element without busid")
    parts = parse_bus_id(raw)
    if parts is None:
        raise ImportFailure(f"{origin}: <pci busid={raw!r}> is not a PCI bus id")
    return normalize_bus_id(raw) or raw


def import_nccl_xml(text: str, origin: str) -> Snapshot:
    root = _as_system(parse_xml(text, origin), origin)
    tree = _Tree(origin)
    cpu_model: str | None = None
    for cpu in root.findall("cpu"):
        numa = _int(cpu.get("numaid"))
        aff = cpu.get("affinity")
        cpus = format_cpulist(cpus_from_hex_mask(aff)) if aff else None
        if numa is not None:
            tree.numa_nodes.append(NumaNode(id=numa, cpus=cpus))
        cpu_model = (
            cpu_model
            or " ".join(
                x
                for x in (
                    cpu.get("vendor"),
                    f"family {cpu.get('familyid')}" if cpu.get("familyid") else None,
                    f"model {cpu.get('modelid')}" if cpu.get("modelid") else None,
                )
                if x
            )
            or None
        )
        top = f"cpu{numa if numa is not None else len(tree.numa_nodes)}"
        tree.pci[top] = PciDevice(id=top, kind="host-bridge", numa_node=numa, inferred=True)
        tree.walk(cpu, [top], top, numa, cpus)
    if not tree.gpus and not tree.nics:
        raise ImportFailure(f"{origin}: NCCL topology XML with no GPU and no NIC")
    # NVLink is recorded in NCCL_TOPO_DUMP_FILE dumps (their <cpu> carry host_hash) and in any file
    # with an <nvlink>; vendors' static files (AWS p5: <gpu> without <nvlink> on NVSwitch H100s) do not.
    nvlink_known = root.find(".//nvlink") is not None or any(c.get("host_hash") for c in root.findall("cpu"))
    static = static_file_evidence(root, text)
    snap = _build(origin, tree, cpu_model, nvlink_known, static)
    if not tree.gpus:
        snap.source.notes.append(NICS_ONLY_NOTE)
        snap.source.unknown_fields.append("gpus")
    if root.get("topomap-fragment"):
        snap.source.notes.append(
            f"a <{root.get('topomap-fragment')}> element without <system>: CPUs and NUMA are unknown"
        )
    return snap


#: A comment a vendor's static file carries (aws-ofi-nccl: "Static pre-configured topology for
#: `p4d.24xlarge` platform type ... ingested into NCCL using `NCCL_TOPO_FILE`").
_STATIC_COMMENT = re.compile(r"<!--(?:(?!-->).)*?\b(static|pre-configured|NCCL_TOPO_FILE)\b", re.IGNORECASE | re.DOTALL)


def static_file_evidence(root: ET.Element, text: str) -> tuple[str, ...]:
    """Why this file is a static topology file written by hand (a cloud's ``NCCL_TOPO_FILE``:
    aws-ofi-nccl's p4d/p5 files, Azure's ndv4), not a dump NCCL wrote on a real machine
    (``NCCL_TOPO_DUMP_FILE``, whose ``<cpu>`` carry ``host_hash``): the same PCIe figures on every link,
    bus ids no real device has, devices without PCI ids, GPUs without ``<gpu>``, a comment saying so.
    Empty for a dump, or where nothing says the file is static."""
    cpus = root.findall("cpu")
    if any(c.get("host_hash") for c in cpus):
        return ()
    pcis = root.findall(".//pci")
    found: list[str] = []
    figures = {
        (p.get("link_speed") or "", p.get("link_width") or "") for p in pcis if (p.get("link_speed") or "").strip()
    }
    if len(figures) == 1 and len([p for p in pcis if (p.get("link_speed") or "").strip()]) > 1:
        speed, width = figures.pop()
        found.append(f"the same PCIe figures on every link ({speed}, width {width})")
    virtual = sorted({p.get("busid") or "" for p in pcis if (p.get("busid") or "").lower().startswith("ffff:")})
    if virtual:
        found.append(f"bus ids no real device has ({virtual[0]})")
    devices = [p for p in pcis if (_int(p.get("class"), 16) or 0) >> 16 in (0x02, 0x03)]
    if devices and not any(p.get("vendor") or p.get("device") for p in devices):
        found.append("its devices carry no PCI vendor or device ids")
    gpus = [p for p in devices if (_int(p.get("class"), 16) or 0) >> 16 == 0x03]
    if gpus and not any(p.find("gpu") is not None for p in gpus):
        found.append("its GPUs have no <gpu> element")
    if _STATIC_COMMENT.search(text):
        found.append("its comment says it is a static file")
    return tuple(found)


NICS_ONLY_NOTE = (
    "this NCCL topology file describes NICs only: GPUs are not described (unknown, not absent); "
    "an NCCL_TOPO_DUMP_FILE written by a run with GPUs, or `nvidia-smi topo -m`, describes them"
)


def _as_system(root: ET.Element, origin: str) -> ET.Element:
    """The ``<system>`` root; a file holding only a ``<cpu>``, ``<pci>``, ``<nic>`` or ``<net>`` (a NIC
    list, an excerpt of a dump) is read as if inside one, marked ``topomap-fragment``."""
    if root.tag == "system":
        return root
    if root.tag not in ("cpu", "pci", "nic", "net"):
        raise ImportFailure(f"{origin}: NCCL topology XML has a <system> root, found <{root.tag}>")
    system = ET.Element("system", {"topomap-fragment": root.tag})
    if root.tag == "cpu":
        system.append(root)
        return system
    cpu = ET.SubElement(system, "cpu")
    if root.tag == "net":
        nic = ET.SubElement(cpu, "nic")
        nic.append(root)
    else:
        cpu.append(root)
    return system


@dataclass
class _Tree:
    """What a walk down one file's ``<cpu>`` elements found: GPUs, NICs, the PCI devices and where
    each GPU and NIC sits (its chain of buses from the CPU)."""

    origin: str
    gpus: list[_GpuRec] = field(default_factory=list)
    nics: list[_NicRec] = field(default_factory=list)
    numa_nodes: list[NumaNode] = field(default_factory=list)
    placed: dict[str, Placed] = field(default_factory=dict)  # by bus id
    pci: dict[str, PciDevice] = field(default_factory=dict)

    def walk(self, el: ET.Element, chain: list[str], parent: str, numa: int | None, cpus: str | None) -> None:
        for child in el:
            if child.tag == "pci":
                self._pci(child, chain, parent, numa, cpus)
            elif child.tag == "nic":  # a NIC under the CPU with no PCI element (VMs)
                for k, net in enumerate(child.findall("net")):
                    self.nics.append(_nic(net, None, numa, None, k))

    def _pci(self, el: ET.Element, chain: list[str], parent: str, numa: int | None, cpus: str | None) -> None:
        """One ``<pci>``: a bridge (walked into), a GPU, a NIC, or another device."""
        bus = _bus(el, self.origin)
        cls = _int(el.get("class"), 16)
        gen = pcie_gen_from_speed_text(el.get("link_speed") or "")
        width = _int(el.get("link_width")) or None
        here = [*chain, bus]
        if cls is not None and (cls >> 8) == 0x0604:
            self.pci[bus] = PciDevice(
                id=bus, kind="bridge", parent=parent, numa_node=numa, link_gen=gen, link_width=width
            )
            self.walk(el, here, bus, numa, cpus)
            return
        # RCCL's files (issue 35) class an Instinct GPU 0x1200 (processing accelerator) or 0x0380
        if cls is not None and ((cls >> 16) == 0x03 or ((cls >> 16) == 0x12 and el.find("gpu") is not None)):
            self.gpus.append(self._gpu(el, bus, numa, cpus, gen, width))
            self.pci[bus] = PciDevice(id=bus, kind="gpu", parent=parent, numa_node=numa, link_gen=gen, link_width=width)
            self.placed[bus] = Placed(chain=here, numa=numa)
            return
        if cls is not None and (cls >> 16) == 0x02:
            for k, net in enumerate(el.findall("nic/net") or [None]):
                self.nics.append(_nic(net, bus, numa, cls, k))
                self.nics[-1].vendor, self.nics[-1].device = pci_id(el.get("vendor")), pci_id(el.get("device"))
            self.pci[bus] = PciDevice(id=bus, kind="nic", parent=parent, numa_node=numa, link_gen=gen, link_width=width)
            self.placed[bus] = Placed(chain=here, numa=numa)
            return
        self.pci[bus] = PciDevice(
            id=bus, kind="nvswitch" if cls == 0x068000 else "other", parent=parent, numa_node=numa
        )

    def _gpu(
        self, el: ET.Element, bus: str, numa: int | None, cpus: str | None, gen: int | None, width: int | None
    ) -> _GpuRec:
        """A display-class ``<pci>`` and its ``<gpu>``, with every ``<nvlink>`` under it."""
        g = el.find("gpu")
        vendor = (el.get("vendor") or "").lower()
        dev_id = parse_device_id(el.get("device") or "") if vendor in ("", "0x10de") else None
        rec = _GpuRec(
            bus=bus,
            dev=_int(g.get("dev")) if g is not None else None,
            numa=numa,
            cpus=cpus,
            sm=_int(g.get("sm")) if g is not None else None,
            gdr=(g.get("gdr") == "1") if g is not None and g.get("gdr") else None,
            gen=gen,
            width=width,
            device_id=format_device_id(dev_id) if dev_id else None,
        )
        for nl in g.findall("nvlink") if g is not None else []:
            target = normalize_bus_id(nl.get("target") or "") or ""
            count = _int(nl.get("count")) or 0
            if not 0 <= count <= MAX_LINKS_PER_ELEMENT:
                raise ImportFailure(
                    f"{self.origin}: <nvlink target={nl.get('target')!r} count={count}> under GPU {bus}: "
                    f"at most {MAX_LINKS_PER_ELEMENT} links"
                )
            rec.links.append((target, count, nl.get("tclass") or ""))
        if g is not None and (vendor == "0x1002" or g.get("gcn")):
            rec.amd, rec.sm = True, None  # RCCL writes the CU count as sm=: not a compute capability
            rec.device_id = (el.get("device") or "").lower() or None
            rec.xgmi = [
                (normalize_bus_id(x.get("target") or "") or "", _int(x.get("count")) or 0) for x in g.findall("xgmi")
            ]
        return rec


def _nic(net: ET.Element | None, bus: str | None, numa: int | None, cls: int | None, k: int) -> _NicRec:
    name = net.get("name") if net is not None else None
    return _NicRec(
        name=name or bus or f"net{k}",
        bus=bus,
        dev=_int(net.get("dev")) if net is not None else None,
        numa=numa,
        speed_mbit=_int(net.get("speed")) if net is not None else None,
        gdr=(net.get("gdr") == "1") if net is not None and net.get("gdr") else None,
        pci_class=cls,
    )


def _nic_kind(r: _NicRec) -> NicKind:
    """The link layer where the file implies it: PCI class 0x0207 is an InfiniBand controller,
    0x0200 an Ethernet one (a ConnectX port's class follows its configured link type), so an RDMA
    device there is RoCE. An RDMA name alone (mlx5_*, ib*, bnxt_re*) does not say: unknown."""
    cls = r.pci_class >> 8 if r.pci_class is not None else None
    if cls == 0x0207:
        return "infiniband"
    named = layer_of_name(r.name)  # EFA's names, rdma-core's ibp…/rocep… (model/nic_ids, the one table)
    if named is not None:
        return named
    if is_rdma_name(r.name):
        return "roce" if cls == 0x0200 else "unknown"
    if r.name.startswith(("eth", "ens", "enp")):
        return "ethernet"
    return "unknown"


def _order(recs: list[object], dev_of: list[int | None], bus_of: list[str | None]) -> list[int]:
    """Index order: the source's `dev` numbers where all are given, else PCI bus-id order."""
    if all(d is not None for d in dev_of) and len(set(dev_of)) == len(dev_of):
        return sorted(range(len(recs)), key=lambda i: dev_of[i] or 0)
    return sorted(range(len(recs)), key=lambda i: (parse_bus_id(bus_of[i] or "") or (0xFFFF, 0, 0, 0), i))


def _build(
    origin: str, tree: _Tree, cpu_model: str | None, nvlink_known: bool = True, static: tuple[str, ...] = ()
) -> Snapshot:
    notes = [PHB_NOTE] + ([] if nvlink_known else [NVLINK_ABSENT_NOTE])
    placed: dict[str, Placed] = {}
    gpus, self_bridge = _gpus(tree.gpus, tree.placed, placed, bool(static))
    if static and any(g.pcie is not None for g in gpus):
        notes.append(
            f"a static topology file ({'; '.join(static)}): its PCIe figures are the file's placeholders, not "
            "the machine's, and are never ranked; `nvidia-smi -q -d PCIE` on the machine settles them (LnkSta "
            "in lspci -vv says the same)"
        )
        tree.pci = {
            k: msgspec.structs.replace(d, link_placeholder=True) if d.link_gen or d.link_width else d
            for k, d in tree.pci.items()
        }
    if self_bridge:
        notes.append(
            "an <nvlink> targets its own GPU: an NVLink bridge to a partner the file does not name; "
            "which GPU pairs NVLink joins is unknown (`nvidia-smi topo -m` on the machine settles it)"
        )
    nics = _nics(tree.nics, tree.placed, placed)
    # A self-targeted bridge link cannot join a pair: drop it from the pair count.
    counted = [
        Gpu(
            **{
                **{f: getattr(g, f) for f in g.__struct_fields__},
                "nvlinks": [x for x in g.nvlinks if x.remote_pci_bus_id != g.pci_bus_id],
            }
        )
        for g in gpus
    ]
    pairs = tree_pairs(counted, nics, placed, origin)
    if any(r.amd for r in tree.gpus):  # an RCCL topology file (issue 35): AMD GPUs and their XGMI
        gpus, pairs = rccl_xgmi(gpus, pairs, {r.bus: (r.device_id, r.xgmi) for r in tree.gpus if r.amd})
        notes.append(RCCL_NOTE)
        nvlink_known = True
    unknown = unknown_fields_of(
        "nccl-xml",
        *([] if all(g.name for g in gpus) else ["gpus.name"]),
        *NCCL_UNRECORDED,
        *([] if nvlink_known else ["pairs.nvlink", "gpus.nvlinks"]),
        *(["pairs.nvlink"] if nvlink_known and self_bridge else []),  # bridged, to partners it does not name
    )
    return Snapshot(
        source=nccl_source("nccl-xml", origin, unknown, notes),
        host=Host(cpu_model=cpu_model, sockets=None, numa_nodes=tree.numa_nodes),
        gpus=gpus,
        nics=nics,
        pairs=pairs,
        pci=[tree.pci[k] for k in sorted(tree.pci)],
        nvswitches=nvswitches_from_links(counted),
    )


def _gpus(
    grecs: list[_GpuRec], placed_by_bus: dict[str, Placed], placed: dict[str, Placed], static: bool = False
) -> tuple[list[Gpu], bool]:
    """The GPUs in index order (``placed`` gets each one's place by id), and whether an
    ``<nvlink>`` targets its own GPU (a bridge to a partner the file does not name)."""
    gpus: list[Gpu] = []
    gorder = _order(list(grecs), [g.dev for g in grecs], [g.bus for g in grecs])
    self_bridge = False
    for idx, k in enumerate(gorder):
        r = grecs[k]
        gen = nvlink_generation_of_cc(f"{r.sm // 10}.{r.sm % 10}") if r.sm else None
        links: list[NvLink] = []
        for target, count, tclass in r.links:
            if target == r.bus:
                self_bridge = True  # Azure NC A100 v4: a bridge partner NCCL cannot name
                rtype = "unknown"
            else:
                rtype = "switch" if tclass.lower() == "0x068000" else "gpu" if tclass.startswith("0x03") else "unknown"
            links += [
                NvLink(link=len(links) + n, active=True, generation=gen, remote_type=rtype, remote_pci_bus_id=target)  # type: ignore[arg-type]
                for n in range(count)
            ]
        model = model_from_device_id(r.device_id) if r.device_id else None
        gpus.append(
            Gpu(
                index=idx,
                name=model.name if model else None,
                architecture=model.architecture if model else None,
                pci_device_id=r.device_id,
                derived=["name", "architecture"] if model else [],
                pci_bus_id=r.bus,
                numa_node=r.numa,
                cpu_affinity=r.cpus,
                compute_capability=f"{r.sm // 10}.{r.sm % 10}" if r.sm else None,
                pcie=PcieLink(gen_max=r.gen, width_max=r.width, placeholder=static) if (r.gen or r.width) else None,
                nvlinks=links,
                gdr=r.gdr,
            )
        )
        if r.bus in placed_by_bus:
            placed[f"gpu{idx}"] = placed_by_bus[r.bus]
    return gpus, self_bridge


def _nics(nrecs: list[_NicRec], placed_by_bus: dict[str, Placed], placed: dict[str, Placed]) -> list[Nic]:
    """The NICs in index order; ``placed`` gets each one's place by id (under its CPU when it has no bus)."""
    nics: list[Nic] = []
    norder = _order(list(nrecs), [n.dev for n in nrecs], [n.bus for n in nrecs])
    for idx, k in enumerate(norder):
        n = nrecs[k]
        nics.append(
            Nic(
                index=idx,
                name=n.name,
                kind=_nic_kind(n),
                rdma=True,
                pci_bus_id=n.bus,
                numa_node=n.numa,
                speed_gbit_s=n.speed_mbit / 1000.0 if n.speed_mbit else None,
                gdr=n.gdr,
                pci_vendor_id=n.vendor,
                pci_device_id=n.device,
            )
        )
        if n.bus is not None and n.bus in placed_by_bus:
            placed[f"nic{idx}"] = placed_by_bus[n.bus]
        elif n.numa is not None:
            placed[f"nic{idx}"] = Placed(chain=[f"cpu{n.numa}", f"net:{n.name}"], numa=n.numa)
    return nics
