"""AMD SMI source: the only module that imports ``amdsmi`` (AMD SMI's Python bindings; issue 35).

Every call, ``amdsmi_init`` and ``amdsmi_shut_down`` included, goes through the choke point
:class:`~topomap.probe.amdsmi_calls.AmdSmiCalls`: a failing call is a problem record and a ``None``
value, never the end of the probe. Each function names its ``amd-smi`` twin.

Quirks followed (ROCm/amdsmi ``py-interface`` @0ceca28 and the PyPI ``amdsmi`` 7.0.2 wheel):
- importing the binding without ``libamd_smi.so`` *prints* two lines ("… cannot open shared object
  file", "Unable to find libamd_smi.so library …") and then raises ``KeyError: 'libamd_smi.so'``
  (``amdsmi_wrapper.py`` reads ``_libraries['libamd_smi.so']`` after its failed load): the import runs
  with stdout and stderr captured, so ``topomap probe -o -`` stays JSON, and any exception is one problem;
- ``amdsmi_init`` takes an ``AmdSmiInitFlags`` member (``INIT_AMD_GPUS``); anything else raises
  ``AmdSmiParameterException``;
- every status but SUCCESS raises ``AmdSmiLibraryException`` with ``err_code``; NOT_SUPPORTED (2) means
  "not on this GPU" (``amdsmi_get_minmax_bandwidth_between_processors`` on PCIe pairs, Navi's PCIe
  bandwidth);
- a uint32 answer of 0xFFFFFFFF is "not available" (``_validate_if_max_uint``): a NUMA node of
  4294967295 is unknown, not node 4294967295.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from typing import Any

from topomap.base.links import pcie_gen_from_gts
from topomap.base.pciaddr import normalize_bus_id
from topomap.model.amd_pairs import AmdPairFacts
from topomap.model.snapshot import Gpu, PcieLink, Problem
from topomap.probe.amdsmi_calls import AmdSmiCalls
from topomap.probe.guarded import INIT_TIMEOUT_S, CallRunner, active_runner
from topomap.probe.nvml_errors import UNSUPPORTED

MAX_GPUS = 1024
_LINK_TYPES = {1: "PCIE", 2: "XGMI"}  # amdsmi_link_type_t / AMDSMI_IOLINK_TYPE_*: 1 PCIe, 2 XGMI
_NA32 = 0xFFFFFFFF


@dataclass
class AmdResult:
    available: bool = False
    driver_version: str | None = None
    lib_version: str | None = None
    gpus: list[Gpu] = field(default_factory=list)
    pairs: dict[tuple[int, int], AmdPairFacts] = field(default_factory=dict)  # by the GPUs' snapshot indices
    problems: list[Problem] = field(default_factory=list)


def import_amdsmi() -> Any:
    """The ``amdsmi`` module, imported with its prints captured; raises what the import raised. Lazy: the
    binding is optional (the ``amd`` extra) and loads libamd_smi.so; only a probe of an AMD host needs it."""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        import amdsmi
    return amdsmi


def _ok(v: Any) -> bool:
    return v is not None and v is not UNSUPPORTED


def probe_amdsmi(lib: Any | None = None, first_index: int = 0, runner: CallRunner | None = None) -> AmdResult:
    """Everything AMD SMI knows of this machine's AMD GPUs (`amd-smi static`, `amd-smi topology`);
    the GPUs are numbered from ``first_index`` (after the NVIDIA GPUs of a mixed host)."""
    result = AmdResult()
    if lib is None:
        try:
            lib = import_amdsmi()
        except Exception as err:  # no binding (ImportError), or no libamd_smi.so (KeyError, OSError)
            what = "not installed" if isinstance(err, ImportError) else "cannot load libamd_smi.so"
            result.problems.append(
                Problem(
                    source="amdsmi",
                    call="import amdsmi",
                    error=f"amdsmi {what} ({type(err).__name__}: {err}); pip install 'topomap[amd]' on a ROCm host",
                )
            )
            return result
    calls = AmdSmiCalls(lib, result.problems, runner or active_runner())
    flags = getattr(getattr(lib, "AmdSmiInitFlags", None), "INIT_AMD_GPUS", None)
    ok, _ = calls.attempt("amdsmi_init", None, *([flags] if flags is not None else []), limit_s=INIT_TIMEOUT_S)
    if not ok:
        return result
    try:
        result.available = True
        _read(calls, result, first_index)
    except Exception as err:  # an answer AMD SMI should never give; what was read is kept
        calls.record("amdsmi*", None, f"unusable answer: {type(err).__name__}: {err}")
    finally:
        calls.attempt("amdsmi_shut_down", None)
    return result


def _read(calls: AmdSmiCalls, result: AmdResult, first: int) -> None:
    version = calls.call("amdsmi_get_lib_version", None)
    if _ok(version) and isinstance(version, dict):
        result.lib_version = ".".join(str(version.get(k)) for k in ("major", "minor", "release") if k in version)
    handles = calls.call("amdsmi_get_processor_handles", None)
    if not _ok(handles):
        return
    handles = list(handles)
    if len(handles) > MAX_GPUS:
        calls.record("amdsmi_get_processor_handles", None, f"implausible device count {len(handles)}; not used")
        return
    for k, h in enumerate(handles):
        result.gpus.append(_gpu_safely(calls, result, first + k, h))
    for x, hx in enumerate(handles):
        for y in range(x + 1, len(handles)):
            a, b = first + x, first + y
            target = f"gpu{a}-gpu{b}"
            if calls.skipped(target):
                continue
            try:
                result.pairs[(a, b)] = _pair(calls, target, hx, handles[y])
            except Exception as err:
                calls.record("amdsmi_topo_*", target, f"unusable answer: {type(err).__name__}: {err}")


def _gpu_safely(calls: AmdSmiCalls, result: AmdResult, index: int, h: Any) -> Gpu:
    try:
        return _gpu(calls, result, index, h)
    except Exception as err:
        calls.record("amdsmi_get_gpu_*", f"gpu{index}", f"unusable answer: {type(err).__name__}: {err}")
        return Gpu(index=index, vendor="amd")


def _gpu(calls: AmdSmiCalls, result: AmdResult, index: int, h: Any) -> Gpu:
    """One GPU (`amd-smi static -g <index>`)."""
    t = f"gpu{index}"
    g: dict[str, Any] = {"index": index, "vendor": "amd"}
    bdf = calls.call("amdsmi_get_gpu_device_bdf", t, h)
    g["pci_bus_id"] = normalize_bus_id(str(bdf)) if _ok(bdf) else None
    uuid = calls.call("amdsmi_get_gpu_device_uuid", t, h)
    g["uuid"] = str(uuid) if _ok(uuid) and uuid else None
    asic = calls.call("amdsmi_get_gpu_asic_info", t, h)
    if _ok(asic) and isinstance(asic, dict):
        name = asic.get("market_name")
        g["name"] = str(name) if name and name != "N/A" else None
        dev = asic.get("device_id")
        g["pci_device_id"] = str(dev).lower() if dev and dev != "N/A" else None
    memtype = getattr(getattr(calls.lib, "AmdSmiMemoryType", None), "VRAM", None)
    mem = calls.call("amdsmi_get_gpu_memory_total", t, h, memtype)
    g["memory_total_bytes"] = int(mem) if _ok(mem) else None
    numa = calls.call("amdsmi_topo_get_numa_node_number", t, h)
    g["numa_node"] = int(numa) if _ok(numa) and 0 <= int(numa) < _NA32 else None
    g["pcie"] = _pcie(calls.call("amdsmi_get_pcie_info", t, h))
    drv = calls.call("amdsmi_get_gpu_driver_info", t, h, record_unsupported=False)
    if _ok(drv) and isinstance(drv, dict) and result.driver_version is None:
        result.driver_version = str(drv.get("driver_version") or "") or None
    return Gpu(**g)


def _pcie(info: Any) -> PcieLink | None:
    """`amd-smi static --bus`: max width and speed (MT/s) and the link's current ones (`amd-smi metric`)."""
    if not _ok(info) or not isinstance(info, dict):
        return None
    static, metric = info.get("pcie_static") or {}, info.get("pcie_metric") or {}

    def num(d: dict[str, Any], key: str) -> int | None:
        v = d.get(key)
        return v if isinstance(v, int) and 0 < v < _NA32 else None

    def gen(mts: int | None) -> int | None:
        return pcie_gen_from_gts(mts / 1000) if mts else None

    return PcieLink(
        gen_current=gen(num(metric, "pcie_speed")),
        width_current=num(metric, "pcie_width"),
        gen_max=gen(num(static, "max_pcie_speed")),
        width_max=num(static, "max_pcie_width"),
    )


def _pair(calls: AmdSmiCalls, target: str, ha: Any, hb: Any) -> AmdPairFacts:
    """`amd-smi topology` for one pair: link type and hops, weight, KFD bandwidth, P2P access."""
    kind = calls.call("amdsmi_topo_get_link_type", target, ha, hb)
    link = hops = None
    if _ok(kind) and isinstance(kind, dict):
        link = _LINK_TYPES.get(int(kind.get("type", 0)))
        hops = int(kind["hops"]) if isinstance(kind.get("hops"), int) else None
    weight = calls.call("amdsmi_topo_get_link_weight", target, ha, hb)
    bw = None
    if link == "XGMI":  # AMD SMI reports io-link bandwidth for XGMI only (rocm_smi.py showNodesBw)
        mm = calls.call("amdsmi_get_minmax_bandwidth_between_processors", target, ha, hb, record_unsupported=False)
        if _ok(mm) and isinstance(mm, dict):
            bw = (int(mm.get("min_bandwidth", 0)), int(mm.get("max_bandwidth", 0)))
    access = calls.call("amdsmi_is_P2P_accessible", target, ha, hb)
    return AmdPairFacts(
        link=link,
        weight=int(weight) if _ok(weight) else None,
        hops=hops,
        bw=bw,
        access=bool(access) if _ok(access) else None,
    )
