"""The parts table: every GPU product topomap knows, held once (issue 30 item 8).

Each :class:`GpuPart` carries what a source's PCI device id or name implies: the name NVML and
``nvidia-smi`` report, other spellings (pci.ids bracket names, older drivers, catalogue names),
architecture, compute capability, form factor, memory as sold, and its GPU link: NVLink generation,
the link counts ``nvidia-smi topo -m`` shows when every link is trained, the data rate per link per
direction, the published total, whether it is an export variant, and the public source of each
figure. Model lookups (:mod:`topomap.base.part_names`) and NVLink figures
(:mod:`topomap.base.link_ranges`) derive from this table alone; nothing else repeats these numbers.

An NVLink figure here is always the **data rate per direction** ("spec"): 25 GB/s per NVLink 2-4
link, 50 per NVLink 5 link. ``nvidia-smi nvlink -s`` prints the link's signalling rate instead
(26.562 GB/s on NVLink 4), which :data:`SIGNALLING` derives from it (issue 30 item 5).

Sources: device ids and bracketed names, the PCI ID database github.com/pciutils/pciids ``pci.ids``
@c1c12547 (2026-08-22), vendor ``10de``; names as NVML prints them in real outputs where we have
them; memory, form, NVLink generation, links and totals, NVIDIA's product datasheets (V100, A100,
A10, A30, A40, L4, L40/L40S, H100, H200, H20, GH200, HGX B200, GB200 NVL72, RTX 3090/4090/5090, RTX
A6000) unless a part names another source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, NamedTuple

_DS: Final = "NVIDIA product datasheet"


@dataclass(frozen=True)
class GpuPart:
    """One GPU product. ``memory_gb`` is decimal gigabytes as sold (an "80 GB" card reports 81559
    MiB). ``links``: the NVLink counts ``topo -m`` shows for this part when every link is trained (a
    bridged PCIe card: its bridge's; several where real outputs show several, the H800's NV8 and
    NV18); empty where the count is not published, then ``max_links`` (the most its die has) bounds
    the per-link share from below. ``gbps_per_link``: data rate per link per direction.
    ``total_gbps``: NVIDIA's published "NVLink: N GB/s", both directions over all links (an export
    variant's cap). ``sources``: (figure, where it is published) where a figure's source is not
    the datasheet."""

    name: str
    architecture: str  # "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell"
    cc: str | None  # compute capability, "9.0"
    form: str  # "sxm", "pcie", "superchip" (Grace + GPU module)
    memory_gb: float | None
    device_ids: tuple[int, ...] = ()
    spellings: tuple[str, ...] = ()
    nvlink_generation: int | None = None
    links: tuple[int, ...] = ()
    max_links: int | None = None
    gbps_per_link: float | None = None
    total_gbps: float | None = None
    export: bool = False
    sources: tuple[tuple[str, str], ...] = ()
    vendor: str = "nvidia"
    link: str = "nvlink"  # the GPU-to-GPU link family the link fields describe ("nvlink"; AMD's would be "xgmi")

    @property
    def has_nvlink(self) -> bool:
        return self.link == "nvlink" and self.nvlink_generation is not None and self.gbps_per_link is not None

    @property
    def full_links(self) -> int:
        """The most links this part can report (0 without NVLink)."""
        return max(self.links) if self.links else (self.max_links or 0)

    @property
    def per_direction_gbps(self) -> float | None:
        """The published total per direction (half of ``total_gbps``), or links × rate."""
        if self.total_gbps is not None:
            return self.total_gbps / 2
        if self.gbps_per_link is not None and self.full_links:
            return self.gbps_per_link * self.full_links
        return None

    def source_of(self, figure: str) -> str:
        """Where ``figure`` ("nvlink", "memory", "links", "device_ids") is published."""
        return dict(self.sources).get(figure, "pci.ids @c1c12547" if figure == "device_ids" else _DS)

    def bundle(self, count: int) -> tuple[float, float] | None:
        """``count`` of this part's links per direction, GB/s, as (low, high): exact (low = high) where
        ``count`` is a full complement this part shows or every link runs at its rate; where an export
        variant's total is a cap over links it may run slower (the H800's 18), a range from its share
        of the cap to the links' rate. None when the part has no NVLink or fewer links."""
        rate, cap, full = self.gbps_per_link, self.per_direction_gbps, self.full_links
        if not self.has_nvlink or rate is None or cap is None or count <= 0 or count > full:
            return None
        high = min(count * rate, cap)
        if count in self.links:
            return high, high
        return min(count * cap / full, high), high


class _Nv(NamedTuple):
    """A part's NVLink: generation, link counts shown, data rate per link per direction (GB/s), the
    published total both ways (GB/s), the die's most links where the count is not published."""

    gen: int
    links: tuple[int, ...]
    rate: float
    total: float
    max_links: int | None = None


def _p(
    name: str,
    arch: str,
    cc: str | None,
    form: str,
    mem: float | None,
    ids: tuple[int, ...] = (),
    *spellings: str,
    nv: _Nv | None = None,
    export: bool = False,
    sources: tuple[tuple[str, str], ...] = (),
) -> GpuPart:
    if nv is None:
        return GpuPart(name, arch, cc, form, mem, ids, spellings, export=export, sources=sources)
    return GpuPart(
        name, arch, cc, form, mem, ids, spellings, nv.gen, nv.links, nv.max_links, nv.rate, nv.total, export, sources
    )


#: GA102's NVLink bridge: "four x4 links, each 14.0625 GB/sec in each direction" (GA102 whitepaper,
#: shared/reference/nvml-cuda.md §4.1).
_GA102: Final = _Nv(3, (4,), 14.0625, 112.5)
_GA102_SRC: Final = (("nvlink", "GA102 whitepaper (NVLink bridge: four x4 links, 14.0625 GB/s each way)"),)
_BRIDGE: Final = (("nvlink", f"{_DS} (NVLink bridge)"),)

#: H800 SXM: 400 GB/s both ways (NVIDIA's H800 spec as quoted in github.com/deepseek-ai/DeepSeek-V3
#: issue 479; "a nominal bandwidth of 200GB/s", DeepEP issue 16 by its maintainers). ``topo -m`` shows
#: NV18 on some H800 boxes (issue 19, issue 30) and NV8 on others (vllm-project/vllm issue 40755:
#: an 8x H800 box, every GPU pair NV8; "8 active links", DeepSeek-V3 issue 479).
_H800_SRC: Final = (
    ("nvlink", "400 GB/s both ways: NVIDIA's H800 spec (DeepSeek-V3#479), 200 GB/s nominal (DeepEP#16)"),
    ("links", "NV18 (topomap issues 19, 30) or NV8 (vllm#40755) in `topo -m`"),
)
#: A800 SXM4: 8 links at 25 GB/s each way, 400 GB/s in total (an 8x A800-SXM4-80GB NCCL report;
#: lium-io PR 1199: "only NVLink is cut to 400 GB/s"; DeepEP PR 517: "NVLINK bandwidth: 25GB/s * 8").
_A800_SRC: Final = (("nvlink", f"{_DS}; 8 links at 25 GB/s (DeepEP PR 517), export variant"),)
_UNPUBLISHED: Final = (("nvlink", f"{_DS} (NVLink bridge; link count not published)"),)

_NVIDIA_PARTS: Final[tuple[GpuPart, ...]] = (
    # Pascal
    _p(
        "Tesla P100-SXM2",
        "pascal",
        "6.0",
        "sxm",
        16,
        (0x15F9,),
        "P100 SXM2",
        "P100 SXM2 16GB",
        nv=_Nv(1, (4,), 20, 160),
    ),
    # Volta
    _p("Tesla V100-SXM2-16GB", "volta", "7.0", "sxm", 16, (0x1DB1, 0x1DF5), "V100 SXM2 16GB", nv=_Nv(2, (6,), 25, 300)),
    _p("Tesla V100-SXM2-32GB", "volta", "7.0", "sxm", 32, (0x1DB5,), "V100 SXM2 32GB", nv=_Nv(2, (6,), 25, 300)),
    _p(
        "Tesla V100-SXM3-32GB",
        "volta",
        "7.0",
        "sxm",
        32,
        (0x1DB8,),
        "V100 SXM3 32GB",
        "Tesla V100-SXM3-32GB-H",
        nv=_Nv(2, (6,), 25, 300),
    ),
    _p("Tesla V100-PCIE-16GB", "volta", "7.0", "pcie", 16, (0x1DB4,), "V100 PCIe 16GB"),
    _p("Tesla V100-PCIE-32GB", "volta", "7.0", "pcie", 32, (0x1DB6,), "V100 PCIe 32GB"),
    _p("Tesla V100S-PCIE-32GB", "volta", "7.0", "pcie", 32, (0x1DF6,), "V100S PCIe 32GB"),
    # Turing (NVLink 2 bridges: 2 links, 100 GB/s in total)
    _p("NVIDIA TITAN RTX", "turing", "7.5", "pcie", 24, (), "TITAN RTX", nv=_Nv(2, (2,), 25, 100)),
    _p("Quadro RTX 8000", "turing", "7.5", "pcie", 48, (), nv=_Nv(2, (2,), 25, 100)),
    _p("Quadro RTX 6000", "turing", "7.5", "pcie", 24, (), nv=_Nv(2, (2,), 25, 100)),
    _p("NVIDIA GeForce RTX 2080 Ti", "turing", "7.5", "pcie", 11, (), "GeForce RTX 2080 Ti", nv=_Nv(2, (2,), 25, 100)),
    # Ampere
    _p("NVIDIA A100-SXM4-40GB", "ampere", "8.0", "sxm", 40, (0x20B0,), "A100 SXM4 40GB", nv=_Nv(3, (12,), 25, 600)),
    _p("NVIDIA A100-SXM4-80GB", "ampere", "8.0", "sxm", 80, (0x20B2,), "A100 SXM4 80GB", nv=_Nv(3, (12,), 25, 600)),
    _p(
        "NVIDIA A100-PCIE-40GB",
        "ampere",
        "8.0",
        "pcie",
        40,
        (0x20B1, 0x20F1),
        "A100 PCIe 40GB",
        nv=_Nv(3, (12,), 25, 600),
        sources=(("nvlink", f"{_DS} (NVLink bridge, 3 bridges)"),),
    ),
    _p(
        "NVIDIA A100 80GB PCIe",
        "ampere",
        "8.0",
        "pcie",
        80,
        (0x20B5,),
        "A100 PCIe 80GB",
        nv=_Nv(3, (12,), 25, 600),
        sources=(("nvlink", f"{_DS} (NVLink bridge, 3 bridges)"),),
    ),
    _p(
        "NVIDIA A800-SXM4-80GB",
        "ampere",
        "8.0",
        "sxm",
        80,
        (0x20F3,),
        "A800 SXM4 80GB",
        nv=_Nv(3, (8,), 25, 400),
        export=True,
        sources=_A800_SRC,
    ),
    _p(
        "NVIDIA A800-SXM4-40GB",
        "ampere",
        "8.0",
        "sxm",
        40,
        (0x20BD,),
        "A800 SXM4 40GB",
        nv=_Nv(3, (8,), 25, 400),
        export=True,
        sources=_A800_SRC,
    ),
    _p(
        "NVIDIA A800 80GB PCIe",
        "ampere",
        "8.0",
        "pcie",
        80,
        (0x20F5,),
        "A800 PCIe 80GB",
        nv=_Nv(3, (), 25, 400, 12),
        export=True,
        sources=_UNPUBLISHED,
    ),
    _p(
        "NVIDIA A800 40GB PCIe",
        "ampere",
        "8.0",
        "pcie",
        40,
        (0x20F6,),
        "A800 PCIe 40GB",
        "A800 40GB Active",
        nv=_Nv(3, (), 25, 400, 12),
        export=True,
        sources=_UNPUBLISHED,
    ),
    _p("NVIDIA A30", "ampere", "8.0", "pcie", 24, (0x20B7,), "A30 PCIe", nv=_Nv(3, (4,), 25, 200)),
    _p("NVIDIA A10", "ampere", "8.6", "pcie", 24, (0x2236,)),
    _p(
        "NVIDIA A40",
        "ampere",
        "8.6",
        "pcie",
        48,
        (0x2235,),
        nv=_GA102,
        sources=(("nvlink", "A40 product brief PB-09976-001_v04 (NVLink bridge)"),),
    ),
    _p("NVIDIA RTX A6000", "ampere", "8.6", "pcie", 48, (0x2230,), nv=_GA102, sources=_BRIDGE),
    _p("NVIDIA RTX A5000", "ampere", "8.6", "pcie", 24, (0x2231,), nv=_GA102, sources=_BRIDGE),
    _p("NVIDIA GeForce RTX 3090", "ampere", "8.6", "pcie", 24, (0x2204,), nv=_GA102, sources=_GA102_SRC),
    _p("NVIDIA GeForce RTX 3090 Ti", "ampere", "8.6", "pcie", 24, (0x2203,), nv=_GA102, sources=_GA102_SRC),
    # Ada Lovelace
    _p("NVIDIA L4", "ada", "8.9", "pcie", 24, (0x27B8,)),
    _p("NVIDIA L40", "ada", "8.9", "pcie", 48, (0x26B5,)),
    _p("NVIDIA L40S", "ada", "8.9", "pcie", 48, (0x26B9,)),
    _p("NVIDIA RTX 6000 Ada Generation", "ada", "8.9", "pcie", 48, (0x26B1,)),
    _p("NVIDIA GeForce RTX 4090", "ada", "8.9", "pcie", 24, (0x2684,)),
    # Hopper
    _p(
        "NVIDIA H100 80GB HBM3",
        "hopper",
        "9.0",
        "sxm",
        80,
        (0x2330,),
        "H100 SXM5 80GB",
        "H100 SXM",
        nv=_Nv(4, (18,), 25, 900),
    ),
    _p("NVIDIA H100 PCIe", "hopper", "9.0", "pcie", 80, (0x2331,), nv=_Nv(4, (12,), 25, 600), sources=_BRIDGE),
    _p(
        "NVIDIA H100 NVL",
        "hopper",
        "9.0",
        "pcie",
        94,
        (0x2321,),
        "H100L 94GB",
        nv=_Nv(4, (12,), 25, 600),
        sources=_BRIDGE,
    ),
    _p(
        "NVIDIA H800 80GB HBM3",
        "hopper",
        "9.0",
        "sxm",
        80,
        (0x2324,),
        "NVIDIA H800",
        "H800 SXM5 80GB",
        "H800 SXM",
        nv=_Nv(4, (8, 18), 25, 400),
        export=True,
        sources=_H800_SRC,
    ),
    _p(
        "NVIDIA H800 PCIe",
        "hopper",
        "9.0",
        "pcie",
        80,
        (0x2322,),
        nv=_Nv(4, (), 25, 400, 12),
        export=True,
        sources=_UNPUBLISHED,
    ),
    _p(
        "NVIDIA H200",
        "hopper",
        "9.0",
        "sxm",
        141,
        (0x2335,),
        "H200 SXM 141GB",
        "H200 SXM",
        nv=_Nv(4, (18,), 25, 900),
        sources=(("nvlink", "MLCommons H200-SXM-141GBx8: 18x 4th Gen NVLink, 900GB/s"),),
    ),
    _p("NVIDIA H200 NVL", "hopper", "9.0", "pcie", 141, (0x233B,), nv=_Nv(4, (18,), 25, 900), sources=_BRIDGE),
    _p("NVIDIA H20", "hopper", "9.0", "sxm", 96, (0x2329,), nv=_Nv(4, (18,), 25, 900), export=True),
    _p("NVIDIA H20 HBM3e", "hopper", "9.0", "sxm", 141, (0x232C,), "H20-3e", nv=_Nv(4, (18,), 25, 900), export=True),
    _p(
        "NVIDIA GH200 480GB",
        "hopper",
        "9.0",
        "superchip",
        96,
        (0x2342,),
        "GH200 120GB / 480GB",
        nv=_Nv(4, (18,), 25, 900),
    ),
    _p("NVIDIA GH200 144G HBM3e", "hopper", "9.0", "superchip", 144, (0x2348,), nv=_Nv(4, (18,), 25, 900)),
    # Blackwell
    _p("NVIDIA B200", "blackwell", "10.0", "sxm", 180, (0x2901,), nv=_Nv(5, (18,), 50, 1800)),
    _p("NVIDIA GB200", "blackwell", "10.0", "superchip", 186, (0x2941,), "HGX GB200", nv=_Nv(5, (18,), 50, 1800)),
    _p("NVIDIA GeForce RTX 5090", "blackwell", "12.0", "pcie", 32, (0x2B85,)),
    # DGX Spark's GB10 (Grace + Blackwell on one package): 128 GB of LPDDR5X shared with the CPU, no NVLink
    # to another GPU; its ConnectX-7 is what joins two Sparks
    _p(
        "NVIDIA GB10",
        "blackwell",
        "12.1",
        "superchip",
        128,
        (),
        "GB10",
        sources=(("memory", "NVIDIA DGX Spark datasheet: 128 GB LPDDR5x coherent unified system memory"),),
    ),
)

# --- AMD (issue 35) ----------------------------------------------------------------------------------
# AMD Instinct and Radeon parts (vendor 1002): ``links`` are XGMI (Infinity Fabric) links per GPU, where
# published or seen (MI300X: 7, one to each other GPU of the 8: amd-smi topology, rocm-smi --showtopo,
# RCCL's topo_8p_940.xml), ``gbps_per_link`` an XGMI link's data rate per direction where AMD publishes
# it; memory as sold. The LLVM target and lane rate are in topomap.base.amd_parts. Names as amd-smi,
# rocminfo and rocm-smi print them (tests/data/real-topologies/amd/).

_XGMI_300X: Final = "amd-smi xgmi (amdsmi CHANGELOG, ROCm 6.1): 32 Gb/s per lane, 512 Gb/s per link"
_XGMI_250: Final = "ROCm docs, MI250 microarchitecture: 25 GT/s, 50 GB/s per 16-wide link"
_XGMI_100: Final = "ROCm docs, MI100 microarchitecture: hives of four over 23 GT/s links"
_MEM: Final = "AMD product page; 192 GiB = 206141652992 bytes in rocm-smi on MI308X"


def _a(
    name: str,
    arch: str,
    form: str,
    mem: float,
    ids: tuple[int, ...],
    *spellings: str,
    links: int | None = None,
    gts: float | None = None,
    src: str = "",
) -> GpuPart:
    """One AMD row: XGMI links per GPU and, where AMD publishes it, a link's rate (GT/s × 16 lanes / 8)."""
    sources = (("memory", _MEM),) + ((("xgmi", src),) if src else ())
    return GpuPart(
        name,
        arch,
        None,
        form,
        mem,
        ids,
        spellings,
        links=(links,) if links else (),
        gbps_per_link=gts * 16 / 8 if gts is not None else None,
        sources=sources,
        vendor="amd",
        link="xgmi",
    )


#: AMD Instinct and Radeon parts, by PCI device id (vendor 1002).
AMD_GPU_PARTS: Final[tuple[GpuPart, ...]] = (
    _a(
        "AMD Instinct MI300X",
        "cdna3",
        "oam",
        192,
        (0x74A1,),
        "MI300X",
        "AMD Instinct MI300X OAM",
        links=7,
        gts=32,
        src=_XGMI_300X,
    ),
    _a("AMD Instinct MI300X VF", "cdna3", "oam", 192, (0x74B5,), "MI300X VF", links=7, gts=32, src=_XGMI_300X),
    _a("AMD Instinct MI308X", "cdna3", "oam", 192, (0x74A2,), "MI308X", links=7),
    _a("AMD Instinct MI325X", "cdna3", "oam", 256, (0x74A5,), "MI325X", links=7),
    _a("AMD Instinct MI300A", "cdna3", "apu", 128, (0x74A0,), "MI300A"),
    _a("AMD Instinct MI355X", "cdna4", "oam", 288, (0x75A3,), "MI355X", links=7),
    _a("AMD Instinct MI350X", "cdna4", "oam", 288, (0x75A0,), "MI350X", links=7),
    _a(
        "AMD Instinct MI250X",
        "cdna2",
        "oam",
        64,
        (0x7408,),
        "MI250X",
        "AMD Instinct MI250X/MI250",
        gts=25,
        src=_XGMI_250,
    ),
    _a("AMD Instinct MI250", "cdna2", "oam", 64, (0x740C,), "MI250", gts=25, src=_XGMI_250),
    _a("AMD Instinct MI210", "cdna2", "pcie", 64, (0x740F,), "MI210"),
    _a("AMD Instinct MI100", "cdna1", "pcie", 32, (0x738C,), "MI100", links=3, gts=23, src=_XGMI_100),
    _a("AMD Instinct MI60 / MI50", "gcn5", "pcie", 32, (0x66A1,), "MI50", "MI60", "Vega 20"),
    _a("Radeon Pro Vega II", "gcn5", "pcie", 32, (0x66A3,), "Radeon Pro Vega II Duo"),
    _a("AMD Radeon RX 7900 XTX", "rdna3", "pcie", 24, (0x744C,), "Radeon RX 7900 XTX"),
)


#: Every GPU part topomap knows: NVIDIA's, then AMD's.
GPU_PARTS: Final[tuple[GpuPart, ...]] = _NVIDIA_PARTS + AMD_GPU_PARTS

#: What ``nvidia-smi nvlink -s`` (and NVML's link speed) prints per link, over the data rate per
#: direction, by NVLink generation: the signalling rate. NVLink 4 and 5 print 17/16 of it (H100:
#: 26.562 GB/s, tests/data/real-topologies/nvidia-smi/hpe-dl380a-gen11-2x-h100-pcie-nvlink-s.txt);
#: NVLink 2 prints 33/32 (V100: 25.781 GB/s, a WeChat cluster's public `nvlink --status` of a
#: V100-SXM2-32GB); NVLink 3 prints the data rate (A100-SXM4: 25 GB/s, nccl-tests#228; RTX 3090
#: bridge: 14.062). NVLink 1 not seen: its printed rate is taken as the data rate.
SIGNALLING: Final[dict[int, float]] = {1: 1.0, 2: 33 / 32, 3: 1.0, 4: 17 / 16, 5: 17 / 16}

#: NVLink-C2C between a Grace CPU and its Hopper GPU: 900 GB/s both ways, 450 per direction (NVIDIA
#: Grace Hopper Superchip architecture whitepaper).
NVLINK_C2C_GBPS: Final[float] = 450.0


def nvlink_parts() -> tuple[GpuPart, ...]:
    """The parts with NVLink (a published link count, or a die's maximum, and a rate)."""
    return tuple(p for p in GPU_PARTS if p.has_nvlink)


def max_nvlinks(generation: int | None = None) -> int:
    """The most NVLinks any part (of this generation, when given) can report."""
    counts = [p.full_links for p in nvlink_parts() if generation is None or p.nvlink_generation == generation]
    return max(counts, default=0)


def nvlink_generation_of_cc(cc: str | None) -> int | None:
    """The NVLink generation every part of this compute capability's major shares (9.x → 4), or
    None when the table's parts of it do not agree or none has NVLink."""
    major = (cc or "").split(".")[0]
    gens = {p.nvlink_generation for p in nvlink_parts() if p.cc and p.cc.split(".")[0] == major}
    return gens.pop() if len(gens) == 1 else None


def printed_rate(part: GpuPart) -> float | None:
    """What ``nvidia-smi nvlink -s`` prints per link of this part: its data rate × its generation's
    signalling factor (H100: 25 → 26.5625)."""
    if part.gbps_per_link is None or part.nvlink_generation is None:
        return None
    return part.gbps_per_link * SIGNALLING.get(part.nvlink_generation, 1.0)
