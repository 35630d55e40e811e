"""probe(): run NVML, CUDA and sysfs, join them, and write down what could not be read.

The only part of topomap that touches hardware. Each source is injectable so tests run the
whole probe against fakes built from data (tests/fakes/).
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, TypeVar

from topomap import __version__
from topomap.base.cpus import format_cpulist, parse_cpulist
from topomap.base.links import PathClass, nvlink_path
from topomap.base.pathclass import classify_chains
from topomap.base.pciaddr import parse_bus_id
from topomap.model.nic_ids import pci_id
from topomap.model.nvlinks import gpu_buses, nvlink_count, nvswitches_from_links
from topomap.model.snapshot import (
    P2P,
    CudaPeer,
    Gpu,
    Host,
    Nic,
    Pair,
    PciDevice,
    PcieLink,
    Problem,
    Snapshot,
    Software,
    Source,
)
from topomap.probe.amd_join import AmdResult, _amd_gpus, _amd_on_bus, _amd_pair_paths, probe_amdsmi
from topomap.probe.cuda import CudaResult, probe_cuda
from topomap.probe.guarded import CALL_TIMEOUT_S, TOTAL_BUDGET_S, CallRunner, using
from topomap.probe.health import health_findings
from topomap.probe.nvml import NvmlResult, probe_nvml
from topomap.probe.sysfs import PciFunction, SysfsReader, SysfsResult, chain_kind

ENV_KEYS = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_DRIVER_CAPABILITIES")


@dataclass
class ProbeOutcome:
    snapshot: Snapshot
    found_driver: bool  # NVML or CUDA answered
    gpu_count: int


def probe(
    *,
    nvml_lib: Any | None = None,
    amdsmi_lib: Any | None = None,
    cuda_driver: Any | None = None,
    sysfs_root: str = "/",
    env: dict[str, str] | None = None,
    hostname: str | None = None,
    now: dt.datetime | None = None,
    call_timeout_s: float = CALL_TIMEOUT_S,
    budget_s: float | None = TOTAL_BUDGET_S,
) -> ProbeOutcome:
    """Probe this machine (or the fakes handed in) and build a snapshot.

    Each NVML, CUDA and AMD SMI call is cut after ``call_timeout_s`` seconds and all of them together
    after ``budget_s`` seconds (None: no overall limit); a cut call is a problem record. AMD SMI is asked
    when ``amdsmi_lib`` is given or the PCI bus shows an AMD GPU (issue 35); a host with both vendors'
    GPUs gets both, the AMD ones numbered after the NVIDIA ones.
    """
    environ = dict(os.environ) if env is None else env
    reader = SysfsReader(sysfs_root)
    sysr = reader.read(environ)
    with using(CallRunner(call_s=call_timeout_s, total_s=budget_s)):
        nv = _source("nvml", "probe_nvml", NvmlResult, lambda: probe_nvml(nvml_lib))
        cu = _source("cuda", "probe_cuda", CudaResult, lambda: probe_cuda(cuda_driver))
        first_amd = len(nv.gpus) if nv.devices_listed else len(_sys_gpus(sysr))
        am = AmdResult()
        if amdsmi_lib is not None or _amd_on_bus(sysr):
            am = _source("amdsmi", "probe_amdsmi", AmdResult, lambda: probe_amdsmi(amdsmi_lib, first_amd))
    problems: list[Problem] = [*nv.problems, *cu.problems, *am.problems]

    gpus = _gpus(nv, sysr, problems) + _amd_gpus(am, sysr)
    _container_view(gpus, sysr, nv, problems)
    _join_cuda(gpus, cu, problems, environ.get("CUDA_VISIBLE_DEVICES"))
    nics = _nics(sysr)
    host = _host(sysr, environ, hostname)
    when = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0)
    snap = Snapshot(
        source=Source(
            kind="probe",
            origin=host.hostname or "unknown host",
            captured_at=when.isoformat().replace("+00:00", "Z"),
            tool=f"topomap {__version__}",
        ),
        host=host,
        software=Software(
            driver_version=nv.driver_version or am.driver_version,
            cuda_driver_version=nv.cuda_driver_version or cu.driver_version,
            nvml_version=nv.nvml_version,
            bindings=_binding_versions(),
        ),
        gpus=gpus,
        nics=nics,
        pairs=_amd_pair_paths(_pairs(gpus, nics, nv, cu, sysr, problems), gpus, am),
        pci=_pci_tree(gpus, nics, sysr),
        nvswitches=nvswitches_from_links(gpus),
        problems=problems,
    )
    snap.findings = health_findings(reader, sysr, snap)  # issue 11: health and truth checks, one call
    return ProbeOutcome(snapshot=snap, found_driver=nv.available or cu.available or am.available, gpu_count=len(gpus))


def _nics(sysr: SysfsResult) -> list[Nic]:
    """The network devices sysfs lists, each with its PCI function's NUMA node."""
    return [
        Nic(
            index=i,
            name=n.name,
            kind=n.kind,
            rdma=n.rdma,
            pci_bus_id=n.pci_bus_id,
            numa_node=sysr.functions[n.pci_bus_id].numa_node if n.pci_bus_id in sysr.functions else None,
            speed_gbit_s=n.speed_gbit_s,
            state=n.state,
            netdevs=n.netdevs,
            pci_vendor_id=pci_id(n.vendor),
            pci_device_id=pci_id(n.device),
        )
        for i, n in enumerate(sysr.nics)
    ]


def _host(sysr: SysfsResult, environ: dict[str, str], hostname: str | None) -> Host:
    """The host as sysfs and /proc see it, with the environment variables that decide GPU visibility."""
    return Host(
        hostname=hostname or sysr.hostname or socket.gethostname(),
        cpu_model=sysr.cpu_model,
        sockets=sysr.sockets,
        numa_nodes=sysr.numa_nodes,
        virtualization=sysr.virtualization,
        container=sysr.container,
        cgroup_cpus=sysr.cgroup_cpus,
        iommu=sysr.iommu,
        environment={k: environ[k] for k in ENV_KEYS if k in environ},
    )


R = TypeVar("R", NvmlResult, CudaResult, AmdResult)


def _source(name: str, call: str, empty: Callable[[], R], run: Callable[[], R]) -> R:
    """One source's result; an answer its reader could not use is a problem, not the end of the probe."""
    try:
        return run()
    except Exception as err:
        result = empty()
        result.problems.append(
            Problem(source=name, call=call, error=f"stopped on an unusable answer: {type(err).__name__}: {err}")
        )
        return result


def _binding_versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for pkg in ("nvidia-ml-py", "cuda-bindings", "amdsmi"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return out


def _gpus(nv: NvmlResult, sysr: SysfsResult, problems: list[Problem]) -> list[Gpu]:
    """NVML's GPUs, completed from sysfs; without NVML's device list, the NVIDIA functions sysfs lists."""
    if nv.devices_listed:
        gpus = list(nv.gpus)
    else:
        gpus = [Gpu(index=i, pci_bus_id=f.bus_id) for i, f in enumerate(_sys_gpus(sysr))]
        if gpus:
            problems.append(
                Problem(
                    source="sysfs",
                    call="/sys/bus/pci/devices",
                    error=f"{len(gpus)} NVIDIA GPU(s) on the PCI bus but NVML "
                    f"{'did not list its devices' if nv.available else 'is unavailable'}: "
                    "name, UUID, memory and NVLink unknown",
                )
            )
    out: list[Gpu] = []
    for g in gpus:
        fn = sysr.functions.get(g.pci_bus_id or "")
        if fn is not None:
            if g.numa_node is None and fn.numa_node is not None:
                g.numa_node = fn.numa_node
            if g.cpu_affinity is None and fn.local_cpulist:
                g.cpu_affinity = fn.local_cpulist
            if g.pcie is None or all(v is None for v in (g.pcie.gen_max, g.pcie.width_max)):
                g.pcie = PcieLink(
                    gen_current=fn.link_gen_current,
                    width_current=fn.link_width_current,
                    gen_max=fn.link_gen_max,
                    width_max=fn.link_width_max,
                )
        out.append(g)
    return out


def _container_view(gpus: list[Gpu], sysr: SysfsResult, nv: NvmlResult, problems: list[Problem]) -> None:
    """What this container sees of the machine: GPUs on the bus it was not given, and CPU
    affinity cut to its cpuset (as nvidia-smi prints it inside a Slurm job or a container)."""
    on_bus = _sys_gpus(sysr)
    if nv.devices_listed and len(on_bus) > len(gpus):
        seen = {g.pci_bus_id for g in gpus}
        hidden = sorted(f.bus_id for f in on_bus if f.bus_id not in seen)
        problems.append(
            Problem(
                source="sysfs",
                call="/sys/bus/pci/devices",
                error=f"the PCI bus shows {len(on_bus)} NVIDIA GPUs but this process sees {len(gpus)}; "
                f"not given to it: {', '.join(hidden)}",
            )
        )
    if sysr.cgroup_cpus:
        allowed = set(parse_cpulist(sysr.cgroup_cpus))
        for g in gpus:
            if g.cpu_affinity:
                g.cpu_affinity = format_cpulist(set(parse_cpulist(g.cpu_affinity)) & allowed)


def _sys_gpus(sysr: SysfsResult) -> list[PciFunction]:
    return [f for f in sysr.functions.values() if f.is_nvidia_gpu]


def _join_cuda(gpus: list[Gpu], cu: CudaResult, problems: list[Problem], cvd_value: str | None) -> None:
    """CUDA ordinal of each GPU, joined by bus id, else by UUID — never by index.

    Bus id first: cuda-bindings 13 (CUDA 13's ``cuDeviceGetUuid``) gives a MIG instance's own UUID
    in MIG mode, which matches no GPU; the bus id is the physical GPU's in every version."""
    by_uuid = {g.uuid: g for g in gpus if g.uuid}
    by_bus = {parse_bus_id(g.pci_bus_id): g for g in gpus if g.pci_bus_id}
    for d in cu.devices:
        g = by_bus.get(parse_bus_id(d.pci_bus_id)) if d.pci_bus_id else None
        if g is None and d.uuid:
            g = by_uuid.get(d.uuid)
        if g is None:
            problems.append(
                Problem(
                    source="cuda",
                    call="join",
                    target=f"cuda{d.ordinal}",
                    error=f"CUDA device {d.uuid or d.pci_bus_id or '?'} matches no NVML GPU",
                )
            )
            continue
        g.cuda_ordinal = d.ordinal
    if cu.available and gpus and not cu.devices:
        problems.append(
            Problem(source="cuda", call="cuDeviceGetCount", error="CUDA sees no device (check CUDA_VISIBLE_DEVICES)")
        )
    hidden = [f"gpu{g.index}" for g in gpus if g.cuda_ordinal is None]
    if cu.devices and hidden:
        cvd = cvd_value if cvd_value is not None else "unset"
        problems.append(
            Problem(
                source="cuda",
                call="cuDeviceGetCount",
                error=f"{', '.join(hidden)} not visible to CUDA in this process (CUDA_VISIBLE_DEVICES={cvd})",
            )
        )


def _pairs(
    gpus: list[Gpu],
    nics: list[Nic],
    nv: NvmlResult,
    cu: CudaResult,
    sysr: SysfsResult,
    problems: list[Problem],
) -> list[Pair]:
    ends: list[tuple[str, str | None]] = [(f"gpu{g.index}", g.pci_bus_id) for g in gpus]
    ends += [(f"nic{n.index}", n.pci_bus_id) for n in nics if n.rdma]
    gpu_by_id = {f"gpu{g.index}": g for g in gpus}
    buses = gpu_buses(gpus)
    pairs: list[Pair] = []
    for x, (ida, busa) in enumerate(ends):
        for idb, busb in ends[x + 1 :]:
            sys_class = _sys_class(busa, busb, sysr)
            ga, gb = gpu_by_id.get(ida), gpu_by_id.get(idb)
            if ga is not None and gb is not None:
                info = nv.pairs.get((ga.index, gb.index))
                pcie = (info.pcie_path if info else None) or sys_class
                n = nvlink_count(ga, gb, buses)
                path = nvlink_path(n) if n else pcie
                if not n and any(g.lost and not g.nvlinks for g in (ga, gb)):
                    path = None  # its links were never read: NVLink unknown, not absent (lost recorded once)
                p2p = P2P(**info.p2p) if info and info.p2p else None
                pairs.append(
                    Pair(a=ida, b=idb, path=path, nvlinks=n, pcie_path=pcie, p2p=p2p, cuda=_cuda_pair(ga, gb, cu))
                )
            else:
                pairs.append(Pair(a=ida, b=idb, path=sys_class, pcie_path=sys_class))
            if pairs[-1].path is None and pairs[-1].pcie_path is None:
                problems.append(
                    Problem(source="sysfs", call="path class", target=f"{ida}-{idb}", error="PCI path unknown")
                )
    return pairs


def _sys_class(busa: str | None, busb: str | None, sysr: SysfsResult) -> PathClass | None:
    fa = sysr.functions.get(busa or "")
    fb = sysr.functions.get(busb or "")
    if fa is None or fb is None:
        return None
    return classify_chains(fa.chain, fb.chain, fa.locality, fb.locality)


def _cuda_pair(a: Gpu, b: Gpu, cu: CudaResult) -> CudaPeer | None:
    if a.cuda_ordinal is None or b.cuda_ordinal is None:
        return None
    ab = cu.peers.get((a.cuda_ordinal, b.cuda_ordinal))
    ba = cu.peers.get((b.cuda_ordinal, a.cuda_ordinal))
    if ab is None or ba is None:
        return None

    def both(x: bool | None, y: bool | None) -> bool | None:
        if x is None or y is None:
            return None
        return x and y

    ranks = [r for r in (ab.performance_rank, ba.performance_rank) if r is not None]
    return CudaPeer(
        can_access_peer=both(ab.can_access_peer, ba.can_access_peer),
        performance_rank=max(ranks) if len(ranks) == 2 else None,
        access_supported=both(ab.access_supported, ba.access_supported),
        native_atomics=both(ab.native_atomics, ba.native_atomics),
    )


def _pci_tree(gpus: list[Gpu], nics: list[Nic], sysr: SysfsResult) -> list[PciDevice]:
    """The part of the PCI tree above GPUs, NICs and NVSwitches."""
    wanted = [g.pci_bus_id for g in gpus] + [n.pci_bus_id for n in nics]
    wanted += [f.bus_id for f in sysr.functions.values() if f.is_nvswitch]
    seen: dict[str, PciDevice] = {}
    for bus in wanted:
        fn = sysr.functions.get(bus or "")
        if fn is None:
            continue
        parent: str | None = None
        for node in fn.chain:
            if node not in seen:
                f = sysr.functions.get(node)
                seen[node] = PciDevice(
                    id=node,
                    kind=chain_kind(fn.chain, sysr.functions, node),
                    parent=parent,
                    numa_node=f.numa_node if f else fn.numa_node,
                    link_gen=(f.link_gen_max if f else None),
                    link_width=(f.link_width_max if f else None),
                )
            parent = node
    return [seen[k] for k in sorted(seen)]
