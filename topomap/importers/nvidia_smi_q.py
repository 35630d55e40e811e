"""``nvidia-smi -q`` (``-a``) text: per-GPU identity, PCI device id, memory and PCIe link.

The report is indented ``key : value`` lines under section headers; one block per GPU, headed
``GPU 00000000:DB:00.0``, in nvidia-smi's own index order. Read here: product name and
architecture, UUID, PCI bus id and device id (``0x233010DE``: device 2330, vendor 10de), total
framebuffer memory (MiB), PCIe generation and width (maximum and current), persistence mode, MIG
mode, the NVLink fabric registration (section Fabric: State, Status, CliqueId, ClusterUUID, Health
Summary), and the driver and CUDA versions and the ``Attached GPUs`` count at the top.

``nvidia-smi -q -i 0`` prints one block under ``Attached GPUs : 8``: the blocks are then some GPUs
of the host, not all, so the GPU count is unknown (``gpus.count``) unless another output in the
same file lists every GPU; blocks join the file's GPUs by UUID or bus id where it names them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import msgspec

from topomap.base.devices import format_device_id, parse_device_id
from topomap.base.pciaddr import normalize_bus_id
from topomap.model.snapshot import Fabric, FabricState, Gpu, Mig, PcieLink, Snapshot, Software, SourceFormat
from topomap.model.source_facts import Fact, source_facts

_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
MAX_DEPTH = 16  # nvidia-smi -q nests sections about four deep


def _key_value(line: str) -> tuple[str, str] | None:
    """``Key   : value`` → (key, value): the key ends at the first colon, which a space follows (a
    string scan, not a regular expression: a 50 KB line of spaces took minutes to match)."""
    colon = line.find(":")
    if colon < 0 or colon + 1 >= len(line) or not line[colon + 1].isspace():
        return None
    return line[:colon].strip(), line[colon + 2 :]


MAX_GPUS = 4096
_ASKED = re.compile(r"nvidia-smi\s+(?:\S+\s+){0,4}?(?:-i|--id)[= ]?(\d{1,4})(?!\S)")


@dataclass
class QGpu:
    """What one ``GPU …`` block says; None where it says N/A or nothing."""

    bus_id: str
    line: int
    fields: dict[str, str] = field(default_factory=dict)  # "PCI/Device Id" → "0x233010DE"

    def get(self, key: str) -> str | None:
        v = self.fields.get(key)
        return None if v is None or v.strip() in ("", "N/A", "[N/A]", "Not Available") else v.strip()

    def int_of(self, key: str) -> int | None:
        v = self.get(key)
        m = re.match(r"^(\d{1,6})", v or "")
        return int(m.group(1)) if m else None

    @property
    def name(self) -> str | None:
        return self.get("Product Name")

    @property
    def uuid(self) -> str | None:
        return self.get("GPU UUID")

    @property
    def architecture(self) -> str | None:
        a = self.get("Product Architecture")
        return a.lower() if a else None

    @property
    def device_id(self) -> str | None:
        v = parse_device_id(self.get("PCI/Device Id") or "")
        return format_device_id(v) if v is not None else None

    @property
    def pci_bus_id(self) -> str | None:
        return normalize_bus_id(self.get("PCI/Bus Id") or self.bus_id)

    @property
    def memory_total_bytes(self) -> int | None:
        m = re.match(r"^(\d{1,9}) MiB$", self.get("FB Memory Usage/Total") or "")
        return int(m.group(1)) * 1024 * 1024 if m else None

    @property
    def fabric(self) -> Fabric | None:
        """Section Fabric; None when the block has none (a driver before R550). ``State : N/A`` is
        what nvidia-smi prints where NVML answers "not supported" (a GPU off any NVSwitch fabric)."""
        if "Fabric/State" not in self.fields:
            return None
        state = _FABRIC_STATES.get((self.get("Fabric/State") or "n/a").lower())
        status = self.get("Fabric/Status")
        clique = self.get("Fabric/CliqueId")
        return Fabric(
            state=state,
            status=status.lower() if status and state == "completed" else None,
            clique_id=int(clique) if clique and clique.isdigit() and len(clique) <= 12 else None,
            cluster_uuid=self.get("Fabric/ClusterUUID"),
        )

    @property
    def fabric_health(self) -> str | None:
        """``Health / Summary`` of section Fabric (Healthy, Unhealthy …; newer drivers only)."""
        return self.get("Fabric/Health/Summary")


#: Section Fabric's ``State`` as nvidia-smi prints it → the snapshot's state (as the probe records it).
_FABRIC_STATES: dict[str, FabricState] = {
    "completed": "completed",
    "in progress": "in-progress",
    "not started": "not-started",
    "not supported": "not-supported",
    "n/a": "not-supported",
}


@dataclass
class QReport:
    gpus: list[QGpu] = field(default_factory=list)
    driver_version: str | None = None
    cuda_version: str | None = None
    attached: int | None = None  # ``Attached GPUs : 8``: how many the host has (``-i 0`` prints one block)
    asked: int | None = None  # N of a pasted ``nvidia-smi -q -i N`` command line: the one block is GPU N

    @property
    def some(self) -> bool:
        """The blocks are some GPUs of the host, not all (``nvidia-smi -q -i 0``)."""
        return self.attached is not None and len(self.gpus) < self.attached


def parse_query(lines: list[str]) -> QReport:
    """Every ``nvidia-smi -q`` block in ``lines`` (other text is skipped)."""
    out = QReport()
    cur: QGpu | None = None
    stack: list[tuple[int, str]] = []  # (indent, section) of the headers above the current line
    for n, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        h = _GPU_HEADER.match(line)
        if h:
            if len(out.gpus) >= MAX_GPUS:
                break
            cur = QGpu(bus_id=h.group(1), line=n)
            out.gpus.append(cur)
            stack = []
            continue
        indent = len(line) - len(line.lstrip(" "))
        kv = _key_value(line)
        if indent == 0:
            asked = _ASKED.search(line)
            if asked and re.search(r"\s(?:-q|--query|-a)(?:\s|$)", line):
                out.asked = int(asked.group(1))
            cur = None if kv is None or not kv[0].startswith(("Driver", "CUDA")) else cur
            if kv and kv[0] == "Driver Version":
                out.driver_version = kv[1].strip() or None
            elif kv and kv[0] == "CUDA Version":
                out.cuda_version = kv[1].strip() or None
            elif kv and kv[0] == "Attached GPUs" and kv[1].strip().isdigit() and len(kv[1].strip()) <= 6:
                out.attached = int(kv[1].strip())
            continue
        if cur is None:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if len(stack) >= MAX_DEPTH:
            continue  # deeper than any -q output: not a section of it
        if kv is None:
            stack.append((indent, line.strip()))
            continue
        key = "/".join([s for _, s in stack] + [kv[0]])
        cur.fields.setdefault(key, kv[1])
    return out


def _index_of(snap: Snapshot, q: QReport) -> list[int]:
    """The GPU index of each block: the file's GPU of the same UUID or bus id where it names one,
    else block k is GPU k (nvidia-smi prints every GPU's block in its index order)."""
    by_key = {key: g.index for g in snap.gpus for key in (g.uuid, g.pci_bus_id) if key}
    found = [by_key.get(qg.uuid or "", by_key.get(qg.pci_bus_id or "")) for qg in q.gpus]
    matched = [x for x in found if x is not None]
    if len(matched) < len(found) or len(set(matched)) < len(matched):
        if len(q.gpus) == 1 and q.asked is not None and not matched:
            return [q.asked]  # `nvidia-smi -q -i 3` pasted with its command line
        return list(range(len(found)))  # some block unnamed in the file, or two on one GPU: nvidia-smi's order
    return matched


def _with_block(g: Gpu, qg: QGpu) -> Gpu:
    """``g`` with what its ``-q`` block says."""
    gen_max, gen_cur = (
        qg.int_of("PCI/GPU Link Info/PCIe Generation/Max"),
        qg.int_of("PCI/GPU Link Info/PCIe Generation/Current"),
    )
    w_max, w_cur = qg.int_of("PCI/GPU Link Info/Link Width/Max"), qg.int_of("PCI/GPU Link Info/Link Width/Current")
    pcie = PcieLink(gen_max=gen_max, gen_current=gen_cur, width_max=w_max, width_current=w_cur)
    persistence = qg.get("Persistence Mode")
    mig = qg.get("MIG Mode/Current")
    return msgspec.structs.replace(
        g,
        name=g.name or qg.name,
        uuid=g.uuid or qg.uuid,
        pci_bus_id=qg.pci_bus_id,
        pci_device_id=qg.device_id,
        architecture=qg.architecture,
        memory_total_bytes=qg.memory_total_bytes,
        pcie=pcie if any(x is not None for x in (gen_max, gen_cur, w_max, w_cur)) else None,
        persistence_mode=None if persistence is None else persistence == "Enabled",
        mig=Mig(enabled=mig == "Enabled") if mig in ("Enabled", "Disabled") else None,
        fabric=qg.fabric or g.fabric,
    )


#: The snapshot field each key of a block fills: known when every block has the key (`-q -d FABRIC`
#: prints one section: its blocks say nothing of memory or PCIe).
_SECTIONS = {
    "FB Memory Usage/Total": "gpus.memory_total_bytes",
    "PCI/GPU Link Info/PCIe Generation/Max": "gpus.pcie",
    "GPU UUID": "gpus.uuid",
    "Product Name": "gpus.name",
}


def apply_query(snap: Snapshot, q: QReport) -> Snapshot:
    """Add what `nvidia-smi -q` says: each block joins the file's GPU of its UUID or bus id, else
    block k is GPU k of the `topo -m` matrix in the same file (nvidia-smi's index order)."""
    if not q.gpus and not q.driver_version:
        return snap
    by_index = {g.index: g for g in snap.gpus}
    notes = list(snap.source.notes)
    indices = _index_of(snap, q)
    if q.some and indices == list(range(len(q.gpus))) and q.asked is None:
        notes.append(f"`nvidia-smi -q` names no GPU index for its {len(q.gpus)} block(s): taken as GPU 0… in order")
    for k, qg in zip(indices, q.gpus):
        by_index[k] = _with_block(by_index.get(k) or Gpu(index=k), qg)
        if qg.fabric_health and qg.fabric_health.lower() != "healthy":
            notes.append(f"gpu{k}: `nvidia-smi -q` reports NVLink fabric health {qg.fabric_health}")
    gpus = sorted(by_index.values(), key=lambda g: g.index)
    known = {"gpus.pci_bus_id"} | {
        fld for key, fld in _SECTIONS.items() if q.gpus and all(key in g.fields for g in q.gpus)
    }
    if q.driver_version:
        known.add("software")
    if any(g.mig for g in gpus):
        known.add("gpus.mig")
    if q.gpus and all(qg.fabric for qg in q.gpus) and (not q.some or len(q.gpus) == len(gpus)):
        known.add("gpus.fabric")
    if snap.gpus and len(q.gpus) != len(snap.gpus):
        notes.append(f"`nvidia-smi -q` lists {len(q.gpus)} GPU(s), the matrix {len(snap.gpus)}; joined by index")
    unknown = [f for f in snap.source.unknown_fields if f not in known]
    if q.some and not (snap.gpus and source_facts(snap).knows(Fact.GPU_COUNT)):
        unknown.append("gpus.count")  # `-q -i 0`: one block of the host's `Attached GPUs`
        notes.append(
            f"`nvidia-smi -q` shows {len(q.gpus)} of the host's {q.attached} GPUs (`-i`): their count is unknown"
        )
    formats: list[SourceFormat] = [*snap.source.formats, "nvidia-smi-q"] if q.gpus else snap.source.formats
    source = msgspec.structs.replace(
        snap.source, unknown_fields=list(dict.fromkeys(unknown)), notes=notes, formats=formats
    )
    software = Software(driver_version=q.driver_version, cuda_driver_version=q.cuda_version)
    return msgspec.structs.replace(snap, source=source, gpus=gpus, software=software)
