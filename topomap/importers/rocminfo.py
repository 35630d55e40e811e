"""``rocminfo`` → :class:`~topomap.importers.amd_facts.AmdFacts` (issue 35).

ROCm's HSA agent list: an ``Agent n`` block per CPU and GPU with ``Name:`` (``gfx942``), ``Marketing
Name:``, ``Uuid:``, ``Device Type:``, ``Chip ID: 29857(0x74a1)``, ``BDFID: 50688`` (the PCI address as
one number: bus << 8 | device << 3 | function, domain 0) and, under ``Pool Info``, the first GLOBAL
pool's ``Size:`` in KB (the GPU's memory). GPU agents are numbered in the order listed, as HIP numbers
its devices; a trimmed paste (``[...]``) numbers the GPUs it shows.
"""

from __future__ import annotations

import re

from topomap.importers.amd_facts import AmdFacts

_FIELD = re.compile(r"^\s*([A-Za-z][A-Za-z .]*?):\s*(.*?)\s*$")


def looks_like_rocminfo(text: str) -> bool:
    head = text[:200_000]
    return "HSA Agents" in head or ("Marketing Name:" in head and "Device Type:" in head)


def read_rocminfo(text: str, facts: AmdFacts) -> None:
    """The GPU agents of a rocminfo output into ``facts`` (GPU index = their order)."""
    agents: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in text.splitlines():
        m = _FIELD.match(line)
        if not m:
            continue
        key, value = m.group(1), m.group(2)
        indent = len(line) - len(line.lstrip())
        if key == "Name" and indent <= 2:
            current = {"Name": value}
            agents.append(current)
        elif current is not None and indent <= 2 and key not in current:
            current[key] = value
        elif current is not None and key == "Size" and "pool" not in current:
            current["pool"] = value
    gpus = [a for a in agents if a.get("Device Type") == "GPU"]
    if not gpus:
        return
    facts.saw("rocminfo")
    for k, a in enumerate(gpus):
        g = facts.gpu(k)
        g.name = g.name or (a.get("Marketing Name") or None)
        if a["Name"].startswith("gfx"):
            g.gfx = a["Name"]
        chip = re.search(r"\((0x[0-9a-fA-F]+)\)", a.get("Chip ID", ""))
        if chip:
            g.device_id = g.device_id or chip.group(1).lower()
        uuid = a.get("Uuid", "")
        if uuid.startswith("GPU-") and uuid != "GPU-XX":
            g.uuid = g.uuid or uuid
        bdf = a.get("BDFID", "")
        if bdf.isdigit() and int(bdf) > 0:
            n = int(bdf)
            g.bus = g.bus or f"0000:{n >> 8:02x}:{(n >> 3) & 0x1F:02x}.{n & 7}"
        pool = re.match(r"(\d+)\(0x[0-9a-fA-F]+\) KB", a.get("pool", ""))
        if pool:
            g.memory_bytes = g.memory_bytes or int(pool.group(1)) * 1024
    for a in agents:
        if a.get("Device Type") == "CPU" and a.get("Marketing Name"):
            facts.cpu_model = facts.cpu_model or a["Marketing Name"]
