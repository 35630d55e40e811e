"""Write a FakeMachine as a small sysfs/procfs tree on disk, the shape the real kernel gives.

``/sys/devices/pci0000:RR/<root port>/<switch up>/<switch down>/<device>`` with
``/sys/bus/pci/devices/<bdf>`` symlinks, ``/sys/class/infiniband`` and ``/sys/class/net``
links into the PCI functions, NUMA nodes, and a few host hints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tests.fakes.machine import FakeMachine, RootComplex, Switch

_GEN_SPEED = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe"}


class _Writer:
    def __init__(self, root: Path, m: FakeMachine) -> None:
        self.root = root
        self.m = m
        self.sys = root / "sys"
        used = {int(b.split(":")[1], 16) for b in [g.bus for g in [*m.gpus, *m.hidden_gpus]] + [n.bus for n in m.nics]}
        self.free = (b for b in range(0xEF, 0, -1) if b not in used)
        self.gpus = {g.bus: g for g in [*m.gpus, *m.hidden_gpus]}
        self.nics = {n.bus: n for n in m.nics}
        self.cpus_of_numa = m.numa_cpus

    def bridge_id(self) -> str:
        return f"0000:{next(self.free):02x}:00.0"

    def function(self, parent: Path, bus: str, numa: int, cls: str, vendor: str, device: str, gen: int) -> Path:
        d = parent / bus
        d.mkdir(parents=True)
        files = {
            "class": cls,
            "vendor": vendor,
            "device": device,
            "numa_node": str(numa),
            "local_cpulist": self.cpus_of_numa[numa] if numa >= 0 else "0-" + str(self.m.cpu_count - 1),
            "current_link_speed": _GEN_SPEED[gen],
            "max_link_speed": _GEN_SPEED[gen],
            "current_link_width": "16",
            "max_link_width": "16",
        }
        for k, v in files.items():
            (d / k).write_text(v + "\n")
        link = self.sys / "bus" / "pci" / "devices" / bus
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(d, link.parent), link)
        return d

    def device(self, parent: Path, bus: str, numa: int) -> None:
        kernel_numa = -1 if self.m.hypervisor else numa
        if bus in self.gpus:
            g = self.gpus[bus]
            self.function(parent, bus, kernel_numa, "0x030200", "0x10de", g.device_id, g.pcie[2])
        elif bus in self.nics:
            n = self.nics[bus]
            cls = "0x020700" if n.link_layer == "InfiniBand" else "0x020000"
            d = self.function(parent, bus, kernel_numa, cls, "0x15b3", "0x1021", 5)
            self.nic(n, d)
        else:
            self.function(parent, bus, kernel_numa, "0x068000", "0x10de", "0x22a3", 4)  # NVSwitch

    def nic(self, n: object, pci_dir: Path) -> None:
        from tests.fakes.machine import FakeNic

        assert isinstance(n, FakeNic)
        hca = self.sys / "class" / "infiniband" / n.name
        (hca / "ports" / "1").mkdir(parents=True)
        (hca / "ports" / "1" / "rate").write_text(n.rate + "\n")
        (hca / "ports" / "1" / "link_layer").write_text(n.link_layer + "\n")
        (hca / "ports" / "1" / "state").write_text(n.state + "\n")
        os.symlink(os.path.relpath(pci_dir, hca), hca / "device")
        if n.netdev:
            net = self.sys / "class" / "net" / n.netdev
            net.mkdir(parents=True)
            os.symlink(os.path.relpath(pci_dir, net), net / "device")
            (net / "speed").write_text("400000\n")
            (net / "operstate").write_text("up\n")

    def switch(self, parent: Path, sw: Switch, numa: int) -> None:
        up = self.function(parent, self.bridge_id(), numa, "0x060400", "0x1000", "0xc030", 5)
        for member in sw.members:
            down = self.function(up, self.bridge_id(), numa, "0x060400", "0x1000", "0xc030", 5)
            self.device(down, member, numa)
        for child in sw.below:
            down = self.function(up, self.bridge_id(), numa, "0x060400", "0x1000", "0xc030", 5)
            self.switch(down, child, numa)

    def root_complex(self, k: int, rc: RootComplex) -> None:
        host = self.sys / "devices" / f"pci0000:{0x10 * (k + 1):02x}"
        host.mkdir(parents=True)
        for port in rc.ports:
            rp = self.function(host, self.bridge_id(), rc.numa, "0x060400", "0x8086", "0x347a", 5)
            if isinstance(port, Switch):
                self.switch(rp, port, rc.numa)
            else:
                self.device(rp, port, rc.numa)


def write_sysfs(m: FakeMachine, root: Path) -> Path:
    """Lay the machine out under ``root`` and return it."""
    w = _Writer(root, m)
    for k, rc in enumerate(m.roots):
        w.root_complex(k, rc)
    nodes = root / "sys" / "devices" / "system" / "node"
    for i, cpus in enumerate(m.numa_cpus):
        d = nodes / f"node{i}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
        mem_kb = m.numa_memory_bytes[i] // 1024 if i < len(m.numa_memory_bytes) else 0
        (d / "meminfo").write_text(f"Node {i} MemTotal:       {mem_kb} kB\nNode {i} MemFree: 1 kB\n")
        (d / "distance").write_text(" ".join("10" if j == i else "21" for j in range(len(m.numa_cpus))) + "\n")
    proc = root / "proc"
    (proc / "sys" / "kernel").mkdir(parents=True)
    (proc / "sys" / "kernel" / "hostname").write_text(m.name + "\n")
    flags = "fpu vme de pse" + (" hypervisor" if m.hypervisor else "")
    cpuinfo = "".join(
        f"processor\t: {c}\nmodel name\t: Fake Xeon 8480+\nphysical id\t: {0 if c < m.cpu_count // 2 else 1}\n"
        f"flags\t\t: {flags}\n\n"
        for c in range(m.cpu_count)
    )
    (proc / "cpuinfo").write_text(cpuinfo)
    (proc / "cmdline").write_text("BOOT_IMAGE=/vmlinuz root=/dev/sda1" + (" intel_iommu=on" if m.iommu else "") + "\n")
    dmi = root / "sys" / "class" / "dmi" / "id"
    dmi.mkdir(parents=True)
    (dmi / "sys_vendor").write_text(m.dmi_vendor + "\n")
    (dmi / "product_name").write_text("Fake Server\n")
    # the root cgroup's file is the host's inside a Slurm job: it says all CPUs, whatever the job has
    cg = root / "sys" / "fs" / "cgroup"
    cg.mkdir(parents=True)
    (cg / "cpuset.cpus.effective").write_text(f"0-{m.cpu_count - 1}\n")
    if m.cgroup_cpus is not None:  # this process's own affinity
        (proc / "self").mkdir(parents=True, exist_ok=True)
        (proc / "self" / "status").write_text(f"Name:\tpython\nCpus_allowed_list:\t{m.cgroup_cpus}\n")
    if m.nics:  # a healthy RDMA box loads nvidia_peermem (GPUDirect RDMA); SysfsExtras(peermem=False) unloads it
        (root / "sys" / "module" / "nvidia_peermem").mkdir(parents=True)
    iommu = root / "sys" / "class" / "iommu"
    iommu.mkdir(parents=True)
    if m.iommu:
        (iommu / "dmar0").mkdir()
    return root


@dataclass
class SysfsExtras:
    """What the health checks read, on top of a FakeMachine's tree (all optional).

    ``acs_ctrl``: ACS Control word written in the extended config space of every switch port
    (None: config space not readable, as for a non-root user); ``width_current``: GPU bus →
    trained width; ``aer``: GPU bus → ``aer_dev_correctable`` text; ``iommu_type``: each GPU's
    ``iommu_group/type`` (``DMA-FQ`` translated, ``identity`` passthrough).
    """

    acs_ctrl: int | None = None
    width_current: dict[str, int] = field(default_factory=dict)
    aer: dict[str, str] = field(default_factory=dict)
    iommu_type: str | None = None
    peermem: bool | None = None  # None: as write_sysfs left it (loaded when the machine has NICs)
    open_module: bool = False
    osrelease: str = "5.15.0-105-generic"
    imex_channels: int = 0
    gen_current: dict[str, int] = field(default_factory=dict)  # bus → trained generation
    slot_max: dict[str, tuple[int, int]] = field(default_factory=dict)  # device bus → its port's (max gen, max width)


def _config_with_acs(ctrl: int) -> bytes:
    """4 KiB config space: an AER capability at 0x100 chaining to ACS (id 0x000D) at 0x148."""
    cfg = bytearray(4096)
    cfg[0:4] = (0x10B5 | 0x8747 << 16).to_bytes(4, "little")
    cfg[0x100:0x104] = (0x0001 | 1 << 16 | 0x148 << 20).to_bytes(4, "little")  # AER, next 0x148
    cfg[0x148:0x14C] = (0x000D | 1 << 16).to_bytes(4, "little")  # ACS, last
    cfg[0x14C:0x14E] = (0x5F).to_bytes(2, "little")  # capability register
    cfg[0x14E:0x150] = ctrl.to_bytes(2, "little")
    return bytes(cfg)


def write_extras(m: FakeMachine, root: Path, x: SysfsExtras) -> None:
    """Add the health-check files to a tree written by :func:`write_sysfs`."""
    devs = root / "sys" / "bus" / "pci" / "devices"
    gpus = {g.bus for g in m.gpus}
    for k, link in enumerate(sorted(devs.iterdir())):
        real = link.resolve()
        cls = (real / "class").read_text().strip()
        if cls == "0x060400" and not real.parent.name.startswith("pci"):
            (real / "config").write_bytes(_config_with_acs(x.acs_ctrl) if x.acs_ctrl is not None else bytes(64))
        if link.name in x.gen_current:
            (real / "current_link_speed").write_text(_GEN_SPEED[x.gen_current[link.name]] + "\n")
        if link.name in x.slot_max:
            gen, width = x.slot_max[link.name]
            (real.parent / "max_link_speed").write_text(_GEN_SPEED[gen] + "\n")
            (real.parent / "max_link_width").write_text(f"{width}\n")
        if link.name in x.width_current:
            (real / "current_link_width").write_text(f"{x.width_current[link.name]}\n")
        if link.name in x.aer:
            (real / "aer_dev_correctable").write_text(x.aer[link.name])
        if x.iommu_type is not None and link.name in gpus:
            group = root / "sys" / "kernel" / "iommu_groups" / str(k)
            group.mkdir(parents=True)
            (group / "type").write_text(x.iommu_type + "\n")
            os.symlink(os.path.relpath(group, real), real / "iommu_group")
    peermem = root / "sys" / "module" / "nvidia_peermem"
    if x.peermem is True:
        peermem.mkdir(parents=True, exist_ok=True)
    elif x.peermem is False and peermem.is_dir():
        peermem.rmdir()
    (root / "proc" / "sys" / "kernel" / "osrelease").write_text(x.osrelease + "\n")
    drv = root / "proc" / "driver" / "nvidia"
    drv.mkdir(parents=True, exist_ok=True)
    kind = "Open Kernel Module" if x.open_module else "Kernel Module"
    (drv / "version").write_text(f"NVRM version: NVIDIA UNIX x86_64 {kind}  {m.driver}\n")
    if x.imex_channels:
        chans = root / "dev" / "nvidia-caps-imex-channels"
        chans.mkdir(parents=True)
        for i in range(x.imex_channels):
            (chans / f"channel{i}").write_text("")
