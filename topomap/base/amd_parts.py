"""AMD Instinct and Radeon GPUs by PCI device id and name: what the id implies (issue 35).

The AMD rows of the one parts table (:data:`topomap.base.parts.GPU_PARTS` holds them, ``vendor`` "amd",
``link`` "xgmi": ``links`` are XGMI links per GPU, ``gbps_per_link`` an XGMI link's data rate per
direction), with what only AMD's parts carry (the LLVM target, the XGMI lane rate) beside them. A
figure filled from here is *derived*, and says so.

Sources:
- device ids: the PCI ID database (pciutils pci.ids, vendor ``1002``) as the real outputs kept in
  ``tests/data/real-topologies/amd/`` show them (``DEVICE_ID: 0x74a2`` in amd-smi static, ``Chip ID:
  29857(0x74a1)`` in rocminfo, ``0x74a1`` in rocm-smi's concise table, ``device="0x74a1"`` in RCCL's
  topology files);
- names as the tools print them: amd-smi's GPU table and rocminfo's "Marketing Name" (``AMD Instinct
  MI300X``), amd-smi static's MARKET_NAME (``MI308X``, ``MI300A``), rocm-smi's card series;
- memory as sold (decimal GB; per GCD for the two-die MI250/MI250X, 128 GB a package) from AMD's
  product pages, checked against the real outputs (206141652992 bytes = 192 GiB on MI308X, 64289 MB
  on MI300A, 24560 MB on RX 7900 XTX);
- XGMI (AMD Infinity Fabric) per link, per direction, as ``gts`` (GT/s per lane) over 16 lanes:
  MI300X 32 GT/s (amd-smi xgmi: ``bit_rate 32 Gb/s``, ``max_bandwidth 512 Gb/s`` per link, AMD's
  amdsmi CHANGELOG for ROCm 6.1) = 64 GB/s; MI250/MI250X 25 GT/s = 50 GB/s ("Each of the AMD Infinity
  Fabric links between GPUs can run at up to 25 GT/sec, which correlates to a peak transfer bandwidth
  of 50 GB/sec for a 16-wide link", ROCm docs, MI250 microarchitecture); MI100 23 GT/s (ROCm docs,
  MI100 microarchitecture: hives of four). Where AMD publishes no rate (MI308X, MI325X, MI300A, MI210,
  Vega 20 bridges) it is None: unknown, settled by ``amd-smi xgmi`` (its max_bandwidth column);
- XGMI links per GPU: MI300X/MI308X 7 (every other GPU of the 8, one link each: amd-smi topology,
  rocm-smi --showtopo, RCCL's ``topo_8p_940.xml`` with seven ``<xgmi count="1">`` per GPU).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from topomap.base.parts import AMD_GPU_PARTS, GpuPart

#: The LLVM target and XGMI lane rate (GT/s) of each AMD part, by name.
_GFX: Final = {
    "AMD Instinct MI300X": ("gfx942", 32.0),
    "AMD Instinct MI300X VF": ("gfx942", 32.0),
    "AMD Instinct MI308X": ("gfx942", None),
    "AMD Instinct MI325X": ("gfx942", None),
    "AMD Instinct MI300A": ("gfx942", None),
    "AMD Instinct MI355X": ("gfx950", None),
    "AMD Instinct MI350X": ("gfx950", None),
    "AMD Instinct MI250X": ("gfx90a", 25.0),
    "AMD Instinct MI250": ("gfx90a", 25.0),
    "AMD Instinct MI210": ("gfx90a", None),
    "AMD Instinct MI100": ("gfx908", 23.0),
    "AMD Instinct MI60 / MI50": ("gfx906", None),
    "Radeon Pro Vega II": ("gfx906", None),
    "AMD Radeon RX 7900 XTX": ("gfx1100", None),
}


@dataclass(frozen=True)
class AmdPart:
    """An AMD row of the parts table as the AMD code reads it: ``xgmi_links`` per GPU (None: not
    published or it depends on the board), ``xgmi_gts`` GT/s per lane of a 16-lane link (None: not
    published), the LLVM target ``gfx``."""

    name: str
    gfx: str
    memory_gb: float | None
    form: str
    device_ids: tuple[int, ...]
    xgmi_links: int | None
    xgmi_gts: float | None
    architecture: str
    source: str

    @property
    def xgmi_gbps_per_link(self) -> float | None:
        """GB/s per XGMI link per direction: GT/s × 16 lanes / 8 bits."""
        return None if self.xgmi_gts is None else self.xgmi_gts * 16 / 8


def _view(p: GpuPart) -> AmdPart:
    gfx, gts = _GFX.get(p.name, ("", None))
    return AmdPart(p.name, gfx, p.memory_gb, p.form, p.device_ids, max(p.links) if p.links else None, gts,
                   p.architecture, p.source_of("xgmi"))  # fmt: skip


AMD_PARTS: Final[tuple[AmdPart, ...]] = tuple(_view(p) for p in AMD_GPU_PARTS)

_NOISE = re.compile(r"\b(amd|instinct|radeon|advanced micro devices|inc|oam)\b")


def _norm(name: str) -> str:
    text = _NOISE.sub(" ", name.lower().replace("-", " ").replace("_", " ").replace("[", " ").replace("]", " "))
    return " ".join(text.split())


_BY_ID = {d: p for p in AMD_PARTS for d in p.device_ids}
_BY_NAME: dict[str, AmdPart] = {}
for _g, _p in zip(AMD_GPU_PARTS, AMD_PARTS):
    for _s in (_g.name, *_g.spellings):
        _BY_NAME.setdefault(_norm(_s), _p)

#: AMD's PCI vendor id.
AMD_VENDOR_ID = 0x1002


def amd_part(name: str | None, device_id: str | int | None = None) -> AmdPart | None:
    """The product an AMD GPU is, by its name first (any tool's spelling), else its PCI device id."""
    if name:
        found = _BY_NAME.get(_norm(name))
        if found is not None:
            return found
    if device_id is None:
        return None
    value = device_id if isinstance(device_id, int) else _device(device_id)
    return _BY_ID.get(value) if value is not None else None


def _device(text: str) -> int | None:
    t = text.strip().lower().removeprefix("0x")
    if len(t) == 8 and t.endswith("1002"):  # "0x74a11002": device then vendor
        t = t[:4]
    try:
        return int(t, 16) if 1 <= len(t) <= 4 else None
    except ValueError:
        return None


def looks_amd(name: str | None) -> bool:
    """A GPU name that is AMD's (Instinct, Radeon, or an MI part number)."""
    if not name:
        return False
    n = name.lower()
    return "amd" in n or "instinct" in n or "radeon" in n or bool(re.match(r"^mi\d{2,3}", n))
