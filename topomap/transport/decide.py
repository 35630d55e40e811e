"""One function decides the transport NCCL picks for an ordered rank pair, from neutral facts.

The facts come from a snapshot (:mod:`topomap.transport.facts`) or from NCCL's own topology dump in a
log; the rules are NCCL's (:mod:`topomap.transport.rules`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from topomap.transport.rules import (
    RULES,
    NcclEnv,
    Transport,
    cumem_default,
    gdr_read_needs_nvlink,
    p2p_default_level,
    path_rank,
    strtol,
    version_tuple,
)


@dataclass(frozen=True)
class NicFact:
    """A GPU's nearest NIC as NCCL would see it: its name, path type to the GPU, GDR support, GB/s."""

    name: str | None
    path: str | None  # NCCL path type (PIX, PXB, PHB, SYS...), None unknown
    gdr_capable: bool | None  # GPU and NIC support GPUDirect RDMA (peermem / dma-buf), None unknown
    bw_gbs: float | None = None
    no_gdr_why: str | None = None  # why GPUDirect RDMA is impossible, when gdr_capable is False
    declared: bool = False  # a declared lot's (or the catalogue's) GPUDirect RDMA: its NIC sits within reach
    #: Only the observed channel line names this NIC (``NET/IB/3``, and no other line of the log ties it to
    #: the GPU): its facts may be weighed, but the prediction does not claim it — the line cannot disagree.
    from_line: bool = False


@dataclass(frozen=True)
class PairFacts:
    """What NCCL decides a pair's transport from. ``None`` everywhere means "not known"."""

    same_host: bool
    same_process: bool | None
    path: str | None  # NCCL path type between the GPUs (NVL for NVLink/NVSwitch)
    nvlink: bool | None
    nvml_p2p: bool | None  # NVML P2P read and write both OK
    cc: tuple[str | None, str | None] = (None, None)
    cpu: str | None = None  # NCCL's CPU kind (rules.CPU_KINDS), None not recorded
    local_gpus: int | None = None  # GPUs of the communicator on this host (NCCL's topology), None unknown
    path_bw_gbs: float | None = None
    nic_src: NicFact | None = None
    nic_dst: NicFact | None = None
    how: str = ""  # where the facts come from (snapshot, log dump)
    # each end has an NVLink peer among the host's GPUs (or is the only GPU): GPUDirect RDMA reads
    nvlink_peer: tuple[bool | None, bool | None] = (None, None)
    side: Literal["send", "receive"] = "send"  # a network hop seen from the sender (reads) or receiver
    same_container: bool | None = True  # False: each rank in its own container (own hostname or /dev/shm)
    mnnvl: bool | None = None  # two hosts' GPUs in one multi-node NVLink clique (fabric cluster UUID + clique)
    p2p_declared: bool = False  # ``nvml_p2p`` is a declared lot's (p2p:), whose path between the GPUs is not given


@dataclass(frozen=True)
class P2pFlavour:
    """P2P as NCCL's channel lines name it (p2p.cc): the ways it may connect (``direct pointer``,
    ``CUMEM``, ``IPC``: several where the facts leave it open), whether it reads (``/read``; None
    open) and over what (``NVLink``, ``PCIe``; None not recorded)."""

    ways: tuple[str, ...]
    read: bool | None
    over: str | None
    #: What the facts leave open about it, in words: the decision's reason "which P2P flavour: …" ("" when
    #: nothing is); not part of the flavour a log line is compared with.
    question: str = field(default="", compare=False)


@dataclass(frozen=True)
class Decision:
    """NCCL's transport for one ordered pair, the rule that decided it, the variables that would change
    it, and the detail (P2P flavour, NIC) in words; ``flavour`` and ``nic`` the same as values, for a
    comparison with what a log shows (issue 30 item 7)."""

    transport: Transport
    rule: str
    env: tuple[str, ...]
    detail: str
    reasons: tuple[str, ...]
    flavour: P2pFlavour | None = None
    nic: str | None = None


def _d(transport: Transport, rule: str, detail: str, *reasons: str) -> Decision:
    return Decision(transport, rule, RULES[rule].env, detail, tuple(r for r in reasons if r))


def decide(f: PairFacts, env: NcclEnv, version: str | None = None) -> Decision:
    """The transport NCCL chooses from ``f``'s source to its destination, by the rules of NCCL
    ``version``'s release family (the newest when None)."""
    if not f.same_host:
        v = version_tuple(version)
        if f.mnnvl and env.get("NCCL_MNNVL_ENABLE") != "0" and (v is None or v >= (2, 20, 0)):
            why = "the GPUs share a multi-node NVLink clique (fabric cluster UUID and clique id)"
            return _d("P2P", "p2p-mnnvl", "P2P/MNNVL over the NVLink fabric", why)
        return _network(f, env, "other-host", "the ranks are on different hosts", version)
    if f.same_container is False:
        why = (
            "the ranks run in separate containers: NCCL tells hosts apart by hostname and boot id, and "
            "P2P and SHM both need one /dev/shm"
        )
        return _network(f, env, "other-container", why, version)
    p2p = _p2p(f, env, version)
    if p2p is None:
        d = _d("unknown", "unknown", "", f"P2P cannot be decided: {_missing(f, version)}")
        return replace(d, env=RULES["p2p-level"].env)  # setting the level decides it
    ok, rule, why = p2p
    if ok:
        net = _net_intra(f, env, version)
        if net is not None:
            return net
        flavour, settle = _flavour(f, env, version)
        return replace(_d("P2P", rule, flavour_words(flavour), why, settle), flavour=flavour)
    net = _net_intra(f, env, version)
    if net is not None:
        return net
    if env.flag("NCCL_SHM_DISABLE"):
        return _network(f, env, "shm-disabled-env", f"{why}; NCCL_SHM_DISABLE=1", version)
    d = _d("SHM", rule, "through host memory (no P2P for this pair)", why)
    return Decision("SHM", rule, tuple(dict.fromkeys((*d.env, *RULES["shm"].env))), d.detail, d.reasons)


def _missing(f: PairFacts, version: str | None) -> str:
    if f.path is None:
        return "the path between the GPUs is not recorded"
    if f.nvlink is None:
        return (
            f"path {f.path} over PCIe, and whether NVLink joins them is not recorded "
            "(`nvidia-smi topo -m` or `nvidia-smi nvlink -s` tells it)"
        )
    why = p2p_default_level(version, f.cpu, f.local_gpus).why
    return f"path {f.path} is beyond PXB, and {why} (`lscpu` tells the CPU vendor)"


def _level(f: PairFacts, env: NcclEnv, version: str | None) -> tuple[str | None, str, str]:
    """The P2P level in force (None: not decidable), the rule that set it, and why. NCCL_P2P_DISABLE=1
    is level LOC, as NCCL's ncclGetLevel makes it: beyond every path between two GPUs, NVLink too."""
    if env.flag("NCCL_P2P_DISABLE"):
        return "LOC", "p2p-disabled-env", "NCCL_P2P_DISABLE=1"
    user = env.level("NCCL_P2P_LEVEL")
    if user is not None:
        return user, "p2p-level", f"NCCL_P2P_LEVEL={env.get('NCCL_P2P_LEVEL')}"
    lv = p2p_default_level(version, f.cpu, f.local_gpus)
    return lv.level, lv.rule, lv.why


def _p2p(f: PairFacts, env: NcclEnv, version: str | None) -> tuple[bool, str, str] | None:
    """(P2P allowed, rule, why), or None when the facts cannot decide it."""
    level, rule, level_why = _level(f, env, version)
    if f.nvlink:
        path = f.path if f.path in ("NVL", "NVB") else "NVL"  # NVB: NVLink through another GPU
    elif f.path is not None and f.nvlink is False:
        path = f.path
    elif f.path is None and f.p2p_declared and f.nvml_p2p is not None and env.level("NCCL_P2P_LEVEL") is None:
        if not f.nvml_p2p or env.flag("NCCL_P2P_DISABLE"):
            why = "NCCL_P2P_DISABLE=1" if f.nvml_p2p else "the lot declares no peer-to-peer between its GPUs"
            return False, "p2p-disabled-env" if f.nvml_p2p else "p2p-nvml", why
        # (a declaration's yes: the pair is within NCCL's default level, wherever the GPUs sit)
        return True, rule, "peer-to-peer as the lot declares it (the path between the GPUs is not given)"
    elif level is not None and path_rank(level) in (path_rank("LOC"), path_rank("SYS")):
        path = f.path or "SYS"  # a level no path between two GPUs passes, or every one does
    elif f.path is not None and level is not None and path_rank(f.path) <= path_rank(level):
        path = f.path  # within the level whether NVLink joins them or not
    else:
        return None  # the path, or NVLink that could make it NVL, is not recorded
    shown = f"path {path}" if f.path is not None or f.nvlink else "any path"
    if level is None:  # every family's level is PXB or wider: a path within PXB is P2P whatever it is
        if path_rank(path) > path_rank("PXB"):
            if f.nvml_p2p is False:
                return False, "p2p-nvml", f"{shown}: NVML reports P2P not supported (whatever the P2P level)"
            return None
        level, rule, level_why = "PXB", "p2p-level", "P2P level PXB or wider"
    if path_rank(path) > path_rank(level):
        return False, rule, f"{shown} is beyond the P2P level ({level_why}){_older(f, version, path)}"
    if f.nvml_p2p is False:
        return False, "p2p-nvml", f"{shown} is within the P2P level, but NVML reports P2P not supported"
    assumed = "" if f.nvml_p2p else " (NVML P2P status not recorded: assumed OK)"
    why = f"{shown} within the P2P level ({level_why}){assumed}{_older(f, version, path)}"
    return True, "p2p-nvlink" if path in ("NVL", "NVB") else rule, why


def _older(f: PairFacts, version: str | None, path: str) -> str:
    """With no NCCL version known, say where NCCL 2.9-2.22's CPU rule would decide otherwise."""
    if version is not None or path == "NVL":
        return ""
    new = p2p_default_level(None, f.cpu, f.local_gpus).level
    old = p2p_default_level("2.22.3", f.cpu, f.local_gpus).level
    if new is None or old is None or (path_rank(path) <= path_rank(new)) == (path_rank(path) <= path_rank(old)):
        return ""
    verdict = "allow" if path_rank(path) <= path_rank(old) else "refuse"
    return f"; NCCL 2.9-2.22 would {verdict} P2P here (its level is {old} on this CPU): the NCCL version is not known"


def _flavour(f: PairFacts, env: NcclEnv, version: str | None) -> tuple[P2pFlavour, str]:
    """P2P in the words of NCCL's channel lines (p2p.cc): ``P2P/direct pointer`` in one process,
    ``P2P/CUMEM`` or ``P2P/IPC`` across processes, ``/read`` where NCCL reads; alternatives where the
    facts leave them open (``CUMEM|IPC``, ``[/read]``), with what would settle them. A pair whose NVLink
    is not recorded may be joined by it (NCCL's path would then be NVL): its medium and read stay open."""
    read_env = env.get("NCCL_P2P_READ_ENABLE")
    if read_env is not None:
        read: bool | None = strtol(read_env) != 0
    elif f.nvlink is False or (f.path == "NVB" and not f.nvlink):
        read = False
    elif f.nvlink is None or f.cc[0] is None or f.cc[1] is None:
        read = None
    else:
        read = bool(f.nvlink) and f.path != "NVB" and f.cc[0] == f.cc[1] == "8.0"  # PATH_NVL only
    open_: list[str] = []
    if f.same_process and not env.flag("NCCL_P2P_DIRECT_DISABLE"):
        hows = ["direct pointer"]
    else:
        cumem = cumem_default(version, env)
        hows = {True: ["CUMEM"], False: ["IPC"], None: ["CUMEM", "IPC"]}[cumem]
        if cumem is None:
            open_.append("CUMEM from NCCL 2.19 or NCCL_CUMEM_ENABLE=1")
        if f.same_process is None:
            hows = ["direct pointer", *hows]
            open_.append("direct pointer when one process drives both GPUs")
    if read is None:
        open_.append("/read only between two compute-capability-8.0 GPUs on NVLink")
    over = "NVLink" if f.nvlink else ("PCIe" if f.nvlink is False or f.path == "NVB" else None)
    question = f"which P2P flavour: {'; '.join(open_)}" if open_ else ""
    return P2pFlavour(tuple(hows), read, over, question), question


def flavour_words(fl: P2pFlavour) -> str:
    """``P2P/CUMEM|IPC[/read] over NVLink or PCIe``: the flavour as the decision's detail shows it."""
    suffix = {True: "/read", False: "", None: "[/read]"}[fl.read]
    return f"P2P/{'|'.join(fl.ways)}{suffix} over {fl.over or 'NVLink or PCIe'}"


def _net_intra(f: PairFacts, env: NcclEnv, version: str | None) -> Decision | None:
    """ncclTopoCheckNet (NCCL 2.14 and later): both GPUs reach a NIC within PXB faster than each other."""
    v = version_tuple(version)
    if env.flag("NCCL_NET_DISABLE_INTRA") or f.nvlink or f.path_bw_gbs is None or (v is not None and v < (2, 14, 0)):
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
            version,
        )
    return None


#: How a decision names a NIC that only the observed line names (NicFact.from_line): short, the table's
#: column is narrow; a reason says the rest (:data:`ONLY_THE_LINE_WHY`)
ONLY_THE_LINE = "a NIC"
ONLY_THE_LINE_WHY = "which NIC is not known to the prediction: only the channel line names it, not compared"


def _network(f: PairFacts, env: NcclEnv, rule: str, why: str, version: str | None = None) -> Decision:
    """NET or NET+GDR: GPUDirect RDMA on the NIC of the end that printed the hop — the sender reads GPU
    memory (``[send]``), the receiver writes it (``[receive]``)."""
    send = f.side == "send"
    nic = f.nic_src if send else f.nic_dst
    cc = f.cc[0] if send else f.cc[1]
    peer = f.nvlink_peer[0] if send else f.nvlink_peer[1]
    gdr = gdr_answer(nic, env, cc, peer, read=send, version=version)
    name = ONLY_THE_LINE if nic and nic.from_line else (nic.name if nic and nic.name else "its NIC")
    if nic is not None and nic.from_line:
        why = f"{why}; {ONLY_THE_LINE_WHY}"  # no name: pairs alike but for the line's NIC share a row
    if gdr is None:  # the network for sure, but NET and NET+GDR are different answers: not guessed
        return _d(
            "unknown",
            rule,
            f"NET via {name}; GPUDirect RDMA unknown",
            why,
            "GPUDirect RDMA cannot be decided: the NIC's path to the GPU, its GDR support, or (for sends from "
            "a GPU before Ampere) an NVLink peer is not recorded (a snapshot of the host, or "
            "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH in the log, tells it)",
        )
    ok, gdr_why = gdr
    if ok:
        d = _d("NET+GDR", rule, f"via {name} with GPUDirect RDMA", why, gdr_why)
    else:
        d = _d("NET", rule, f"via {name}, staged through host memory", why, gdr_why)
    env_vars = (*d.env, *RULES["gdr-level"].env, *(RULES["gdr-read"].env if send else ()))
    nic_name = nic.name if nic is not None and not nic.from_line else None
    return Decision(d.transport, d.rule, tuple(dict.fromkeys(env_vars)), d.detail, d.reasons, nic=nic_name)


def gdr_answer(
    nic: NicFact | None,
    env: NcclEnv,
    cc: str | None = None,
    nvlink_peer: bool | None = None,
    *,
    read: bool = False,
    version: str | None = None,
) -> tuple[bool, str] | None:
    """GPUDirect RDMA between a GPU and its NIC (ncclTopoCheckGdr), or None when unknown. ``read``: the
    GPU sends (the NIC reads its memory), where NCCL asks more; ``nvlink_peer``: the GPU has an NVLink
    peer among the host's GPUs or is the only one."""
    if nic is None:
        return None
    if nic.gdr_capable is False:
        return False, nic.no_gdr_why or "GPU or NIC does not support GPUDirect RDMA (peermem / dma-buf missing)"
    level = env.level("NCCL_NET_GDR_LEVEL") or "PXB"
    path = nic.path
    v = version_tuple(version)
    if path == "P2C" and env.get("NCCL_NET_GDR_C2C") != "0" and (v is None or v >= (2, 27, 0)):
        path = "C2C"  # NCCL_NET_GDR_C2C (default on): a NIC on the CPU reached over C2C counts as C2C
    if path is not None and path_rank(path) > path_rank(level):
        return False, f"NIC {nic.name} is {nic.path} from the GPU, beyond the GDR level {level}"
    if read:  # NCCL asks this before the distance; either refusing is a "no", so the order is free
        refused = _read_refused(env, cc, nvlink_peer, version)
        if refused is not True:
            return refused
    if path is None and nic.declared and nic.gdr_capable and path_rank(level) >= path_rank("PXB"):
        # (a declaration's yes holds at NCCL's default level, PXB, or above; a level set below it asks where
        # the NIC sits, which the declaration does not say)
        return True, f"GPUDirect RDMA to NIC {nic.name} as the lot declares it (where the NIC sits is not given)"
    if path is None or nic.gdr_capable is None:
        return None
    return True, f"NIC {nic.name} is {nic.path} from the GPU, within the GDR level {level}"


def _read_refused(
    env: NcclEnv, cc: str | None, nvlink_peer: bool | None, version: str | None
) -> tuple[bool, str] | Literal[True] | None:
    """The send-side condition of ncclTopoCheckGdr: True when it passes, (False, why) when it refuses,
    None when it cannot be decided."""
    read_env = env.get("NCCL_NET_GDR_READ")
    if read_env is not None and read_env.strip() == "0":
        return False, "NCCL_NET_GDR_READ=0: sends stage through host memory"
    if read_env is not None and read_env.strip().lstrip("-").isdigit() and int(read_env) > 0:
        return True
    needs = gdr_read_needs_nvlink(version, cc)
    if needs is False or nvlink_peer is True:
        return True
    if needs is None or nvlink_peer is None:
        return None
    v = version_tuple(version)
    which = f"every GPU in NCCL {version}" if v is not None and v < (2, 12, 0) else f"a compute-capability-{cc} GPU"
    return False, (
        f"sends stage through host memory: for {which} NCCL reads GPU memory over the NIC only when the GPU has "
        "an NVLink peer (NCCL_NET_GDR_READ=1 forces it)"
    )
