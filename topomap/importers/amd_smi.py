"""``amd-smi`` text and JSON → :class:`~topomap.importers.amd_facts.AmdFacts` (issue 35).

Read as AMD's CLI prints them (ROCm/amdsmi ``amdsmi_cli/amdsmi_commands.py`` @0ceca28):
- ``amd-smi topology``: ``ACCESS TABLE:``, ``WEIGHT TABLE:``, ``HOPS TABLE:``, ``LINK TYPE TABLE:``,
  ``NUMA BW TABLE:`` (and the capability tables, not used), each a bus-id header row and one row per
  source bus id (``SELF`` on the diagonal, ``N/A`` where a call failed); ``--json``: a list of
  ``{"gpu", "bdf", "links": [{"gpu", "bdf", "weight", "link_status", "link_type", "num_hops",
  "bandwidth"}]}`` (the keys present are the tables asked for);
- ``amd-smi`` (its GPU table: bus id, name, ``GPU`` index, memory ``used/total MB``);
- ``amd-smi list`` (``GPU: i`` then ``BDF:``, ``UUID:``);
- ``amd-smi static`` (``GPU: i`` then ``ASIC:`` MARKET_NAME, DEVICE_ID, TARGET_GRAPHICS_VERSION;
  ``BUS:`` BDF, MAX_PCIE_WIDTH, PCIE_INTERFACE_VERSION; ``NUMA:`` NODE; ``VRAM:`` SIZE; ``DRIVER:``);
- ``amd-smi xgmi`` (``LINK METRIC TABLE:`` rows ``GPUi bdf bit_rate max_bandwidth link_type``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from topomap.base.pciaddr import normalize_bus_id
from topomap.importers.amd_facts import AmdFacts

_BDF = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_TABLE = re.compile(r"^([A-Z][A-Z -]+) TABLE:\s*$")
_TABLES = {"ACCESS": "access", "WEIGHT": "weight", "HOPS": "hops", "LINK TYPE": "link", "NUMA BW": "bw"}
_BANNER_ROW = re.compile(rf"^\|\s*({_BDF})\s+(.+?)\s+\|")
_BANNER_IDX = re.compile(r"^\|\s+(\d+)\s+\S+\s+\S+\s+\S+\s+\|.*?(\d+)/(\d+) MB\s*\|$")
_GPU_HEAD = re.compile(r"^GPU: (\d+)\s*$")
_KV = re.compile(r"^\s+([A-Z][A-Z0-9_ ]*?):\s*(.*?)\s*$")
_XGMI_ROW = re.compile(rf"^GPU(\d+)\s+({_BDF})\s+(\d+) Gb/s\s*(\d+) Gb/s\s*(\S+)")


def looks_like_amd_smi(text: str) -> bool:
    """An amd-smi output: one of its topology tables, its GPU table, or ``GPU: n`` blocks of its keys."""
    head = text[:200_000]
    if re.search(r"^(LINK TYPE|WEIGHT|ACCESS|HOPS|NUMA BW) TABLE:\s*$", head, re.MULTILINE):
        return True
    if "| AMD-SMI " in head or "LINK METRIC TABLE:" in head:
        return True
    return bool(re.search(r"^GPU: \d+\s*$\n\s+(BDF|ASIC|BUS|UUID):", head, re.MULTILINE))


def read_amd_smi(text: str, facts: AmdFacts) -> None:
    """Every amd-smi part of ``text`` into ``facts``."""
    _banner(text, facts)
    _blocks(text, facts)
    _tables(text, facts)
    _xgmi(text, facts)


def _index_of(facts: AmdFacts, bus: str, order: list[str]) -> int:
    """The GPU index of an amd-smi bus id: as the GPU table or list named it, else its place in bus order."""
    bus = normalize_bus_id(bus) or bus.lower()
    if bus not in facts.by_bus:
        taken = set(facts.by_bus.values())
        k = sorted(order).index(bus) if bus in order else len(facts.by_bus)
        while k in taken:
            k += 1
        facts.by_bus[bus] = k
        facts.gpu(k).bus = bus
    return facts.by_bus[bus]


def _banner(text: str, facts: AmdFacts) -> None:
    """amd-smi's GPU table: a ``| bus-id name |`` row, then ``| index HIP-ID OAM-ID mode | … used/total MB |``."""
    last: tuple[str, str] | None = None
    for line in text.splitlines():
        s = line.strip()
        m = _BANNER_ROW.match(s)
        if m:
            last = (normalize_bus_id(m.group(1)) or m.group(1).lower(), m.group(2).strip())
            facts.saw("amd-smi-static")
            continue
        n = _BANNER_IDX.match(s)
        if n and last is not None:
            idx = int(n.group(1))
            facts.by_bus[last[0]] = idx
            g = facts.gpu(idx)
            g.bus, g.name = last[0], g.name or last[1]
            g.memory_bytes = g.memory_bytes or int(n.group(3)) * 1024 * 1024
            last = None


def _blocks(text: str, facts: AmdFacts) -> None:
    """``GPU: i`` blocks of amd-smi list and static."""
    current: int | None = None
    section = ""
    for line in text.splitlines():
        head = _GPU_HEAD.match(line.strip()) if not line.startswith(" ") else None
        if head:
            current, section = int(head.group(1)), ""
            continue
        if current is None:
            continue
        if line and not line.startswith(" "):
            current = None
            continue
        kv = _KV.match(line)
        if not kv:
            continue
        key, value = kv.group(1).strip(), kv.group(2)
        if not value:
            section = key
            continue
        _block_value(facts, current, section, key, value)


def _block_value(facts: AmdFacts, index: int, section: str, key: str, value: str) -> None:
    g = facts.gpu(index)
    if key == "BDF" and re.fullmatch(_BDF, value):
        bus = normalize_bus_id(value) or value.lower()
        g.bus = bus
        facts.by_bus[bus] = index
        facts.saw("amd-smi-list" if section == "" else "amd-smi-static")
    elif key == "UUID" and value not in ("N/A", "<redacted>"):
        g.uuid = value
    elif key == "MARKET_NAME" and value != "N/A":
        g.name = g.name or value
        facts.saw("amd-smi-static")
    elif key == "DEVICE_ID" and re.fullmatch(r"0x[0-9a-fA-F]{1,4}", value):
        g.device_id = value.lower()
    elif key == "TARGET_GRAPHICS_VERSION" and value.startswith("gfx"):
        g.gfx = value
    elif key == "MAX_PCIE_WIDTH" and value.isdigit():
        g.pcie_width_max = int(value)
    elif key == "PCIE_INTERFACE_VERSION" and re.fullmatch(r"Gen \d", value):
        g.pcie_gen_max = int(value[4:])
    elif section == "NUMA" and key == "NODE" and re.fullmatch(r"-?\d+", value):
        g.numa = int(value) if int(value) >= 0 else None
    elif section == "VRAM" and key == "SIZE" and re.fullmatch(r"\d+ MB", value):
        g.memory_bytes = int(value.split()[0]) * 1024 * 1024
    elif section == "DRIVER" and key == "VERSION" and value != "N/A":
        g.driver = value


def _tables(text: str, facts: AmdFacts) -> None:
    section: str | None = None
    header: list[str] = []
    for line in text.splitlines():
        t = _TABLE.match(line.strip())
        if t:
            section = _TABLES.get(t.group(1).strip())
            header = []
            if section is not None:
                facts.saw("amd-smi-topology")
            continue
        toks = line.split()
        if section is None or not toks:
            if not toks:
                continue
            section = None if not re.fullmatch(_BDF, toks[0]) else section
            continue
        if all(re.fullmatch(_BDF, x) for x in toks):
            header = toks
            continue
        if re.fullmatch(_BDF, toks[0]) and header:
            src = _index_of(facts, toks[0], header)
            for bus, cell in zip(header, toks[1:]):
                _cell(facts, section, src, _index_of(facts, bus, header), cell)
        else:
            section = None


def _cell(facts: AmdFacts, section: str, src: int, dst: int, cell: str) -> None:
    if src == dst or cell in ("N/A", "SELF"):
        return
    key = (src, dst)
    if section in ("weight", "hops") and cell.isdigit():
        (facts.weight if section == "weight" else facts.hops)[key] = int(cell)
    elif section == "link" and cell in ("XGMI", "PCIE"):
        facts.link[key] = cell
    elif section == "access" and cell in ("ENABLED", "DISABLED"):
        facts.access[key] = cell == "ENABLED"
    elif section == "bw":
        m = re.fullmatch(r"(\d+)-(\d+)", cell)
        if m:
            facts.bw[key] = (int(m.group(1)), int(m.group(2)))


def _xgmi(text: str, facts: AmdFacts) -> None:
    """``amd-smi xgmi``'s LINK METRIC TABLE: each GPU's link rate (``max_bandwidth`` Gb/s per link)."""
    for line in text.splitlines():
        m = _XGMI_ROW.match(line.strip())
        if not m or m.group(5) != "XGMI":
            continue
        g = facts.gpu(int(m.group(1)))
        bus = normalize_bus_id(m.group(2)) or m.group(2).lower()
        g.bus = g.bus or bus
        facts.by_bus.setdefault(bus, g.index)
        gbits = int(m.group(4))
        if 0 < gbits < 10_000:  # 4294967295 Gb/s: "not supported" (an RX 7900 XTX prints it)
            g.xgmi_gbps = gbits / 8
        facts.saw("amd-smi-xgmi")


def looks_like_amd_smi_json(data: Any) -> bool:
    """``amd-smi topology --json``: a list of objects with ``bdf`` and ``links``."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(x, dict) and "bdf" in x and isinstance(x.get("links"), list) for x in data)
    )


def read_amd_smi_json(text: str, facts: AmdFacts) -> None:
    """``amd-smi topology --json`` into ``facts``; each cell as the table's (``weight``, ``num_hops``,
    ``link_type``, ``link_status``, ``bandwidth``)."""
    data = json.loads(text)
    order = [str(x["bdf"]).lower() for x in data]
    for x in data:
        src = int(x["gpu"]) if isinstance(x.get("gpu"), int) else _index_of(facts, str(x["bdf"]), order)
        bus = normalize_bus_id(str(x["bdf"])) or str(x["bdf"]).lower()
        facts.by_bus[bus] = src
        facts.gpu(src).bus = bus
    for x in data:
        src = facts.by_bus[normalize_bus_id(str(x["bdf"])) or str(x["bdf"]).lower()]
        for link in x["links"]:
            if not isinstance(link, dict) or "bdf" not in link:
                continue
            dst = int(link["gpu"]) if isinstance(link.get("gpu"), int) else _index_of(facts, str(link["bdf"]), order)
            for key, section in (
                ("weight", "weight"),
                ("num_hops", "hops"),
                ("link_type", "link"),
                ("bandwidth", "bw"),
            ):
                if key in link:
                    _cell(facts, section, src, dst, str(link[key]))
            if "link_status" in link:
                _cell(facts, "access", src, dst, str(link["link_status"]))
    facts.saw("amd-smi-topology")
