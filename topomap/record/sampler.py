"""Per-card NVML sampling while a command runs (the `nvidia-smi dmon` / `pmon` of topomap record).

Takes the NVML module as a parameter (the real ``pynvml`` from :func:`topomap.probe.nvml.nvml_module`,
or a fake in tests), so this module never imports pynvml itself. What an NVML exception means is
:func:`topomap.probe.nvml_errors.nvml_fault`'s to say, as for the probe. Each failure becomes a
:class:`~topomap.model.snapshot.Problem` once per (call, card, error), and the value ``None``; a call a card
does not support (NotSupported, e.g. utilisation on a MIG parent) answers
:data:`~topomap.probe.nvml_errors.UNSUPPORTED` and is not asked again; a card that falls off the bus
(GPU_IS_LOST) is marked lost at that time and not asked again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from topomap.model.snapshot import Problem
from topomap.probe.nvml_errors import MISSING_WRAPPER, UNSUPPORTED, not_nvidia_ml_py, nvml_error_class, nvml_fault
from topomap.record.model import GpuProcess, GpuSeries

# NVML field ids (nvml.h): NVLink data throughput counters in KiB, cumulative; scope UINT_MAX sums all links.
FI_NVLINK_THROUGHPUT_DATA_TX = 138
FI_NVLINK_THROUGHPUT_DATA_RX = 139
_ALL_LINKS = 0xFFFFFFFF
PCIE_TX, PCIE_RX = 0, 1  # nvmlPcieUtilCounter_t


@dataclass
class _Card:
    series: GpuSeries
    handle: Any
    is_mig: bool = False
    unsupported: set[str] = field(default_factory=set)
    last_pcie_t: float | None = None
    memory_v2: bool | None = None  # the driver answers nvmlDeviceGetMemoryInfo_v2 (None: not asked yet)
    nvlink_prev: tuple[float, int, int] | None = None  # t, tx KiB, rx KiB
    procs: dict[int, GpuProcess] = field(default_factory=dict)


class GpuSampler:
    """Open NVML, find the cards, and take one sample of each per :meth:`sample` call.

    ``pcie_period_s``: NVML's PCIe throughput call blocks while it counts bytes over 20 ms
    (nvml.h, nvmlDeviceGetPcieThroughput), twice per card (RX, TX). So it is read at most once per
    this period per card, and for at most ``pcie_cards_per_sample`` cards per sample, the ones
    waiting longest first: 8 cards cost one 40 ms read per sample, not 320 ms.
    """

    def __init__(
        self,
        lib: Any,
        pcie_period_s: float = 1.0,
        pcie_cards_per_sample: int = 1,
        name_of: Callable[[int], str | None] | None = None,
    ) -> None:
        self.lib = lib
        self.pcie_period_s = pcie_period_s
        self.pcie_cards_per_sample = pcie_cards_per_sample
        self.name_of = name_of or (lambda pid: None)
        self.cards: list[_Card] = []
        self.problems: list[Problem] = []
        self.note: str | None = None  # why nothing was sampled
        self._seen: set[tuple[str, str | None, str]] = set()
        self._nvml_error = nvml_error_class(lib)
        self._open = False

    # --- plumbing --------------------------------------------------------------------------
    def _record(self, call: str, target: str | None, error: str) -> None:
        key = (call, target, error)
        if key not in self._seen:
            self._seen.add(key)
            self.problems.append(Problem(source="nvml", call=call, target=target, error=error))

    def _call(self, card: _Card | None, fn_name: str, t: float | None, *args: Any, quiet: bool = False) -> Any:
        """``lib.<fn_name>(*args)``; a failure is recorded once and answers None.

        :data:`UNSUPPORTED` when the card does not do it (asked once, never again) and None from a
        card that is lost; an exception that is not NVML's is raised. ``quiet``: NotSupported is an
        answer here (MIG mode on a card without MIG), not a problem.
        """
        target = card.series.id if card is not None else None
        if card is not None and card.series.lost_at_s is not None:
            return None
        if card is not None and fn_name in card.unsupported:
            return UNSUPPORTED
        fn = getattr(self.lib, fn_name, None)
        if fn is None:
            if card is not None:
                card.unsupported.add(fn_name)
            self._record(fn_name, target, MISSING_WRAPPER)
            return UNSUPPORTED
        try:
            return fn(*args)
        except Exception as err:
            fault = nvml_fault(err, self._nvml_error)
            if fault.kind == "foreign":
                raise
            if card is not None and fault.kind == "unsupported":
                card.unsupported.add(fn_name)
                if not quiet:
                    self._record(fn_name, target, fault.text)
                return UNSUPPORTED
            if card is not None and fault.kind == "lost":
                self._mark_lost(card, t)
                self._record(fn_name, target, f"{fault.text}: the card fell off the bus during the run")
                return None
            self._record(fn_name, target, fault.text)
            return None

    def _mark_lost(self, card: _Card, t: float | None) -> None:
        lost_at = t if t is not None else 0.0
        for c in self.cards:  # a lost GPU takes its MIG devices with it
            if c.series.index == card.series.index and c.series.lost_at_s is None:
                c.series.lost_at_s = lost_at

    # --- open / close ----------------------------------------------------------------------
    def open(self) -> bool:
        """Start NVML and list the cards. False (with :attr:`note` saying why) when none can be sampled."""
        shadowed = not_nvidia_ml_py(self.lib)
        if shadowed is not None:
            self.note = f"{shadowed} ({shadowed.hint})"
            return False
        try:
            self.lib.nvmlInit()
        except self.lib.NVMLError as err:
            self.note = f"NVML did not start ({nvml_fault(err, self._nvml_error).name}): no NVIDIA driver here"
            return False
        self._open = True
        count = self._call(None, "nvmlDeviceGetCount", None)
        if not isinstance(count, int) or count <= 0:
            self.note = "NVML started but listed no GPU" if count == 0 else "NVML could not count the GPUs"
            return False
        for i in range(count):
            self._add_gpu(i)
        if not self.cards:
            self.note = "NVML listed GPUs but none could be opened"
        return bool(self.cards)

    def _add_gpu(self, i: int) -> None:
        handle = self._call(None, "nvmlDeviceGetHandleByIndex", None, i)
        if handle is None or handle is UNSUPPORTED:
            return
        card = _Card(GpuSeries(id=f"gpu{i}", index=i), handle)
        self.cards.append(card)
        card.series.uuid = _text(self._call(card, "nvmlDeviceGetUUID", None, handle))
        card.series.name = _text(self._call(card, "nvmlDeviceGetName", None, handle))
        mem = self._call(card, "nvmlDeviceGetMemoryInfo", None, handle)
        card.series.memory_total_bytes = _int_attr(mem, "total")
        mode = self._call(card, "nvmlDeviceGetMigMode", None, handle, quiet=True)
        if isinstance(mode, (list, tuple)) and mode and mode[0] == 1:
            self._add_mig(card)

    def _add_mig(self, parent: _Card) -> None:
        n = self._call(parent, "nvmlDeviceGetMaxMigDeviceCount", None, parent.handle)
        if not isinstance(n, int):
            return
        for k in range(n):
            fn = getattr(self.lib, "nvmlDeviceGetMigDeviceHandleByIndex", None)
            if fn is None:
                return
            try:
                h = fn(parent.handle, k)
            except self.lib.NVMLError:  # empty slots answer NotFound
                continue
            s = GpuSeries(id=f"{parent.series.id}/mig{k}", index=parent.series.index)
            card = _Card(s, h, is_mig=True)
            self.cards.append(card)
            s.uuid = _text(self._call(card, "nvmlDeviceGetUUID", None, h))
            s.name = _text(self._call(card, "nvmlDeviceGetName", None, h))
            s.memory_total_bytes = _int_attr(self._call(card, "nvmlDeviceGetMemoryInfo", None, h), "total")

    def close(self) -> None:
        if self._open:
            self._open = False
            try:
                self.lib.nvmlShutdown()
            except self.lib.NVMLError as err:
                self._record("nvmlShutdown", None, nvml_fault(err, self._nvml_error).text)

    # --- sampling --------------------------------------------------------------------------
    def sample(self, t: float, tree_pids: set[int]) -> None:
        """One sample of every card at ``t`` seconds since the command started."""
        due = [
            c
            for c in self.cards
            if (c.last_pcie_t is None or t - c.last_pcie_t >= self.pcie_period_s)
            and "nvmlDeviceGetPcieThroughput" not in c.unsupported
            and c.series.lost_at_s is None
        ]
        due.sort(key=lambda c: -1.0 if c.last_pcie_t is None else c.last_pcie_t)
        pcie_now = {id(c) for c in due[: self.pcie_cards_per_sample]}
        for card in self.cards:
            self._sample_card(card, t, tree_pids, id(card) in pcie_now)

    def _memory(self, card: _Card, t: float) -> Any:
        """Memory info, v2 where the driver has it: its ``used`` leaves out the driver's reserved
        memory, as nvidia-smi shows it (v1's ``used`` includes it). Asked once; v1 otherwise."""
        version = getattr(self.lib, "nvmlMemory_v2", None)
        if version is not None and card.memory_v2 is not False and card.series.lost_at_s is None:
            try:
                mem = self.lib.nvmlDeviceGetMemoryInfo(card.handle, version=version)
                card.memory_v2 = True
                return mem
            except Exception:
                if card.memory_v2 is None:
                    card.memory_v2 = False  # no _v2 in this driver (R510 and older): v1 from now on
        return self._call(card, "nvmlDeviceGetMemoryInfo", t, card.handle)

    def _sample_card(self, card: _Card, t: float, tree_pids: set[int], read_pcie: bool) -> None:
        s, h = card.series, card.handle
        s.t_s.append(round(t, 4))
        s.memory_used_bytes.append(_int_attr(self._memory(card, t), "used"))
        util = self._call(card, "nvmlDeviceGetUtilizationRates", t, h)
        s.util_gpu_pct.append(_int_attr(util, "gpu"))
        s.util_memory_pct.append(_int_attr(util, "memory"))
        rx = tx = None
        if read_pcie:
            card.last_pcie_t = t
            tx = _kib(self._call(card, "nvmlDeviceGetPcieThroughput", t, h, PCIE_TX))
            rx = _kib(self._call(card, "nvmlDeviceGetPcieThroughput", t, h, PCIE_RX))
        s.pcie_rx_bytes_s.append(rx)
        s.pcie_tx_bytes_s.append(tx)
        nv_rx, nv_tx = self._nvlink(card, t)
        s.nvlink_rx_bytes_s.append(nv_rx)
        s.nvlink_tx_bytes_s.append(nv_tx)
        self._processes(card, t, tree_pids)

    def _nvlink(self, card: _Card, t: float) -> tuple[float | None, float | None]:
        if card.is_mig:
            return None, None
        ids = [(FI_NVLINK_THROUGHPUT_DATA_TX, _ALL_LINKS), (FI_NVLINK_THROUGHPUT_DATA_RX, _ALL_LINKS)]
        values = self._call(card, "nvmlDeviceGetFieldValues", t, card.handle, ids)
        if values is None or values is UNSUPPORTED:
            return None, None
        try:
            ok = [int(v.nvmlReturn) == 0 for v in values]
            if not all(ok):
                card.unsupported.add("nvmlDeviceGetFieldValues")  # no NVLink on this card
                return None, None
            tx_kib, rx_kib = int(values[0].value.ullVal), int(values[1].value.ullVal)
        except (AttributeError, IndexError, TypeError, ValueError):
            return None, None
        prev, card.nvlink_prev = card.nvlink_prev, (t, tx_kib, rx_kib)
        if prev is None or t <= prev[0]:
            return None, None
        dt = t - prev[0]
        return round(max(0, rx_kib - prev[2]) * 1024 / dt, 1), round(max(0, tx_kib - prev[1]) * 1024 / dt, 1)

    def _processes(self, card: _Card, t: float, tree_pids: set[int]) -> None:
        procs: Any = UNSUPPORTED
        for fn_name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetComputeRunningProcesses_v2"):
            procs = self._call(card, fn_name, t, card.handle)
            if procs is not UNSUPPORTED:  # the _v3 call is missing from this driver: try _v2
                break
        if not isinstance(procs, (list, tuple)):
            return
        for p in procs:
            pid = getattr(p, "pid", None)
            if not isinstance(pid, int):
                continue
            used = getattr(p, "usedGpuMemory", None)
            used = used if isinstance(used, int) else None
            gp = card.procs.get(pid)
            if gp is None:
                gp = GpuProcess(
                    pid=pid, name=self.name_of(pid), in_command_tree=pid in tree_pids, first_seen_s=t, last_seen_s=t
                )
                card.procs[pid] = gp
                card.series.processes.append(gp)
            gp.last_seen_s = round(t, 4)
            gp.in_command_tree = gp.in_command_tree or pid in tree_pids
            if used is not None and (gp.peak_memory_bytes is None or used > gp.peak_memory_bytes):
                gp.peak_memory_bytes = used

    def latest_memory(self) -> list[tuple[str, int | None, int | None]]:
        """(card id, memory used bytes, total bytes) at the last sample, for a live status line."""
        out = []
        for c in self.cards:
            used = c.series.memory_used_bytes[-1] if c.series.memory_used_bytes else None
            out.append((c.series.id, used, c.series.memory_total_bytes))
        return out


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value if isinstance(value, str) else None


def _int_attr(obj: Any, name: str) -> int | None:
    if obj is None or obj is UNSUPPORTED:
        return None
    v = getattr(obj, name, None)
    return int(v) if isinstance(v, int) else None


def _kib(value: Any) -> int | None:
    """NVML PCIe throughput is KiB/s (nvitop reads it so); stored as bytes/s."""
    return int(value) * 1024 if isinstance(value, int) else None
