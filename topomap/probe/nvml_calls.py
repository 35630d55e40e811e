"""The one choke point every NVML call of the probe goes through.

:meth:`NvmlCalls.attempt` calls ``pynvml.<name>(*args)`` in the time-limited worker of
:mod:`topomap.probe.guarded` and turns whatever goes wrong into a
:class:`~topomap.model.snapshot.Problem` on the device or pair it concerns: an ``NVMLError`` of any code,
``ctypes.ArgumentError`` (pynvml's tuple-valued ``NVML_P2P_CAPS_INDEX_READ``, nvml-cuda.md
§3.6), ``UnicodeDecodeError`` from a mangled GPU name, an ``AttributeError`` for a wrapper an
old nvidia-ml-py lacks, any other exception, a call that hangs (cut after its limit) and calls
left when the overall budget is spent. Nothing raised by the library ends the probe. What an
exception means is :func:`topomap.probe.nvml_errors.nvml_fault`'s to say (the sampler of
``topomap record`` asks it too).

A GPU that answers ``GPU_IS_LOST`` (15) is recorded once and never called again, for itself,
its MIG devices or any pair it is in.
"""

from __future__ import annotations

import re
from typing import Any

from topomap.model.snapshot import Problem
from topomap.probe.guarded import BudgetSpent, CallRunner, CallTimedOut
from topomap.probe.nvml_errors import MISSING_WRAPPER, UNSUPPORTED, nvml_error_class, nvml_fault

_GPU_IN = re.compile(r"\bgpu\d+")


def gpus_in(target: str | None) -> list[str]:
    """The GPU ids a problem target names: "gpu3" → [gpu3]; "gpu1-gpu3" → [gpu1, gpu3]; "gpu2/mig0" → [gpu2]."""
    return _GPU_IN.findall(target or "")


class NvmlCalls:
    """Calls into one pynvml module (or a fake of it), recording failures into ``problems``."""

    def __init__(self, lib: Any, problems: list[Problem], runner: CallRunner) -> None:
        self.lib = lib
        self.problems = problems
        self.runner = runner
        self.lost: set[str] = set()  # "gpu3": answered GPU_IS_LOST; never called again
        self.hung: set[str] = set()  # "gpu3" or "gpu1-gpu3": a call timed out; later calls skipped
        self.missing: set[str] = set()  # wrappers this nvidia-ml-py lacks, recorded once
        self.lost_in_pair: list[str] = []  # calls on a pair that answered GPU_IS_LOST, not yet resolved
        self.last_error_class: str | None = None  # of the last failed call: "NVMLError_FunctionNotFound", …
        self._budget_noted = False
        self._nvml_error = nvml_error_class(lib)

    def skipped(self, target: str | None) -> bool:
        """True when the target's GPU is lost or hung: calls for it are not made."""
        return target in self.hung or any(g in self.lost or g in self.hung for g in gpus_in(target))

    def attempt(
        self,
        fn_name: str,
        target: str | None,
        *args: Any,
        record_unsupported: bool = True,
        quiet: tuple[str, ...] = (),
        limit_s: float | None = None,
    ) -> tuple[bool, Any]:
        """(ok, value) of ``pynvml.<fn_name>(*args)``; never raises.

        ``(False, UNSUPPORTED)`` for NotSupported / FunctionNotFound / Deprecated, for a wrapper
        missing from this nvidia-ml-py and for the NVML error classes named in ``quiet`` (those
        are never recorded; the others only with ``record_unsupported``); ``(False, None)`` for a
        failure, which is recorded against ``target``.
        """
        if self.skipped(target):
            return False, None
        if self.runner.spent():
            self._note_budget(fn_name, target)
            return False, None
        try:
            fn = getattr(self.lib, fn_name)
        except Exception:  # AttributeError from the module, or anything a broken module raises
            fn = None
        if not callable(fn):
            self.last_error_class = MISSING_WRAPPER
            if record_unsupported:
                self.note_missing(fn_name)
            return False, UNSUPPORTED
        try:
            return True, self.runner.run(fn, *args, limit_s=limit_s)
        except CallTimedOut as err:
            if target is not None:  # a GPU, or a pair: later calls for it are skipped
                self.hung.update(gpus_in(target) if len(gpus_in(target)) == 1 else [target])
            later = f"; later calls for {target} skipped" if target is not None else ""
            self.record(fn_name, target, f"{err}{later}")
            return False, None
        except BudgetSpent:
            self._note_budget(fn_name, target)
            return False, None
        except Exception as err:
            return self._failed(fn_name, target, err, record_unsupported, quiet)

    def call(self, fn_name: str, target: str | None, *args: Any, **kw: Any) -> Any:
        """The value of :meth:`attempt`, None on failure, :data:`UNSUPPORTED` when unsupported."""
        _ok, value = self.attempt(fn_name, target, *args, **kw)
        return value

    def _failed(
        self, fn_name: str, target: str | None, err: Exception, record_unsupported: bool, quiet: tuple[str, ...]
    ) -> tuple[bool, Any]:
        fault = nvml_fault(err, self._nvml_error)
        self.last_error_class = fault.error_class
        if fault.error_class in quiet:
            return False, UNSUPPORTED
        if fault.kind == "unsupported":
            if record_unsupported:
                self.record(fn_name, target, fault.text)
            return False, UNSUPPORTED
        if fault.kind == "lost":
            gpus = gpus_in(target)
            if len(gpus) == 1:
                self.mark_lost(gpus[0], fn_name)
                return False, None
            if len(gpus) == 2:
                self.lost_in_pair.append(fn_name)
                return False, None
        self.record(fn_name, target, fault.text)
        return False, None

    def note_missing(self, fn_name: str) -> None:
        """A wrapper this nvidia-ml-py lacks: about the binding, so recorded once, on no device."""
        if fn_name not in self.missing:
            self.missing.add(fn_name)
            self.record(fn_name, None, MISSING_WRAPPER)

    def mark_lost(self, gpu: str, fn_name: str) -> None:
        """Record once that ``gpu`` fell off the bus; later calls for it are skipped."""
        if gpu in self.lost:
            return
        self.lost.add(gpu)
        self.record(fn_name, gpu, "GpuIsLost (15): GPU fell off the bus; later calls skipped")

    def record(self, call: str, target: str | None, error: str) -> None:
        self.problems.append(Problem(source="nvml", call=call, target=target, error=error))

    def _note_budget(self, fn_name: str, target: str | None) -> None:
        if self._budget_noted:
            return
        self._budget_noted = True
        total = self.runner.total_s if self.runner.total_s is not None else 0.0
        where = f" (stopped at {target})" if target else ""
        self.record(fn_name, None, f"{BudgetSpent(total)}; this and later NVML calls skipped{where}")
