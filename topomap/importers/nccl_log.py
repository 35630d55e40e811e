"""An NCCL INFO log's topology dump (``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=GRAPH``) → Snapshot: NCCL's
own view of the machine, VMs' emulated PCI trees included.

The dump (NCCL's ``ncclTopoPrint``, 2.5 and later) is a tree printed one node per line::

    host:pid:tid [dev] NCCL INFO === System : maxBw 48.0 totalBw 370.8 ===
    host:pid:tid [dev] NCCL INFO CPU/0-0 (1/2/-1)
    host:pid:tid [dev] NCCL INFO + PCI[0.2] - PCI/0-65000 (104c823200000000)
    host:pid:tid [dev] NCCL INFO              + PCI[48.0] - GPU/0-68000 (8)
    host:pid:tid [dev] NCCL INFO                            + NVL[370.8] - NVS/0-0
    host:pid:tid [dev] NCCL INFO              + PCI[48.0] - NIC/0-67000
    host:pid:tid [dev] NCCL INFO                            + NET[50.0] - NET/0-c (0/d4f9.../1/50.000000)

Bus ids are NCCL's integers in hex (``4e000`` = 0000:4e:00.0; ``0-`` is the system id of 2.19 and
later), bandwidths GB/s. Every process prints its own dump, lines of several processes interleave,
and launchers prefix lines (``[1,0]<stdout>:``, ``[rank0]:``): lines are grouped by host, pid and
thread, and the first host's first dump is read. A dump cut short is read as far as it goes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from topomap.base.errors import ImportFailure
from topomap.base.pciaddr import parse_bus_id
from topomap.importers._tree import Placed, tree_pairs
from topomap.importers.nccl_xml import NCCL_UNRECORDED, PHB_NOTE, nccl_source
from topomap.model.nvlinks import nvswitches_from_links
from topomap.model.snapshot import Gpu, Host, Nic, NumaNode, NvLink, PciDevice, Snapshot
from topomap.model.source_facts import unknown_fields_of

#: ``host:pid:tid [dev] NCCL INFO message`` (a launcher prefix may stand before the host); nccl/logread
#: reads the same lines for their channels.
#: ``host:pid:tid [dev] `` before NCCL's words. The host group starts where a name starts (the
#: look-behind): searched from every position of a long run of name characters (progress dots, a hex
#: blob) it would be quadratic.
LINE_HEAD = r"(?<![A-Za-z0-9_.<>\-])(?P<host>[A-Za-z0-9_.<>\-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
INFO_LINE = re.compile(LINE_HEAD + r"NCCL INFO (?P<msg>.*)$")
_SYSTEM = re.compile(r"^=== System : max(?:Bw|Width) ")
_END = re.compile(r"^=+\s*$")
#: The dump's CPU line, ``CPU/0-0 (1/2/-1)``: NCCL's arch/vendor/model numbers (none before 2.6);
#: nccl/logread asks it for the CPU kind.
CPU_LINE = re.compile(r"^CPU/(?P<id>[0-9A-Fa-f-]+)(?: \((?P<arch>-?\d+)/(?P<vendor>-?\d+)/(?P<model>-?\d+)\))?\s*$")
#: A line of the dump's tree, ``+ PCI[48.0] - GPU/0-68000 (8)`` (a GPU's ``extra`` is its rank); nccl/logread
#: reads the GPUs' ranks with it.
TREE_LINK = re.compile(
    r"^(?P<ind> *)\+ (?P<lt>[A-Z0-9]+)\[(?P<bw>[0-9.]+)\] - (?P<nt>[A-Z]+)/(?P<nid>[0-9A-Fa-f-]+)"
    r"(?: \((?P<extra>[^)]*)\))?\s*$"
)
# NCCL's per-link NVLink bandwidth by GPU generation (src/graph/topo.h: SM60 18.0, SM70/SM80 20.0,
# SM86 12.0, SM90 20.6, SM100 40.1 GB/s); an NVL line prints links x rate.
_NVLINK_RATES = {18.0: 1, 20.0: None, 12.0: 3, 20.6: 4, 40.1: 5}
MAX_LINKS = 18
#: NCCL's CPU vendor numbers (src/include/graph.h); nccl/logread's CPU kinds are these names in lower case.
CPU_VENDORS = {1: "Intel", 2: "AMD", 3: "Zhaoxin"}


@dataclass
class _Node:
    kind: str  # CPU, PCI, GPU, NIC, NET, NVS
    ident: str
    extra: str | None
    line: int
    bw: float | None = None  # the link from its parent, GB/s
    children: list[_Node] = field(default_factory=list)


@dataclass
class _Dump:
    key: tuple[str, str, str]  # host, pid, tid
    start: int
    header: bool
    roots: list[_Node] = field(default_factory=list)
    ended: bool = False
    cut: str | None = None
    last: int = 0


def _bus_digits(ident: str) -> str:
    """NCCL's bus id without the system id that 2.19 and later put before it (``0-4e000`` → ``4e000``)."""
    return ident.split("-")[-1]


def short_bus(text: str) -> str:
    """NCCL's bus id (``0-4e000``, ``4E000``, ``101c0``) in one spelling: lower case, no system prefix."""
    return _bus_digits(text).lower().lstrip("0") or "0"


def nccl_bus(ident: str) -> str | None:
    """NCCL's integer bus id (``0-4e000``, ``4E000``, ``101c0``) as ``0000:4e:00.0``; None if it is not one."""
    try:
        v = int(_bus_digits(ident), 16)
    except ValueError:
        return None
    dom, bus, dev, fn = v >> 20, (v >> 12) & 0xFF, (v >> 4) & 0xFF, v & 0xF
    if dev > 0x1F or fn > 7 or dom > 0xFFFF:
        return None
    return f"{dom:04x}:{bus:02x}:{dev:02x}.{fn}"


def unended(text: str, no: int, count: int) -> bool:
    """Line ``no`` of ``count`` is the log's last and has no line end: the log was cut while written
    (a tree line here, a channel line in nccl/logread, may be cut short)."""
    return no == count and not text.endswith(("\n", "\r"))


def _lines(text: str) -> list[tuple[int, tuple[str, str, str], str]]:
    """(line number, (host, pid, tid), message with its indentation) of every NCCL INFO line. A line
    printed twice in a row by one thread (a log pasted or teed twice) counts once; a last line with no
    line end inside a dump (the log cut while written: ``GPU/85`` may be ``GPU/85000``) is dropped."""
    out: list[tuple[int, tuple[str, str, str], str]] = []
    last: dict[tuple[str, str, str], str] = {}
    raws = text.splitlines()
    for no, raw in enumerate(raws, 1):
        m = INFO_LINE.search(raw.rstrip())
        if not m:
            continue
        key, msg = (m.group("host"), m.group("pid"), m.group("tid")), m.group("msg")
        if last.get(key) == msg:
            continue
        last[key] = msg
        if unended(text, no, len(raws)) and _TREE_LINE.match(msg.strip()):
            continue
        out.append((no, key, msg))
    return out


#: a line of the dump's tree or of its path rows (not a header, not a channel line)
_TREE_LINE = re.compile(r"^(?:\+ |[A-Z]{3}/)")


def read_dumps(text: str, origin: str) -> list[_Dump]:
    """Every topology dump in the log, per host, pid and thread, in the order they start."""
    open_: dict[tuple[str, str, str], _Dump] = {}
    stacks: dict[tuple[str, str, str], list[tuple[int, _Node]]] = {}
    dumps: list[_Dump] = []
    for no, key, msg in _lines(text):
        d = open_.get(key)
        if _SYSTEM.match(msg.strip()):
            d = open_[key] = _Dump(key, no, header=True)
            stacks[key] = []
            dumps.append(d)
            continue
        cpu = CPU_LINE.match(msg.strip()) if not msg.startswith(" ") else None
        if cpu and d is None:  # a dump whose header was cut
            d = open_[key] = _Dump(key, no, header=False)
            stacks[key] = []
            dumps.append(d)
        if d is None:
            continue
        if _END.match(msg.strip()):
            d.ended, d.last = True, no
            del open_[key]
            continue
        if cpu:
            node = _Node("CPU", cpu.group("id"), cpu.group("vendor"), no)
            d.roots.append(node)
            stacks[key] = [(-1, node)]
            d.last = no
            continue
        link = TREE_LINK.match(msg)
        if link is None:
            if msg.lstrip().startswith("+"):
                d.cut = f"line {no} is cut or not understood ({msg.strip()[:50]!r})"
            del open_[key]  # the dump ended (another message from this thread)
            continue
        _place(d, stacks[key], link, no, origin)
    return dumps


def _place(d: _Dump, stack: list[tuple[int, _Node]], link: re.Match[str], no: int, origin: str) -> None:
    ind = len(link.group("ind"))
    node = _Node(link.group("nt"), link.group("nid"), link.group("extra"), no, float(link.group("bw")))
    while stack and stack[-1][0] >= ind:
        stack.pop()
    if not stack:
        raise ImportFailure(f"{origin}:{no}: topology dump line with no CPU above it")
    parent = stack[-1][1]
    if link.group("lt") == "SYS" or (node.kind == "GPU" and parent.kind == "GPU"):
        node.kind = "SYS" if link.group("lt") == "SYS" else "PEER"  # a link to a node printed elsewhere
    parent.children.append(node)
    stack.append((ind, node))
    d.last = no


@dataclass
class _Found:
    gpus: list[tuple[_Node, str, list[str], int | None]] = field(default_factory=list)
    nics: list[tuple[_Node, str | None, list[str], int | None]] = field(default_factory=list)
    pci: dict[str, PciDevice] = field(default_factory=dict)
    numa: list[NumaNode] = field(default_factory=list)
    vendors: set[str] = field(default_factory=set)
    slow_links: list[str] = field(default_factory=list)


def _walk(node: _Node, chain: list[str], parent: str, numa: int | None, f: _Found, origin: str) -> None:
    for c in node.children:
        bus = nccl_bus(c.ident)
        if c.kind in ("PCI", "GPU", "NIC") and bus is None:
            raise ImportFailure(f"{origin}:{c.line}: {c.kind}/{c.ident} is not an NCCL bus id")
        if c.kind == "PCI" and bus:
            f.pci[bus] = PciDevice(id=bus, kind="bridge", parent=parent, numa_node=numa)
            if c.bw is not None and c.bw < 1.0:
                f.slow_links.append(f"{bus} {c.bw:g} GB/s")
            _walk(c, [*chain, bus], bus, numa, f, origin)
        elif c.kind == "GPU" and bus:
            f.pci[bus] = PciDevice(id=bus, kind="gpu", parent=parent, numa_node=numa)
            f.gpus.append((c, bus, [*chain, bus], numa))
        elif c.kind == "NIC" and bus:
            f.pci[bus] = PciDevice(id=bus, kind="nic", parent=parent, numa_node=numa)
            for net in c.children or [_Node("NIC", c.ident, None, c.line)]:
                f.nics.append((net, bus, [*chain, bus], numa))
        elif c.kind == "NET":  # a network device with no PCI place (VMs, plugins)
            f.nics.append((c, None, [*chain, f"net:{c.ident}"], numa))


def _holds_device(node: _Node) -> bool:
    return node.kind in ("GPU", "NIC", "NET") or any(_holds_device(c) for c in node.children)


@dataclass(frozen=True)
class LogDump:
    """A log's topology dump as a snapshot, and ``gaps``: what of it the importer could not read (its
    cut start or end, the dumps of other processes and hosts), each also one of the snapshot's notes."""

    snapshot: Snapshot
    gaps: tuple[str, ...] = ()


def import_nccl_log(text: str, origin: str) -> Snapshot:
    """The log's topology dump as a snapshot (:func:`read_nccl_log_dump`)."""
    return read_nccl_log_dump(text, origin).snapshot


def read_nccl_log_dump(text: str, origin: str) -> LogDump:
    """The log's first topology dump that holds a device → a snapshot, with what it does not cover."""
    dumps = [d for d in read_dumps(text, origin) if d.roots]
    if not dumps:
        raise ImportFailure(
            f"{origin}: no NCCL topology dump ('=== System : maxBw' and 'CPU/...' lines) in this log",
            hint="run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH and keep the lines after '=== System'",
        )
    # the first dump that holds a device: one cut right after its CPU line does not hide the next
    d = next((x for x in dumps if any(_holds_device(r) for r in x.roots)), dumps[0])
    f = _Found()
    for cpu in d.roots:
        last = cpu.ident.split("-")[-1]
        numa = int(last, 16) if len(last) <= 4 else None  # CPU/FFFFFFFFFFFFFFFF: NCCL 2.5, locality unknown
        top = f"cpu{numa if numa is not None else len(f.numa)}"
        if top in f.pci:
            continue  # the same CPU printed twice: a second dump's lines in one stream
        if numa is not None:
            f.numa.append(NumaNode(id=numa))
        if cpu.extra and cpu.extra.lstrip("-").isdigit():
            f.vendors.add(CPU_VENDORS.get(int(cpu.extra), f"vendor {cpu.extra}"))
        f.pci[top] = PciDevice(id=top, kind="host-bridge", numa_node=numa, inferred=True)
        _walk(cpu, [top], top, numa, f, origin)
    if not f.gpus and not f.nics:
        raise ImportFailure(f"{origin}:{d.start}: NCCL topology dump with no GPU and no NIC")
    placed: dict[str, Placed] = {}
    gpus, nv_notes, nv_unsure = _gpus(f, placed)
    nics = _nics(f, placed)
    notes = [f"NCCL topology dump of {d.key[0]} (pid {d.key[1]}), log line {d.start}", PHB_NOTE, *nv_notes]
    gaps = _dump_gaps(d, dumps)
    notes += _dump_notes(gaps, f)
    unknown = unknown_fields_of(
        "nccl-log", *NCCL_UNRECORDED, *(["pairs.nvlink", "gpus.nvlinks"] if nv_unsure or _cut_at_gpu(d) else [])
    )
    snapshot = Snapshot(
        source=nccl_source("nccl-log", origin, unknown, notes),
        host=Host(hostname=d.key[0], cpu_model=" / ".join(sorted(f.vendors)) or None, numa_nodes=f.numa),
        gpus=gpus,
        nics=nics,
        pairs=tree_pairs(gpus, nics, placed, origin),
        pci=[f.pci[k] for k in sorted(f.pci)],
        nvswitches=nvswitches_from_links(gpus),
    )
    return LogDump(snapshot, tuple(gaps))


def _cut_at_gpu(d: _Dump) -> bool:
    """The dump ends on a GPU line: its NVLink lines, if it had any, were cut."""
    if d.ended or not d.roots:
        return False
    node = d.roots[-1]
    while node.children:
        node = node.children[-1]
    return node.kind == "GPU"


def _links(bw: float) -> tuple[int, int | None, float] | None:
    """(link count, NVLink generation or None, per-link GB/s) when exactly one of NCCL's per-link rates
    divides the bundle's bandwidth into a plausible count; None when none or several do."""
    fits = [
        (round(bw / rate), gen, rate)
        for rate, gen in _NVLINK_RATES.items()
        if 1 <= round(bw / rate) <= MAX_LINKS and abs(bw / rate - round(bw / rate)) < 0.01
    ]
    return fits[0] if len(fits) == 1 else None


def _gpus(f: _Found, placed: dict[str, Placed]) -> tuple[list[Gpu], list[str], bool]:
    """The GPUs in bus order, with NVLink bundles where the count follows from NCCL's rates."""
    order = sorted(f.gpus, key=lambda g: parse_bus_id(g[1]) or (0xFFFF, 0, 0, 0))
    unsure: list[str] = []
    gpus: list[Gpu] = []
    for i, (node, bus, chain, numa) in enumerate(order):
        links: list[NvLink] = []
        for c in node.children:
            if c.bw is None or c.kind not in ("NVS", "PEER"):
                continue
            fit = _links(c.bw)
            if fit is None:
                unsure.append(f"{bus} NVL[{c.bw:g}]")
                continue
            n, gen, rate = fit
            remote = None if c.kind == "NVS" else nccl_bus(c.ident)
            links += [
                NvLink(
                    link=len(links) + k,
                    active=True,
                    generation=gen,
                    remote_type="switch" if c.kind == "NVS" else "gpu",
                    remote_pci_bus_id=remote,
                    speed_gbps=rate,
                )
                for k in range(n)
            ]
        gpus.append(Gpu(index=i, pci_bus_id=bus, numa_node=numa, nvlinks=links, derived=["nvlinks"] if links else []))
        placed[f"gpu{i}"] = Placed(chain=chain, numa=numa)
    notes = []
    if any(g.nvlinks for g in gpus):
        notes.append(
            "NVLink counts derived from NCCL's NVL bandwidth (links x NCCL's per-link rate for the GPU generation)"
        )
    if unsure:
        notes.append(
            "NVLink bandwidth that no single NCCL per-link rate divides ("
            + ", ".join(unsure[:4])
            + "): link counts unknown; `nvidia-smi topo -m` on the machine settles them"
        )
    return gpus, notes, bool(unsure)


def net_dev(ident: str) -> int | None:
    """NCCL's network device number from a dump's NET id: hex, after the system id of 2.19 and later
    (``0-e`` → 14; ``E`` in 2.5's ``%lX``); None where it is not a number."""
    try:
        return int(ident.split("-")[-1], 16)
    except ValueError:
        return None


def _nics(f: _Found, placed: dict[str, Placed]) -> list[Nic]:
    """NCCL's network devices (``NET/<dev>``: NCCL names no device), in NCCL's device order. The dump
    prints a NET's id in hex (topo.cc ``%lx-%lx``: ``NET/0-e``), a channel line its device in decimal
    (net.cc ``NET/%s/%d``: ``NET/IB/14``): named here as the channel lines print it (``NET/14``)."""

    def dev(item: tuple[_Node, str | None, list[str], int | None]) -> int:
        number = net_dev(item[0].ident)
        return number if number is not None else 1 << 30

    nics: list[Nic] = []
    for node, bus, chain, numa in sorted(f.nics, key=dev):
        idx = len(nics)
        number = net_dev(node.ident)
        shown = str(number) if number is not None else node.ident.split("-")[-1]
        nics.append(
            Nic(
                index=idx,
                name=f"NET/{shown}" if node.kind == "NET" else f"NIC/{node.ident}",
                rdma=True,
                pci_bus_id=bus,
                numa_node=numa,
                speed_gbit_s=node.bw * 8 if node.kind == "NET" and node.bw else None,
            )
        )
        placed[f"nic{idx}"] = Placed(chain=chain, numa=numa)
    return nics


def _dump_notes(gaps: list[str], f: _Found) -> list[str]:
    """What the dump does not cover: what NCCL lists, its ``gaps`` (:func:`_dump_gaps`), emulated links."""
    out = [
        "NCCL lists the GPUs its process could see (CUDA_VISIBLE_DEVICES) and the NICs it would use; "
        "GPU models are not in the dump",
        *gaps,
    ]
    if f.slow_links:
        out.append(
            "PCI links NCCL rates under 1 GB/s ("
            + ", ".join(f.slow_links[:3])
            + "): an emulated (VM) bridge, as NCCL sees it; the real tree is hidden by the hypervisor"
        )
    return out


def _dump_gaps(d: _Dump, dumps: list[_Dump]) -> list[str]:
    """What of the log the dump ``d`` leaves unread: its cut start or end, other processes' and hosts' dumps."""
    out: list[str] = []
    if not d.header:
        out.append(
            f"the dump's start is cut (no '=== System' line before log line {d.start}): "
            "CPUs and devices before it are missing"
        )
    if d.cut:
        out.append(f"the dump is cut: {d.cut}; what follows it is missing")
    elif not d.ended:
        out.append(f"the dump is cut after log line {d.last} (no closing '====' line): devices after it are missing")
    others = [x for x in dumps[1:] if x.key[0] == d.key[0]]
    hosts = sorted({x.key[0] for x in dumps} - {d.key[0]})
    if others:
        out.append(f"{len(others)} more dump(s) of the same host (other processes) not read")
    if hosts:
        out.append(f"dumps of other hosts not read ({', '.join(hosts[:4])}): import one host per snapshot")
    return out
