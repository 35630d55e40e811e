"""hwloc's console text (`lstopo-no-graphics`, `lstopo --of console`, with ``-v``, ``-p``, ``--merge``)
→ Snapshot.

The text is hwloc's object tree, one object per line (a chain of single children joined with
`` + ``), two spaces per level: packages and NUMA nodes, host bridges, PCI bridges and devices, and
the OS devices under them (``CoProc(CUDA) "cuda0"``, ``GPU(NVML) "nvml0"``, ``Net "ib0"``,
``OpenFabrics "mlx5_0"``). Without ``-v`` a line shows no vendor and no bridge bus ids; with it,
``PCI L#3 (busid=0000:3b:00.0 id=10de:2330 class=0302(3D) link=31.51GB/s ...)``. Path classes come
from the tree exactly as the hwloc XML importer derives them (importers._tree).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from topomap import __version__
from topomap.base.cpus import format_cpulist
from topomap.base.devices import format_device_id
from topomap.base.errors import ImportFailure
from topomap.base.pciaddr import normalize_bus_id, parse_bus_id
from topomap.importers._tree import Placed, gpu_identity, nic_kind, nvlinks_from_bandwidth, tree_pairs
from topomap.model.nic_ids import is_rdma_name
from topomap.model.nvlinks import nvswitches_from_links
from topomap.model.snapshot import Gpu, Host, Nic, NumaNode, PciDevice, Snapshot, Source

_BUS = r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F](?:-[0-9a-fA-F]+)?"
_OBJ = re.compile(
    r"^(?P<type>[A-Za-z][A-Za-z0-9_-]*)(?:\((?P<sub>[^)]*)\))?"
    r"(?:\s+(?P<idx>[LP]#\d+))?"
    rf"(?:\s+(?P<bus>{_BUS}|[0-9a-fA-F]{{4}}:[0-9a-fA-F]{{4}}))?"
    r"(?:\s+\((?P<attrs>.*?)\))?"
    r'(?:\s+"(?P<name>[^"]*)")?\s*$'
)
_COLLAPSED = re.compile(r"^(?P<n>\d+) x \{ (?P<obj>.*) \}$")
_ATTR = re.compile(r'([A-Za-z][\w.#]*)=("[^"]*"|\S*)|(\S+)')
_TOP = ("Machine", "System")
_PREAMBLE = re.compile(r"^(?:\S+[$#]\s|\$ |# |assuming |lstopo)")  # a shell prompt, lstopo's own notes
_OLD_BRIDGES = (("Bridge Host->PCI", "HostBridge"), ("Bridge PCI->PCI", "PCIBridge"))
_GPU_CLASSES = ("3D", "VGA", "Display")
_NIC_CLASSES = ("Ethernet", "InfiniBand", "Network", "Fabric")
_NET_KINDS = ("Net", "Network")
_OSDEV_KINDS = ("Net", "Network", "OpenFabrics", "CoProc", "Co-Processor", "GPU", "Block", "DMA", "Memory")
_KB = 1024

UNKNOWN_FIELDS = [
    "gpus.memory_total_bytes",
    "gpus.mig",
    "gpus.fabric",
    "gpus.cuda_ordinal",
    "gpus.pcie",
    "gpus.nvlinks",
    "pairs.nvlink",
    "pairs.p2p",
    "pairs.cuda",
    "nics.speed_gbit_s",
    "software",
]
NVLINK_NOTE = (
    "no NVLinkBandwidth matrix in this lstopo text (`lstopo -v` prints it after the tree): which GPU pairs "
    "NVLink joins is unknown; `lstopo -v` or `nvidia-smi topo -m` on the machine settles it"
)


@dataclass
class _Obj:
    kind: str
    sub: str | None
    pidx: int | None
    bus: str | None
    attrs: dict[str, str]
    plain: list[str]
    name: str | None
    line: int
    count: int = 1
    children: list[_Obj] = field(default_factory=list)


def _parse_obj(text: str, no: int) -> _Obj | None:
    for old, new in _OLD_BRIDGES:
        if text.startswith(old):
            text = new + text[len(old) :]
    count = 1
    c = _COLLAPSED.match(text)
    if c:
        count, text = int(c.group("n")), c.group("obj")
    m = _OBJ.match(text)
    if m is None:
        return None
    attrs: dict[str, str] = {}
    plain: list[str] = []
    pidx = int(m.group("idx")[2:]) if (m.group("idx") or "").startswith("P#") else None
    for a in _ATTR.finditer(m.group("attrs") or ""):
        if a.group(1):
            attrs[a.group(1)] = a.group(2).strip('"')
        elif a.group(3).startswith("P#") and a.group(3)[2:].isdigit():
            pidx = int(a.group(3)[2:])
        else:
            plain.append(a.group(3))
    return _Obj(
        kind=m.group("type"),
        sub=m.group("sub"),
        pidx=pidx,
        bus=m.group("bus"),
        attrs=attrs,
        plain=plain,
        name=m.group("name"),
        line=no,
        count=count,
    )


def _split_chain(body: str) -> list[str]:
    """``L2 L#0 (1024KB) + L1d L#0 (32KB) + Core L#0`` → its objects; `` + `` inside quotes or
    parentheses (a verbose attribute's value) does not split."""
    parts, depth, quoted, start = [], 0, False, 0
    for k, ch in enumerate(body):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "()":
            depth += 1 if ch == "(" else -1
        elif not quoted and depth == 0 and body.startswith(" + ", k):
            parts.append(body[start:k])
            start = k + 3
    parts.append(body[start:])
    return parts


def parse_tree(text: str, origin: str) -> tuple[_Obj, list[str]]:
    """The object tree (its root: Machine) and notes on what was skipped. A line inside the tree that is
    no object is an error naming the line, unless it is the last one (a paste cut mid-line)."""
    lines = text.lstrip("\ufeff").splitlines()
    start = next((k for k, raw in enumerate(lines) if raw.strip().split(" ")[0] in _TOP), None)
    if start is None:
        raise ImportFailure(f"{origin}: no `Machine` line: not lstopo text")
    notes: list[str] = []
    root: _Obj | None = None
    stack: list[tuple[int, _Obj]] = []
    last = max((k for k, raw in enumerate(lines) if raw.strip()), default=start)
    for k in range(start, len(lines)):
        raw = lines[k].rstrip()
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        body = raw.strip()
        if root is not None and indent == 0:
            break  # the tree ended: -v's summary ("depth 0: ..."), distance matrices, another command
        objs = [_parse_obj(part, k + 1) for part in _split_chain(body)]
        if any(o is None for o in objs):
            if k == last:
                notes.append(f"line {k + 1} is cut ({body[:40]!r}): the text ends mid-object")
                break
            raise ImportFailure(f"{origin}:{k + 1}: not an lstopo object line: {body[:60]!r}")
        chain = [o for o in objs if o is not None]
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if root is None:
            root = chain[0]
        elif stack:
            stack[-1][1].children.append(chain[0])
        else:
            break  # a second tree or trailing text at the root's level
        for a, b in itertools.pairwise(chain):
            a.children.append(b)
        stack.append((indent, chain[-1]))
    if root is None:
        raise ImportFailure(f"{origin}:{start + 1}: the `Machine` line is not an lstopo object line")
    return root, notes


@dataclass
class _Walk:
    """What a walk down the tree found (the same facts the hwloc XML importer keeps)."""

    origin: str
    numa_nodes: dict[int, NumaNode] = field(default_factory=dict)
    numa_cpus: dict[int, list[int]] = field(default_factory=dict)
    pci: dict[str, PciDevice] = field(default_factory=dict)
    gpus: list[tuple[_Obj, str, list[str], int | None]] = field(default_factory=list)
    nics: list[tuple[_Obj, str, list[str], int | None]] = field(default_factory=list)
    packages: int = 0
    cores: int = 0
    cpu_model: str | None = None
    links: dict[str, str] = field(default_factory=dict)  # bus → hwloc's link speed text

    def numa_below(self, o: _Obj) -> set[int]:
        """NUMA nodes in a CPU-side subtree (I/O subtrees are skipped)."""
        if o.kind == "NUMANode":
            return {o.pidx if o.pidx is not None else len(self.numa_nodes)}
        if o.kind in ("HostBridge", "PCIBridge", "PCI", *_OSDEV_KINDS):
            return set()
        out: set[int] = set()
        for c in o.children:
            out |= self.numa_below(c)
        return out

    def walk(self, o: _Obj, numa: int | None) -> None:
        """CPU side: packages, cores, NUMA nodes and their PUs; an I/O subtree goes to ``io``."""
        if o.kind in ("Package", "Socket"):
            self.packages += 1
            self.cpu_model = self.cpu_model or o.attrs.get("CPUModel")
        if o.kind == "Core":
            self.cores += 1
        below = self.numa_below(o)
        here = next(iter(below)) if len(below) == 1 else numa if not below else None
        if o.kind == "NUMANode":
            nid = o.pidx if o.pidx is not None else len(self.numa_nodes)
            local = o.attrs.get("local", "")
            mem = int(local[:-2]) * _KB if local.endswith("KB") and local[:-2].isdigit() else None
            self.numa_nodes[nid] = NumaNode(id=nid, memory_total_bytes=mem)
        if o.kind == "PU" and o.pidx is not None and here is not None:
            self.numa_cpus.setdefault(here, []).append(o.pidx)
        for c in o.children:
            if c.kind == "HostBridge":
                self.io(c, [], here if len(below) <= 1 else None, None)
            elif c.kind in ("PCIBridge", "PCI"):  # I/O attached without a host bridge line (--no-bridges)
                self.io(c, [f"hostbridge-l{c.line}"], here if len(below) <= 1 else None, None)
            else:
                self.walk(c, here if len(below) <= 1 else None)

    def io(self, o: _Obj, chain: list[str], numa: int | None, parent: str | None) -> None:
        """One host bridge, PCI bridge or PCI device, and what is under it."""
        bus = normalize_bus_id(o.attrs.get("busid") or o.bus or "") if o.kind != "HostBridge" else None
        if o.kind == "HostBridge":
            m = re.match(r"([0-9a-fA-F]{4}):\[([0-9a-fA-F]{2})", o.attrs.get("buses", ""))
            hb = f"pci{m.group(1).lower()}:{m.group(2).lower()}" if m else f"hostbridge-l{o.line}"
            self.pci[hb] = PciDevice(id=hb, kind="host-bridge", numa_node=numa)
            for c in o.children:
                self.io(c, [hb], numa, hb)
            return
        if o.kind == "PCIBridge":
            bid = bus or f"bridge-l{o.line}"
            self.pci[bid] = PciDevice(id=bid, kind="bridge", parent=parent, numa_node=numa)
            for c in o.children:
                self.io(c, [*chain, bid], numa, bid)
            return
        if o.kind != "PCI" or o.count > 1:
            return  # OS devices are read with their PCI device; collapsed "N x { ... }" are VFs
        if bus is None:
            bus = f"pci-l{o.line}"  # hwloc 1.x prints the vendor:device id, not the bus id
        if "link" in o.attrs:
            self.links[bus] = o.attrs["link"]
        kind = _pci_kind(o)
        self.pci[bus] = PciDevice(id=bus, kind=kind, parent=parent, numa_node=numa)  # type: ignore[arg-type]
        if kind == "gpu":
            self.gpus.append((o, bus, [*chain, bus], numa))
        elif kind == "nic":
            self.nics.append((o, bus, [*chain, bus], numa))


def _ids(o: _Obj) -> tuple[str | None, str | None, str | None]:
    """(class code "0302" or None, vendor "10de" or None, device "2330" or None) where the line shows them."""
    cls = o.attrs.get("class", "")[:4].lower() or None
    ident = o.attrs.get("id") or (o.bus if o.bus and re.fullmatch(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{4}", o.bus) else "")
    vendor, _, device = ident.lower().partition(":")
    return cls, vendor or None, device or None


def _class_name(o: _Obj) -> str:
    """hwloc's class name: ``(3D)`` alone without -v, or inside ``class=0302(3D)`` with it."""
    m = re.search(r"\(([^)]*)\)", o.attrs.get("class", ""))
    return m.group(1) if m else (o.plain[0] if o.plain else "")


def _nvidia_osdev(o: _Obj) -> bool:
    for c in o.children:
        name = c.name or ""
        if re.fullmatch(r"(cuda|nvml)\d+", name) or (c.sub or "") in ("CUDA", "NVML"):
            return True
        if c.attrs.get("Backend") in ("CUDA", "NVML"):
            return True
    return False


def _pci_kind(o: _Obj) -> str:
    """gpu, nic, nvswitch or other. Without -v the vendor is not shown: a 3D controller, or a display
    controller with a CUDA/NVML OS device, is a GPU; a VGA one alone may be a server's BMC."""
    cls, vendor, _ = _ids(o)
    name = _class_name(o)
    if o.sub == "NVSwitch" or (cls == "0680" and vendor == "10de"):
        return "nvswitch"
    display = (cls or "").startswith("03") or name in _GPU_CLASSES
    if display and vendor not in (None, "10de"):
        return "other"
    if display and (vendor == "10de" or _nvidia_osdev(o) or name == "3D" or cls == "0302"):
        return "gpu"
    net = any(c.kind in (*_NET_KINDS, "OpenFabrics") for c in o.children)
    if (cls or "").startswith("02") or cls == "0c06" or name in _NIC_CLASSES or net:
        return "nic"
    return "other"


def import_lstopo(text: str, origin: str) -> Snapshot:
    root, notes = parse_tree(text, origin)
    w = _Walk(origin)
    w.walk(root, None)
    if not w.gpus and not w.nics:
        raise ImportFailure(
            f"{origin}: lstopo text with no GPU and no NIC",
            hint="was it cut before the I/O part, or made with --no-io? `lstopo-no-graphics -v` shows PCI devices",
        )
    gpus, placed, names = _gpus(w)
    nics = _nics(w, placed)
    for n in w.numa_nodes.values():
        n.cpus = format_cpulist(sorted(w.numa_cpus.get(n.id, []))) or None
    matrix = _nvlink_matrix(text, gpus, names, w, origin)
    notes += _notes(w, gpus, matrix)
    unknown = [
        *(f for f in UNKNOWN_FIELDS if not (matrix and f in ("pairs.nvlink", "gpus.nvlinks"))),
        *([] if all(g.name for g in gpus) else ["gpus.name"]),
    ]
    if not w.numa_nodes:
        unknown.append("host.numa_nodes")
    return Snapshot(
        source=Source(kind="lstopo", origin=origin, tool=f"topomap {__version__}", unknown_fields=unknown, notes=notes),
        host=Host(
            hostname=root.attrs.get("HostName"),
            cpu_model=w.cpu_model,
            sockets=w.packages or None,
            numa_nodes=[w.numa_nodes[k] for k in sorted(w.numa_nodes)],
        ),
        gpus=gpus,
        nics=nics,
        pairs=tree_pairs(gpus, nics, placed, origin, numa_known=False),
        pci=[w.pci[k] for k in sorted(w.pci)],
        nvswitches=nvswitches_from_links(gpus),
    )


_MATRIX = re.compile(r"^Relative bandwidth matrix \(name NVLinkBandwidth\b")


def _nvlink_matrix(text: str, gpus: list[Gpu], names: dict[str, int], w: _Walk, origin: str) -> bool:
    """hwloc's NVLinkBandwidth matrix, which `lstopo -v` prints after the tree (MB/s, rows and columns
    named by OS device, ``nvml3``, or PCI bus id, an NVSwitch) → NVLink entries. False when absent or cut."""
    lines = text.splitlines()
    at = next((k for k, line in enumerate(lines) if _MATRIX.match(line.strip())), None)
    if at is None or at + 1 >= len(lines) or lines[at + 1].split()[:1] != ["index"]:
        return False
    cols = lines[at + 1].split()[1:]
    vals: list[int] = []
    for k, line in enumerate(lines[at + 2 : at + 2 + len(cols)], at + 3):
        row = line.split()
        if len(row) != len(cols) + 1 or row[0] != cols[len(vals) // len(cols)]:
            return False  # cut: NVLink stays unknown
        if not all(v.isdigit() for v in row[1:]):
            raise ImportFailure(f"{origin}:{k}: NVLinkBandwidth row {row[0]!r} has a value that is no number")
        vals += [int(v) for v in row[1:]]
    if len(vals) != len(cols) ** 2:
        return False
    switches = {bus for bus, d in w.pci.items() if d.kind == "nvswitch"}
    ends: list[tuple[str, str] | None] = []
    for name in cols:
        bus = normalize_bus_id(name)
        if name in names:
            ends.append(("gpu", str(names[name])))
        elif bus in switches:
            ends.append(("switch", bus))
        else:
            ends.append(None)
    nvlinks_from_bandwidth(gpus, ends, vals, origin)
    return True


def _gpu_order(item: tuple[_Obj, str, list[str], int | None]) -> tuple[int, tuple[int, int, int, int]]:
    """NVML index, else CUDA index (as hwloc names its OS devices), else bus order."""
    o, bus = item[0], item[1]
    for prefix in ("nvml", "cuda"):
        for c in o.children:
            name = c.name or ""
            if name.startswith(prefix) and name[len(prefix) :].isdigit():
                return int(name[len(prefix) :]), parse_bus_id(bus) or (0, 0, 0, 0)
    return 1 << 30, parse_bus_id(bus) or (0xFFFF, 0, 0, 0)


def _gpus(w: _Walk) -> tuple[list[Gpu], dict[str, Placed], dict[str, int]]:
    """The GPUs, where each sits, and each OS device name (``nvml0``, ``cuda0``) → GPU index."""
    placed: dict[str, Placed] = {}
    names: dict[str, int] = {}
    gpus: list[Gpu] = []
    keys = [_gpu_order(d) for d in w.gpus]
    if any(k[0] == 1 << 30 for k in keys):  # not every GPU has an NVML/CUDA name: bus order for all
        keys = [(0, k[1]) for k in keys]
    order = sorted(range(len(w.gpus)), key=lambda k: keys[k])
    for i, (o, bus, chain, numa) in enumerate(w.gpus[k] for k in order):
        _, vendor, device = _ids(o)
        dev_id = format_device_id(int(device, 16)) if device and vendor == "10de" else None
        model = next((c.attrs["GPUModel"] for c in o.children if "GPUModel" in c.attrs), None)
        uuid = next((c.attrs["NVIDIAUUID"] for c in o.children if "NVIDIAUUID" in c.attrs), None)
        name, architecture, derived = gpu_identity(model, dev_id)
        cpus = w.numa_cpus.get(numa) if numa is not None else None
        gpus.append(
            Gpu(
                index=i,
                uuid=uuid,
                name=name,
                architecture=architecture,
                pci_device_id=dev_id,
                derived=derived,
                pci_bus_id=bus if parse_bus_id(bus) else None,
                numa_node=numa,
                cpu_affinity=format_cpulist(sorted(cpus)) if cpus else None,
            )
        )
        placed[f"gpu{i}"] = Placed(chain=chain, numa=numa)
        names.update((c.name, i) for c in o.children if c.name)
    return gpus, placed, names


def _nics(w: _Walk, placed: dict[str, Placed]) -> list[Nic]:
    nics: list[Nic] = []
    for o, bus, chain, numa in sorted(w.nics, key=lambda d: parse_bus_id(d[1]) or (0xFFFF, 0, 0, 0)):
        rdma = [c.name or "" for c in o.children if c.kind == "OpenFabrics"]
        net = [c.name or "" for c in o.children if c.kind in _NET_KINDS and c.name]
        rdma += [n for n in net if is_rdma_name(n)]  # a name hwloc 1.x listed as Net
        net = [n for n in net if n not in rdma]
        layers = {v.lower() for c in o.children for k, v in c.attrs.items() if "LinkLayer" in k}
        cls, _, _ = _ids(o)
        ib = _class_name(o) == "InfiniBand"
        idx = len(nics)
        nics.append(
            Nic(
                index=idx,
                name=rdma[0] if rdma else net[0] if net else bus,
                kind=nic_kind("0207" if ib else cls or "", rdma, net, layers),
                rdma=bool(rdma) or ib or cls in ("0207", "0c06"),
                pci_bus_id=bus if parse_bus_id(bus) else None,
                numa_node=numa,
                netdevs=net,
            )
        )
        placed[f"nic{idx}"] = Placed(chain=chain, numa=numa)
    return nics


def _notes(w: _Walk, gpus: list[Gpu], matrix: bool) -> list[str]:
    verbose = any("busid" in d[0].attrs for d in w.gpus + w.nics)
    out = [
        f"lstopo text{' (-v)' if verbose else ''}: {w.packages} package(s), {w.cores} core(s)",
        "NVLink counts derived from hwloc's NVLinkBandwidth matrix (25000 MB/s per link, 20000 for NVLink 1)"
        if matrix
        else NVLINK_NOTE,
    ]
    if not verbose and any(g.name is None for g in gpus):
        out.append(
            "lstopo without -v shows no PCI vendor or device ids: 3D controllers and display controllers "
            "with a CUDA/NVML device are taken as GPUs, their model is unknown (`lstopo -v` shows the ids)"
        )
    if not w.numa_nodes:
        out.append(
            "no NUMA node in this text: NUMA locality is unknown, and so is NODE vs SYS for devices under "
            "different host bridges"
        )
    speeds: dict[str, list[str]] = {}
    for _, bus, _, _ in w.gpus:
        if bus in w.links:
            speeds.setdefault(w.links[bus], []).append(bus)
    if speeds:
        out.append(
            "hwloc's GPU PCIe link speed (generation × width, one direction; the two are not separable): "
            + "; ".join(f"{v} for {len(b)} GPU(s) ({b[0]}{' …' if len(b) > 1 else ''})" for v, b in speeds.items())
        )
    return out
