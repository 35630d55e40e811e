"""NVML out-structs as ``nvml.h`` lays them out, read by their C offsets, never by pynvml's classes.

pynvml's ctypes classes do not always match the C library: ``nvmlGpuFabricInfo*.clusterUuid`` is
``c_char * 80`` in nvidia-ml-py 12.550–12.560 (every later field then sits at the wrong offset),
a ``c_char * 16`` that pynvml's ``_PrintableStructure`` *decodes as UTF-8* on access in
12.570–12.575 (a UUID with a NUL or a byte >= 0x80 is cut or raises), and ``c_uint8 * 16`` only
from 13.580.65. The fabric ``state`` is an ``unsigned char`` in C, a ``c_uint`` in every pynvml.
So the probe hands the driver its own buffers with the C layout, and reads strings such as a
remote NVLink bus id as raw bytes at the C field's offset, which cannot raise.
"""

from __future__ import annotations

import ctypes
from typing import Any

FABRIC_UUID_LEN = 16  # NVML_GPU_FABRIC_UUID_LEN


class FabricInfoV1(ctypes.Structure):
    """``nvmlGpuFabricInfo_t`` (R525+, deprecated by the versioned call): 28 bytes."""

    _fields_ = (
        ("clusterUuid", ctypes.c_uint8 * FABRIC_UUID_LEN),
        ("status", ctypes.c_int),  # nvmlReturn_t
        ("cliqueId", ctypes.c_uint32),
        ("state", ctypes.c_uint8),  # nvmlGpuFabricState_t is an unsigned char
    )


class FabricInfoV2(ctypes.Structure):
    """``nvmlGpuFabricInfo_v2_t`` (R550+, ``nvmlDeviceGetGpuFabricInfoV``): 36 bytes."""

    _fields_ = (
        ("version", ctypes.c_uint),
        ("clusterUuid", ctypes.c_uint8 * FABRIC_UUID_LEN),
        ("status", ctypes.c_int),
        ("cliqueId", ctypes.c_uint32),
        ("state", ctypes.c_uint8),
        ("healthMask", ctypes.c_uint32),
    )


# NVML_STRUCT_VERSION(GpuFabricInfo, 2): sizeof | version << 24 = 0x02000024
FABRIC_INFO_V2 = ctypes.sizeof(FabricInfoV2) | (2 << 24)


def new_fabric_info_v2() -> FabricInfoV2:
    info = FabricInfoV2()
    info.version = FABRIC_INFO_V2
    return info


def raw_field(struct: Any, name: str) -> bytes:
    """The bytes of ``struct``'s field ``name`` at its offset, undecoded (pynvml decodes ``c_char``
    fields on attribute access, which raises on a non-UTF-8 byte)."""
    desc = getattr(type(struct), name)
    return ctypes.string_at(ctypes.addressof(struct) + desc.offset, desc.size)


def c_text(raw: bytes) -> str | None:
    """A NUL-terminated C string of printable ASCII, or None (empty, or bytes no bus id has)."""
    text = raw.split(b"\0", 1)[0]
    if not text or any(b < 0x20 or b > 0x7E for b in text):
        return None
    return text.decode("ascii").strip() or None
