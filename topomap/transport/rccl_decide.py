"""One function decides the transport RCCL picks for an ordered rank pair (issue 35), from the same
neutral facts as NCCL's (:class:`~topomap.transport.decide.PairFacts`) and RCCL's own rules
(:mod:`topomap.transport.rccl_rules`). A pair joined by XGMI arrives as NCCL's NVL (``nvlink`` True)."""

from __future__ import annotations

from topomap.transport.decide import Decision, P2pFlavour, PairFacts
from topomap.transport.rccl_rules import RCCL_RULES, net_intra_default_off, rccl_p2p_level
from topomap.transport.rules import NcclEnv, path_rank, strtol


def _d(transport: str, rule: str, detail: str, *reasons: str, flavour: P2pFlavour | None = None) -> Decision:
    return Decision(transport, rule, RCCL_RULES[rule][1], detail, tuple(r for r in reasons if r), flavour)  # type: ignore[arg-type]


def _path(f: PairFacts) -> str | None:
    if f.nvlink or (f.path or "").upper() == "XGMI":
        return "NVL"
    return f.path


def decide_rccl(f: PairFacts, env: NcclEnv, version: str | None = None) -> Decision:
    """The transport RCCL chooses from ``f``'s source to its destination."""
    if not f.same_host or f.same_container is False:
        why = "the ranks are on different hosts" if not f.same_host else "the ranks run in separate containers"
        gdr = f.nic_src if f.side == "send" else f.nic_dst
        on = (
            gdr is not None
            and gdr.gdr_capable
            and gdr.path is not None
            and path_rank(gdr.path) <= path_rank(env.level("NCCL_NET_GDR_LEVEL") or "PXB")
        )
        detail = "NET/GDRDMA" if on else "NET (through host memory)"
        return _d("NET+GDR" if on else "NET", "rccl-other-host", detail, why)
    path = _path(f)
    level: str | None
    if env.flag("NCCL_P2P_DISABLE"):
        level, rule, why = "LOC", "rccl-p2p-disabled-env", "NCCL_P2P_DISABLE=1"
    elif env.level("NCCL_P2P_LEVEL") is not None:
        level, rule, why = env.level("NCCL_P2P_LEVEL"), "rccl-p2p-level", f"NCCL_P2P_LEVEL={env.get('NCCL_P2P_LEVEL')}"
    else:
        level, rule = rccl_p2p_level(f.cpu), "rccl-p2p-level"
        why = f"RCCL's P2P level {level} on this CPU" if level else "the CPU vendor is not recorded"
    if path is None:
        return _d("unknown", "rccl-unknown", "", "the path between the GPUs is not recorded")
    if level is None:
        if path_rank(path) > path_rank("PXB"):
            return _d("unknown", "rccl-unknown", "", f"path {path} is beyond PXB and {why} (`lscpu` tells it: "
                      "RCCL's level is SYS, PXB on Intel)")  # fmt: skip
        level = "PXB"
    word = "XGMI" if path == "NVL" else f"path {path}"
    p2p_ok = path_rank(path) <= path_rank(level) and level != "LOC"
    if p2p_ok:
        if path == "NVL" and rule == "rccl-p2p-level":
            rule = "rccl-xgmi"
        flavour = _flavour(f, env)
        return _d("P2P", rule, _words(flavour, path), f"{word} within the P2P level ({why})", flavour=flavour)
    if not net_intra_default_off(version) or env.flag("NCCL_NET_DISABLE_INTRA") is False:
        pass  # the network between GPUs of one host is possible here; not modelled beyond SHM
    if env.flag("NCCL_SHM_DISABLE"):
        return _d(
            "NET", "rccl-other-host", "NET (SHM disabled)", f"{word} beyond the P2P level ({why}); NCCL_SHM_DISABLE=1"
        )
    return _d("SHM", "rccl-shm", "through host memory (no P2P for this pair)", f"{word} beyond the P2P level ({why})")


def _flavour(f: PairFacts, env: NcclEnv) -> P2pFlavour:
    read_env = env.get("NCCL_P2P_READ_ENABLE")
    read = strtol(read_env) != 0 if read_env is not None else False
    if f.same_process:
        ways: tuple[str, ...] = ("direct pointer",)
    elif f.same_process is False:
        ways = ("CUMEM",) if env.flag("NCCL_CUMEM_ENABLE") else ("IPC",)
    else:
        ways = ("direct pointer", "CUMEM" if env.flag("NCCL_CUMEM_ENABLE") else "IPC")
    over = "XGMI" if f.nvlink else ("PCIe" if f.nvlink is False or f.path else None)
    return P2pFlavour(ways, read, over)


def _words(fl: P2pFlavour, path: str) -> str:
    way = "|".join(fl.ways)
    return f"P2P/{way}{'/read' if fl.read else ''} over {'XGMI' if path == 'NVL' else 'PCIe'}"
