"""hwloc v2 XML (`lstopo --of xml`) → Snapshot.

Packages and NUMA nodes, the PCI tree under host bridges, GPU OS devices (NVML ``nvmlN`` /
CUDA ``cudaN``), NICs (network and OpenFabrics OS devices), NVSwitches (PCI devices with
subtype ``NVSwitch``) and the ``NVLinkBandwidth`` distance matrix, which hwloc fills with
20000 MB/s per NVLink 1 link and 25000 per later link (formats-and-pitfalls.md §3).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from topomap import __version__
from topomap.base.cpus import cpus_from_hex_mask, format_cpulist
from topomap.base.devices import format_device_id
from topomap.base.errors import ImportFailure
from topomap.base.pciaddr import normalize_bus_id, parse_bus_id
from topomap.importers._tree import (
    Placed,
    gpu_identity,
    nic_kind,
    nvlinks_from_bandwidth,
    parse_xml,
    tree_pairs,
)
from topomap.model.nic_ids import is_rdma_name, pci_id
from topomap.model.nvlinks import nvswitches_from_links
from topomap.model.snapshot import Gpu, Host, Nic, NicKind, NumaNode, NvSwitch, PciDevice, Snapshot, Source

_BRIDGE_PCI = re.compile(r"^([0-9a-fA-F]{4}):\[([0-9a-fA-F]{2})")
_PCI_TYPE_IDS = re.compile(r"^\s*[0-9a-fA-F]{4}\s+\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]")  # "0302 [10de:1db8] ..."


@dataclass
class _Dev:
    obj: ET.Element
    bus: str
    chain: list[str]
    numa: int | None
    cpus: str | None
    osdevs: list[ET.Element] = field(default_factory=list)


def _info(el: ET.Element, name: str) -> str | None:
    for i in el.findall("info"):
        if i.get("name") == name:
            return i.get("value")
    return None


def _numa_of(nodeset: str | None) -> int | None:
    if not nodeset:
        return None
    nodes = cpus_from_hex_mask(nodeset)
    return nodes[0] if len(nodes) == 1 else None


#: Where an hwloc XML fragment begins: an ``<object`` after an optional declaration and comments.
_FRAGMENT_HEAD = re.compile(r"^\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*)*<object\b", re.DOTALL)
_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>", re.DOTALL)
_SIBLINGS = "topomap-siblings"  # marks the stand-in root around sibling subtrees (hwloc 1.x roots have no version)


def _parse(text: str, origin: str) -> ET.Element:
    """The file's root; several sibling ``<object>`` subtrees (how documentation publishes one package's
    I/O) are read inside a stand-in ``<topology>``, through the same defused parser and file-size limit
    (one level more). An excerpt whose elements were left open (lines cut, ``...``) is refused as such."""
    try:
        return parse_xml(text, origin)
    except ImportFailure as err:
        if not _FRAGMENT_HEAD.match(text.lstrip("\ufeff")):
            raise
        if "junk after document element" in str(err):  # sibling subtrees: one element holds them all
            return parse_xml(
                f'<topology {_SIBLINGS}="1">' + _DECLARATION.sub("", text.lstrip("\ufeff"), count=1) + "</topology>",
                origin,
            )
        raise ImportFailure(
            f"{str(err).partition(': XML')[0]}: an hwloc XML excerpt whose <object> elements are not all closed "
            "(lines were left out of it, as documentation trims them: `...`); topomap reads whole subtrees",
            hint="give `lstopo --of xml` whole, or its <object> subtrees with their closing tags "
            "(several side by side are read as one fragment)",
        ) from err


def import_hwloc_xml(text: str, origin: str) -> Snapshot:
    root = _parse(text, origin)
    siblings = root.tag == "topology" and root.get(_SIBLINGS) == "1"
    fragment = root.get("type") if root.tag == "object" else ("object" if siblings else None)
    if root.tag != "topology" and fragment is None:
        raise ImportFailure(f"{origin}: hwloc XML has a <topology> root, found <{root.tag}>")
    tree = _Tree(origin)
    if root.tag == "object":  # one object's subtree (a package's I/O, a PCI device): read inside a stand-in root
        top = ET.Element("topology")
        top.append(root)
        root = top
    tree.walk(root, [FRAGMENT_TOP] if fragment else [], None, None, None)
    gpus, nics, placed = _devices(tree.devs, tree.pci, tree.by_gp, root.get("version") or "2.0")
    if not gpus and not nics:
        raise ImportFailure(f"{origin}: hwloc XML with no GPU and no NIC (was it made with I/O discovery on?)")
    _nvlink_matrix(root, gpus, tree.by_gp, tree.switches, origin)
    nvsw: list[NvSwitch] = nvswitches_from_links(gpus)
    missing = _missing(fragment, tree)
    return Snapshot(
        source=Source(
            kind="hwloc-xml",
            origin=origin,
            tool=f"topomap {__version__}",
            unknown_fields=[
                "gpus.memory_total_bytes",
                "gpus.mig",
                "gpus.fabric",
                "pairs.p2p",
                "pairs.cuda",
                "software",
                *missing[1],
            ],
            notes=[
                f"hwloc {_info(root, 'hwlocVersion') or '?'}; NVLink counts derived from NVLinkBandwidth",
                *missing[0],
            ],
        ),
        host=Host(
            hostname=_info(root, "HostName"),
            cpu_model=tree.cpu_model,
            sockets=tree.packages or None,
            numa_nodes=sorted(tree.numa_nodes, key=lambda n: n.id),
        ),
        gpus=gpus,
        nics=nics,
        pairs=tree_pairs(gpus, nics, placed, origin, numa_known=bool(tree.numa_nodes) and fragment is None),
        pci=[tree.pci[k] for k in sorted(tree.pci)],
        nvswitches=nvsw,
    )


FRAGMENT_TOP = "fragment-top"  # the unknown part above a fragment's root: a common ancestor, not a host bridge


def _missing(fragment: str | None, tree: _Tree) -> tuple[list[str], list[str]]:
    """Notes and unknown fields for what a fragment, or a topology without NUMA nodes, leaves out."""
    notes, unknown = [], []
    if fragment is not None:
        what = "sibling <object> subtrees" if fragment == "object" else f"one <object type={fragment!r}> subtree"
        notes.append(
            f"an hwloc XML fragment ({what}, no <topology>): devices, CPUs and "
            "the host bridges outside it are unknown; pairs with no common bridge in it have no path class"
        )
        unknown += ["host.sockets", "host.cpu_model"]
    if not tree.numa_nodes:
        notes.append(
            "no NUMA node in this file: NUMA locality is unknown, and so is NODE vs SYS for devices under "
            "different host bridges"
        )
        unknown.append("host.numa_nodes")
    return notes, unknown


@dataclass
class _Tree:
    """What a walk down the object tree found: packages, NUMA nodes, the PCI devices, the GPUs and
    NICs with their chain of buses, and the NVSwitches (by gp_index, for the NVLink matrix)."""

    origin: str
    numa_nodes: list[NumaNode] = field(default_factory=list)
    devs: list[_Dev] = field(default_factory=list)
    switches: dict[str, str] = field(default_factory=dict)  # gp_index → bus id
    pci: dict[str, PciDevice] = field(default_factory=dict)
    by_gp: dict[str, tuple[str, ET.Element]] = field(default_factory=dict)
    cpu_model: str | None = None
    packages: int = 0

    def walk(self, el: ET.Element, chain: list[str], numa: int | None, cpus: str | None, parent: str | None) -> None:
        for obj in el.findall("object"):
            t = obj.get("type")
            if t == "Package":
                self.packages += 1
                self.cpu_model = self.cpu_model or _info(obj, "CPUModel")
            if t == "NUMANode":
                mem = obj.get("local_memory")
                self.numa_nodes.append(
                    NumaNode(
                        id=int(obj.get("os_index", "0")),
                        cpus=format_cpulist(cpus_from_hex_mask(obj.get("cpuset") or "")) or "",
                        memory_total_bytes=int(mem) if mem and mem.isdigit() else None,
                    )
                )
                continue
            here_numa = _numa_of(obj.get("nodeset")) if obj.get("nodeset") else numa
            here_cpus = format_cpulist(cpus_from_hex_mask(obj.get("cpuset") or "")) if obj.get("cpuset") else cpus
            if t == "Bridge" and (obj.get("bridge_type") or "").startswith("0-"):
                m = _BRIDGE_PCI.match(obj.get("bridge_pci") or "")
                hb = f"pci{m.group(1).lower()}:{m.group(2).lower()}" if m else f"hostbridge{obj.get('gp_index') or ''}"
                self.pci[hb] = PciDevice(id=hb, kind="host-bridge", numa_node=here_numa)
                self.walk(obj, [hb], here_numa, here_cpus, hb)
            elif t in ("Bridge", "PCIDev"):
                self._pci(obj, chain, here_numa, here_cpus, parent)
            else:
                self.walk(obj, chain, here_numa, here_cpus, parent)

    def _pci(self, obj: ET.Element, chain: list[str], numa: int | None, cpus: str | None, parent: str | None) -> None:
        """One PCI bridge (walked into) or device: an NVSwitch, a GPU or NIC (kept with its OS devices), another."""
        t, gp = obj.get("type"), obj.get("gp_index") or ""
        bus = normalize_bus_id(obj.get("pci_busid") or "")
        if bus is None:
            raise ImportFailure(f"{self.origin}: {t} object gp_index={gp} without a valid pci_busid")
        cls = (obj.get("pci_type") or "")[:4].lower()
        here = [*chain, bus]
        if t == "Bridge":
            self.pci[bus] = PciDevice(id=bus, kind="bridge", parent=parent, numa_node=numa)
            self.walk(obj, here, numa, cpus, bus)
            return
        if obj.get("subtype") == "NVSwitch" or cls == "0680":
            self.switches[gp] = bus
            self.by_gp[f"PCIDev:{gp}"] = ("switch", obj)
            self.pci[bus] = PciDevice(id=bus, kind="nvswitch", parent=parent, numa_node=numa)
            return
        kind = "gpu" if cls.startswith("03") else "nic" if cls.startswith("02") else "other"
        self.pci[bus] = PciDevice(id=bus, kind=kind, parent=parent, numa_node=numa)  # type: ignore[arg-type]
        if kind != "other":
            d = _Dev(obj=obj, bus=bus, chain=here, numa=numa, cpus=cpus)
            d.osdevs = obj.findall("object[@type='OSDev']")
            self.devs.append(d)


def _osdev_is(o: ET.Element, version: str, what: str) -> bool:
    """An OS device's type: hwloc 2 writes an enum (2 network, 3 OpenFabrics), hwloc 3 a bitmask
    (16 network, 32 OpenFabrics); without it, RDMA device names tell."""
    raw = o.get("osdev_type")
    if raw is not None and raw.isdigit():
        t = int(raw)
        if version.startswith(("0.", "1.", "2.")):
            return t == (3 if what == "openfabrics" else 2)
        return bool(t & (32 if what == "openfabrics" else 16))
    name = o.get("name") or ""
    return is_rdma_name(name) == (what == "openfabrics")


def _nic_kind(cls: str, rdma: list[str], net: list[str], fabrics: list[ET.Element]) -> NicKind:
    """The link layer: hwloc's ``PortNLinkLayer`` infos of the RDMA devices, then the shared rules."""
    layers = {
        (i.get("value") or "").lower()
        for o in fabrics
        for i in o.findall("info")
        if "LinkLayer" in (i.get("name") or "")
    }
    return nic_kind(cls if cls == "0207" else "", rdma, net, layers)


def _devices(
    devs: list[_Dev], pci: dict[str, PciDevice], by_gp: dict[str, tuple[str, ET.Element]], version: str
) -> tuple[list[Gpu], list[Nic], dict[str, Placed]]:
    gdevs = [d for d in devs if pci[d.bus].kind == "gpu"]
    ndevs = [d for d in devs if pci[d.bus].kind == "nic"]

    def os_index(d: _Dev) -> tuple[int, tuple[int, int, int, int]]:
        bus = parse_bus_id(d.bus) or (0, 0, 0, 0)
        for prefix in ("nvml", "cuda"):
            for o in d.osdevs:
                name = o.get("name") or ""
                if name.startswith(prefix) and name[len(prefix) :].isdigit():
                    return int(name[len(prefix) :]), bus
        return 1 << 30, bus

    gdevs.sort(key=os_index)
    placed: dict[str, Placed] = {}
    gpus: list[Gpu] = []
    for i, d in enumerate(gdevs):
        model = uuid = None
        for o in d.osdevs:
            model = model or _info(o, "GPUModel")
            uuid = uuid or _info(o, "NVIDIAUUID")
            by_gp[f"OSDev:{o.get('gp_index')}"] = ("gpu", o)
            o.set("topomap_gpu", str(i))
        m = _PCI_TYPE_IDS.match(d.obj.get("pci_type") or "")
        dev_id = format_device_id(int(m.group(2), 16)) if m and m.group(1).lower() == "10de" else None
        name, architecture, derived = gpu_identity(model, dev_id)
        gpus.append(
            Gpu(
                index=i,
                uuid=uuid,
                name=name,
                architecture=architecture,
                pci_device_id=dev_id,
                derived=derived,
                pci_bus_id=d.bus,
                numa_node=d.numa,
                cpu_affinity=d.cpus,
            )
        )
        placed[f"gpu{i}"] = Placed(chain=d.chain, numa=d.numa)
    nics: list[Nic] = []
    ndevs.sort(key=lambda d: parse_bus_id(d.bus) or (0, 0, 0, 0))
    for d in ndevs:
        names = [o.get("name") or "" for o in d.osdevs]
        rdma = [o.get("name") or "" for o in d.osdevs if _osdev_is(o, version, "openfabrics")]
        net = [n for n in names if n not in rdma]
        name = rdma[0] if rdma else net[0] if net else d.bus
        cls = (d.obj.get("pci_type") or "")[:4]
        kind = _nic_kind(cls, rdma, net, [o for o in d.osdevs if o.get("name") in rdma])
        ids = _PCI_TYPE_IDS.match(d.obj.get("pci_type") or "")  # the NIC family (model.facts.nic_family)
        idx = len(nics)
        nics.append(
            Nic(
                index=idx,
                name=name,
                kind=kind,
                rdma=bool(rdma) or cls == "0207",
                pci_bus_id=d.bus,
                numa_node=d.numa,
                netdevs=net,
                pci_vendor_id=pci_id(ids.group(1)) if ids else None,
                pci_device_id=pci_id(ids.group(2)) if ids else None,
            )
        )
        placed[f"nic{idx}"] = Placed(chain=d.chain, numa=d.numa)
    return gpus, nics, placed


def _nvlink_matrix(
    root: ET.Element,
    gpus: list[Gpu],
    by_gp: dict[str, tuple[str, ET.Element]],
    switches: dict[str, str],
    origin: str,
) -> None:
    """The ``NVLinkBandwidth`` distances (MB/s) → NVLink entries per GPU (importers._tree)."""
    for dist in root.findall("distances2hetero") + root.findall("distances2"):
        if dist.get("name") != "NVLinkBandwidth":
            continue
        n = int(dist.get("nbobjs") or "0")
        idx = " ".join(x.text or "" for x in dist.findall("indexes")).split()
        vals = [int(v) for v in " ".join(x.text or "" for x in dist.findall("u64values")).split()]
        if len(idx) != n or len(vals) != n * n:
            raise ImportFailure(
                f"{origin}: NVLinkBandwidth matrix has {len(idx)} indexes and {len(vals)} values for {n} objects"
            )
        ends: list[tuple[str, str] | None] = []
        for a in idx:
            kind, obj = by_gp.get(a, ("", None))
            if obj is not None and kind == "gpu":
                ends.append(("gpu", obj.get("topomap_gpu") or "0"))
            elif obj is not None and kind == "switch":
                ends.append(("switch", switches[obj.get("gp_index") or ""]))
            else:
                ends.append(None)
        nvlinks_from_bandwidth(gpus, ends, vals, origin)
