"""``nvidia-smi -q`` (``-a``) text: per-GPU identity, PCI device id, memory and PCIe link.

The report is indented ``key : value`` lines under section headers; one block per GPU, headed
``GPU 00000000:DB:00.0``, in nvidia-smi's own index order. Read here: product name and
architecture, UUID, PCI bus id and device id (``0x233010DE``: device 2330, vendor 10de), total
framebuffer memory (MiB), PCIe generation and width (maximum and current), persistence mode, MIG
mode, and the driver and CUDA versions at the top.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import msgspec

from topomap.base.devices import format_device_id, parse_device_id
from topomap.base.pciaddr import normalize_bus_id
from topomap.model.snapshot import Gpu, Mig, PcieLink, Snapshot, Software

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


@dataclass
class QReport:
    gpus: list[QGpu] = field(default_factory=list)
    driver_version: str | None = None
    cuda_version: str | None = None


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
            cur = None if kv is None or not kv[0].startswith(("Driver", "CUDA")) else cur
            if kv and kv[0] == "Driver Version":
                out.driver_version = kv[1].strip() or None
            elif kv and kv[0] == "CUDA Version":
                out.cuda_version = kv[1].strip() or None
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


def apply_query(snap: Snapshot, q: QReport) -> Snapshot:
    """Add what `nvidia-smi -q` says: its GPU blocks are in nvidia-smi's index order, so block k
    is GPU k of the `topo -m` matrix in the same file."""
    if not q.gpus and not q.driver_version:
        return snap
    by_index = {g.index: g for g in snap.gpus}
    gpus: list[Gpu] = []
    for k, qg in enumerate(q.gpus):
        g = by_index.pop(k, None) or Gpu(index=k)
        gen_max, gen_cur = (
            qg.int_of("PCI/GPU Link Info/PCIe Generation/Max"),
            qg.int_of("PCI/GPU Link Info/PCIe Generation/Current"),
        )
        w_max, w_cur = qg.int_of("PCI/GPU Link Info/Link Width/Max"), qg.int_of("PCI/GPU Link Info/Link Width/Current")
        pcie = PcieLink(gen_max=gen_max, gen_current=gen_cur, width_max=w_max, width_current=w_cur)
        persistence = qg.get("Persistence Mode")
        mig = qg.get("MIG Mode/Current")
        gpus.append(
            msgspec.structs.replace(
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
            )
        )
    gpus += by_index.values()
    known = {"gpus.pci_bus_id", "gpus.memory_total_bytes", "gpus.pcie", "gpus.uuid", "gpus.name"}
    if q.driver_version:
        known.add("software")
    if any(g.mig for g in gpus):
        known.add("gpus.mig")
    notes = list(snap.source.notes)
    if snap.gpus and len(q.gpus) != len(snap.gpus):
        notes.append(f"`nvidia-smi -q` lists {len(q.gpus)} GPU(s), the matrix {len(snap.gpus)}; joined by index")
    source = msgspec.structs.replace(
        snap.source, unknown_fields=[f for f in snap.source.unknown_fields if f not in known], notes=notes
    )
    software = Software(driver_version=q.driver_version, cuda_driver_version=q.cuda_version)
    return msgspec.structs.replace(snap, source=source, gpus=sorted(gpus, key=lambda g: g.index), software=software)
