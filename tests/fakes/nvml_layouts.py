"""The fabric-info structs of each nvidia-ml-py line, copied from the released wheels, and a fake
``libnvidia-ml`` fabric call that writes its out-struct at nvml.h's C offsets.

Copied from ``pynvml.py`` of (``pip download nvidia-ml-py==V --no-deps``):

- 12.550.52 and 12.560.30: ``clusterUuid`` is ``c_char * NVML_DEVICE_UUID_BUFFER_SIZE`` (80) in
  both the v1 and the versioned struct, so every later field sits 64 bytes past the C one;
- 12.570.86 and 12.575.51: v2 ``clusterUuid`` is ``c_char * NVML_GPU_FABRIC_UUID_LEN`` (16), which
  ``_PrintableStructure`` decodes as UTF-8 on access (v1 still ``c_char * 80``);
- 13.580.65 and later: ``c_uint8 * 16`` (v1 ``c_uint8 * 80``);
- every line: ``state`` is ``_nvmlGpuFabricState_t = c_uint`` (nvml.h: ``unsigned char``).

The classes are built on the installed pynvml's ``_PrintableStructure`` (the same decoding in
every line). The fake C function below is what the driver does: it writes bytes at
``nvml.h``'s offsets into whatever buffer it was handed, whatever Python class describes it.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from typing import Any

import pynvml as real

_P = real._PrintableStructure
_STATE = ctypes.c_uint  # _nvmlGpuFabricState_t in every nvidia-ml-py


def _v1(uuid_type: Any) -> type:
    return type(
        "c_nvmlGpuFabricInfo_t",
        (_P,),
        {
            "_fields_": [
                ("clusterUuid", uuid_type),
                ("status", ctypes.c_int),
                ("cliqueId", ctypes.c_uint32),
                ("state", _STATE),
            ]
        },
    )


def _v2(uuid_type: Any) -> type:
    def __init__(self: Any) -> None:
        _P.__init__(self, version=0x02000024)

    return type(
        "c_nvmlGpuFabricInfoV_t",
        (_P,),
        {
            "_fields_": [
                ("version", ctypes.c_uint),
                ("clusterUuid", uuid_type),
                ("status", ctypes.c_int),
                ("cliqueId", ctypes.c_uint32),
                ("state", _STATE),
                ("healthMask", ctypes.c_uint32),
            ],
            "__init__": __init__,
        },
    )


# line -> (v1 class, v2 class), as each wheel defines them
LAYOUTS: dict[str, tuple[type, type]] = {
    "12.550.52": (_v1(ctypes.c_char * 80), _v2(ctypes.c_char * 80)),
    "12.570.86": (_v1(ctypes.c_char * 80), _v2(ctypes.c_char * 16)),
    "13.580.65": (_v1(ctypes.c_uint8 * 80), _v2(ctypes.c_uint8 * 16)),
    "installed": (real.c_nvmlGpuFabricInfo_t, real.c_nvmlGpuFabricInfoV_t),
}

# nvml.h offsets: v2 {uint version; uchar uuid[16]; nvmlReturn_t status; uint clique; uchar state; uint health}
V2_VERSION = 0x02000024
_V2 = struct.Struct("<I16siIB3sI")  # 36 bytes
_V1 = struct.Struct("<16siIB3s")  # 28 bytes
# The 3 bytes after the unsigned-char state are padding: the driver copies its own struct, so
# they carry whatever its memory held. A reader that takes state as a c_uint sees them.
PADDING = b"\xab\xcd\xef"

_CFN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)


def c_fabric_functions(fabric_of: Callable[[Any], Any]) -> dict[str, Any]:
    """``nvmlDeviceGetGpuFabricInfoV`` and ``nvmlDeviceGetGpuFabricInfo`` as C function pointers.

    ``fabric_of(handle)`` gives a FakeFabric, or None for NotSupported. The functions write
    through the raw address they receive, exactly sizeof(C struct) bytes, as libnvidia-ml does.
    """

    def v2(handle: Any, addr: int) -> int:
        f = fabric_of(handle)
        if f is None:
            return int(real.NVML_ERROR_NOT_SUPPORTED)
        (version,) = struct.unpack_from("<I", (ctypes.c_char * 4).from_address(addr))
        if version != V2_VERSION:
            return int(real.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        buf = (ctypes.c_char * _V2.size).from_address(addr)
        _V2.pack_into(buf, 0, version, f.cluster_uuid, f.status, f.clique_id, f.state, PADDING, f.health_mask)
        return 0

    def v1(handle: Any, addr: int) -> int:
        f = fabric_of(handle)
        if f is None:
            return int(real.NVML_ERROR_NOT_SUPPORTED)
        buf = (ctypes.c_char * _V1.size).from_address(addr)
        _V1.pack_into(buf, 0, f.cluster_uuid, f.status, f.clique_id, f.state, PADDING)
        return 0

    return {"nvmlDeviceGetGpuFabricInfoV": _CFN(v2), "nvmlDeviceGetGpuFabricInfo": _CFN(v1)}


def wrapper(name: str, c_fn: Any) -> Callable[[Any, Any], int]:
    """pynvml's wrapper, as in every line: ``fn = _nvmlGetFunctionPointer(name); ret = fn(device,
    info); _nvmlCheckReturn(ret)``; the struct reference goes to C as its address."""

    def call(device: Any, info: Any) -> int:
        ret = c_fn(device, ctypes.cast(info, ctypes.c_void_p))
        if ret != 0:
            raise real.NVMLError(ret)
        return 0

    call.__name__ = name
    return call
