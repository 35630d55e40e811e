"""The one choke point every AMD SMI call of the probe goes through (issue 35).

:meth:`AmdSmiCalls.attempt` calls ``amdsmi.<name>(*args)`` in the time-limited worker of
:mod:`topomap.probe.guarded` and turns whatever goes wrong into a
:class:`~topomap.model.snapshot.Problem` on the GPU or pair it concerns: an ``AmdSmiLibraryException``
of any status code (the binding raises it for every status that is not SUCCESS: ROCm/amdsmi
``py-interface/amdsmi_interface.py`` ``_check_res``, with ``AmdSmiRetryException`` and
``AmdSmiTimeoutException`` for RETRY and TIMEOUT), ``AmdSmiParameterException``, any other exception,
a call the installed binding lacks, a call that hangs (cut after its limit) and calls left when the
overall budget is spent. NOT_SUPPORTED (2) and NOT_YET_IMPLEMENTED (3) mean "this GPU does not do
that": the value is absent (:data:`UNSUPPORTED`), recorded only when asked.
"""

from __future__ import annotations

import re
from typing import Any

from topomap.model.snapshot import Problem
from topomap.probe.guarded import BudgetSpent, CallRunner, CallTimedOut
from topomap.probe.nvml_errors import UNSUPPORTED

#: ``amdsmi_status_t`` names by value (amdsmi_wrapper.py, amdsmi 7.0.2: AMDSMI_STATUS_*).
STATUS_NAMES: dict[int, str] = {
    1: "INVAL",
    2: "NOT_SUPPORTED",
    3: "NOT_YET_IMPLEMENTED",
    4: "FAIL_LOAD_MODULE",
    5: "FAIL_LOAD_SYMBOL",
    6: "DRM_ERROR",
    7: "API_FAILED",
    8: "TIMEOUT",
    9: "RETRY",
    10: "NO_PERM",
    11: "INTERRUPT",
    12: "IO",
    13: "ADDRESS_FAULT",
    14: "FILE_ERROR",
    15: "OUT_OF_RESOURCES",
    16: "INTERNAL_EXCEPTION",
    17: "INPUT_OUT_OF_BOUNDS",
    18: "INIT_ERROR",
    19: "REFCOUNT_OVERFLOW",
    30: "BUSY",
    31: "NOT_FOUND",
    32: "NOT_INIT",
    33: "NO_SLOT",
    34: "DRIVER_NOT_LOADED",
    40: "NO_DATA",
    41: "INSUFFICIENT_SIZE",
    42: "UNEXPECTED_SIZE",
    43: "UNEXPECTED_DATA",
    44: "NON_AMD_CPU",
    52: "FILE_NOT_FOUND",
    53: "ARG_PTR_NULL",
    54: "AMDGPU_RESTART_ERR",
    55: "SETTING_UNAVAILABLE",
    4294967294: "MAP_ERROR",
    4294967295: "UNKNOWN_ERROR",
}
UNSUPPORTED_CODES = (2, 3)
MISSING = "not in this amdsmi binding"
_GPU_IN = re.compile(r"\bgpu\d+")


def fault_text(err: BaseException) -> tuple[int | None, str]:
    """(AMD SMI status code or None, the text a problem shows): "NOT_SUPPORTED (2)" for the library's
    own exceptions (they carry ``err_code``), "TimeoutError: …" for anything else."""
    code = getattr(err, "err_code", None)
    if isinstance(code, int) and type(err).__name__.startswith("AmdSmi"):
        return code, f"{STATUS_NAMES.get(code, 'UNKNOWN_ERROR')} ({code})"
    text = str(err)
    return None, f"{type(err).__name__}: {text}" if text else type(err).__name__


class AmdSmiCalls:
    """Calls into one ``amdsmi`` module (or a fake of it), recording failures into ``problems``."""

    def __init__(self, lib: Any, problems: list[Problem], runner: CallRunner) -> None:
        self.lib = lib
        self.problems = problems
        self.runner = runner
        self.hung: set[str] = set()
        self.missing: set[str] = set()
        self._budget_noted = False

    def skipped(self, target: str | None) -> bool:
        return target in self.hung or any(g in self.hung for g in _GPU_IN.findall(target or ""))

    def attempt(
        self,
        fn_name: str,
        target: str | None,
        *args: Any,
        record_unsupported: bool = True,
        limit_s: float | None = None,
    ) -> tuple[bool, Any]:
        """(ok, value) of ``amdsmi.<fn_name>(*args)``; never raises. ``(False, UNSUPPORTED)`` for
        NOT_SUPPORTED / NOT_YET_IMPLEMENTED and a function the binding lacks; ``(False, None)`` for a
        failure, recorded against ``target``."""
        if self.skipped(target):
            return False, None
        if self.runner.spent():
            self._note_budget(fn_name)
            return False, None
        try:
            fn = getattr(self.lib, fn_name)
        except Exception:
            fn = None
        if not callable(fn):
            if fn_name not in self.missing:
                self.missing.add(fn_name)
                self.record(fn_name, None, MISSING)
            return False, UNSUPPORTED
        try:
            return True, self.runner.run(fn, *args, limit_s=limit_s)
        except CallTimedOut as err:
            if target is not None:
                gpus = _GPU_IN.findall(target)
                self.hung.update(gpus if len(gpus) == 1 else [target])
            later = f"; later calls for {target} skipped" if target is not None else ""
            self.record(fn_name, target, f"{err}{later}")
            return False, None
        except BudgetSpent:
            self._note_budget(fn_name)
            return False, None
        except Exception as err:
            code, text = fault_text(err)
            if code in UNSUPPORTED_CODES:
                if record_unsupported:
                    self.record(fn_name, target, text)
                return False, UNSUPPORTED
            self.record(fn_name, target, text)
            return False, None

    def call(self, fn_name: str, target: str | None, *args: Any, **kw: Any) -> Any:
        _ok, value = self.attempt(fn_name, target, *args, **kw)
        return value

    def record(self, call: str, target: str | None, error: str) -> None:
        self.problems.append(Problem(source="amdsmi", call=call, target=target, error=error))

    def _note_budget(self, fn_name: str) -> None:
        if not self._budget_noted:
            self._budget_noted = True
            total = self.runner.total_s if self.runner.total_s is not None else 0.0
            self.record(fn_name, None, f"{BudgetSpent(total)}; this and later AMD SMI calls skipped")
