"""NCCL's transport rules, as NCCL 2.30.7 (github.com/NVIDIA/nccl @5067397) writes them, the release
families where older NCCL decided otherwise (read from the repository's tags v2.6.4 to v2.30.7: the
default P2P level by CPU, the GPUDirect RDMA read rule, ncclTopoCheckNet from 2.14), and the
environment that changes them.

Read from: ``src/graph/paths.cc`` (``ncclTopoCheckP2p``: P2P up to PXB by default, PATH_SYS on an
x86 AMD CPU with at most two GPUs, ``NCCL_P2P_LEVEL`` / ``NCCL_P2P_DISABLE`` override it, NVML P2P
read/write status must be OK; P2P read only on NVLink between two compute-capability-8.0 GPUs;
``ncclTopoCheckGdr``: GPUDirect RDMA up to PXB, ``NCCL_NET_GDR_LEVEL``, ``NCCL_NET_GDR_READ``;
``ncclTopoCheckNet``: the network is used between two GPUs of one host when each reaches a NIC
within PXB faster than they reach each other, unless ``NCCL_NET_DISABLE_INTRA=1``),
``src/transport/p2p.cc`` (direct pointer within one process unless ``NCCL_P2P_DIRECT_DISABLE=1``;
CUMEM across processes when cuMem is on, legacy IPC otherwise; ``NCCL_P2P_READ_ENABLE``),
``src/transport/shm.cc`` (SHM between processes of one host and one /dev/shm unless
``NCCL_SHM_DISABLE=1``). Older releases differ where noted (cuMem is the default from 2.19).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from topomap.base.errors import TopomapError
from topomap.base.links import is_nvlink

NCCL_SOURCE: Final = "NCCL 2.30.7 (github.com/NVIDIA/nccl @5067397)"

Transport = Literal["P2P", "SHM", "NET", "NET+GDR", "COLLNET", "unknown"]
TRANSPORTS: Final[tuple[Transport, ...]] = ("P2P", "SHM", "NET", "NET+GDR", "COLLNET", "unknown")

#: NCCL's path types, best first (src/graph/topo.h): LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS.
#: nvidia-smi's NODE is NCCL's PHB for these rules (NCCL has no NODE: one CPU, any number of bridges).
PATH_ORDER: Final[tuple[str, ...]] = (
    "LOC",
    "NVL",
    "NVB",
    "C2C",
    "PIX",
    "PXB",
    "P2C",
    "PXN",
    "PHB",
    "SYS",
    "NET",
    "DIS",
)
_OLD_LEVELS: Final[tuple[str, ...]] = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")  # integer NCCL_P2P_LEVEL values


def path_rank(path: str) -> int:
    """Position of a path type in NCCL's order; nvidia-smi's NODE counts as PHB, NV# as NVL."""
    p = path.upper()
    if p == "NODE":
        p = "PHB"
    if is_nvlink(p):
        p = "NVL"
    return PATH_ORDER.index(p) if p in PATH_ORDER else PATH_ORDER.index("SYS")


@dataclass(frozen=True)
class Rule:
    """One rule of NCCL's: a short id, what it says (with its source file), the variables that change it."""

    id: str
    text: str
    env: tuple[str, ...]


RULES: Final[dict[str, Rule]] = {
    r.id: r
    for r in (
        Rule(
            "other-host",
            "different hosts never use P2P or SHM; they use the network (paths.cc, shm.cc)",
            ("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_NET"),
        ),
        Rule(
            "p2p-mnnvl",
            "GPUs of different hosts in one multi-node NVLink clique (same fabric cluster UUID and clique id) "
            "use P2P over the fabric (ncclTopoCheckMNNVL, paths.cc, NCCL 2.20 and later)",
            ("NCCL_MNNVL_ENABLE",),
        ),
        Rule(
            "other-container",
            "ranks in separate containers use the network: another hostname is another host to NCCL, and "
            "P2P and SHM need one /dev/shm (paths.cc, p2p.cc, shm.cc)",
            ("NCCL_HOSTID", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA"),
        ),
        Rule(
            "p2p-disabled-env",
            "NCCL_P2P_DISABLE=1 turns P2P off for every pair, NVLink included (paths.cc)",
            ("NCCL_P2P_DISABLE",),
        ),
        Rule(
            "p2p-level",
            "P2P only where the path is no longer than the P2P level: PXB by default (paths.cc)",
            ("NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE"),
        ),
        Rule(
            "p2p-amd-pair",
            "an x86 AMD CPU with at most two GPUs raises the P2P level to SYS (paths.cc, NCCL 2.23 and later)",
            ("NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE"),
        ),
        Rule(
            "p2p-cpu-level",
            "NCCL before 2.23 sets the P2P level by CPU: SYS by default, PXB on Intel, ARM and Zhaoxin "
            "(2.9-2.22; before 2.9: PXB on ARM and Broadwell, PHB on other Intel) (paths.cc)",
            ("NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE"),
        ),
        Rule(
            "p2p-nvlink",
            "NVLink (direct or through NVSwitch) is within every P2P level but LOC (paths.cc)",
            ("NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE"),
        ),
        Rule(
            "p2p-nvml",
            "NVML must report P2P read and write OK between the two GPUs, else no P2P (paths.cc)",
            ("NCCL_IGNORE_DISABLED_P2P",),
        ),
        Rule(
            "net-intra",
            "two GPUs that each reach a NIC within PXB faster than each other use the network "
            "(ncclTopoCheckNet, paths.cc)",
            ("NCCL_NET_DISABLE_INTRA",),
        ),
        Rule(
            "shm",
            "GPUs of one host without P2P exchange through host shared memory (shm.cc)",
            ("NCCL_SHM_DISABLE", "NCCL_P2P_LEVEL"),
        ),
        Rule(
            "shm-disabled-env",
            "NCCL_SHM_DISABLE=1: GPUs of one host without P2P use the network (shm.cc)",
            ("NCCL_SHM_DISABLE",),
        ),
        Rule(
            "gdr-read",
            "sends read GPU memory through GPUDirect RDMA only from a GPU with an NVLink peer (or alone), "
            "before Ampere (NCCL 2.12 and later; every GPU before 2.12) (ncclTopoCheckGdr, paths.cc)",
            ("NCCL_NET_GDR_READ",),
        ),
        Rule(
            "gdr-level",
            "GPUDirect RDMA only where the NIC is within the GDR level of the GPU: PXB by "
            "default; both GPU and NIC must support it (ncclTopoCheckGdr, paths.cc)",
            ("NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ", "NCCL_IB_HCA", "NCCL_CROSS_NIC"),
        ),
        Rule("unknown", "the topology does not say enough to apply NCCL's rules", ()),
    )
}


def strtol(text: str) -> int:
    """An integer as C's ``strtol(text, NULL, 0)`` reads it (NCCL's parameters): leading blanks, a sign,
    ``0x`` hex or a leading ``0`` octal, the leading digits; no digits read 0 (``yes`` is 0)."""
    t = text.strip()
    sign = -1 if t.startswith("-") else 1
    t = t[1:] if t[:1] in "+-" else t
    base, digits = 10, "0123456789"
    if t[:2].lower() == "0x":
        base, digits, t = 16, "0123456789abcdefABCDEF", t[2:]
    elif t.startswith("0"):
        base, digits = 8, "01234567"
    head = t[: len(t) - len(t.lstrip(digits))]
    return sign * int(head, base) if head else 0


@dataclass(frozen=True)
class NcclEnv:
    """The NCCL variables that change a transport, parsed. ``None``: not set (NCCL's default)."""

    values: tuple[tuple[str, str], ...] = ()

    def get(self, key: str) -> str | None:
        return dict(self.values).get(key)

    def flag(self, key: str) -> bool | None:
        """Whether a switch variable is on, as NCCL reads it (an integer; ``yes`` reads 0): a
        ``*_DISABLE`` acts at 1 (NCCL compares ``== 1``), NCCL_P2P_DIRECT_DISABLE and ``*_ENABLE`` at any
        non-zero value. None: not set."""
        v = self.get(key)
        if v is None:
            return None
        n = strtol(v)
        if key.endswith("_DISABLE") and key != "NCCL_P2P_DIRECT_DISABLE":
            return n == 1
        return n != 0

    def level(self, key: str) -> str | None:
        """A path level variable (NCCL_P2P_LEVEL, NCCL_NET_GDR_LEVEL) as a path type: names as
        given, integers as NCCL maps them (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4-5 SYS). Any other value
        (``FOO``, ``-1``: a log can say anything) is None, NCCL's default, as ncclGetLevel
        (src/graph/paths.cc) ignores a value that is neither a path name nor starts with a digit."""
        v = self.get(key)
        if v is None:
            return None
        v = v.strip().upper()
        digits = v[: len(v) - len(v.lstrip("0123456789"))]
        if digits:  # strtol: the leading digits
            return _OLD_LEVELS[min(int(digits), len(_OLD_LEVELS) - 1)]
        if v == "NODE":
            return "PHB"
        return v if v in PATH_ORDER[: PATH_ORDER.index("SYS") + 1] else None

    def set_vars(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.values]


def parse_env(pairs: list[str] | tuple[str, ...], base: NcclEnv | None = None) -> NcclEnv:
    """``K=V`` strings (``--env``) over a base environment (a log's "set by environment" lines)."""
    merged = dict(base.values if base else ())
    for item in pairs:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.startswith("NCCL_"):
            raise TopomapError(f"--env {item!r}: expected NCCL_NAME=VALUE", hint="e.g. --env NCCL_P2P_LEVEL=SYS")
        if (
            key.endswith("_LEVEL")
            and value.strip().upper() not in (*PATH_ORDER, "NODE")
            and not value.strip().isdigit()
        ):
            raise TopomapError(f"--env {item!r}: {value!r} is not a path level", hint="LOC, NVL, PIX, PXB, PHB or SYS")
        merged[key] = value.strip()
    return NcclEnv(tuple(sorted(merged.items())))


#: NCCL's CPU kinds for the P2P level (ncclTopoCpuType): the vendor, with Broadwell told apart (before
#: 2.9 it alone of Intel's CPUs kept P2P within PXB).
CPU_KINDS: Final = ("intel", "intel-bdw", "amd", "zhaoxin", "arm", "power")
_CPU_WORDS: Final = {
    "intel": "an Intel",
    "intel-bdw": "an Intel Broadwell",
    "amd": "an AMD",
    "zhaoxin": "a Zhaoxin",
    "arm": "an ARM",
    "power": "a POWER",
}


@dataclass(frozen=True)
class Level:
    """The P2P level NCCL's defaults set (``None``: it depends on what is not recorded), with the rule
    and the reason."""

    level: str | None
    rule: str
    why: str


def p2p_default_level(version: str | None, cpu: str | None, local_gpus: int | None) -> Level:
    """NCCL's default P2P level (no NCCL_P2P_LEVEL) by release family, CPU kind and the number of GPUs
    of this communicator on the host (``src/graph/paths.cc`` ``ncclTopoCheckP2p`` at v2.6.4, v2.8.4,
    v2.22.3 and v2.23.4). An unknown version takes the newest family's rule."""
    v = version_tuple(version)
    if v is None or v >= (2, 23, 0):
        if cpu is None or (cpu == "amd" and local_gpus is None):
            if local_gpus is not None and local_gpus > 2:
                return Level("PXB", "p2p-level", "default P2P level PXB")
            missing = "the number of the job's GPUs on the host is" if cpu == "amd" else "the CPU vendor is"
            return Level(None, "unknown", f"{missing} not recorded (an x86 AMD CPU with at most two GPUs: level SYS)")
        if cpu == "amd" and local_gpus is not None and local_gpus <= 2:
            return Level("SYS", "p2p-amd-pair", f"AMD x86 CPU with {local_gpus} GPU(s): P2P level SYS")
        return Level("PXB", "p2p-level", "default P2P level PXB")
    fam = f"NCCL {version}"
    if cpu is None:
        return Level(None, "unknown", f"{fam} sets the P2P level by CPU vendor, which is not recorded")
    if v >= (2, 9, 0):
        if cpu in ("intel", "intel-bdw", "arm", "zhaoxin"):
            return Level("PXB", "p2p-cpu-level", f"{fam} on {_CPU_WORDS[cpu]} CPU: P2P level PXB")
        return Level("SYS", "p2p-cpu-level", f"{fam} on {_CPU_WORDS[cpu]} CPU: P2P level SYS")
    if cpu in ("arm", "intel-bdw"):
        return Level("PXB", "p2p-cpu-level", f"{fam} on {_CPU_WORDS[cpu]} CPU: P2P level PXB")
    if cpu == "intel" and v >= (2, 7, 0):
        return Level("PHB", "p2p-cpu-level", f"{fam} on an Intel CPU (not Broadwell): P2P level PHB")
    return Level("SYS", "p2p-cpu-level", f"{fam} on {_CPU_WORDS.get(cpu, 'this')} CPU: P2P level SYS")


def gdr_read_needs_nvlink(version: str | None, cc: str | None) -> bool | None:
    """Whether a send (GPUDirect RDMA *read* of GPU memory) needs the GPU to have an NVLink peer, with
    NCCL_NET_GDR_READ unset: every GPU before 2.12, pre-Ampere GPUs (compute capability < 8.0) since."""
    v = version_tuple(version)
    if v is not None and v < (2, 12, 0):
        return True
    if cc is None:
        return None
    try:
        return float(cc) < 8.0
    except ValueError:
        return None


def rules_used(version: str | None) -> str:
    """Which rules a prediction follows, in words."""
    if version is None:
        return f"the newest release family, {NCCL_SOURCE}"
    return f"NCCL {version}'s release family (NCCL's source at its tags, github.com/NVIDIA/nccl)"


def version_problem(version: str) -> str | None:
    """Why ``version`` is not a release whose rules are held (None when it is one): not a version, or
    not 2.x (NCCL 1.x had none of 2.x's transports, and there is no 3.x)."""
    parts = version_tuple(version)
    if parts is None:
        return "not an NCCL release"
    if parts[0] != 2:
        return "not an NCCL 2.x release (the rules held are NCCL 2.0 to 2.30)"
    return None


def version_tuple(version: str | None) -> tuple[int, int, int] | None:
    """``2.20.5+cuda12.4`` → (2, 20, 5)."""
    if not version:
        return None
    head = version.split("+")[0].split(".")
    try:
        nums = [int(x) for x in head[:3]]
    except ValueError:
        return None
    while len(nums) < 3:
        nums.append(0)
    return (nums[0], nums[1], nums[2])


def cumem_default(version: str | None, env: NcclEnv) -> bool | None:
    """cuMem (``P2P/CUMEM``) rather than legacy IPC across processes: NCCL_CUMEM_ENABLE, else on from
    2.19; None when neither the variable nor the version is known."""
    flag = env.flag("NCCL_CUMEM_ENABLE")
    if flag is not None:
        return flag
    v = version_tuple(version)
    return None if v is None else v >= (2, 19, 0)
