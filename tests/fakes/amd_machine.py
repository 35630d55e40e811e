"""AMD GPUs of a fake machine, as data (issue 35): what the fake ``amdsmi`` (fakes/amdsmi.py) answers.

Pair answers are computed here from the layout the way AMD's code computes them (ROCm/rocm_smi_lib
``src/rocm_smi.cc`` @a129571): XGMI pairs weigh 15 per XGMI hop and report hops 1 whatever the hop
count; PCIe pairs weigh 20 per GPU-to-CPU segment plus the NUMA distance across NUMA nodes, with hops 2
on one node and 3 across; the KFD bandwidth exists for XGMI pairs only (NOT_SUPPORTED on PCIe pairs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

GB = 10**9


@dataclass
class FakeAmdGpu:
    bus: str  # "0000:0c:00.0"
    name: str = "AMD Instinct MI300X"
    device_id: int = 0x74A1
    memory_bytes: int = 192 * GB
    numa: int = 0
    gfx: str = "gfx942"
    uuid: str = ""
    pcie: tuple[int, int, int, int] = (32000, 16, 32000, 16)  # speed MT/s, width: current, then max


@dataclass
class FakeAmd:
    gpus: list[FakeAmdGpu]
    mesh: bool = True  # every pair on XGMI (MI300X); else only the pairs in ``xgmi``
    xgmi: dict[frozenset[int], int] = field(default_factory=dict)  # pair → XGMI hops (1 direct)
    links: dict[frozenset[int], int] = field(default_factory=dict)  # pair → XGMI links (default 1)
    numa_distance: int = 32
    pcie_p2p: bool = True
    driver: str = "6.8.5"
    lib_version: tuple[int, int, int] = (25, 2, 0)
    # (function, GPU index or None for calls on no GPU; -1 every GPU) → AMD SMI status code
    errors: dict[tuple[str, int | None], int] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)  # functions this binding lacks (AttributeError)
    init_error: int | None = None  # amdsmi_init fails with this status (34: DRIVER_NOT_LOADED)

    def xgmi_hops(self, i: int, j: int) -> int | None:
        if self.mesh:
            return 1
        return self.xgmi.get(frozenset((i, j)))


def mi300x_8() -> FakeAmd:
    """8x MI300X OAM on one XGMI mesh, 2 NUMA nodes (bus ids as AMD's amdsmi CHANGELOG prints them)."""
    buses = ["0c", "22", "38", "5c", "9f", "af", "bf", "df"]
    return FakeAmd(
        [
            FakeAmdGpu(f"0000:{b}:00.0", numa=0 if k < 4 else 1, uuid=f"{k:02x}ff74a1-0000-1000-80f4-5f11c0ff33{k:02x}")
            for k, b in enumerate(buses)
        ]
    )


def two_hives_64gb() -> FakeAmd:
    """8 GPUs in two XGMI hives of four (MI210 with Infinity Fabric bridges), one hive per socket."""
    hive = {frozenset((i, j)): 1 for grp in ((0, 1, 2, 3), (4, 5, 6, 7)) for i in grp for j in grp if i < j}
    return FakeAmd(
        [
            FakeAmdGpu(f"0000:{b}:00.0", "AMD Instinct MI210", 0x740F, 64 * GB, 0 if k < 4 else 1, "gfx90a")
            for k, b in enumerate(["05", "08", "47", "4a", "85", "88", "c5", "c8"])
        ],
        mesh=False,
        xgmi=hive,
    )
