"""One function decides the transport NCCL picks for an ordered rank pair, from neutral facts.

The facts come from a snapshot (:mod:`topomap.transport.facts`) or from NCCL's own topology dump in a
log; the rules are NCCL's (:mod:`topomap.transport.rules`).
"""

from __future__ import annotations

from dataclasses import dataclass

from topomap.transport.rules import RULES, NcclEnv, Transport, cumem_default, path_rank


@dataclass(frozen=True)
class NicFact:
    """A GPU's nearest NIC as NCCL would see it: its name, path type to the GPU, GDR support, GB/s."""

    name: str | None
    path: str | None  # NCCL path type (PIX, PXB, PHB, SYS...), None unknown
    gdr_capable: bool | None  # GPU and NIC support GPUDirect RDMA (peermem / dma-buf), None unknown
    bw_gbs: float | None = None


@dataclass(frozen=True)
class PairFacts:
    """What NCCL decides a pair's transport from. ``None`` everywhere means "not known"."""

    same_host: bool
    same_process: bool | None
    path: str | None  # NCCL path type between the GPUs (NVL for NVLink/NVSwitch)
    nvlink: bool | None
    nvml_p2p: bool | None  # NVML P2P read and write both OK
    cc: tuple[str | None, str | None] = (None, None)
    amd_pair: bool | None = False  # x86 AMD CPU and at most two GPUs; None: at most two GPUs, CPU vendor unknown
    path_bw_gbs: float | None = None
    nic_src: NicFact | None = None
    nic_dst: NicFact | None = None
    how: str = ""  # where the facts come from (snapshot, log dump)


@dataclass(frozen=True)
class Decision:
    """NCCL's transport for one ordered pair, the rule that decided it, the variables that would change
    it, and the detail (P2P flavour, NIC)."""

    transport: Transport
    rule: str
    env: tuple[str, ...]
    detail: str
    reasons: tuple[str, ...]


def _d(transport: Transport, rule: str, detail: str, *reasons: str) -> Decision:
    return Decision(transport, rule, RULES[rule].env, detail, tuple(r for r in reasons if r))


def decide(f: PairFacts, env: NcclEnv, version: str | None = None) -> Decision:
    """The transport NCCL chooses from ``f``'s source to its destination (NCCL 2.30.7 rules)."""
    if not f.same_host:
        return _network(f, env, "other-host", "the ranks are on different hosts")
    p2p = _p2p(f, env)
    if p2p is None:
        return _d("unknown", "unknown", "", f"P2P cannot be decided: {_missing(f)}", f.how)
    ok, rule, why = p2p
    if ok:
        net = _net_intra(f, env)
        if net is not None:
            return net
        return _d("P2P", rule, _flavour(f, env, version), why)
    net = _net_intra(f, env)
    if net is not None:
        return net
    if env.flag("NCCL_SHM_DISABLE"):
        return _network(f, env, "shm-disabled-env", f"{why}; NCCL_SHM_DISABLE=1")
    d = _d("SHM", rule, "through host memory (P2P refused)", why)
    return Decision("SHM", rule, tuple(dict.fromkeys((*d.env, *RULES["shm"].env))), d.detail, d.reasons)


def _missing(f: PairFacts) -> str:
    if f.path is None:
        return "the path between the GPUs is not recorded"
    if f.nvlink is None:
        return f"path {f.path} over PCIe, and whether NVLink joins them is not recorded"
    if f.amd_pair is None:
        return (
            f"path {f.path} is beyond PXB and the CPU vendor is not recorded (an x86 AMD CPU with at most "
            "two GPUs raises the P2P level to SYS; `lscpu` settles it)"
        )
    return "not enough recorded"


def _level(f: PairFacts, env: NcclEnv) -> tuple[str, str, str]:
    """The P2P level in force, the rule that set it, and why."""
    if env.flag("NCCL_P2P_DISABLE"):
        return "DIS-LEVEL", "p2p-disabled-env", "NCCL_P2P_DISABLE=1"
    user = env.level("NCCL_P2P_LEVEL")
    if user is not None:
        return user, "p2p-level", f"NCCL_P2P_LEVEL={env.get('NCCL_P2P_LEVEL')}"
    if f.amd_pair:
        return "SYS", "p2p-amd-pair", "AMD x86 CPU with at most two GPUs: P2P level SYS"
    return "PXB", "p2p-level", "default P2P level PXB"


def _p2p(f: PairFacts, env: NcclEnv) -> tuple[bool, str, str] | None:
    """(P2P allowed, rule, why), or None when the facts cannot decide it."""
    level, rule, level_why = _level(f, env)
    if level == "DIS-LEVEL":
        return False, rule, level_why
    if f.nvlink:
        path = "NVL"
    elif f.path is None or (f.nvlink is None and path_rank(f.path) > path_rank(level)):
        return None  # NVLink could still make it NVL
    else:
        path = f.path
    vendor = _vendor_matters(f, env, path)
    if vendor is not None:
        return vendor if vendor[0] is False else None
    if path_rank(path) > path_rank(level):
        return False, rule, f"path {path} is beyond the P2P level ({level_why})"
    if f.nvml_p2p is False:
        return False, "p2p-nvml", f"path {path} is within the P2P level, but NVML reports P2P not supported"
    assumed = "" if f.nvml_p2p else " (NVML P2P status not recorded: assumed OK)"
    return True, "p2p-nvlink" if path == "NVL" else rule, f"path {path} within the P2P level ({level_why}){assumed}"


def _vendor_matters(f: PairFacts, env: NcclEnv, path: str) -> tuple[bool, str, str] | None:
    """Where the CPU vendor decides (at most two GPUs, no NCCL_P2P_LEVEL, a path beyond PXB up to SYS)
    and is not recorded: NVML refusing P2P still decides it; else ``(True, …)`` — undecidable."""
    if f.amd_pair is not None or env.level("NCCL_P2P_LEVEL") is not None:
        return None
    if not path_rank("PXB") < path_rank(path) <= path_rank("SYS"):
        return None
    if f.nvml_p2p is False:
        why = f"path {path}: NVML reports P2P not supported (whatever the P2P level: the CPU vendor is not recorded)"
        return False, "p2p-nvml", why
    return True, "unknown", ""


def _flavour(f: PairFacts, env: NcclEnv, version: str | None) -> str:
    """direct pointer (one process) / CUMEM / IPC, and read or write (p2p.cc)."""
    read_env = env.get("NCCL_P2P_READ_ENABLE")
    if read_env is not None:
        read: bool | None = read_env.strip() in ("1", "true")
    elif f.nvlink is False or (f.path is not None and f.path != "NVL" and not f.nvlink):
        read = False
    elif f.cc[0] is None or f.cc[1] is None:
        read = None
    else:
        read = bool(f.nvlink) and f.cc[0] == f.cc[1] == "8.0"
    rw = {True: "read", False: "write", None: "read or write"}[read]
    if f.same_process and not env.flag("NCCL_P2P_DIRECT_DISABLE"):
        how = "direct pointer"
    elif f.same_process is None:
        how = "direct pointer (one process) or CUMEM/IPC (several)"
    else:
        cumem = cumem_default(version, env)
        how = {True: "CUMEM", False: "IPC", None: "CUMEM or IPC"}[cumem]
    medium = "NVLink" if f.nvlink else ("PCIe" if f.nvlink is False or f.path not in (None, "NVL") else "?")
    return f"{how}/{rw} over {medium}"


def _net_intra(f: PairFacts, env: NcclEnv) -> Decision | None:
    """ncclTopoCheckNet: both GPUs reach a NIC within PXB faster than each other."""
    if env.flag("NCCL_NET_DISABLE_INTRA") or f.nvlink or f.path_bw_gbs is None:
        return None
    nics = (f.nic_src, f.nic_dst)
    if any(n is None or n.path is None or n.bw_gbs is None for n in nics):
        return None
    if all(
        n is not None
        and n.bw_gbs is not None
        and n.path is not None
        and path_rank(n.path) <= path_rank("PXB")
        and n.bw_gbs > f.path_bw_gbs
        for n in nics
    ):
        return _network(
            f,
            env,
            "net-intra",
            f"each GPU reaches a NIC within PXB faster than the {f.path_bw_gbs:g} GB/s between them",
        )
    return None


def _network(f: PairFacts, env: NcclEnv, rule: str, why: str) -> Decision:
    """NET or NET+GDR: GPUDirect RDMA on the source's NIC (the send side reads GPU memory)."""
    nic = f.nic_src
    gdr = gdr_answer(nic, env, f.cc[0], f.nvlink)
    name = nic.name if nic and nic.name else "its NIC"
    if gdr is None:  # the network for sure, but NET and NET+GDR are different answers: not guessed
        return _d(
            "unknown",
            rule,
            f"the network via {name}; GPUDirect RDMA unknown",
            why,
            "GPUDirect RDMA cannot be decided: the NIC's path to the GPU or its GDR support is not recorded "
            "(a snapshot of the host, or NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH in the log, tells it)",
        )
    ok, gdr_why = gdr
    if ok:
        d = _d("NET+GDR", rule, f"via {name} with GPUDirect RDMA", why, gdr_why)
    else:
        d = _d("NET", rule, f"via {name}, staged through host memory", why, gdr_why)
    return Decision(d.transport, d.rule, tuple(dict.fromkeys((*d.env, *RULES["gdr-level"].env))), d.detail, d.reasons)


def gdr_answer(
    nic: NicFact | None, env: NcclEnv, cc: str | None = None, nvlink: bool | None = None
) -> tuple[bool, str] | None:
    """GPUDirect RDMA between a GPU and its NIC (ncclTopoCheckGdr), or None when unknown."""
    if nic is None:
        return None
    if nic.gdr_capable is False:
        return False, "GPU or NIC does not support GPUDirect RDMA (peermem / dma-buf missing)"
    if nic.path is None:
        return None
    level = env.level("NCCL_NET_GDR_LEVEL") or "PXB"
    if path_rank(nic.path) > path_rank(level):
        return False, f"NIC {nic.name} is {nic.path} from the GPU, beyond the GDR level {level}"
    if env.get("NCCL_NET_GDR_READ") == "0":
        return False, "NCCL_NET_GDR_READ=0: sends stage through host memory"
    if nic.gdr_capable is None:
        return None
    return True, f"NIC {nic.name} is {nic.path} from the GPU, within the GDR level {level}"
