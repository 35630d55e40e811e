"""A fake ``libcuda.so.1`` compiled from C by the test run, so the real cuda-bindings code runs.

cuda-bindings (12.9+ and 13.x) dlopens ``libcuda.so.1`` by the system search (LD_LIBRARY_PATH
counts, read at process start), takes ``cuGetProcAddress_v2`` with dlsym and asks it for every
driver entry point; each call then goes from the Cython wrapper into C *without the GIL*. This
library answers those lookups from a table and implements the calls the probe makes, with the
answers of the Python fake (tests/fakes/cuda.py) for the same machine baked in as data: where the
two probes differ, the bindings marshal something differently from what the probe expects.

A function in ``machine.cuda_missing_functions`` is not in the table: ``cuGetProcAddress_v2``
answers CUDA_ERROR_NOT_FOUND with a NULL pointer, as a driver older than the bindings does, and
the bindings raise at call time. ``FAKE_CUDA_SLEEP_FN`` / ``FAKE_CUDA_SLEEP_MS`` make one entry
point sleep in C before answering (a wedged driver call), which shows whether the bindings release
the GIL while the driver runs (issue 25 item 5).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

from cuda.bindings import driver as real

from tests.fakes.cuda import FakeCuda
from tests.fakes.machine import FakeMachine

_A = real.CUdevice_P2PAttribute
_ATTRS = (
    _A.CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK,
    _A.CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED,
    _A.CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
)

_FUNCTIONS = (
    "cuDriverGetVersion",
    "cuInit",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetPCIBusId",
    "cuDeviceGetUuid",
    "cuDeviceGetUuid_v2",
    "cuDeviceCanAccessPeer",
    "cuDeviceGetP2PAttribute",
    "cuGetErrorString",
    "cuGetErrorName",
    # what measure's blocking kernel needs (spin.py)
    "cuDevicePrimaryCtxRetain",
    "cuCtxSetCurrent",
    "cuStreamCreate",
    "cuMemHostAlloc",
    "cuMemHostGetDevicePointer",
    "cuMemFreeHost",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuLaunchKernel",
)

_BODY = r"""
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef int CUresult;
typedef int CUdevice;
typedef struct { char bytes[16]; } CUuuid;

static int initialised = 0;

static void maybe_sleep(const char *fn) {
    const char *which = getenv("FAKE_CUDA_SLEEP_FN");
    const char *ms = getenv("FAKE_CUDA_SLEEP_MS");
    if (which && ms && strcmp(which, fn) == 0) {
        long v = atol(ms);
        struct timespec t = { v / 1000, (v % 1000) * 1000000L };
        nanosleep(&t, NULL);
    }
}
static int bad(CUdevice d) { return d < 0 || d >= N_DEV; }
static void copy_text(char *out, int len, const char *text) {
    int n = (int)strlen(text);
    if (len <= 0) return;
    if (n >= len) n = len - 1;
    memcpy(out, text, n);
    memset(out + n, 0, len - n);
}

CUresult cuDriverGetVersion(int *v) {
    maybe_sleep("cuDriverGetVersion");
    if (!v) return 1;
    *v = DRIVER_VERSION; return 0;
}
CUresult cuInit(unsigned int flags) {
    maybe_sleep("cuInit");
    if (INIT_RESULT != 0) return INIT_RESULT;
    if (N_DEV == 0) return 100;
    initialised = 1; return 0;
}
CUresult cuDeviceGetCount(int *n) { maybe_sleep("cuDeviceGetCount"); if (!initialised) return 3; *n = N_DEV; return 0; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    maybe_sleep("cuDeviceGet");
    if (!initialised) return 3;
    if (bad(ordinal)) return 101;
    *d = ordinal; return 0;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    maybe_sleep("cuDeviceGetName");
    if (!initialised) return 3; if (bad(d)) return 101;
    copy_text(name, len, NAMES[d]); return 0;
}
CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice d) {
    maybe_sleep("cuDeviceGetPCIBusId");
    if (!initialised) return 3; if (bad(d)) return 101;
    copy_text(bus, len, BUSES[d]); return 0;
}
CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) {
    maybe_sleep("cuDeviceGetUuid");
    if (!initialised) return 3; if (bad(d)) return 101;
    memcpy(u->bytes, UUIDS[d], 16); return 0;
}
CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) { return cuDeviceGetUuid(u, d); }
CUresult cuDeviceCanAccessPeer(int *can, CUdevice a, CUdevice b) {
    maybe_sleep("cuDeviceCanAccessPeer");
    if (!initialised) return 3; if (bad(a) || bad(b) || a == b) return 101;
    *can = CAN[a][b]; return 0;
}
CUresult cuDeviceGetP2PAttribute(int *value, int attr, CUdevice a, CUdevice b) {
    int k;
    maybe_sleep("cuDeviceGetP2PAttribute");
    if (!initialised) return 3; if (bad(a) || bad(b) || a == b) return 101;
    for (k = 0; k < 3; k++) if (ATTR_IDS[k] == attr) { *value = ATTR[k][a][b]; return 0; }
    return 1;
}
CUresult cuGetErrorString(CUresult e, const char **s) { *s = "fake libcuda error"; return 0; }
CUresult cuGetErrorName(CUresult e, const char **s) { *s = "CUDA_ERROR_FAKE"; return 0; }

/* --- the blocking kernel's calls: load the PTX, find the entry, launch it with two parameters --- */
typedef unsigned long long u64;
static int contexts[64];
static int module_ok = 0;
static u64 last_launch[8]; /* latch pointer, timeout, grid x*y*z, block x*y*z, stream, image ok, entry ok, launches */

CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) {
    if (!initialised) return 3; if (bad(d)) return 101;
    *ctx = &contexts[d]; return 0;
}
CUresult cuCtxSetCurrent(void *ctx) { return 0; }
CUresult cuStreamCreate(void **st, unsigned int flags) { *st = malloc(16); return 0; }
CUresult cuMemHostAlloc(void **p, size_t n, unsigned int flags) {
    *p = calloc(1, n ? n : 1);
    return 0;
}
CUresult cuMemHostGetDevicePointer(u64 *d, void *p, unsigned int flags) { *d = (u64)p; return 0; }
CUresult cuMemFreeHost(void *p) { free(p); return 0; }
CUresult cuModuleLoadData(void **m, const void *image) {
    const char *text = (const char *)image;
    module_ok = strstr(text, ".entry topomap_spin(") != 0 && strstr(text, ".version") != 0;
    last_launch[5] = module_ok;
    if (!module_ok) return 218; /* CUDA_ERROR_INVALID_PTX */
    *m = malloc(16); return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
    last_launch[6] = strcmp(name, "topomap_spin") == 0;
    if (!last_launch[6]) return 500;
    *f = malloc(16); return 0;
}
CUresult cuModuleUnload(void *m) { return 0; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
    if (!params) return 1;
    last_launch[0] = *(u64 *)params[0];
    last_launch[1] = *(u64 *)params[1];
    last_launch[2] = (u64)gx * gy * gz;
    last_launch[3] = (u64)bx * by * bz;
    last_launch[4] = (u64)stream;
    last_launch[7] += 1;
    return 0;
}
void fake_last_launch(u64 *out) { memcpy(out, last_launch, sizeof last_launch); }

struct entry { const char *name; void *fn; };
static struct entry TABLE[] = { TABLE_ENTRIES { 0, 0 } };

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags, int *status) {
    struct entry *e;
    for (e = TABLE; e->name; e++) {
        if (strcmp(e->name, symbol) == 0) { *pfn = e->fn; if (status) *status = 0; return 0; }
    }
    *pfn = 0;
    if (status) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    return 500; /* CUDA_ERROR_NOT_FOUND */
}
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, 0);
}
"""


def _c_string(text: str) -> str:
    return _c_string_bytes(text.encode())


def _answer(value: tuple[object, ...]) -> int:
    return int(value[1]) if int(value[0]) == 0 and value[1] is not None else 0  # type: ignore[call-overload]


def c_source(m: FakeMachine, mig_uuids: bool = False) -> str:
    """The C library for this machine: the Python fake's answers, as tables."""
    # the answers of a working driver; what this one lacks or refuses is in the table and INIT_RESULT
    fake = FakeCuda(dataclasses.replace(m, cuda_missing_functions=set(), cuda_init_error=None), mig_uuids=mig_uuids)
    fake.initialised = True
    n = len(fake.order)
    names = [fake.cuDeviceGetName(256, d)[1] for d in range(n)]
    buses = [fake.cuDeviceGetPCIBusId(32, d)[1] for d in range(n)]
    uuids = [fake.cuDeviceGetUuid(d)[1].bytes for d in range(n)]
    can = [[_answer(fake.cuDeviceCanAccessPeer(a, b)) if a != b else 0 for b in range(n)] for a in range(n)]
    attrs = [
        [[_answer(fake.cuDeviceGetP2PAttribute(attr, a, b)) if a != b else 0 for b in range(n)] for a in range(n)]
        for attr in _ATTRS
    ]
    dim = max(n, 1)

    def matrix(rows: list[list[int]]) -> str:
        body = ",".join("{" + ",".join(str(v) for v in (r + [0] * dim)[:dim]) + "}" for r in rows) or "{0}"
        return "{" + body + "}"

    entries = " ".join(f'{{"{f}", (void*){f}}},' for f in _FUNCTIONS if f not in m.cuda_missing_functions)
    head = [
        f"#define N_DEV {n}",
        f"#define DRIVER_VERSION {m.cuda_version}",
        f"#define INIT_RESULT {m.cuda_init_error or 0}",
        "#define TABLE_ENTRIES " + entries,
        "static const char *NAMES[] = {"
        + ",".join([*(_c_string(x.split(b"\0")[0].decode()) for x in names), "0"])
        + "};",
        "static const char *BUSES[] = {"
        + ",".join([*(_c_string(x.split(b"\0")[0].decode()) for x in buses), "0"])
        + "};",
        "static const char *UUIDS[] = {" + ",".join([*(_c_string_bytes(u) for u in uuids), "0"]) + "};",
        f"static const int CAN[{dim}][{dim}] = {matrix(can)};",
        f"static const int ATTR_IDS[3] = {{{','.join(str(int(a)) for a in _ATTRS)}}};",
        f"static const int ATTR[3][{dim}][{dim}] = {{{','.join(matrix(x) for x in attrs)}}};",
    ]
    # the #defines must precede the body; the tables use N_DEV
    return "\n".join(head[:4]) + "\n" + "\n".join(head[4:]) + "\n" + _BODY


def _c_string_bytes(raw: bytes) -> str:
    return '"' + "".join(f"\\x{b:02x}" for b in raw) + '"'


def compiler() -> str | None:
    """The system C compiler, or None (the tests that need it skip, saying so)."""
    return shutil.which("cc") or shutil.which("gcc")


def build(m: FakeMachine, folder: Path, mig_uuids: bool = False) -> Path:
    """Compile this machine's ``libcuda.so.1`` into ``folder``; returns the folder (for LD_LIBRARY_PATH)."""
    cc = compiler()
    assert cc is not None
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "fake_libcuda.c"
    src.write_text(c_source(m, mig_uuids))
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-w", "-o", str(folder / "libcuda.so.1"), str(src)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return folder
