"""NVLink bookkeeping shared by the probe and the importers: who a link reaches, how many
links join two GPUs (counted the way `nvidia-smi topo -m` does), which NVSwitches exist; and
NVLink per product (:data:`NVLINK_PARTS`: NVIDIA's published totals, export variants included), with
the floor that holds for every part that can report a link count (:func:`nvlink_floor`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from topomap.base.devices import model_of, parse_device_id
from topomap.base.links import NVLINK_GBPS_PER_LINK
from topomap.base.pciaddr import parse_bus_id
from topomap.model.snapshot import Gpu, NvLink, NvSwitch


def link_peer(link: NvLink, gpu_buses: dict[tuple[int, int, int, int], str]) -> str | None:
    """What an active link reaches: a GPU id, "switch", or None for a CPU (IBM NPU) link.

    On NVSwitch systems the remote bus id is the switch, not the peer GPU (HAMi#2103), so the
    remote device type decides; without it, a bus id that is no GPU is taken as a switch (NCCL).
    """
    rb = parse_bus_id(link.remote_pci_bus_id) if link.remote_pci_bus_id else None
    if link.remote_type == "cpu":
        return None
    if link.remote_type == "gpu" or (link.remote_type in (None, "unknown") and rb in gpu_buses):
        # a GPU's bus is that GPU, whatever the type says; the GPU's own bus is a bridge partner
        # the source cannot name (an Azure NCCL file): the caller sees the GPU itself
        return gpu_buses.get(rb) if rb is not None else None
    return "switch"


def gpu_buses(gpus: list[Gpu]) -> dict[tuple[int, int, int, int], str]:
    out: dict[tuple[int, int, int, int], str] = {}
    for g in gpus:
        parts = parse_bus_id(g.pci_bus_id) if g.pci_bus_id else None
        if parts is not None:
            out[parts] = f"gpu{g.index}"
    return out


def nvlink_count(a: Gpu, b: Gpu, gpu_buses: dict[tuple[int, int, int, int], str]) -> int:
    """Links joining two GPUs as `nvidia-smi topo -m` counts them: direct links, plus switch
    links (the smaller side's count)."""
    ida, idb = f"gpu{a.index}", f"gpu{b.index}"
    peers_a = [link_peer(x, gpu_buses) for x in a.nvlinks if x.active]
    peers_b = [link_peer(x, gpu_buses) for x in b.nvlinks if x.active]
    direct = peers_a.count(idb) or peers_b.count(ida)
    return direct + min(peers_a.count("switch"), peers_b.count("switch"))


def nvswitches_from_links(gpus: list[Gpu]) -> list[NvSwitch]:
    """NVSwitches seen from the GPUs' links; switches with no visible bus id become one group."""
    buses = gpu_buses(gpus)
    groups: dict[str, dict[str, int]] = {}
    for g in gpus:
        for link in g.nvlinks:
            if not link.active or link_peer(link, buses) != "switch":
                continue
            key = link.remote_pci_bus_id or "nvswitch-fabric"
            per_gpu = groups.setdefault(key, {})
            per_gpu[f"gpu{g.index}"] = per_gpu.get(f"gpu{g.index}", 0) + 1
    return [
        NvSwitch(id=k, pci_bus_id=k if k != "nvswitch-fabric" else None, links=dict(sorted(v.items())))
        for k, v in sorted(groups.items())
    ]


# --- NVLink per part: the published totals, and the floor for an unknown part ---------------------


@dataclass(frozen=True)
class NvlinkPart:
    """One GPU product's NVLink as NVIDIA publishes it: the total both ways over all its links
    (``total_gbps``), the links `nvidia-smi topo -m` counts when all are trained (``links``; a PCIe
    card's: its bridge's; None where the count is not published, then ``max_links``, the most its die
    has, bounds the per-link rate from below), compute capability and NVLink generation."""

    name: str
    cc: str
    generation: int
    links: int | None
    total_gbps: float
    source: str
    max_links: int = 0
    spellings: tuple[str, ...] = ()  # NVML names of parts base.devices does not list
    device_ids: tuple[int, ...] = ()
    export: bool = False  # an export variant: fewer or slower links than its die, total capped

    @property
    def link_ceiling_gbps(self) -> float:
        """The fastest one link of this part can run per direction: its generation's nominal rate where
        the published total is a cap (export variants, unpublished link counts), else its share."""
        if self.export or self.links is None:
            return NVLINK_GBPS_PER_LINK[self.generation]
        return self.gbps_per_link

    @property
    def per_direction_gbps(self) -> float:
        return self.total_gbps / 2

    @property
    def link_count(self) -> int:
        return self.links if self.links is not None else self.max_links

    @property
    def gbps_per_link(self) -> float:
        """Per link per direction; where the link count is not published, the least it can be."""
        return self.per_direction_gbps / self.link_count


_DS = "NVIDIA product datasheet"
# Totals are NVIDIA's published "NVLink: N GB/s" (both directions, all links). Sources beside the
# datasheets, where the corpus held them: H800 400 GB/s (NVIDIA's H800 spec as quoted in
# github.com/deepseek-ai/DeepSeek-V3/issues/479; `nvidia-smi topo -m` shows NV18 on H800 SXM, issue 19);
# A800 SXM4 400 GB/s over 8 links at 25 GB/s each way (an 8x A800-SXM4-80GB NCCL report; lium-io PR
# #1199: "only NVLink is cut to 400 GB/s"); A40 112.5 GB/s (A40 product brief PB-09976-001_v04);
# H200 "18x 4th Gen NVLink, 900GB/s" (MLCommons inference v4.1 H200-SXM-141GBx8 system file);
# GA102 "four x4 links, each 14.0625 GB/sec in each direction" (GA102 whitepaper, reference/nvml-cuda.md
# §4.1). Device ids: pci.ids @c1c12547 (vendor 10de).
NVLINK_PARTS: tuple[NvlinkPart, ...] = (
    NvlinkPart(
        "Tesla P100-SXM2", "6.0", 1, 4, 160, _DS, spellings=("p100 sxm2", "p100 sxm2 16gb"), device_ids=(0x15F9,)
    ),
    NvlinkPart("Tesla V100-SXM2-16GB", "7.0", 2, 6, 300, _DS),
    NvlinkPart("Tesla V100-SXM2-32GB", "7.0", 2, 6, 300, _DS),
    NvlinkPart("Tesla V100-SXM3-32GB", "7.0", 2, 6, 300, _DS),
    NvlinkPart("NVIDIA TITAN RTX", "7.5", 2, 2, 100, _DS, spellings=("titan rtx",)),
    NvlinkPart("Quadro RTX 8000", "7.5", 2, 2, 100, _DS, spellings=("quadro rtx 8000",)),
    NvlinkPart("Quadro RTX 6000", "7.5", 2, 2, 100, _DS, spellings=("quadro rtx 6000",)),
    NvlinkPart("GeForce RTX 2080 Ti", "7.5", 2, 2, 100, _DS, spellings=("rtx 2080 ti",)),
    NvlinkPart("NVIDIA A100-SXM4-40GB", "8.0", 3, 12, 600, _DS),
    NvlinkPart("NVIDIA A100-SXM4-80GB", "8.0", 3, 12, 600, _DS),
    NvlinkPart("NVIDIA A100-PCIE-40GB", "8.0", 3, 12, 600, f"{_DS} (NVLink bridge, 3 bridges)"),
    NvlinkPart("NVIDIA A100 80GB PCIe", "8.0", 3, 12, 600, f"{_DS} (NVLink bridge, 3 bridges)"),
    NvlinkPart(
        "NVIDIA A800-SXM4-80GB",
        "8.0",
        3,
        8,
        400,
        f"{_DS}; 8 links (export variant)",
        spellings=("a800 sxm4 80gb", "a800 sxm4 40gb"),
        device_ids=(0x20F3, 0x20BD),
        export=True,
    ),
    NvlinkPart(
        "NVIDIA A800 80GB PCIe",
        "8.0",
        3,
        None,
        400,
        f"{_DS} (NVLink bridge; link count not published)",
        max_links=12,
        spellings=("a800 80gb pcie", "a800 40gb pcie", "a800 pcie 40gb", "a800 40gb active"),
        device_ids=(0x20F5, 0x20F6),
        export=True,
    ),
    NvlinkPart("NVIDIA A30", "8.0", 3, 4, 200, _DS),
    NvlinkPart("NVIDIA A40", "8.6", 3, 4, 112.5, "A40 product brief PB-09976-001_v04 (NVLink bridge)"),
    NvlinkPart("NVIDIA RTX A6000", "8.6", 3, 4, 112.5, f"{_DS} (NVLink bridge)"),
    NvlinkPart("NVIDIA RTX A5000", "8.6", 3, 4, 112.5, f"{_DS} (NVLink bridge)", spellings=("rtx a5000",)),
    NvlinkPart("NVIDIA GeForce RTX 3090", "8.6", 3, 4, 112.5, "GA102 whitepaper (NVLink bridge)"),
    NvlinkPart("NVIDIA GeForce RTX 3090 Ti", "8.6", 3, 4, 112.5, "GA102 whitepaper (NVLink bridge)"),
    NvlinkPart("NVIDIA H100 80GB HBM3", "9.0", 4, 18, 900, _DS),
    NvlinkPart("NVIDIA H100 PCIe", "9.0", 4, 12, 600, f"{_DS} (NVLink bridge)"),
    NvlinkPart("NVIDIA H100 NVL", "9.0", 4, 12, 600, f"{_DS} (NVLink bridge)"),
    NvlinkPart(
        "NVIDIA H800 80GB HBM3",
        "9.0",
        4,
        18,
        400,
        f"{_DS}; NV18 in `topo -m` (export variant)",
        spellings=("h800 80gb hbm3", "h800", "h800 sxm5 80gb"),
        device_ids=(0x2324,),
        export=True,
    ),
    NvlinkPart(
        "NVIDIA H800 PCIe",
        "9.0",
        4,
        None,
        400,
        f"{_DS} (NVLink bridge; link count not published)",
        max_links=12,
        spellings=("h800 pcie",),
        device_ids=(0x2322,),
        export=True,
    ),
    NvlinkPart("NVIDIA H20", "9.0", 4, 18, 900, _DS),
    NvlinkPart("NVIDIA H20 HBM3e", "9.0", 4, 18, 900, _DS),
    NvlinkPart("NVIDIA H200", "9.0", 4, 18, 900, "MLCommons H200-SXM-141GBx8: 18x 4th Gen NVLink, 900GB/s"),
    NvlinkPart("NVIDIA H200 NVL", "9.0", 4, 18, 900, f"{_DS} (NVLink bridge)"),
    NvlinkPart("NVIDIA GH200 480GB", "9.0", 4, 18, 900, _DS),
    NvlinkPart("NVIDIA GH200 144G HBM3e", "9.0", 4, 18, 900, _DS),
    NvlinkPart("NVIDIA B200", "10.0", 5, 18, 1800, _DS),
    NvlinkPart("NVIDIA GB200", "10.0", 5, 18, 1800, _DS),
)

_BY_MODEL = {p.name: p for p in NVLINK_PARTS}
_BY_SPELLING = {s: p for p in NVLINK_PARTS for s in p.spellings}
_BY_DEVICE = {d: p for p in NVLINK_PARTS for d in p.device_ids}
_NOISE = re.compile(r"\b(nvidia|tesla|geforce|quadro)\b")


def _norm(name: str) -> str:
    text = _NOISE.sub(" ", name.lower().replace("_", " ").replace("-", " "))
    return " ".join(text.split())


def nvlink_part(gpu: Gpu) -> NvlinkPart | None:
    """The product a GPU is, for its NVLink: by the device table's model (name or PCI device id), else by
    the NVML names and device ids of the parts that table does not list (export variants, Turing)."""
    model = model_of(gpu.name, gpu.pci_device_id)
    if model is not None and model.name in _BY_MODEL:
        return _BY_MODEL[model.name]
    if gpu.name:
        bare = _norm(gpu.name)
        if bare in _BY_SPELLING:
            return _BY_SPELLING[bare]
        if "quadro" in gpu.name.lower() and ("quadro " + bare) in _BY_SPELLING:
            return _BY_SPELLING["quadro " + bare]
    dev = parse_device_id(gpu.pci_device_id) if gpu.pci_device_id else None
    return _BY_DEVICE.get(dev) if dev is not None else None


@dataclass(frozen=True)
class NvlinkFloor:
    """The least ``count`` links can carry per direction over every part that can report that count
    (``parts``: those the floor ranges over); ``gbps`` None when no known part has that many links."""

    gbps: float | None
    per_link: float | None
    slowest: str | None  # the part that sets it
    exact: bool  # every candidate part gives the same figure


def nvlink_floor(count: int, cc: str | None = None, generation: int | None = None) -> NvlinkFloor:
    """The lower bound of ``count`` NVLinks of a GPU whose model is not known, over every part in
    :data:`NVLINK_PARTS` that could be it (same compute capability or NVLink generation when known)
    and that has at least ``count`` links (a degraded part reports fewer than it has)."""
    parts = [
        p
        for p in NVLINK_PARTS
        if p.link_count >= count and (cc is None or p.cc == cc) and (generation is None or p.generation == generation)
    ]
    if count <= 0 or not parts:
        return NvlinkFloor(None, None, None, False)
    slowest = min(parts, key=lambda p: p.gbps_per_link)
    exact = len({round(p.gbps_per_link, 6) for p in parts}) == 1 and all(p.links is not None for p in parts)
    return NvlinkFloor(count * slowest.gbps_per_link, slowest.gbps_per_link, slowest.name, exact)
