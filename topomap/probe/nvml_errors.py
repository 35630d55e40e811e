"""What an exception out of an NVML call means: the one translation for probe, measure and record.

:func:`nvml_fault` sorts what ``pynvml.<call>()`` raised into a :class:`NvmlFault` (unsupported,
lost, failed, or foreign to NVML) with the text a :class:`~topomap.model.snapshot.Problem` shows;
:class:`~topomap.probe.nvml_calls.NvmlCalls` (the probe) and :class:`~topomap.record.sampler.GpuSampler`
(``topomap record``) both ask it, and both answer :data:`UNSUPPORTED` for a call that is not supported
here and ``None`` for one that failed. The NVML error class comes from the module the caller was given
(the real ``pynvml`` or a fake), so this module imports no binding.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Literal

from topomap.base.errors import TopomapError

# Errors that mean "this GPU/driver/binding does not do that": the value is absent, not unknown.
UNSUPPORTED_ERRORS = ("NVMLError_NotSupported", "NVMLError_FunctionNotFound", "NVMLError_Deprecated")
# nvidia-ml-py turns FunctionNotFound from an unversioned call (the process lists) into this error,
# which is not an NVMLError, when the driver lacks the versioned symbol (nvml-cuda.md §2.1).
LIBRARY_MISMATCH = "NVMLLibraryMismatchError"
MISSING_WRAPPER = "FunctionNotFound (not in this nvidia-ml-py)"

FaultKind = Literal["unsupported", "lost", "failed", "foreign"]


class _Unsupported:
    """Sentinel: the call is not supported here (distinct from a failure, which is None)."""

    def __repr__(self) -> str:
        return "UNSUPPORTED"


UNSUPPORTED = _Unsupported()


@dataclass(frozen=True)
class NvmlFault:
    """What one failed NVML call means.

    ``kind``: "unsupported" (NotSupported, FunctionNotFound, Deprecated, a library mismatch),
    "lost" (GPU_IS_LOST, 15), "failed" (any other NVML error; ``ctypes.ArgumentError`` from
    pynvml's tuple-valued ``NVML_P2P_CAPS_INDEX_READ``, nvml-cuda.md §3.6), or "foreign" (an
    exception that is not NVML's). ``error_class``: the exception's class name
    ("NVMLError_NoPermission"); ``text``: "NoPermission (4)" for an NVML error, "TimeoutError: …"
    for anything else.
    """

    kind: FaultKind
    error_class: str
    text: str

    @property
    def name(self) -> str:
        """The error without NVML's prefix: "NoPermission" for ``NVMLError_NoPermission``."""
        return self.error_class.removeprefix("NVMLError_")


def not_nvidia_ml_py(lib: Any) -> TopomapError | None:
    """Why ``lib`` cannot be used, when it is the old PyPI ``pynvml`` (no ``nvmlInitWithFlags``) that
    shadows nvidia-ml-py; None when it can."""
    if callable(getattr(lib, "nvmlInitWithFlags", None)):
        return None
    return TopomapError(
        "the pynvml module is not nvidia-ml-py (the old PyPI pynvml shadows it)",
        hint="pip install --force-reinstall nvidia-ml-py",
    )


def nvml_error_class(lib: Any) -> type[BaseException] | None:
    """``lib.NVMLError`` when the module has a usable one (a broken module or fake may not)."""
    err_cls = getattr(lib, "NVMLError", None)
    return err_cls if isinstance(err_cls, type) and issubclass(err_cls, BaseException) else None


def nvml_fault(err: BaseException, nvml_error: type[BaseException] | None) -> NvmlFault:
    """The meaning of ``err``, raised by a call into the module whose error class is ``nvml_error``."""
    cls = type(err).__name__
    if nvml_error is not None and isinstance(err, nvml_error):
        value = getattr(err, "value", None)
        text = f"{cls.removeprefix('NVMLError_')} ({value})" if value is not None else _plain(err)
        if cls in UNSUPPORTED_ERRORS:
            return NvmlFault("unsupported", cls, text)
        if cls == "NVMLError_GpuIsLost":
            return NvmlFault("lost", cls, text)
        return NvmlFault("failed", cls, text)
    if cls == LIBRARY_MISMATCH:
        return NvmlFault("unsupported", cls, f"{cls}: the driver lacks this version of the call")
    if isinstance(err, ctypes.ArgumentError):
        return NvmlFault("failed", cls, _plain(err))
    return NvmlFault("foreign", cls, _plain(err))


def _plain(err: BaseException) -> str:
    name = type(err).__name__
    text = str(err)
    return f"{name}: {text}" if text else name
