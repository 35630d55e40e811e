"""The fake machines the probe is tested against, each a description in data."""

from __future__ import annotations

import dataclasses
import uuid as uuidlib

from tests.fakes.machine import GIB, FakeFabric, FakeGpu, FakeLink, FakeMachine, FakeNic, RootComplex, Switch


def _uuid(tag: str, i: int) -> str:
    return "GPU-" + str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f"{tag}-{i}"))


SWITCH_BUSES = ["0000:f3:00.0", "0000:f4:00.0", "0000:f5:00.0", "0000:f6:00.0"]


def _h100_links() -> list[FakeLink]:
    """18 NVLink 4 links split 5+4+4+5 over 4 NVSwitch chips (HGX H100)."""
    split = [5, 4, 4, 5]
    out: list[FakeLink] = []
    for sw, n in zip(SWITCH_BUSES, split):
        d, b, rest = sw.split(":")
        out += [FakeLink(version_enum=6, remote_type=2, remote_bus=f"{int(d, 16):08X}:{b.upper()}:{rest}")] * n
    return out


def hgx_h100() -> FakeMachine:
    """8x H100 SXM on NVSwitch (NV18), 8 RDMA NICs, 2 NUMA nodes; two GPUs and two NICs per
    PCIe switch, two switches per socket on separate host bridges."""
    gbus = [
        "0000:18:00.0",
        "0000:2a:00.0",
        "0000:3a:00.0",
        "0000:5d:00.0",
        "0000:9a:00.0",
        "0000:ab:00.0",
        "0000:ba:00.0",
        "0000:db:00.0",
    ]
    nbus = [
        "0000:19:00.0",
        "0000:1a:00.0",
        "0000:3b:00.0",
        "0000:3c:00.0",
        "0000:9b:00.0",
        "0000:9c:00.0",
        "0000:bb:00.0",
        "0000:bc:00.0",
    ]
    gpus = [
        FakeGpu(
            bus=b,
            uuid=_uuid("h100", i),
            nvlinks=_h100_links(),
            nvlink_speed_mbps=26562,
            fabric=FakeFabric(cluster_uuid=uuidlib.UUID(int=0xC1).bytes, clique_id=32766),
        )
        for i, b in enumerate(gbus)
    ]
    nics = [FakeNic(name=f"mlx5_{i}", bus=b, netdev=f"ibp{i}s0") for i, b in enumerate(nbus)]
    roots = [
        RootComplex(numa=0, ports=[Switch(members=[gbus[0], gbus[1], nbus[0], nbus[1]])]),
        RootComplex(numa=0, ports=[Switch(members=[gbus[2], gbus[3], nbus[2], nbus[3]])]),
        RootComplex(numa=1, ports=[Switch(members=[gbus[4], gbus[5], nbus[4], nbus[5]])]),
        RootComplex(numa=1, ports=[Switch(members=[gbus[6], gbus[7], nbus[6], nbus[7]])]),
    ]
    return FakeMachine(
        name="hgx-h100",
        gpus=gpus,
        nics=nics,
        roots=roots,
        numa_cpus=["0-55,112-167", "56-111,168-223"],
        numa_memory_bytes=[1024 * GIB, 1024 * GIB],
        cpu_count=224,
    )


def a100_pcie() -> FakeMachine:
    """8x A100 PCIe, no NVLink, two sockets behind PCIe switches: PIX, PXB, NODE and SYS."""
    g = [f"0000:{b:02x}:00.0" for b in (0x1B, 0x1C, 0x1E, 0x1F, 0x8A, 0x8B, 0xC1, 0xC2)]
    gpus = [
        FakeGpu(
            bus=b,
            uuid=_uuid("a100", i),
            name="NVIDIA A100 80GB PCIe",
            arch=7,
            cc=(8, 0),
            pcie=(1, 16, 4, 16),
            device_id="0x20b5",
        )
        for i, b in enumerate(g)
    ]
    nic = FakeNic(name="mlx5_0", bus="0000:1d:00.0", link_layer="Ethernet", rate="100 Gb/sec (4X EDR)")
    roots = [
        RootComplex(
            numa=0,
            ports=[Switch(members=[nic.bus], below=[Switch(members=g[0:2]), Switch(members=g[2:4])])],
        ),
        RootComplex(numa=1, ports=[Switch(members=g[4:6])]),
        RootComplex(numa=1, ports=[Switch(members=g[6:8])]),
    ]
    return FakeMachine(
        name="a100-pcie",
        gpus=gpus,
        nics=[nic],
        roots=roots,
        numa_cpus=["0-31", "32-63"],
        numa_memory_bytes=[256 * GIB, 256 * GIB],
        cpu_count=64,
    )


def consumer_pair() -> FakeMachine:
    """2x RTX 4090 on one host bridge, P2P not supported by the GPU (GNS)."""
    g = ["0000:01:00.0", "0000:41:00.0"]
    gpus = [
        FakeGpu(
            bus=b,
            uuid=_uuid("4090", i),
            name="NVIDIA GeForce RTX 4090",
            arch=8,
            cc=(8, 9),
            memory_bytes=24 * GIB,
            pcie=(4, 16, 4, 16),
            mig=None,
            device_id="0x2684",
        )
        for i, b in enumerate(g)
    ]
    return FakeMachine(
        name="rtx4090-pair",
        gpus=gpus,
        roots=[RootComplex(numa=0, ports=list(g))],
        numa_cpus=["0-63"],
        cpu_count=64,
        pcie_p2p=(2, 2, 5, 5),
        cuda_can_access=False,
        driver="565.57.01",
        cuda_version=12070,
    )


def gb200_tray() -> FakeMachine:
    """A GB200 NVL72 compute tray: 4 GPUs, 18 NVLink 5 links each to switches the host cannot
    see, one fabric clique, GPU memory as its own NUMA node."""
    g = ["0008:01:00.0", "0009:01:00.0", "0018:01:00.0", "0019:01:00.0"]
    n = ["0000:03:00.0", "0002:03:00.0", "0010:03:00.0", "0012:03:00.0"]
    cluster = uuidlib.UUID("7f0e4c55-2b6c-4c8e-9f52-5d3c1e0a9b11").bytes
    gpus = [
        FakeGpu(
            bus=b,
            uuid=_uuid("gb200", i),
            name="NVIDIA GB200",
            arch=10,
            cc=(10, 0),
            memory_bytes=186 * GIB,
            nvlinks=[FakeLink(version_enum=7, remote_type=2, remote_bus="")] * 18,
            nvlink_speed_mbps=53125,
            fabric=FakeFabric(cluster_uuid=cluster, clique_id=7, state=3),
            gpu_numa=2 + i,
            device_id="0x2941",
        )
        for i, b in enumerate(g)
    ]
    nics = [FakeNic(name=f"mlx5_{i}", bus=b) for i, b in enumerate(n)]
    roots = [
        RootComplex(numa=0, ports=[Switch(members=[g[0], n[0]])]),
        RootComplex(numa=0, ports=[Switch(members=[g[1], n[1]])]),
        RootComplex(numa=1, ports=[Switch(members=[g[2], n[2]])]),
        RootComplex(numa=1, ports=[Switch(members=[g[3], n[3]])]),
    ]
    return FakeMachine(
        name="gb200-tray",
        gpus=gpus,
        nics=nics,
        roots=roots,
        numa_cpus=["0-71", "72-143", "", "", "", ""],
        numa_memory_bytes=[480 * GIB, 480 * GIB, 186 * GIB, 186 * GIB, 186 * GIB, 186 * GIB],
        cpu_count=144,
        driver="570.124.06",
        cuda_version=12080,
    )


def old_driver() -> FakeMachine:
    """2x H100 PCIe joined by an NVLink bridge (NV12), driver 470 older than the bindings:
    newer NVML calls answer FunctionNotFound, the link-count field is absent, and the CUDA
    bindings lack the P2P attribute entry point."""
    g = ["0000:c2:00.0", "0000:d5:00.0"]

    def bridge(peer: str) -> list[FakeLink]:
        d, b, rest = peer.split(":")
        rb = f"{int(d, 16):08X}:{b.upper()}:{rest}"
        on = [FakeLink(version_enum=6, remote_type=0, remote_bus=rb)] * 4
        off = [FakeLink(active=False)] * 2
        return on + off + on + off + on + off

    gpus = [
        FakeGpu(
            bus=g[0],
            uuid=_uuid("h100pcie", 0),
            name="NVIDIA H100 PCIe",
            nvlinks=bridge(g[1]),
            link_count_field=False,
            device_id="0x2331",
        ),
        FakeGpu(
            bus=g[1],
            uuid=_uuid("h100pcie", 1),
            name="NVIDIA H100 PCIe",
            nvlinks=bridge(g[0]),
            link_count_field=False,
            device_id="0x2331",
        ),
    ]
    return FakeMachine(
        name="old-driver",
        gpus=gpus,
        roots=[RootComplex(numa=1, ports=[g[0]]), RootComplex(numa=1, ports=[g[1]])],
        numa_cpus=["0-31,64-95", "32-63,96-127"],
        cpu_count=128,
        driver="470.57.02",
        nvml_version="11.470.57.02",
        cuda_version=11040,
        missing={
            "nvmlSystemGetCudaDriverVersion_v2",
            "nvmlDeviceGetMemoryAffinity",
            "nvmlDeviceGetGpuFabricInfoV",
            "nvmlDeviceGetGpuFabricInfo",
            "nvmlDeviceGetNumaNodeId",
        },
        cuda_missing_functions={"cuDeviceGetP2PAttribute"},
    )


def no_driver(with_gpus: bool = True) -> FakeMachine:
    """No NVIDIA driver: NVML LibraryNotFound, no libcuda; the GPUs are still on the PCI bus."""
    m = consumer_pair() if with_gpus else FakeMachine(name="cpu-only", gpus=[], roots=[])
    return dataclasses.replace(m, name="no-driver", init_error=12, cuda_missing_library=True)


def hgx_h100_gpu3_lost(after_calls: int = 6) -> FakeMachine:
    """8x H100 NV18 with gpu3 lost mid-probe: its first ``after_calls`` NVML calls answer, then
    every call on it answers GPU_IS_LOST (an Xid 79 "GPU has fallen off the bus")."""
    return dataclasses.replace(hgx_h100(), name="hgx-h100-gpu3-lost", lost_after={3: after_calls})
