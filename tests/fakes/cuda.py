"""A fake of ``cuda.bindings.driver`` driven by a FakeMachine.

Calls return tuples whose first element is the real ``CUresult`` enum. Binding-level
failures are exceptions as in the real bindings (nvml-cuda.md §5.6): no libcuda →
``RuntimeError`` on every call; a function the driver lacks → ``RuntimeError('Function "cuX"
not found')``. Ordinals follow ``cuda_order`` (CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER).
"""

from __future__ import annotations

import ctypes
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any

from cuda.bindings import driver as real

from tests.fakes.machine import FakeMachine

R = real.CUresult


class _Uuid:
    def __init__(self, raw: bytes) -> None:
        self.bytes = raw


class FakeCuda:
    CUresult = real.CUresult
    CUdevice_P2PAttribute = real.CUdevice_P2PAttribute

    def __init__(self, machine: FakeMachine, mig_uuids: bool = False) -> None:
        """``mig_uuids``: cuDeviceGetUuid as in cuda-bindings 13 (CUDA 13), which gives a MIG-enabled
        GPU's instance UUID, not the GPU's."""
        self.m = machine
        self.mig_uuids = mig_uuids
        self.initialised = False
        order = machine.cuda_order if machine.cuda_order is not None else list(range(len(machine.gpus)))
        self.order = order

    def _enter(self, name: str, needs_init: bool = True) -> R | None:
        if self.m.cuda_missing_library:
            raise RuntimeError("Failed to dlopen libcuda.so.1")
        if name in self.m.cuda_missing_functions:
            raise RuntimeError(f'Function "{name}" not found')
        if needs_init and not self.initialised:
            return R.CUDA_ERROR_NOT_INITIALIZED
        return None

    def cuDriverGetVersion(self) -> tuple[Any, ...]:
        err = self._enter("cuDriverGetVersion", needs_init=False)
        return (err, None) if err else (R.CUDA_SUCCESS, self.m.cuda_version)

    def cuInit(self, flags: int) -> tuple[Any, ...]:
        self._enter("cuInit", needs_init=False)
        if self.m.cuda_init_error is not None:
            return (R(self.m.cuda_init_error),)
        if not self.order:
            return (R.CUDA_ERROR_NO_DEVICE,)
        self.initialised = True
        return (R.CUDA_SUCCESS,)

    def cuDeviceGetCount(self) -> tuple[Any, ...]:
        err = self._enter("cuDeviceGetCount")
        return (err, None) if err else (R.CUDA_SUCCESS, len(self.order))

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, ...]:
        err = self._enter("cuDeviceGet")
        if err:
            return (err, None)
        if not 0 <= ordinal < len(self.order):
            return (R.CUDA_ERROR_INVALID_DEVICE, None)
        return (R.CUDA_SUCCESS, ordinal)

    def _gpu(self, dev: int) -> Any:
        return self.m.gpus[self.order[int(dev)]]

    def cuDeviceGetName(self, length: int, dev: int) -> tuple[Any, ...]:
        err = self._enter("cuDeviceGetName")
        return (err, None) if err else (R.CUDA_SUCCESS, self._gpu(dev).name.encode().ljust(length, b"\0"))

    def cuDeviceGetPCIBusId(self, length: int, dev: int) -> tuple[Any, ...]:
        err = self._enter("cuDeviceGetPCIBusId")
        if err:
            return (err, None)
        return (R.CUDA_SUCCESS, self._gpu(dev).bus.upper().encode().ljust(length, b"\0"))

    def cuDeviceGetUuid(self, dev: int) -> tuple[Any, ...]:
        err = self._enter("cuDeviceGetUuid")
        if err:
            return (err, None)
        g = self._gpu(dev)
        raw = uuidlib.UUID(g.uuid.removeprefix("GPU-")).bytes
        if self.mig_uuids and g.mig and g.mig[0]:
            raw = uuidlib.uuid5(uuidlib.NAMESPACE_OID, f"mig-{g.uuid}").bytes  # the instance's own
        return (R.CUDA_SUCCESS, _Uuid(raw))

    def _p2p_ok(self, a: int, b: int) -> bool:
        ia, ib = self.order[int(a)], self.order[int(b)]
        if self.m.cuda_can_access is not None:
            return self.m.cuda_can_access
        if self.m.nvlinks_between(ia, ib):
            return True
        return self.m.pcie_p2p[0] == 0 and self.m.pcie_p2p[1] == 0

    def cuDeviceCanAccessPeer(self, a: int, b: int) -> tuple[Any, ...]:
        err = self._enter("cuDeviceCanAccessPeer")
        if err:
            return (err, None)
        if int(a) == int(b):
            return (R.CUDA_ERROR_INVALID_DEVICE, None)
        return (R.CUDA_SUCCESS, 1 if self._p2p_ok(a, b) else 0)

    def cuDeviceGetP2PAttribute(self, attr: Any, a: int, b: int) -> tuple[Any, ...]:
        err = self._enter("cuDeviceGetP2PAttribute")
        if err:
            return (err, None)
        if int(a) == int(b):
            return (R.CUDA_ERROR_INVALID_DEVICE, None)
        ok = self._p2p_ok(a, b)
        nv = self.m.nvlinks_between(self.order[int(a)], self.order[int(b)])
        A = real.CUdevice_P2PAttribute
        if attr == A.CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
            return (R.CUDA_SUCCESS, 0 if nv else 1 if ok else 2)
        if attr == A.CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
            return (R.CUDA_SUCCESS, int(ok))
        if attr == A.CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
            return (R.CUDA_SUCCESS, int(bool(nv)))
        return (R.CUDA_ERROR_INVALID_VALUE, None)


# --- memory, streams, events and copies: what `topomap measure` drives -------------------------
# Copies really move bytes (ctypes buffers), so verification is real; time is simulated per
# stream from the machine's links, so figures are deterministic.

_PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.56}
_NVLINK_GBPS = 25.0  # per link, per direction (NVLink 3/4)


class _Ctx:
    def __init__(self, ordinal: int) -> None:
        self.ordinal = ordinal


class _Stream:
    def __init__(self, ordinal: int) -> None:
        self.ordinal = ordinal  # the context that created it
        self.t = 0.0  # simulated seconds
        self.hung = False
        self.seen: set[int] = set()  # memsets ordered before whatever is enqueued next
        # behind a spin kernel: the latch it waits on, and the work queued until it is set
        self.held: int | None = None
        self.pending: list[tuple[str, Any]] = []  # ("run", seconds) | ("record", event) | ("wait", event)


class _Module:
    def __init__(self, image: bytes) -> None:
        self.image = image


class _Function:
    def __init__(self, module: _Module, name: bytes) -> None:
        self.module, self.name = module, name


class _Event:
    def __init__(self, ordinal: int) -> None:
        self.ordinal = ordinal
        self.t: float | None = None
        self.hung = False
        self.seen: set[int] = set()
        self.stream: _Stream | None = None  # where it was last recorded


ENQUEUE_S = 4e-6  # the CPU's cost of one asynchronous call: an unheld stream cannot start work sooner
SPIN_ENTRY = b"topomap_spin"


@dataclass
class CopyRecord:
    """One copy as the fake saw it: which stream (created in which context) it ran on, which GPUs
    own its ends, and whether the last memset of its destination was ordered before it."""

    call: str
    stream: _Stream | None  # None: a synchronous copy
    src: int | None  # owning CUDA ordinal, None for host memory
    dst: int | None
    after_fill: bool


@dataclass
class FillRecord:
    call: str
    stream: _Stream | None  # None: the NULL stream (cuMemsetD8)
    dst: int


class FakeCudaMemory(FakeCuda):
    """FakeCuda plus what a measurement needs, with faults given as data.

    ``corrupt_pairs``: GPU index pairs whose peer copies are silently dropped (ACS redirect
    without P2P support); ``hang_pairs``: pairs whose peer copies never complete;
    ``free_bytes``: GPU index → free memory (cuMemAlloc past it is OUT_OF_MEMORY);
    ``lost_after_copies``: GPU index → copies it survives before every call on it fails
    with CUDA_ERROR_UNKNOWN (fell off the bus).
    """

    def __init__(
        self,
        machine: FakeMachine,
        corrupt_pairs: frozenset[frozenset[int]] = frozenset(),
        hang_pairs: frozenset[frozenset[int]] = frozenset(),
        free_bytes: dict[int, int] | None = None,
        lost_after_copies: dict[int, int] | None = None,
        max_peers: int = 8,
        mig_uuids: bool = False,
        ptx_error: int | None = None,
    ) -> None:
        """``ptx_error``: what cuModuleLoadData answers for the spin kernel's PTX (e.g. 222,
        CUDA_ERROR_UNSUPPORTED_PTX_VERSION, on a driver older than the PTX ISA); None loads it."""
        super().__init__(machine, mig_uuids=mig_uuids)
        self.ptx_error = ptx_error
        self.host_t = 0.0  # the CPU's clock: each asynchronous call costs ENQUEUE_S
        self.mapped: set[int] = set()  # pinned host blocks allocated with CU_MEMHOSTALLOC_DEVICEMAP
        self.streams: list[_Stream] = []
        self.launches: list[tuple[_Stream, int, int]] = []  # (stream, latch address, timeout ns)
        self.spin_timeouts = 0  # a stream waited on while its latch was never set
        self.corrupt_pairs = corrupt_pairs
        self.hang_pairs = hang_pairs
        self.free_bytes = free_bytes or {}
        self.lost_after = lost_after_copies or {}
        self.copies: dict[int, int] = {}
        self.current: _Ctx | None = None
        self.ctxs: dict[int, _Ctx] = {}
        self.blocks: dict[int, tuple[int | None, Any]] = {}  # address → (ordinal or None for host, buffer)
        self.used: dict[int, int] = {}
        self.peers: set[tuple[int, int]] = set()
        self.max_peers = max_peers  # peer mappings one context may hold (CUDA_ERROR_TOO_MANY_PEERS past it)
        self.n_copies = 0
        # ordering: every memset is an op; a stream knows the ops ordered before its next work,
        # the host the ops it has waited for; a copy into a freshly zeroed buffer must follow it
        self.n_ops = 0
        self.null: dict[int, _Stream] = {}  # each context's NULL stream (not ordered with non-blocking ones)
        self.done: set[int] = set()
        self.last_fill: dict[int, int] = {}
        self.copy_log: list[CopyRecord] = []
        self.fill_log: list[FillRecord] = []

    # helpers
    def _index(self, ordinal: int) -> int:
        return self.order[ordinal]

    def _lost(self, ordinal: int | None) -> bool:
        if ordinal is None:
            return False
        limit = self.lost_after.get(self._index(ordinal))
        return limit is not None and self.copies.get(ordinal, 0) >= limit

    def _cur(self, name: str) -> tuple[Any, int]:
        self._poll()
        err = self._enter(name)
        if err:
            return err, -1
        if self.current is None:
            return R.CUDA_ERROR_INVALID_CONTEXT, -1
        if self._lost(self.current.ordinal):
            return R.CUDA_ERROR_UNKNOWN, -1
        return None, self.current.ordinal

    def _pcie_gbps(self, ordinal: int) -> float:
        """Under load the link runs at its maximum generation (idle GPUs drop it) and its trained width."""
        g = self.m.gpus[self._index(ordinal)]
        return _PCIE_LANE_GBPS[g.pcie[2]] * g.pcie[1] * 0.85

    def _owner(self, addr: int) -> int | None:
        return self.blocks[int(addr)][0]

    # contexts
    def cuDevicePrimaryCtxRetain(self, dev: int) -> tuple[Any, ...]:
        err = self._enter("cuDevicePrimaryCtxRetain")
        if err:
            return (err, None)
        return (R.CUDA_SUCCESS, self.ctxs.setdefault(int(dev), _Ctx(int(dev))))

    def cuDevicePrimaryCtxRelease(self, dev: int) -> tuple[Any, ...]:
        return (R.CUDA_SUCCESS,)

    def cuCtxSetCurrent(self, ctx: _Ctx) -> tuple[Any, ...]:
        err = self._enter("cuCtxSetCurrent")
        if err:
            return (err,)
        self.current = ctx
        return (R.CUDA_ERROR_UNKNOWN,) if self._lost(ctx.ordinal) else (R.CUDA_SUCCESS,)

    def cuCtxEnablePeerAccess(self, peer: _Ctx, flags: int) -> tuple[Any, ...]:
        err, me = self._cur("cuCtxEnablePeerAccess")
        if err:
            return (err,)
        if not self._p2p_ok(me, peer.ordinal):
            return (R.CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,)
        if (me, peer.ordinal) in self.peers:
            return (R.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,)
        if sum(1 for x, _ in self.peers if x == me) >= self.max_peers:
            return (R.CUDA_ERROR_TOO_MANY_PEERS,)
        self.peers.add((me, peer.ordinal))
        return (R.CUDA_SUCCESS,)

    def cuCtxDisablePeerAccess(self, peer: _Ctx) -> tuple[Any, ...]:
        err, me = self._cur("cuCtxDisablePeerAccess")
        if err:
            return (err,)
        if (me, peer.ordinal) not in self.peers:
            return (R.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,)
        self.peers.discard((me, peer.ordinal))
        return (R.CUDA_SUCCESS,)

    # memory
    def _alloc(self, size: int, ordinal: int | None) -> int:
        buf = ctypes.create_string_buffer(size)
        addr = ctypes.addressof(buf)
        self.blocks[addr] = (ordinal, buf)
        return addr

    def cuMemAlloc(self, size: int) -> tuple[Any, ...]:
        err, me = self._cur("cuMemAlloc")
        if err:
            return (err, None)
        free = self.free_bytes.get(self._index(me))
        if free is not None and self.used.get(me, 0) + size > free:
            return (R.CUDA_ERROR_OUT_OF_MEMORY, None)
        self.used[me] = self.used.get(me, 0) + size
        return (R.CUDA_SUCCESS, self._alloc(size, me))

    def cuMemHostAlloc(self, size: int, flags: int) -> tuple[Any, ...]:
        err, _ = self._cur("cuMemHostAlloc")
        if err:
            return (err, None)
        addr = self._alloc(size, None)
        if int(flags) & 0x02:  # CU_MEMHOSTALLOC_DEVICEMAP
            self.mapped.add(addr)
        return (R.CUDA_SUCCESS, addr)

    def cuMemHostGetDevicePointer(self, host: int, flags: int) -> tuple[Any, ...]:
        err, _ = self._cur("cuMemHostGetDevicePointer")
        if err:
            return (err, None)
        if int(host) not in self.mapped:  # not allocated with DEVICEMAP: no device address
            return (R.CUDA_ERROR_INVALID_VALUE, None)
        return (R.CUDA_SUCCESS, int(host))  # unified addressing: the same address

    # the spin kernel
    def cuModuleLoadData(self, image: bytes) -> tuple[Any, ...]:
        err, _ = self._cur("cuModuleLoadData")
        if err:
            return (err, None)
        if self.ptx_error is not None:
            return (R(self.ptx_error), None)
        if not isinstance(image, bytes) or not image.endswith(b"\0") or b".entry " + SPIN_ENTRY not in image:
            return (R.CUDA_ERROR_INVALID_PTX, None)  # the driver JIT needs NUL-terminated PTX text
        return (R.CUDA_SUCCESS, _Module(image))

    def cuModuleGetFunction(self, module: _Module, name: bytes) -> tuple[Any, ...]:
        err, _ = self._cur("cuModuleGetFunction")
        if err:
            return (err, None)
        if b".entry " + bytes(name) + b"(" not in module.image:
            return (R.CUDA_ERROR_NOT_FOUND, None)
        return (R.CUDA_SUCCESS, _Function(module, bytes(name)))

    def cuModuleUnload(self, module: _Module) -> tuple[Any, ...]:
        return (R.CUDA_SUCCESS,)

    def cuLaunchKernel(self, f: _Function, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                       shared: int, st: _Stream, params: int, extra: int) -> tuple[Any, ...]:  # fmt: skip
        err, _ = self._cur("cuLaunchKernel")
        if err:
            return (err,)
        if not isinstance(f, _Function) or not isinstance(params, int) or not params:
            return (R.CUDA_ERROR_INVALID_VALUE,)
        self.host_t += ENQUEUE_S
        p0 = ctypes.c_void_p.from_address(params).value or 0  # kernelParams[i] points at parameter i
        p1 = ctypes.c_void_p.from_address(params + 8).value or 0
        latch, timeout = ctypes.c_uint64.from_address(p0).value, ctypes.c_uint64.from_address(p1).value
        if latch not in self.mapped:
            return (R.CUDA_ERROR_ILLEGAL_ADDRESS,)  # the kernel would read memory it cannot see
        self.launches.append((st, latch, timeout))
        if ctypes.c_int.from_address(latch).value == 0:
            st.t = max(st.t, self.host_t)
            st.held = latch
        return (R.CUDA_SUCCESS,)

    def _poll(self) -> None:
        """Streams whose latch the host has set run their queued work, from now on the CPU's clock."""
        held = [st for st in self.streams if st.held is not None]
        for st in held:
            if st.held is not None and ctypes.c_int.from_address(st.held).value != 0:
                self._release(st.held, self.host_t)

    def _release(self, latch: int, at: float) -> None:
        streams = [st for st in self.streams if st.held == latch]
        for st in streams:
            st.held = None
            st.t = max(st.t, at)
        progress = True
        while progress:  # run queued work in order; a wait runs once its event has a time
            progress = False
            for st in streams:
                while st.pending:
                    kind, what = st.pending[0]
                    if kind == "wait" and what.t is None:
                        break
                    st.pending.pop(0)
                    progress = True
                    if kind == "run":
                        st.t += what
                    elif kind == "record":
                        what.t = st.t
                    else:
                        st.t = max(st.t, what.t)

    def _settle(self, st: _Stream | None) -> None:
        """A wait on a stream still held: the kernel spins until its timeout, then the work runs."""
        if st is not None and st.held is not None:
            self.spin_timeouts += 1
            timeout = next((t for s_, lt, t in reversed(self.launches) if s_ is st), 0)
            self._release(st.held, st.t + timeout / 1e9)

    def _advance(self, st: _Stream, seconds: float) -> None:
        self.host_t += ENQUEUE_S
        if st.held is not None:
            st.pending.append(("run", seconds))
        else:
            st.t = max(st.t, self.host_t) + seconds

    def cuMemFree(self, addr: int) -> tuple[Any, ...]:
        owner, buf = self.blocks.pop(int(addr))
        if owner is not None:
            self.used[owner] -= ctypes.sizeof(buf)
        return (R.CUDA_SUCCESS,)

    def cuMemFreeHost(self, addr: int) -> tuple[Any, ...]:
        self.blocks.pop(int(addr))
        return (R.CUDA_SUCCESS,)

    def _fill(self, name: str, addr: int, value: int, n: int, st: _Stream | None) -> tuple[Any, ...]:
        err, me = self._cur(name)
        if err:
            return (err,)
        on = st if st is not None else self.null.setdefault(me, _Stream(me))
        self.n_ops += 1
        on.seen.add(self.n_ops)
        self.last_fill[int(addr)] = self.n_ops
        self.fill_log.append(FillRecord(name, st, int(addr)))
        ctypes.memset(int(addr), value, n)
        return (R.CUDA_SUCCESS,)

    def cuMemsetD8(self, addr: int, value: int, n: int) -> tuple[Any, ...]:
        """Asynchronous on the context's NULL stream, as the real one is for device memory."""
        return self._fill("cuMemsetD8", addr, value, n, None)

    def cuMemsetD8Async(self, addr: int, value: int, n: int, st: _Stream) -> tuple[Any, ...]:
        return self._fill("cuMemsetD8Async", addr, value, n, st)

    # streams and events
    def cuStreamCreate(self, flags: int) -> tuple[Any, ...]:
        err, me = self._cur("cuStreamCreate")
        if err:
            return (err, None)
        st = _Stream(me)
        self.streams.append(st)
        return (R.CUDA_SUCCESS, st)

    def cuStreamDestroy(self, st: _Stream) -> tuple[Any, ...]:
        return (R.CUDA_SUCCESS,)

    def cuEventCreate(self, flags: int) -> tuple[Any, ...]:
        err, me = self._cur("cuEventCreate")
        return (err, None) if err else (R.CUDA_SUCCESS, _Event(me))

    def cuEventDestroy(self, ev: _Event) -> tuple[Any, ...]:
        return (R.CUDA_SUCCESS,)

    def cuEventRecord(self, ev: _Event, st: _Stream) -> tuple[Any, ...]:
        err, _ = self._cur("cuEventRecord")
        if err:
            return (err,)
        if ev.ordinal != st.ordinal:  # the event and the stream must share a context
            return (R.CUDA_ERROR_INVALID_HANDLE,)
        self.host_t += ENQUEUE_S
        ev.hung, ev.seen, ev.stream = st.hung, set(st.seen), st
        if st.held is not None:
            ev.t = None
            st.pending.append(("record", ev))
        else:
            st.t = max(st.t, self.host_t)
            ev.t = st.t
        return (R.CUDA_SUCCESS,)

    def cuStreamWaitEvent(self, st: _Stream, ev: _Event, flags: int) -> tuple[Any, ...]:
        err, _ = self._cur("cuStreamWaitEvent")
        if err:
            return (err,)
        self.host_t += ENQUEUE_S
        src = ev.stream
        if src is not None and src.held is not None and st.held is None:
            st.held = src.held  # waits on work queued behind a spin kernel: held by the same latch
        if st.held is not None:
            st.pending.append(("wait", ev))
        else:
            st.t = max(st.t, ev.t or 0.0)
        st.hung = st.hung or ev.hung
        st.seen |= ev.seen  # across contexts too
        return (R.CUDA_SUCCESS,)

    def _wait(self, hung: bool) -> None:
        if hung:
            import time

            time.sleep(3600)  # a broken peer path: the copy never completes

    def cuEventSynchronize(self, ev: _Event) -> tuple[Any, ...]:
        err, _ = self._cur("cuEventSynchronize")
        if err:
            return (err,)
        if ev.t is None:
            self._settle(ev.stream)
        self._wait(ev.hung)
        self.host_t = max(self.host_t, ev.t or 0.0)  # the host waited for the GPU to get there
        self.done |= ev.seen
        return (R.CUDA_SUCCESS,)

    def cuStreamSynchronize(self, st: _Stream) -> tuple[Any, ...]:
        err, _ = self._cur("cuStreamSynchronize")
        if err:
            return (err,)
        self._settle(st)
        self._wait(st.hung)
        self.host_t = max(self.host_t, st.t)
        self.done |= st.seen
        return (R.CUDA_SUCCESS,)

    def cuEventElapsedTime(self, a: _Event, b: _Event) -> tuple[Any, ...]:
        err, _ = self._cur("cuEventElapsedTime")
        if err:
            return (err, None)
        if a.stream is None or b.stream is None:  # never recorded
            return (R.CUDA_ERROR_INVALID_HANDLE, None)
        if a.t is None or b.t is None:  # still queued behind a spin kernel
            return (R.CUDA_ERROR_NOT_READY, None)
        return (R.CUDA_SUCCESS, (b.t - a.t) * 1e3)

    # copies
    def _copy(self, name: str, dst: int, src: int, n: int, st: _Stream | None) -> tuple[Any, ...]:
        err, me = self._cur(name)
        if err:
            return (err,)
        od, os_ = self._owner(dst), self._owner(src)
        on = st if st is not None else self.null.setdefault(me, _Stream(me))
        fill = self.last_fill.get(int(dst))
        self.copy_log.append(CopyRecord(name, st, os_, od, fill is None or fill in on.seen or fill in self.done))
        if st is None:
            self.done |= on.seen  # a synchronous copy returns after the NULL stream's earlier work
        for o in {od, os_} - {None}:
            assert o is not None
            if self._lost(o):
                return (R.CUDA_ERROR_UNKNOWN,)
            self.copies[o] = self.copies.get(o, 0) + 1
        pair = frozenset({self._index(od), self._index(os_)}) if od is not None and os_ is not None else None
        peer = od is not None and os_ is not None and od != os_ and ((os_, od) in self.peers or (od, os_) in self.peers)
        if pair is not None and pair in self.hang_pairs and peer:
            if st is None:
                self._wait(True)
            else:
                st.hung = True
        if not (peer and pair in self.corrupt_pairs):  # a dropped peer write leaves dst untouched
            ctypes.memmove(int(dst), int(src), n)
        if st is not None:
            if od is not None and os_ is not None and od != os_:
                links = self.m.nvlinks_between(self._index(os_), self._index(od))
                pcie = min(self._pcie_gbps(od), self._pcie_gbps(os_))
                gbps = links * _NVLINK_GBPS * 0.9 if links and peer else pcie * (0.8 if peer else 0.4)
            else:
                gbps = self._pcie_gbps(od if od is not None else os_)  # type: ignore[arg-type]
            self.n_copies += 1
            jitter = 1.0 + 0.01 * (self.n_copies % 5)
            self._advance(st, n / (gbps * 1e9) * jitter + 0.5e-6)  # a copy costs ~0.5 µs on the GPU besides
        return (R.CUDA_SUCCESS,)

    def cuMemcpyHtoD(self, dst: int, src: int, n: int) -> tuple[Any, ...]:
        return self._copy("cuMemcpyHtoD", dst, src, n, None)

    def cuMemcpyDtoH(self, dst: int, src: int, n: int) -> tuple[Any, ...]:
        return self._copy("cuMemcpyDtoH", dst, src, n, None)

    def cuMemcpyHtoDAsync(self, dst: int, src: int, n: int, st: _Stream) -> tuple[Any, ...]:
        return self._copy("cuMemcpyHtoDAsync", dst, src, n, st)

    def cuMemcpyDtoHAsync(self, dst: int, src: int, n: int, st: _Stream) -> tuple[Any, ...]:
        return self._copy("cuMemcpyDtoHAsync", dst, src, n, st)

    def cuMemcpyPeerAsync(self, dst: int, dctx: _Ctx, src: int, sctx: _Ctx, n: int, st: _Stream) -> tuple[Any, ...]:
        return self._copy("cuMemcpyPeerAsync", dst, src, n, st)
