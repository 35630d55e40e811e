"""NVML source: the only module that imports pynvml (PyPI ``nvidia-ml-py``).

Every call goes through :meth:`_Nvml.call`, which turns an NVML failure into a
:class:`~topomap.model.Problem` and a ``None`` value, so one bad call never ends the probe.
Each function names its ``nvidia-smi`` twin. Quirks followed here are listed in
``shared/reference/nvml-cuda.md``; the ones that bite are commented where they are handled.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from topomap.cpus import cpus_from_words, format_cpulist
from topomap.links import NVLINK_VERSION_ENUM, NVML_TOPOLOGY_LEVELS, P2P_STATUS_CODES, P2PStatus
from topomap.model import Fabric, FabricState, Gpu, Mig, MigDevice, NvLink, PcieLink, Problem, RemoteType
from topomap.pciaddr import normalize_bus_id

# Literal capability indices. pynvml's NVML_P2P_CAPS_INDEX_READ is the tuple (0,) because of a
# trailing comma in every nvidia-ml-py up to 13.615.71; passing it makes ctypes raise
# ArgumentError, not an NVMLError (nvml-cuda.md §3.6).
P2P_CAPS = {"read": 0, "write": 1, "nvlink": 2, "atomics": 3}

FI_NVLINK_SPEED_MBPS_COMMON = 90
FI_NVLINK_LINK_COUNT = 91
_FALLBACK_MAX_LINKS = 18

_ARCH_NAMES = {
    2: "kepler",
    3: "maxwell",
    4: "pascal",
    5: "volta",
    6: "turing",
    7: "ampere",
    8: "ada",
    9: "hopper",
    10: "blackwell",
    13: "rubin",
}
_REMOTE_TYPES: dict[int, RemoteType] = {0: "gpu", 1: "cpu", 2: "switch", 0xFF: "unknown"}
_FABRIC_STATES: dict[int, FabricState] = {0: "not-supported", 1: "not-started", 2: "in-progress", 3: "completed"}

# Errors that mean "this GPU/driver/binding does not do that": the value is absent, not unknown.
_UNSUPPORTED = ("NVMLError_NotSupported", "NVMLError_FunctionNotFound", "NVMLError_Deprecated")


@dataclass
class NvmlPairInfo:
    """What NVML says about one GPU pair."""

    pcie_path: str | None = None
    p2p: dict[str, P2PStatus | None] = field(default_factory=dict)


@dataclass
class NvmlResult:
    available: bool = False
    driver_version: str | None = None
    nvml_version: str | None = None
    cuda_driver_version: str | None = None
    gpus: list[Gpu] = field(default_factory=list)
    pairs: dict[tuple[int, int], NvmlPairInfo] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


class _Unsupported:
    """Sentinel: the call is not supported here (distinct from a failure)."""


UNSUPPORTED = _Unsupported()


class _Nvml:
    def __init__(self, lib: Any, problems: list[Problem]) -> None:
        self.lib = lib
        self.problems = problems
        self.lost: set[str] = set()

    def error_name(self, err: BaseException) -> str:
        name = type(err).__name__
        value = getattr(err, "value", None)
        return f"{name.removeprefix('NVMLError_')} ({value})" if value is not None else f"{name}: {err}"

    def call(self, fn_name: str, target: str | None, *args: Any, record_unsupported: bool = True) -> Any:
        """Call ``pynvml.<fn_name>(*args)``; on failure record a problem and return None.

        Returns :data:`UNSUPPORTED` for NotSupported / FunctionNotFound / Deprecated and for a
        wrapper missing from an old nvidia-ml-py (an AttributeError on the module).
        """
        if target is not None and target in self.lost:
            return None
        fn: Callable[..., Any] | None = getattr(self.lib, fn_name, None)
        if fn is None:
            if record_unsupported:
                self._record(fn_name, target, "FunctionNotFound (not in this nvidia-ml-py)")
            return UNSUPPORTED
        try:
            return fn(*args)
        except self.lib.NVMLError as err:
            cls = type(err).__name__
            if cls in _UNSUPPORTED:
                if record_unsupported:
                    self._record(fn_name, target, self.error_name(err))
                return UNSUPPORTED
            if cls == "NVMLError_GpuIsLost" and target is not None:
                self.lost.add(target)
                self._record(fn_name, target, "GpuIsLost (15): GPU fell off the bus; later calls skipped")
                return None
            self._record(fn_name, target, self.error_name(err))
            return None
        except ctypes.ArgumentError as err:
            self._record(fn_name, target, f"ctypes.ArgumentError: {err}")
            return None

    def _record(self, call: str, target: str | None, error: str) -> None:
        self.problems.append(Problem(source="nvml", call=call, target=target, error=error))


def _ok(value: Any) -> bool:
    return value is not None and value is not UNSUPPORTED


def _import_pynvml() -> Any:
    import pynvml

    return pynvml


def probe_nvml(lib: Any | None = None, cpu_count: int | None = None) -> NvmlResult:
    """Everything NVML knows about this machine's GPUs (`nvidia-smi -q`, `nvidia-smi topo -m`)."""
    result = NvmlResult()
    if lib is None:
        try:
            lib = _import_pynvml()
        except ImportError as err:
            result.problems.append(
                Problem(source="nvml", call="import pynvml", error=f"nvidia-ml-py not installed ({err})")
            )
            return result
    if not callable(getattr(lib, "nvmlInitWithFlags", None)):
        result.problems.append(
            Problem(
                source="nvml",
                call="import pynvml",
                error="pynvml module is not nvidia-ml-py (old PyPI pynvml shadows it); "
                "pip install --force-reinstall nvidia-ml-py",
            )
        )
        return result
    nv = _Nvml(lib, result.problems)
    try:
        lib.nvmlInit()
    except lib.NVMLError as err:
        result.problems.append(Problem(source="nvml", call="nvmlInit", error=nv.error_name(err)))
        return result
    try:
        result.available = True
        _system(nv, result)
        count = nv.call("nvmlDeviceGetCount", None)
        if not _ok(count):
            return result
        handles: dict[int, Any] = {}
        for i in range(int(count)):
            gpu, handle = _device(nv, i, cpu_count)
            result.gpus.append(gpu)
            if handle is not None:
                handles[i] = handle
        _pairs(nv, result, handles)
    finally:
        with contextlib.suppress(lib.NVMLError):
            lib.nvmlShutdown()
    return result


def _system(nv: _Nvml, result: NvmlResult) -> None:
    """`nvidia-smi` header: driver version, CUDA version."""
    drv = nv.call("nvmlSystemGetDriverVersion", None)
    result.driver_version = drv if _ok(drv) else None
    ver = nv.call("nvmlSystemGetNVMLVersion", None)
    result.nvml_version = ver if _ok(ver) else None
    cuda = nv.call("nvmlSystemGetCudaDriverVersion_v2", None, record_unsupported=False)
    if not _ok(cuda):
        cuda = nv.call("nvmlSystemGetCudaDriverVersion", None)
    if _ok(cuda):
        result.cuda_driver_version = f"{int(cuda) // 1000}.{(int(cuda) % 1000) // 10}"


def _device(nv: _Nvml, index: int, cpu_count: int | None) -> tuple[Gpu, Any]:
    """One GPU (`nvidia-smi -q -i <index>`). A GPU whose handle fails is still an entry."""
    target = f"gpu{index}"
    handle = nv.call("nvmlDeviceGetHandleByIndex", target, index)
    if not _ok(handle):
        return Gpu(index=index), None
    g: dict[str, Any] = {"index": index}
    name = nv.call("nvmlDeviceGetName", target, handle)
    g["name"] = name if _ok(name) else None
    u = nv.call("nvmlDeviceGetUUID", target, handle)
    g["uuid"] = u if _ok(u) else None
    pci = nv.call("nvmlDeviceGetPciInfo", target, handle)
    if _ok(pci):
        # busId is upper-case with an 8-digit domain ("00000000:07:00.0"); normalise.
        g["pci_bus_id"] = normalize_bus_id(f"{pci.domain:x}:{pci.bus:x}:{pci.device:x}.0")
    mem = nv.call("nvmlDeviceGetMemoryInfo", target, handle)
    g["memory_total_bytes"] = int(mem.total) if _ok(mem) else None
    cc = nv.call("nvmlDeviceGetCudaComputeCapability", target, handle)
    g["compute_capability"] = f"{cc[0]}.{cc[1]}" if _ok(cc) else None
    arch = nv.call("nvmlDeviceGetArchitecture", target, handle)
    g["architecture"] = _ARCH_NAMES.get(int(arch), "unknown") if _ok(arch) else None
    g["pcie"] = _pcie(nv, target, handle)
    pm = nv.call("nvmlDeviceGetPersistenceMode", target, handle)
    g["persistence_mode"] = bool(pm) if _ok(pm) else None
    g["cpu_affinity"] = _cpu_affinity(nv, target, handle, cpu_count)
    g["numa_node"] = _memory_affinity_node(nv, target, handle)
    # Only Grace-class GPUs are NUMA nodes themselves; NotSupported elsewhere is normal.
    gnuma = nv.call("nvmlDeviceGetNumaNodeId", target, handle, record_unsupported=False)
    g["gpu_numa_node"] = int(gnuma) if _ok(gnuma) and int(gnuma) >= 0 else None
    g["mig"] = _mig(nv, target, handle)
    g["nvlinks"] = _nvlinks(nv, target, handle)
    g["fabric"] = _fabric(nv, target, handle)
    return Gpu(**g), handle


def _pcie(nv: _Nvml, target: str, handle: Any) -> PcieLink:
    """`nvidia-smi -q -d PCIE`: GPUs downclock idle links, so keep current and max."""
    vals = {
        key: nv.call(fn, target, handle)
        for key, fn in (
            ("gen_current", "nvmlDeviceGetCurrPcieLinkGeneration"),
            ("width_current", "nvmlDeviceGetCurrPcieLinkWidth"),
            ("gen_max", "nvmlDeviceGetMaxPcieLinkGeneration"),
            ("width_max", "nvmlDeviceGetMaxPcieLinkWidth"),
        )
    }
    return PcieLink(**{k: int(v) if _ok(v) else None for k, v in vals.items()})


def _cpu_affinity(nv: _Nvml, target: str, handle: Any, cpu_count: int | None) -> str | None:
    """`nvidia-smi topo -m` CPU Affinity column: host CPU ids near the GPU."""
    n = cpu_count if cpu_count is not None else (os.cpu_count() or 64)
    words = nv.call("nvmlDeviceGetCpuAffinity", target, handle, max(4, math.ceil(n / 64)))
    if not _ok(words):
        return None
    return format_cpulist(cpus_from_words([int(w) for w in words]))


def _memory_affinity_node(nv: _Nvml, target: str, handle: Any) -> int | None:
    """`nvidia-smi topo -m` NUMA Affinity column: the single host NUMA node near the GPU."""
    words = nv.call("nvmlDeviceGetMemoryAffinity", target, handle, 4, 0)
    if not _ok(words):
        return None
    nodes = cpus_from_words([int(w) for w in words])
    return nodes[0] if len(nodes) == 1 else None


def _mig(nv: _Nvml, target: str, handle: Any) -> Mig | None:
    """`nvidia-smi mig -lgi`: MIG mode and instances. No MIG on this GPU → enabled False."""
    mode = nv.call("nvmlDeviceGetMigMode", target, handle, record_unsupported=False)
    if mode is UNSUPPORTED:
        return Mig(enabled=False, pending=False)
    if mode is None:
        return None
    enabled, pending = bool(mode[0]), bool(mode[1])
    devices: list[MigDevice] = []
    if enabled:
        count = nv.call("nvmlDeviceGetMaxMigDeviceCount", target, handle)
        for k in range(int(count) if _ok(count) else 0):
            try:
                mh = nv.lib.nvmlDeviceGetMigDeviceHandleByIndex(handle, k)
            except nv.lib.NVMLError as err:
                if type(err).__name__ != "NVMLError_NotFound":  # empty slot: skip, keep going
                    nv._record("nvmlDeviceGetMigDeviceHandleByIndex", target, nv.error_name(err))
                continue
            mt = f"{target}/mig{k}"
            mu = nv.call("nvmlDeviceGetUUID", mt, mh)
            mn = nv.call("nvmlDeviceGetName", mt, mh)
            mm = nv.call("nvmlDeviceGetMemoryInfo", mt, mh)
            devices.append(
                MigDevice(
                    index=k,
                    uuid=mu if _ok(mu) else None,
                    name=mn if _ok(mn) else None,
                    memory_total_bytes=int(mm.total) if _ok(mm) else None,
                )
            )
    return Mig(enabled=enabled, pending=pending, devices=devices)


def _link_count(nv: _Nvml, handle: Any) -> int | None:
    """Real per-device link count from field 91; NVML_NVLINK_MAX_LINKS is not it (TensorRT-LLM#17060)."""
    try:
        values = nv.lib.nvmlDeviceGetFieldValues(handle, [FI_NVLINK_LINK_COUNT])
    except (nv.lib.NVMLError, AttributeError):
        return None
    v = values[0]
    if int(v.nvmlReturn) != 0:
        return None
    return int(v.value.uiVal)


def _link_speed_gbps(nv: _Nvml, handle: Any) -> float | None:
    """Common per-link NVLink speed in GB/s as the driver reports it (`nvidia-smi nvlink -s`)."""
    try:
        values = nv.lib.nvmlDeviceGetFieldValues(handle, [FI_NVLINK_SPEED_MBPS_COMMON])
    except (nv.lib.NVMLError, AttributeError):
        return None
    v = values[0]
    if int(v.nvmlReturn) != 0 or int(v.value.uiVal) == 0:
        return None
    return round(int(v.value.uiVal) / 1000.0, 3)


def _nvlinks(nv: _Nvml, target: str, handle: Any) -> list[NvLink]:
    """`nvidia-smi nvlink -s` / `-R`: every link that exists; only the state query is trusted."""
    if target in nv.lost:
        return []
    count = _link_count(nv, handle)
    limit = count if count is not None else int(getattr(nv.lib, "NVML_NVLINK_MAX_LINKS", _FALLBACK_MAX_LINKS))
    speed = _link_speed_gbps(nv, handle)
    links: list[NvLink] = []
    for link in range(limit):
        try:
            state = nv.lib.nvmlDeviceGetNvLinkState(handle, link)
        except nv.lib.NVMLError as err:
            cls = type(err).__name__
            if cls in ("NVMLError_NotSupported", "NVMLError_InvalidArgument", "NVMLError_FunctionNotFound"):
                break  # no NVLink on this GPU, or past its last link (what hwloc does)
            if cls == "NVMLError_GpuIsLost":
                nv.lost.add(target)
            nv._record("nvmlDeviceGetNvLinkState", target, f"link {link}: {nv.error_name(err)}")
            break
        if not state:
            links.append(NvLink(link=link, active=False))
            continue
        ver = nv.call("nvmlDeviceGetNvLinkVersion", target, handle, link)
        rtype = nv.call("nvmlDeviceGetNvLinkRemoteDeviceType", target, handle, link, record_unsupported=False)
        rpci = nv.call("nvmlDeviceGetNvLinkRemotePciInfo", target, handle, link)
        remote_bus = None
        if _ok(rpci):
            # NVML may return an empty or non-printable bus id for switches the host cannot see.
            remote_bus = normalize_bus_id(str(rpci.busId)) if str(rpci.busId).strip() else None
        links.append(
            NvLink(
                link=link,
                active=True,
                version_enum=int(ver) if _ok(ver) else None,
                generation=NVLINK_VERSION_ENUM.get(int(ver)) if _ok(ver) else None,
                remote_type=_REMOTE_TYPES.get(int(rtype), "unknown") if _ok(rtype) else None,
                remote_pci_bus_id=remote_bus,
                speed_gbps=speed,
            )
        )
    return links


def _fabric(nv: _Nvml, target: str, handle: Any) -> Fabric | None:
    """`nvidia-smi -q` Fabric section: cluster UUID, clique, state (Hopper+ with NVSwitch, NVL72)."""
    lib = nv.lib
    info: Any = None
    fn = None
    if hasattr(lib, "c_nvmlGpuFabricInfoV_t") and hasattr(lib, "nvmlDeviceGetGpuFabricInfoV"):
        info = lib.c_nvmlGpuFabricInfoV_t()
        if hasattr(lib, "nvmlGpuFabricInfo_v2"):
            info.version = lib.nvmlGpuFabricInfo_v2
        fn = "nvmlDeviceGetGpuFabricInfoV"
    elif hasattr(lib, "c_nvmlGpuFabricInfo_t"):
        info = lib.c_nvmlGpuFabricInfo_t()
        fn = "nvmlDeviceGetGpuFabricInfo"
    if fn is None:
        nv._record("nvmlDeviceGetGpuFabricInfoV", target, "FunctionNotFound (not in this nvidia-ml-py)")
        return None
    res = nv.call(fn, target, handle, ctypes.byref(info), record_unsupported=False)
    if res is UNSUPPORTED:
        return Fabric(state="not-supported")
    if res is None:
        return None
    state = _FABRIC_STATES.get(int(info.state))
    raw = bytes(info.clusterUuid)
    cluster = str(uuidlib.UUID(bytes=raw)) if any(raw) else None
    status = None
    if state == "completed":  # status "must be checked only if state returns complete"
        status = "success" if int(info.status) == 0 else f"nvml error {int(info.status)}"
    return Fabric(
        cluster_uuid=cluster,
        clique_id=int(info.cliqueId),
        state=state,
        status=status,
        health_mask=int(info.healthMask) if hasattr(info, "healthMask") else None,
    )


def _pairs(nv: _Nvml, result: NvmlResult, handles: dict[int, Any]) -> None:
    """`nvidia-smi topo -m` PCIe level and `topo -p2p r|w|n|a` for every GPU pair."""
    idx = sorted(handles)
    for x, i in enumerate(idx):
        for j in idx[x + 1 :]:
            target = f"gpu{i}-gpu{j}"
            info = NvmlPairInfo()
            if f"gpu{i}" in nv.lost or f"gpu{j}" in nv.lost:
                result.pairs[(i, j)] = info  # already recorded once as lost; sysfs may still place it
                continue
            level = nv.call("nvmlDeviceGetTopologyCommonAncestor", target, handles[i], handles[j])
            if _ok(level):
                info.pcie_path = NVML_TOPOLOGY_LEVELS.get(int(level))
            for cap, code in P2P_CAPS.items():
                status = nv.call("nvmlDeviceGetP2PStatus", target, handles[i], handles[j], code)
                info.p2p[cap] = P2P_STATUS_CODES.get(int(status)) if _ok(status) else None
            result.pairs[(i, j)] = info
