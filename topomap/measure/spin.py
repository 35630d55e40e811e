"""A kernel that holds a stream while the timed copies are enqueued (issue 25 item 9).

nvbandwidth and p2pBandwidthLatencyTest both launch a spin kernel on the copy stream before the
start event: it loops until the host sets a flag in mapped pinned memory (or a timeout passes).
The start event, the copies and the end event queue up behind it; the host then sets the flag and
the whole run executes back to back on the GPU. Without it the start event runs as soon as it is
recorded and each copy starts when the CPU gets round to enqueueing it, so the timed window holds
the CPU's launch cost: for 8-byte copies the "latency" is the enqueue rate, not the copy's.

The kernel is PTX text, compiled by the driver at load (``cuModuleLoadData``): no nvcc and no
binary for a given architecture is needed. When the driver cannot load or launch it, the copies
run unheld and every figure says so.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

from topomap.measure.copies import CudaFail, Session

KERNEL = b"topomap_spin"
TIMEOUT_NS = 10_000_000_000  # a flag never set (a host that died) releases the stream after 10 s
_PORTABLE_DEVICEMAP = 0x01 | 0x02  # CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP

# spin(int *latch, u64 timeout_ns): one thread reads the flag with volatile loads until it is
# non-zero or %globaltimer has advanced by timeout_ns. PTX ISA 6.0 / sm_50: every driver this tool
# supports JIT-compiles it for the GPU at hand.
PTX = b"""//
// topomap: hold a stream until the host sets the latch (as nvbandwidth's spinKernel)
//
.version 6.0
.target sm_50
.address_size 64

.visible .entry topomap_spin(
    .param .u64 latch_param,
    .param .u64 timeout_param
)
{
    .reg .pred  %p<3>;
    .reg .b32   %r<2>;
    .reg .b64   %rd<7>;

    ld.param.u64        %rd1, [latch_param];
    ld.param.u64        %rd2, [timeout_param];
    cvta.to.global.u64  %rd3, %rd1;
    mov.u64             %rd4, %globaltimer;
SPIN:
    ld.volatile.global.u32  %r1, [%rd3];
    setp.ne.s32         %p1, %r1, 0;
    @%p1 bra            DONE;
    mov.u64             %rd5, %globaltimer;
    sub.s64             %rd6, %rd5, %rd4;
    setp.lt.u64         %p2, %rd6, %rd2;
    @%p2 bra            SPIN;
DONE:
    ret;
}
\0"""


@dataclass
class Latch:
    """One GPU's spin kernel and the mapped pinned flag it waits on."""

    ordinal: int
    function: Any
    host: int  # the flag, as the CPU writes it
    device: Any  # the same flag, as the kernel reads it
    module: Any
    # the kernel's two parameters and the array of pointers to them, alive while a launch may read them
    params: Any = field(default_factory=lambda: (ctypes.c_uint64 * 2)())
    pointers: Any = field(default_factory=lambda: (ctypes.c_void_p * 2)())

    def hold(self, s: Session, stream: Any) -> None:
        """Reset the flag and launch the kernel on ``stream``: later work on it waits."""
        ctypes.c_int.from_address(self.host).value = 0
        self.params[0], self.params[1] = int(self.device), TIMEOUT_NS
        base = ctypes.addressof(self.params)
        self.pointers[0], self.pointers[1] = base, base + 8
        args = (self.function, 1, 1, 1, 1, 1, 1, 0, stream, ctypes.addressof(self.pointers), 0)
        try:
            s.call("cuLaunchKernel", self.ordinal, *args)
        except CudaFail:
            self.release()
            raise

    def release(self) -> None:
        """Set the flag: the kernel ends and the queued work runs."""
        ctypes.c_int.from_address(self.host).value = 1


class Latches:
    """The latches of one worker, made on first use per GPU; ``unheld`` says why a GPU has none."""

    def __init__(self, s: Session) -> None:
        self.s = s
        self.by_ordinal: dict[int, Latch | None] = {}
        self.unheld: dict[int, str] = {}

    def get(self, ordinal: int) -> Latch | None:
        if ordinal not in self.by_ordinal:
            self.by_ordinal[ordinal] = self._make(ordinal)
        return self.by_ordinal[ordinal]

    def _make(self, ordinal: int) -> Latch | None:
        s = self.s
        try:
            s.context(ordinal)
            module = s.call("cuModuleLoadData", ordinal, PTX)
            function = s.call("cuModuleGetFunction", ordinal, module, KERNEL)
            host = int(s.call("cuMemHostAlloc", ordinal, 4, _PORTABLE_DEVICEMAP))
            device = s.call("cuMemHostGetDevicePointer", ordinal, host, 0)
        except CudaFail as err:
            self.unheld[ordinal] = f"no blocking kernel ({err}): each copy's launch is inside the timed window"
            return None
        ctypes.c_int.from_address(host).value = 1
        return Latch(ordinal, function, host, device, module)

    def close(self) -> None:
        for latch in self.by_ordinal.values():
            if latch is None:
                continue
            latch.release()
            for name, arg in (("cuMemFreeHost", latch.host), ("cuModuleUnload", latch.module)):
                try:
                    self.s.call(name, latch.ordinal, arg)
                except CudaFail:
                    continue
