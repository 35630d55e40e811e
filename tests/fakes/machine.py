"""A fake machine is data: GPUs, NICs, where they sit in the PCIe tree, links, and which calls fail.

The same description drives the fake NVML (fakes/nvml.py), the fake CUDA driver
(fakes/cuda.py) and a sysfs tree written to disk (fakes/sysfs.py), so the three sources agree
the way they do on a real machine. Path levels for NVML are computed here from the layout,
independently of topomap's own sysfs classification.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.fakes.amd_machine import FakeAmd

GIB = 1024**3


@dataclass
class FakeLink:
    active: bool = True
    version_enum: int = 6  # nvmlNvlinkVersion_t: 6 = NVLink 4.0
    remote_type: int = 2  # 0 GPU, 1 IBMNPU, 2 SWITCH, 0xFF unknown
    p2p_capable: bool = True  # NVML_NVLINK_CAP_P2P_SUPPORTED; False on a PCIe card without a bridge
    remote_bus: str | bytes = ""  # NVML busId text; "" for a switch the host cannot see; bytes: raw


@dataclass
class FakeFabric:
    cluster_uuid: bytes = bytes(16)
    clique_id: int = 0
    state: int = 3  # 0 not supported, 1 not started, 2 in progress, 3 completed
    status: int = 0
    health_mask: int = 0


@dataclass
class FakeGpu:
    bus: str  # sysfs form, "0000:18:00.0"
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = ""
    arch: int = 9
    cc: tuple[int, int] = (9, 0)
    memory_bytes: int = 80 * GIB
    pcie: tuple[int, int, int, int] = (5, 16, 5, 16)  # cur gen, cur width, max gen, max width
    persistence: int = 1
    nvlinks: list[FakeLink] | None = None  # None: NVLink NotSupported (a PCIe card)
    link_count_field: bool = True  # NVML_FI_DEV_NVLINK_LINK_COUNT answers
    nvlink_speed_mbps: int = 0
    fabric: FakeFabric | None = None  # None: NotSupported
    mig: tuple[int, int] | None = (0, 0)  # None: NotSupported
    gpu_numa: int | None = None  # Grace-class: GPU memory is this NUMA node
    device_id: str = "0x2330"


@dataclass
class FakeNic:
    name: str
    bus: str
    link_layer: str = "InfiniBand"
    rate: str = "400 Gb/sec (4X NDR)"
    state: str = "4: ACTIVE"
    netdev: str | None = None


@dataclass
class Switch:
    """A PCIe switch: devices (bus ids) and switches below its downstream ports."""

    members: list[str] = field(default_factory=list)
    below: list[Switch] = field(default_factory=list)


@dataclass
class RootComplex:
    numa: int
    ports: list[str | Switch] = field(default_factory=list)  # a device bus id or a switch per root port


@dataclass
class FakeMachine:
    name: str
    gpus: list[FakeGpu]
    nics: list[FakeNic] = field(default_factory=list)
    roots: list[RootComplex] = field(default_factory=list)
    numa_cpus: list[str] = field(default_factory=lambda: ["0-31"])
    numa_memory_bytes: list[int] = field(default_factory=lambda: [512 * GIB])
    cpu_count: int = 32
    driver: str = "550.54.15"
    nvml_version: str = "12.550.54.15"
    cuda_version: int = 12040
    # P2P status codes for PCIe-only pairs (read, write, nvlink, atomics); NVLink pairs get OK.
    pcie_p2p: tuple[int, int, int, int] = (0, 0, 5, 5)
    # NVML failures: (function, gpu index or None) → NVML error code; gpu index -1 = every GPU.
    errors: dict[tuple[str, int | None], int] = field(default_factory=dict)
    # Functions the (old) driver lacks: NVMLError_FunctionNotFound at call time.
    missing: set[str] = field(default_factory=set)
    # GPU index → how many of its per-device calls succeed before GpuIsLost.
    lost_after: dict[int, int] = field(default_factory=dict)
    init_error: int | None = None  # nvmlInit fails with this code (12: no library)
    # CUDA side
    cuda_missing_library: bool = False
    cuda_init_error: int | None = None
    cuda_missing_functions: set[str] = field(default_factory=set)
    cuda_order: list[int] | None = None  # GPU indices in CUDA ordinal order (CUDA_VISIBLE_DEVICES)
    cuda_can_access: bool | None = None  # None: derived from P2P read/write status
    dmi_vendor: str = "Supermicro"
    cgroup_cpus: str | None = None  # the process's cpuset (a Slurm job, a container)
    hidden_gpus: list[FakeGpu] = field(default_factory=list)  # on the PCI bus, not given to the process
    hypervisor: bool = False
    iommu: bool = False
    amd: FakeAmd | None = None  # the host's AMD GPUs (issue 35), answered by the fake amdsmi

    # --- derived facts the fakes share --------------------------------------------------
    def numa_of(self, bus: str) -> int:
        for root in self.roots:
            if bus in _devices_of(root):
                return root.numa
        raise KeyError(bus)

    def nvml_level(self, a: str, b: str) -> int:
        """nvmlGpuTopologyLevel_t for two devices, from the layout."""
        ra, pa = self._place(a)
        rb, pb = self._place(b)
        if ra is not rb:
            return 40 if ra.numa == rb.numa else 50
        if not pa or not pb or pa[0] is not pb[0]:
            return 30
        if pa[-1] is pb[-1]:
            return 10
        return 20

    def _place(self, bus: str) -> tuple[RootComplex, list[Switch]]:
        for root in self.roots:
            for port in root.ports:
                if port == bus:
                    return root, []
                if isinstance(port, Switch):
                    path = _switch_path(port, bus)
                    if path is not None:
                        return root, path
        raise KeyError(bus)

    def nvlinks_between(self, i: int, j: int) -> int:
        a, b = self.gpus[i], self.gpus[j]
        la = [x for x in a.nvlinks or [] if x.active]
        lb = [x for x in b.nvlinks or [] if x.active]
        direct = sum(1 for x in la if x.remote_type == 0 and _bus_eq(x.remote_bus, b.bus))
        sw = min(sum(1 for x in la if x.remote_type == 2), sum(1 for x in lb if x.remote_type == 2))
        return direct + sw


def _bus_eq(nvml_bus: str, sysfs_bus: str) -> bool:
    try:
        d, b, rest = nvml_bus.split(":")
        d2, b2, rest2 = sysfs_bus.split(":")
        return int(d, 16) == int(d2, 16) and int(b, 16) == int(b2, 16) and rest.lower() == rest2.lower()
    except ValueError:
        return False


def _switch_path(sw: Switch, bus: str) -> list[Switch] | None:
    if bus in sw.members:
        return [sw]
    for child in sw.below:
        sub = _switch_path(child, bus)
        if sub is not None:
            return [sw, *sub]
    return None


def _devices_of(root: RootComplex) -> list[str]:
    out: list[str] = []

    def walk(sw: Switch) -> None:
        out.extend(sw.members)
        for c in sw.below:
            walk(c)

    for port in root.ports:
        if isinstance(port, Switch):
            walk(port)
        else:
            out.append(port)
    return out


def nvml_bus(sysfs_bus: str) -> str:
    """NVML's spelling: 8-digit upper-case domain."""
    d, b, rest = sysfs_bus.split(":")
    return f"{int(d, 16):08X}:{b.upper()}:{rest.upper()}"
