"""Linux sysfs/procfs source: PCIe tree, NUMA nodes, NICs, IOMMU, virtualisation and container hints.

Needs no driver. The root is injectable (psutil's PROCFS_PATH idea): tests hand it a small
tree on disk holding ``sys/…`` and ``proc/…``. Optional files are read with :func:`cat`,
which returns a fallback instead of raising.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from topomap.base.cpus import format_cpulist
from topomap.base.links import pcie_gen_from_speed_text
from topomap.base.pciaddr import SYSFS_BDF
from topomap.model.nic_ids import layer_of_name
from topomap.model.snapshot import NicKind, NumaNode, PciKind

NVIDIA_VENDOR = "0x10de"
_HOST_BRIDGE = re.compile(r"^pci[0-9a-f]{4,8}:[0-9a-f]{2}$")
_RATE = re.compile(r"^\s*([0-9.]+)\s*Gb/sec")


def cat(path: Path, fallback: str | None = None) -> str | None:
    """Stripped content of a small file, or ``fallback`` when it cannot be read."""
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return fallback


def _int(text: str | None, base: int = 10) -> int | None:
    if text is None:
        return None
    try:
        return int(text, base)
    except ValueError:
        return None


@dataclass
class PciFunction:
    bus_id: str
    chain: list[str]  # host bridge, bridges…, the function itself
    vendor: str | None
    device: str | None
    pci_class: int | None
    numa_node: int | None  # None for -1 (unknown / non-NUMA)
    local_cpulist: str | None
    link_gen_current: int | None
    link_width_current: int | None
    link_gen_max: int | None
    link_width_max: int | None
    iommu_group: str | None

    @property
    def is_nvidia_gpu(self) -> bool:
        return self.vendor == NVIDIA_VENDOR and self.pci_class is not None and (self.pci_class >> 16) == 0x03

    @property
    def is_nvswitch(self) -> bool:
        return self.vendor == NVIDIA_VENDOR and self.pci_class == 0x068000

    @property
    def is_bridge(self) -> bool:
        return self.pci_class is not None and (self.pci_class >> 8) == 0x0604

    @property
    def locality(self) -> object | None:
        """NUMA node, or the local CPU list where the kernel reports -1 (VMs, single-node boxes)."""
        return self.numa_node if self.numa_node is not None else self.local_cpulist


@dataclass
class SysNic:
    name: str
    kind: NicKind
    pci_bus_id: str | None
    rdma: bool
    speed_gbit_s: float | None
    state: str | None
    netdevs: list[str] = field(default_factory=list)
    vendor: str | None = None  # PCI ids of the function (`/sys/.../device/vendor`, `device`): the NIC family
    device: str | None = None


@dataclass
class SysfsResult:
    functions: dict[str, PciFunction] = field(default_factory=dict)
    numa_nodes: list[NumaNode] = field(default_factory=list)
    nics: list[SysNic] = field(default_factory=list)
    hostname: str | None = None
    cpu_model: str | None = None
    sockets: int | None = None
    virtualization: str | None = None
    container: str | None = None
    cgroup_cpus: str | None = None
    iommu: str | None = None


def _speed_gen(text: str | None) -> int | None:
    return pcie_gen_from_speed_text(text) if text else None


class SysfsReader:
    """Reads one machine's sysfs/procfs under ``root`` (``/`` on a real machine)."""

    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)
        self.sys = self.root / "sys"
        self.proc = self.root / "proc"

    # --- PCI -------------------------------------------------------------------------------
    def pci_function(self, bus_id: str) -> PciFunction | None:
        """`lspci -vvv -s <bus_id>` essentials and the chain up to the host bridge."""
        link = self.sys / "bus" / "pci" / "devices" / bus_id
        if not link.exists():
            return None
        real = Path(os.path.realpath(link))
        try:
            rel = real.relative_to(Path(os.path.realpath(self.sys / "devices")))
        except ValueError:
            return None
        chain: list[str] = []
        for part in rel.parts:
            if _HOST_BRIDGE.match(part) or SYSFS_BDF.match(part):
                chain.append(part)
            elif chain:
                break
        if not chain or chain[-1] != bus_id:
            return None
        pclass = _int(cat(real / "class"), 16)
        numa = _int(cat(real / "numa_node"))
        return PciFunction(
            bus_id=bus_id,
            chain=chain,
            vendor=cat(real / "vendor"),
            device=cat(real / "device"),
            pci_class=pclass,
            numa_node=numa if numa is not None and numa >= 0 else None,
            local_cpulist=cat(real / "local_cpulist"),
            link_gen_current=_speed_gen(cat(real / "current_link_speed")),
            link_width_current=_int(cat(real / "current_link_width")),
            link_gen_max=_speed_gen(cat(real / "max_link_speed")),
            link_width_max=_int(cat(real / "max_link_width")),
            iommu_group=os.path.basename(os.path.realpath(real / "iommu_group"))
            if (real / "iommu_group").exists()
            else None,
        )

    def pci_bus_ids(self) -> list[str]:
        base = self.sys / "bus" / "pci" / "devices"
        try:
            return sorted(p.name for p in base.iterdir() if SYSFS_BDF.match(p.name))
        except OSError:
            return []

    def _pci_of(self, device_link: Path) -> str | None:
        """Bus id a class device (``/sys/class/net/eth0/device``) points at."""
        if not device_link.exists():
            return None
        name = Path(os.path.realpath(device_link)).name
        return name if SYSFS_BDF.match(name) else None

    # --- NICs ------------------------------------------------------------------------------
    def nics(self) -> list[SysNic]:
        """RDMA devices (`ibv_devinfo`, what `nvidia-smi topo -m` lists) and physical netdevs."""
        out: list[SysNic] = []
        by_pci: dict[str, SysNic] = {}
        ib = self.sys / "class" / "infiniband"
        for hca in sorted(ib.iterdir()) if ib.is_dir() else []:
            bus = self._pci_of(hca / "device")
            ports = sorted((hca / "ports").iterdir()) if (hca / "ports").is_dir() else []
            layer = cat(ports[0] / "link_layer") if ports else None
            rate = cat(ports[0] / "rate") if ports else None
            state = cat(ports[0] / "state") if ports else None
            m = _RATE.match(rate or "")
            kind: NicKind = "infiniband" if layer == "InfiniBand" else "roce" if layer == "Ethernet" else "unknown"
            if layer_of_name(hca.name) == "efa":  # the efa driver's link layer is "Unspecified" (model/nic_ids)
                kind = "efa"
            nic = SysNic(
                name=hca.name,
                kind=kind,
                pci_bus_id=bus,
                rdma=True,
                speed_gbit_s=float(m.group(1)) if m else None,
                state=state.split(":", 1)[-1].strip().lower() if state else None,
                vendor=cat(hca / "device" / "vendor"),
                device=cat(hca / "device" / "device"),
            )
            out.append(nic)
            if bus:
                by_pci[bus] = nic
        net = self.sys / "class" / "net"
        for dev in sorted(net.iterdir()) if net.is_dir() else []:
            bus = self._pci_of(dev / "device")
            if bus is None:
                continue  # virtual interface (lo, docker0, veth…)
            if bus in by_pci:
                by_pci[bus].netdevs.append(dev.name)
                continue
            speed = _int(cat(dev / "speed"))
            out.append(
                SysNic(
                    name=dev.name,
                    kind="ethernet",
                    pci_bus_id=bus,
                    rdma=False,
                    speed_gbit_s=speed / 1000.0 if speed is not None and speed > 0 else None,
                    state=cat(dev / "operstate"),
                    netdevs=[dev.name],
                    vendor=cat(dev / "device" / "vendor"),
                    device=cat(dev / "device" / "device"),
                )
            )
        return out

    # --- NUMA and host ---------------------------------------------------------------------
    def numa_nodes(self) -> list[NumaNode]:
        """`numactl -H`: nodes, their CPUs, memory and distances."""
        base = self.sys / "devices" / "system" / "node"
        nodes: list[NumaNode] = []
        for d in sorted(base.glob("node[0-9]*"), key=lambda p: int(p.name[4:])) if base.is_dir() else []:
            mem = None
            meminfo = cat(d / "meminfo") or ""
            m = re.search(r"MemTotal:\s+(\d+)\s*kB", meminfo)
            if m:
                mem = int(m.group(1)) * 1024
            dist = cat(d / "distance")
            nodes.append(
                NumaNode(
                    id=int(d.name[4:]),
                    cpus=cat(d / "cpulist"),
                    memory_total_bytes=mem,
                    distances=[int(x) for x in dist.split()] if dist else None,
                )
            )
        return nodes

    def cpu_model_and_sockets(self) -> tuple[str | None, int | None]:
        info = cat(self.proc / "cpuinfo") or ""
        m = re.search(r"^model name\s*:\s*(.+)$", info, re.M)
        sockets = {s for s in re.findall(r"^physical id\s*:\s*(\d+)$", info, re.M)}
        return (m.group(1).strip() if m else None), (len(sockets) or None)

    def virtualization(self) -> str | None:
        """Hypervisor hints: the cpuinfo flag and the DMI vendor/product."""
        dmi = self.sys / "class" / "dmi" / "id"
        vendor = cat(dmi / "sys_vendor") or ""
        product = cat(dmi / "product_name") or ""
        for needle, label in (
            ("Amazon EC2", "Amazon EC2"),
            ("Google", "Google Compute Engine"),
            ("Microsoft Corporation", "Hyper-V"),
            ("QEMU", "kvm"),
            ("KVM", "kvm"),
            ("VMware", "vmware"),
            ("Xen", "xen"),
            ("OpenStack", "kvm"),
        ):
            if needle in vendor or needle in product:
                return label
        flags = re.search(r"^flags\s*:(.*)$", cat(self.proc / "cpuinfo") or "", re.M)
        if flags and " hypervisor" in f" {flags.group(1)}":
            return "unknown hypervisor"
        return None

    def container(self, env: dict[str, str]) -> str | None:
        if "KUBERNETES_SERVICE_HOST" in env:
            return "kubernetes"
        if (self.root / ".dockerenv").exists():
            return "docker"
        if (self.root / "run" / ".containerenv").exists():
            return "podman"
        cg = cat(self.proc / "1" / "cgroup") or ""
        for needle, label in (("kubepods", "kubernetes"), ("docker", "docker"), ("lxc", "lxc")):
            if needle in cg:
                return label
        return None

    def cgroup_cpus(self) -> str | None:
        """The CPUs this process may run on (its affinity: the cpuset of its own cgroup, a Slurm
        job's, a container's, taskset's). Not the root cgroup's file, which inside a Slurm job or
        a nested cgroup is the host's. Live: ``os.sched_getaffinity``; a recorded tree: its
        ``/proc/self/status`` ``Cpus_allowed_list``."""
        if self.root == Path("/") and hasattr(os, "sched_getaffinity"):
            return format_cpulist(sorted(os.sched_getaffinity(0))) or None
        status = cat(self.proc / "self" / "status") or ""
        m = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.M)
        return m.group(1) if m else None

    def iommu(self) -> str | None:
        """IOMMU state: translated IOMMU makes PCIe P2P slow or broken (nccl#841)."""
        cmdline = cat(self.proc / "cmdline") or ""
        if "iommu=pt" in cmdline:
            return "passthrough"
        cls = self.sys / "class" / "iommu"
        if cls.is_dir() and any(cls.iterdir()):
            return "on"
        if (self.sys / "class").is_dir():
            return "off"
        return None

    def read(self, env: dict[str, str]) -> SysfsResult:
        """Everything above for this machine."""
        r = SysfsResult()
        for bus in self.pci_bus_ids():
            fn = self.pci_function(bus)
            if fn is not None:
                r.functions[bus] = fn
        r.numa_nodes = self.numa_nodes()
        r.nics = self.nics()
        r.hostname = cat(self.proc / "sys" / "kernel" / "hostname")
        r.cpu_model, r.sockets = self.cpu_model_and_sockets()
        r.virtualization = self.virtualization()
        r.container = self.container(env)
        r.cgroup_cpus = self.cgroup_cpus()
        r.iommu = self.iommu()
        return r


def chain_kind(fn_chain: list[str], functions: dict[str, PciFunction], node: str) -> PciKind:
    """Kind of one element of a chain: host bridge, root port, switch port, or endpoint."""
    if _HOST_BRIDGE.match(node):
        return "host-bridge"
    f = functions.get(node)
    if f is None or not f.is_bridge:
        if f is not None and f.is_nvidia_gpu:
            return "gpu"
        if f is not None and f.is_nvswitch:
            return "nvswitch"
        if f is not None and f.pci_class is not None and (f.pci_class >> 16) == 0x02:
            return "nic"
        return "other"
    pos = fn_chain.index(node)
    depth = pos - 1  # 0 = root port
    if depth == 0:
        return "bridge"
    return "switch-upstream" if depth % 2 == 1 else "switch-downstream"
