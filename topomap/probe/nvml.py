"""NVML source: the only module that imports pynvml (PyPI ``nvidia-ml-py``).

Every call, ``nvmlInit`` and ``nvmlShutdown`` included, goes through the choke point
:class:`~topomap.probe.nvml_calls.NvmlCalls`, which turns any failure (an NVML error, any other
exception, a hang cut by the time budget) into a :class:`~topomap.model.snapshot.Problem` and a ``None``
value, so one bad call never ends the probe.
Each function names its ``nvidia-smi`` twin. Quirks followed here are listed in
``shared/reference/nvml-cuda.md``; the ones that bite are commented where they are handled.
"""

from __future__ import annotations

import ctypes
import math
import os
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from topomap.base.cpus import cpus_from_words, format_cpulist
from topomap.base.errors import TopomapError
from topomap.base.links import NVLINK_VERSION_ENUM, NVML_TOPOLOGY_LEVELS, P2P_STATUS_CODES, P2PStatus, PathClass
from topomap.base.pciaddr import normalize_bus_id
from topomap.model.snapshot import Fabric, FabricState, Gpu, Mig, MigDevice, NvLink, PcieLink, Problem, RemoteType
from topomap.probe.guarded import INIT_TIMEOUT_S, CallRunner, active_runner
from topomap.probe.nvml_calls import NvmlCalls
from topomap.probe.nvml_errors import MISSING_WRAPPER, UNSUPPORTED, not_nvidia_ml_py
from topomap.probe.nvml_structs import FabricInfoV1, FabricInfoV2, c_text, new_fabric_info_v2, raw_field

# Literal capability indices. pynvml's NVML_P2P_CAPS_INDEX_READ is the tuple (0,) because of a
# trailing comma in every nvidia-ml-py up to 13.615.71; passing it makes ctypes raise
# ArgumentError, not an NVMLError (nvml-cuda.md §3.6).
P2P_CAPS = {"read": 0, "write": 1, "nvlink": 2, "atomics": 3}

NVLINK_CAP_P2P_SUPPORTED = 0  # nvmlNvLinkCapability_t
FI_NVLINK_SPEED_MBPS_COMMON = 90
FI_NVLINK_LINK_COUNT = 91
_FALLBACK_MAX_LINKS = 18
MAX_GPUS = 1024  # more devices than any machine has: a broken answer, not a machine
MAX_LINKS = 64  # NVML_NVLINK_MAX_LINKS is 18 today

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
_T = TypeVar("_T")
_NOT_IN_DRIVER = ("NVMLError_FunctionNotFound", MISSING_WRAPPER)  # driver or binding lacks the call
_FABRIC_STATES: dict[int, FabricState] = {0: "not-supported", 1: "not-started", 2: "in-progress", 3: "completed"}


@dataclass
class NvmlPairInfo:
    """What NVML says about one GPU pair."""

    pcie_path: PathClass | None = None
    p2p: dict[str, P2PStatus | None] = field(default_factory=dict)


@dataclass
class NvmlResult:
    available: bool = False
    driver_version: str | None = None
    nvml_version: str | None = None
    cuda_driver_version: str | None = None
    devices_listed: bool = False  # nvmlDeviceGetCount answered (else the GPU list is sysfs's)
    gpus: list[Gpu] = field(default_factory=list)
    pairs: dict[tuple[int, int], NvmlPairInfo] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def _ok(value: Any) -> bool:
    return value is not None and value is not UNSUPPORTED


def import_pynvml() -> Any:
    """The ``pynvml`` module (ImportError when not installed). Lazy: the binding is optional (the
    ``probe`` extra) and loads libnvidia-ml's wrapper; only a real probe or record needs it."""
    import pynvml

    return pynvml


def nvml_module() -> Any:
    """The imported ``pynvml`` module (PyPI ``nvidia-ml-py``), for callers that sample NVML.

    Raises :class:`~topomap.base.errors.TopomapError` with a hint when it is missing, or when the
    old PyPI ``pynvml`` package shadows it (that one has no ``nvmlInitWithFlags``).
    """
    try:
        lib = import_pynvml()
    except ImportError as err:
        raise TopomapError(
            f"nvidia-ml-py is not installed ({err})", hint="pip install 'topomap[probe]' (or nvidia-ml-py)"
        ) from err
    shadowed = not_nvidia_ml_py(lib)
    if shadowed is not None:
        raise shadowed
    return lib


def probe_nvml(lib: Any | None = None, cpu_count: int | None = None, runner: CallRunner | None = None) -> NvmlResult:
    """Everything NVML knows about this machine's GPUs (`nvidia-smi -q`, `nvidia-smi topo -m`).

    ``runner`` sets the per-call time limit and the overall budget (default: the probe's).
    """
    result = NvmlResult()
    try:
        lib = nvml_module() if lib is None else lib
        shadowed = not_nvidia_ml_py(lib)
        if shadowed is not None:
            raise shadowed
    except TopomapError as err:
        error = f"{err} ({err.hint})" if err.hint else str(err)
        result.problems.append(Problem(source="nvml", call="import pynvml", error=error))
        return result
    nv = NvmlCalls(lib, result.problems, runner or active_runner())
    ok, _ = nv.attempt("nvmlInit", None, limit_s=INIT_TIMEOUT_S)
    if not ok:
        return result
    try:
        result.available = True
        _devices(nv, result, cpu_count)
    except Exception as err:  # an answer NVML should never give; what was read is kept
        nv.record("nvml*", None, f"unusable answer: {type(err).__name__}: {err}")
    finally:
        nv.attempt("nvmlShutdown", None)
    return result


def _devices(nv: NvmlCalls, result: NvmlResult, cpu_count: int | None) -> None:
    """The system header, then every device and pair; each part's bad answer is its own problem."""
    try:
        _system(nv, result)
    except Exception as err:
        nv.record("nvmlSystem*", None, f"unusable answer: {type(err).__name__}: {err}")
    count = nv.call("nvmlDeviceGetCount", None)
    if not _ok(count) or not isinstance(count, int):
        return
    if not 0 <= count <= MAX_GPUS:
        nv.record("nvmlDeviceGetCount", None, f"implausible device count {count}; NVML's device list not used")
        return
    result.devices_listed = True
    handles: dict[int, Any] = {}
    for i in range(count):
        gpu, handle = _device_safely(nv, i, cpu_count)
        result.gpus.append(gpu)
        if handle is not None:
            handles[i] = handle
    _pairs(nv, result, handles)
    for g in result.gpus:
        g.lost = f"gpu{g.index}" in nv.lost


def _system(nv: NvmlCalls, result: NvmlResult) -> None:
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


def _device_safely(nv: NvmlCalls, index: int, cpu_count: int | None) -> tuple[Gpu, Any]:
    """:func:`_device`, with an answer NVML should never give (a value of the wrong type or
    size) recorded against the GPU instead of ending the probe."""
    try:
        return _device(nv, index, cpu_count)
    except Exception as err:
        nv.record("nvmlDevice*", f"gpu{index}", f"unusable answer: {type(err).__name__}: {err}")
        return Gpu(index=index, lost=f"gpu{index}" in nv.lost), None


def _device(nv: NvmlCalls, index: int, cpu_count: int | None) -> tuple[Gpu, Any]:
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
    g["pcie"] = _part(nv, target, "nvmlDevice*PcieLink*", _pcie, handle)
    pm = nv.call("nvmlDeviceGetPersistenceMode", target, handle)
    g["persistence_mode"] = bool(pm) if _ok(pm) else None
    g["cpu_affinity"] = _part(nv, target, "nvmlDeviceGetCpuAffinity", _cpu_affinity, handle, cpu_count)
    g["numa_node"] = _part(nv, target, "nvmlDeviceGetMemoryAffinity", _memory_affinity_node, handle)
    # Only Grace-class GPUs are NUMA nodes themselves; NotSupported elsewhere is normal.
    gnuma = nv.call("nvmlDeviceGetNumaNodeId", target, handle, record_unsupported=False)
    g["gpu_numa_node"] = int(gnuma) if _ok(gnuma) and int(gnuma) >= 0 else None
    g["mig"] = _part(nv, target, "nvmlDevice*Mig*", _mig, handle)
    g["nvlinks"] = _part(nv, target, "nvmlDeviceGetNvLink*", _nvlinks, handle) or []
    g["fabric"] = _part(nv, target, "nvmlDeviceGetGpuFabricInfo*", _fabric, handle)
    return Gpu(**g), handle


def _part(nv: NvmlCalls, target: str, calls: str, read: Callable[..., _T], *args: Any) -> _T | None:
    """One section of a GPU (PCIe, MIG, NVLinks, fabric…): an answer NVML should never give in it
    is a problem on that section, unknown; the GPU's name, UUID, bus id and other sections stay."""
    try:
        return read(nv, target, *args)
    except Exception as err:
        nv.record(calls, target, f"unusable answer: {type(err).__name__}: {err}")
        return None


def _pcie(nv: NvmlCalls, target: str, handle: Any) -> PcieLink:
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
    got = {k: int(v) if _ok(v) else None for k, v in vals.items()}
    return PcieLink(
        gen_current=got["gen_current"],
        width_current=got["width_current"],
        gen_max=got["gen_max"],
        width_max=got["width_max"],
    )


def _cpu_affinity(nv: NvmlCalls, target: str, handle: Any, cpu_count: int | None) -> str | None:
    """`nvidia-smi topo -m` CPU Affinity column: host CPU ids near the GPU."""
    n = cpu_count if cpu_count is not None else (os.cpu_count() or 64)
    words = nv.call("nvmlDeviceGetCpuAffinity", target, handle, max(4, math.ceil(n / 64)))
    if not _ok(words):
        return None
    return format_cpulist(cpus_from_words([int(w) for w in words]))


def _memory_affinity_node(nv: NvmlCalls, target: str, handle: Any) -> int | None:
    """`nvidia-smi topo -m` NUMA Affinity column: the single host NUMA node near the GPU."""
    words = nv.call("nvmlDeviceGetMemoryAffinity", target, handle, 4, 0)
    if not _ok(words):
        return None
    nodes = cpus_from_words([int(w) for w in words])
    return nodes[0] if len(nodes) == 1 else None


def _mig(nv: NvmlCalls, target: str, handle: Any) -> Mig | None:
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
            # an empty slot answers NotFound: skip it, keep going
            ok, mh = nv.attempt("nvmlDeviceGetMigDeviceHandleByIndex", target, handle, k, quiet=("NVMLError_NotFound",))
            if not ok:
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


def _field_value(nv: NvmlCalls, target: str, handle: Any, field_id: int) -> int | None:
    """One unsigned field of ``nvmlDeviceGetFieldValues``; None when absent (an optional field)."""
    values = nv.call("nvmlDeviceGetFieldValues", target, handle, [field_id], record_unsupported=False)
    if not _ok(values):
        return None
    v = values[0]
    if int(v.nvmlReturn) != 0:
        return None
    return int(v.value.uiVal)


def _link_count(nv: NvmlCalls, target: str, handle: Any) -> int | None:
    """Real per-device link count from field 91; NVML_NVLINK_MAX_LINKS is not it (TensorRT-LLM#17060)."""
    return _field_value(nv, target, handle, FI_NVLINK_LINK_COUNT)


def _link_speed_gbps(nv: NvmlCalls, target: str, handle: Any) -> float | None:
    """Common per-link NVLink speed in GB/s as the driver reports it (`nvidia-smi nvlink -s`)."""
    mbps = _field_value(nv, target, handle, FI_NVLINK_SPEED_MBPS_COMMON)
    return round(mbps / 1000.0, 3) if mbps else None


def _nvlinks(nv: NvmlCalls, target: str, handle: Any) -> list[NvLink]:
    """`nvidia-smi nvlink -s` / `-R`: every link that exists; only the state query is trusted."""
    count = _link_count(nv, target, handle)
    if count is not None and count > MAX_LINKS:
        nv.record("nvmlDeviceGetFieldValues", target, f"implausible NVLink count {count}; the first {MAX_LINKS} read")
        count = MAX_LINKS
    limit = count if count is not None else int(getattr(nv.lib, "NVML_NVLINK_MAX_LINKS", _FALLBACK_MAX_LINKS))
    speed = _link_speed_gbps(nv, target, handle)
    links: list[NvLink] = []
    for link in range(limit):
        # NotSupported: no NVLink on this GPU; InvalidArgument: past its last link (what hwloc does)
        ok, state = nv.attempt(
            "nvmlDeviceGetNvLinkState",
            target,
            handle,
            link,
            quiet=("NVMLError_NotSupported", "NVMLError_InvalidArgument", "NVMLError_FunctionNotFound"),
        )
        if not ok:
            break
        if not state:
            links.append(NvLink(link=link, active=False))
            continue
        ver = nv.call("nvmlDeviceGetNvLinkVersion", target, handle, link)
        rtype = nv.call("nvmlDeviceGetNvLinkRemoteDeviceType", target, handle, link, record_unsupported=False)
        rpci = nv.call("nvmlDeviceGetNvLinkRemotePciInfo", target, handle, link)
        remote_bus = _remote_bus_id(nv, target, link, rpci) if _ok(rpci) else None
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
    if links and not any(lk.active for lk in links) and _unbridged(nv, target, handle):
        return []  # a PCIe card without an NVLink bridge: no NVLink, not NVLinks down
    return links


def _unbridged(nv: NvmlCalls, target: str, handle: Any) -> bool:
    """All links down on a card whose links cannot carry P2P (A100/H100 PCIe without a bridge list
    12/18 links, all down; DCGM and NVSentinel issues): link 0's P2P capability, else its remote
    type (unknown on a card with nothing attached)."""
    quiet = ("NVMLError_InvalidArgument", "NVMLError_NotFound", "NVMLError_Unknown")
    cap = nv.call(
        "nvmlDeviceGetNvLinkCapability", target, handle, 0, NVLINK_CAP_P2P_SUPPORTED, record_unsupported=False,
        quiet=quiet,
    )  # fmt: skip
    if _ok(cap):
        return not int(cap)
    rtype = nv.call("nvmlDeviceGetNvLinkRemoteDeviceType", target, handle, 0, record_unsupported=False, quiet=quiet)
    return not _ok(rtype) or _REMOTE_TYPES.get(int(rtype), "unknown") == "unknown"


def _remote_bus_id(nv: NvmlCalls, target: str, link: int, pci: Any) -> str | None:
    """The remote end's bus id, read as raw bytes: NVML may return an empty or non-printable id for
    switches the host cannot see (NCCL notes it), and pynvml's decoding of ``busId`` would raise."""
    try:
        text = c_text(raw_field(pci, "busId"))
    except Exception as err:  # not a ctypes struct with a busId: an answer NVML should never give
        nv.record("nvmlDeviceGetNvLinkRemotePciInfo", target, f"link {link}: unusable answer: {type(err).__name__}")
        return None
    return normalize_bus_id(text) if text is not None else None


def _fabric(nv: NvmlCalls, target: str, handle: Any) -> Fabric | None:
    """`nvidia-smi -q` Fabric section: cluster UUID, clique, state (Hopper+ with NVSwitch, NVL72).

    The driver writes into buffers with ``nvml.h``'s layout (:mod:`~topomap.probe.nvml_structs`),
    not pynvml's classes, whose ``clusterUuid`` is mis-sized or decoded in nvidia-ml-py 12.x.
    ``nvmlDeviceGetGpuFabricInfoV`` is R550+: a driver without it (FunctionNotFound, e.g. R535
    on H100 HGX) or a binding without its wrapper falls back to ``nvmlDeviceGetGpuFabricInfo``.
    """
    info: FabricInfoV1 | FabricInfoV2 = new_fabric_info_v2()
    res = nv.call("nvmlDeviceGetGpuFabricInfoV", target, handle, ctypes.byref(info), record_unsupported=False)
    if res is UNSUPPORTED and nv.last_error_class in _NOT_IN_DRIVER:
        info = FabricInfoV1()
        res = nv.call("nvmlDeviceGetGpuFabricInfo", target, handle, ctypes.byref(info), record_unsupported=False)
        if res is UNSUPPORTED and nv.last_error_class in _NOT_IN_DRIVER:
            nv.note_missing("nvmlDeviceGetGpuFabricInfo")
            return None
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
        health_mask=int(info.healthMask) if isinstance(info, FabricInfoV2) else None,
    )


def _pairs(nv: NvmlCalls, result: NvmlResult, handles: dict[int, Any]) -> None:
    """`nvidia-smi topo -m` PCIe level and `topo -p2p r|w|n|a` for every GPU pair.

    A pair with a lost GPU is left empty (the GPU was recorded lost once; sysfs may still
    place the pair). When a pair call answers GPU_IS_LOST, one call per GPU tells which fell off.
    """
    idx = sorted(handles)
    for x, i in enumerate(idx):
        for j in idx[x + 1 :]:
            target = f"gpu{i}-gpu{j}"
            info = NvmlPairInfo()
            result.pairs[(i, j)] = info
            if nv.skipped(target):
                continue  # a lost or hung GPU: recorded once already; sysfs may still place the pair
            try:
                _pair(nv, target, handles[i], handles[j], info)
            except Exception as err:  # an answer NVML should never give
                nv.record("nvmlDeviceGet*", target, f"unusable answer: {type(err).__name__}: {err}")
            if nv.lost_in_pair:
                call = nv.lost_in_pair[0]
                nv.lost_in_pair.clear()
                _which_lost(nv, call, target, (i, handles[i]), (j, handles[j]))


def _pair(nv: NvmlCalls, target: str, hi: Any, hj: Any, info: NvmlPairInfo) -> None:
    level = nv.call("nvmlDeviceGetTopologyCommonAncestor", target, hi, hj)
    if _ok(level):
        info.pcie_path = NVML_TOPOLOGY_LEVELS.get(int(level))
    for cap, code in P2P_CAPS.items():
        if nv.lost_in_pair:
            return
        status = nv.call("nvmlDeviceGetP2PStatus", target, hi, hj, code)
        info.p2p[cap] = P2P_STATUS_CODES.get(int(status)) if _ok(status) else None


def _which_lost(nv: NvmlCalls, call: str, target: str, *gpus: tuple[int, Any]) -> None:
    """A pair call said GPU_IS_LOST: ask each GPU once (its PCI info) so the lost one is marked."""
    for index, handle in gpus:
        nv.call("nvmlDeviceGetPciInfo", f"gpu{index}", handle)
    if not any(f"gpu{index}" in nv.lost for index, _ in gpus):
        nv.record(call, target, "GpuIsLost (15) for the pair, yet both GPUs still answer")
