"""AMD Instinct and Radeon GPUs by PCI device id and name: what the id implies (issue 35).

Kept apart from the NVIDIA parts table until the two are one (a helper is unifying that table):
the same shape of facts, read the same way. A figure filled from here is *derived*, and says so.

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


@dataclass(frozen=True)
class AmdPart:
    """One AMD GPU product. ``xgmi_links``: XGMI links per GPU when all are up (None: not published or
    it depends on the board); ``xgmi_gts``: GT/s per lane of a 16-lane XGMI link (None: not published)."""

    name: str
    gfx: str  # LLVM target, "gfx942"
    memory_gb: float | None
    form: str  # "oam", "pcie", "apu"
    device_ids: tuple[int, ...]
    spellings: tuple[str, ...] = ()
    xgmi_links: int | None = None
    xgmi_gts: float | None = None
    source: str = "AMD product page"

    @property
    def xgmi_gbps_per_link(self) -> float | None:
        """GB/s per XGMI link per direction: GT/s × 16 lanes / 8 bits."""
        return None if self.xgmi_gts is None else self.xgmi_gts * 16 / 8

    @property
    def architecture(self) -> str:
        return {"gfx942": "cdna3", "gfx950": "cdna4", "gfx90a": "cdna2", "gfx908": "cdna1"}.get(self.gfx, "rdna")


_XGMI_300X = "amd-smi xgmi (amdsmi CHANGELOG, ROCm 6.1): 32 Gb/s per lane, 512 Gb/s per link"
_XGMI_250 = "ROCm docs, MI250 microarchitecture: 25 GT/s, 50 GB/s per 16-wide link"

AMD_PARTS: tuple[AmdPart, ...] = (
    AmdPart(
        "AMD Instinct MI300X", "gfx942", 192, "oam", (0x74A1,), ("MI300X", "AMD Instinct MI300X OAM"), 7, 32, _XGMI_300X
    ),
    AmdPart("AMD Instinct MI300X VF", "gfx942", 192, "oam", (0x74B5,), ("MI300X VF",), 7, 32, _XGMI_300X),
    AmdPart("AMD Instinct MI308X", "gfx942", 192, "oam", (0x74A2,), ("MI308X",), 7, None),
    AmdPart("AMD Instinct MI325X", "gfx942", 256, "oam", (0x74A5,), ("MI325X",), 7, None),
    AmdPart("AMD Instinct MI300A", "gfx942", 128, "apu", (0x74A0,), ("MI300A",), None, None),
    AmdPart("AMD Instinct MI355X", "gfx950", 288, "oam", (0x75A3,), ("MI355X",), 7, None),
    AmdPart("AMD Instinct MI350X", "gfx950", 288, "oam", (0x75A0,), ("MI350X",), 7, None),
    AmdPart(
        "AMD Instinct MI250X",
        "gfx90a",
        64,
        "oam",
        (0x7408,),
        ("MI250X", "AMD Instinct MI250X/MI250"),
        None,
        25,
        _XGMI_250,
    ),
    AmdPart("AMD Instinct MI250", "gfx90a", 64, "oam", (0x740C,), ("MI250",), None, 25, _XGMI_250),
    AmdPart("AMD Instinct MI210", "gfx90a", 64, "pcie", (0x740F,), ("MI210",), None, None),
    AmdPart(
        "AMD Instinct MI100",
        "gfx908",
        32,
        "pcie",
        (0x738C,),
        ("MI100",),
        3,
        23,
        "ROCm docs, MI100 microarchitecture: hives of four over 23 GT/s links",
    ),
    AmdPart("AMD Instinct MI60 / MI50", "gfx906", 32, "pcie", (0x66A1,), ("MI50", "MI60", "Vega 20"), None, None),
    AmdPart("Radeon Pro Vega II", "gfx906", 32, "pcie", (0x66A3,), ("Radeon Pro Vega II Duo",), None, None),
    AmdPart("AMD Radeon RX 7900 XTX", "gfx1100", 24, "pcie", (0x744C,), ("Radeon RX 7900 XTX",), 0, None),
)

_NOISE = re.compile(r"\b(amd|instinct|radeon|advanced micro devices|inc|oam)\b")


def _norm(name: str) -> str:
    text = _NOISE.sub(" ", name.lower().replace("-", " ").replace("_", " ").replace("[", " ").replace("]", " "))
    return " ".join(text.split())


_BY_ID = {d: p for p in AMD_PARTS for d in p.device_ids}
_BY_NAME: dict[str, AmdPart] = {}
for _p in AMD_PARTS:
    for _s in (_p.name, *_p.spellings):
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
