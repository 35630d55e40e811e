"""PCI bus ids: NVML writes ``00000000:07:00.0``, CUDA ``0000:07:00.0``, sysfs lower case.

Compare as integer tuples, print as ``dddd:bb:dd.f`` lower case.
"""

from __future__ import annotations

import re
from functools import lru_cache

_BDF = re.compile(
    r"^\s*(?:(?P<dom>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{1,2}):(?P<dev>[0-9a-fA-F]{1,2})(?:\.(?P<fn>[0-7]))?\s*$"
)
SYSFS_BDF = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


@lru_cache(maxsize=1 << 16)  # pure; a 10,000-host cluster parses the same few dozen ids per host
def parse_bus_id(text: str) -> tuple[int, int, int, int] | None:
    """``"00000000:1B:00.0"`` → (0, 0x1b, 0, 0); None when it is not a bus id."""
    m = _BDF.match(text.replace("\x00", ""))
    if not m:
        return None
    dom = int(m.group("dom") or "0", 16)
    return dom, int(m.group("bus"), 16), int(m.group("dev"), 16), int(m.group("fn") or "0")


def format_bus_id(parts: tuple[int, int, int, int]) -> str:
    dom, bus, dev, fn = parts
    return f"{dom:04x}:{bus:02x}:{dev:02x}.{fn:x}"


def normalize_bus_id(text: str) -> str | None:
    """Any bus-id spelling → ``dddd:bb:dd.f`` lower case; None when unparseable."""
    parts = parse_bus_id(text)
    return format_bus_id(parts) if parts is not None else None


def same_device(a: str | None, b: str | None) -> bool:
    """True when two bus ids name the same PCI function."""
    if a is None or b is None:
        return False
    pa, pb = parse_bus_id(a), parse_bus_id(b)
    return pa is not None and pa == pb
