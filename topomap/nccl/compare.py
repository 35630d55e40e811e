"""A prediction against one channel line beyond its transport (issue 30 item 7): the P2P flavour (how
NCCL connects, whether it reads) and the NIC (``NET/5`` named through the log's ``NET/IB : Using
[0]mlx5_0 … [5]mlx5_4`` legend); and what a log says of a host's NICs before any channel line (their
names, "GPU Direct RDMA Disabled for HCA" lines), which settles GPUDirect RDMA where a snapshot cannot."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from topomap.model.nic_ids import family_of_name, family_row, is_rdma_name
from topomap.nccl.logdata import Hop, NcclLog
from topomap.transport.decide import Decision, NicFact, PairFacts
from topomap.transport.rules import NcclEnv

#: NCCL's words for how P2P connects (src/transport/p2p.cc: "P2P/direct pointer", "P2P/CUMEM", "P2P/IPC")
P2P_WAYS = ("direct pointer", "CUMEM", "IPC")


@dataclass(frozen=True)
class SeenP2p:
    """P2P as a channel line shows it: the way (None: a word NCCL uses elsewhere, ``MNNVL``), /read."""

    way: str | None
    read: bool


def seen_p2p(via: str) -> SeenP2p:
    """``P2P/CUMEM/read`` → (CUMEM, read); ``P2P/direct pointer`` → (direct pointer, no read)."""
    parts = via.split("/")
    way = parts[1] if len(parts) > 1 and parts[1] in P2P_WAYS else None
    return SeenP2p(way, "read" in parts[2:])


def log_nic_name(log: NcclLog, hop: Hop) -> str | None:
    """The NIC a network line names (``NET/IB/5``) as the printing host's ``NET/… : Using`` legend
    names it (NCCL numbers NICs per host); None where the legend was not printed (or cut)."""
    index, _proxy = hop.nic
    return log.hca_names.get((hop.host, index)) if index is not None else None


def p2p_differences(d: Decision, seen: SeenP2p, env: NcclEnv) -> list[str]:
    """Where a P2P line differs from the predicted flavour: the way, and reading (which NCCL does only
    over NVLink between two compute-capability-8.0 GPUs unless NCCL_P2P_READ_ENABLE says)."""
    fl = d.flavour
    if fl is None:
        return []
    out: list[str] = []
    if seen.way is not None and seen.way not in fl.ways:
        why = {
            "direct pointer": "one process drives both GPUs",
            "CUMEM": "NCCL 2.19 or later, or NCCL_CUMEM_ENABLE=1",
            "IPC": "NCCL before 2.19, or NCCL_CUMEM_ENABLE=0",
        }[seen.way]
        out.append(f"NCCL connected by {seen.way} ({why}), predicted {'|'.join(fl.ways)}")
    forced = env.get("NCCL_P2P_READ_ENABLE") is not None
    if fl.read is False and seen.read:
        where = (
            ""
            if forced
            else (
                ": NCCL reads only over NVLink between two compute-capability-8.0 GPUs, so NVLink joins them"
                + (" though the facts say PCIe" if fl.over == "PCIe" else "")
            )
        )
        out.append(f"NCCL reads (/read), predicted no read{where}")
    elif fl.read is True and not seen.read:
        out.append(
            "NCCL does not read (no /read), predicted /read: not both compute capability 8.0 on NVLink, "
            "or NCCL_P2P_READ_ENABLE=0 in an environment the log does not show"
        )
    return out


_NET_DEV = re.compile(r"^NET/(?P<dev>\d+)$")


def nccl_dev(name: str | None) -> int | None:
    """NCCL's network device number where a NIC is named by it (``NET/14``, as a channel line prints it
    and a dump's NICs are named: :func:`topomap.importers.nccl_log.net_dev`), else None."""
    m = _NET_DEV.match(name or "")
    return int(m.group("dev")) if m else None


def nic_difference(d: Decision, log: NcclLog, hop: Hop, nccl_nics: tuple[str, ...]) -> str | None:
    """Where a network line's NIC is not one the prediction names: ``nccl_nics`` are the NICs the
    GPU's channels use (NCCL spreads a GPU's channels over equally near NICs), the decision's first.
    A NIC named by NCCL's device number (``NET/14``, from a dump) is compared by that number with the
    line's (``NET/IB/14``). Names the log or the snapshot does not give (``NET/3`` from the line,
    ``NIC0``) are not compared. Through PXN (``NET/IB/0(4)``) NCCL used the NIC of the proxy rank's GPU
    (:func:`pxn_difference`)."""
    index, proxy = hop.nic
    seen = log_nic_name(log, hop)
    predicted = d.nic
    if proxy is not None:
        return pxn_difference(predicted, (index, proxy, seen), nccl_nics)
    number = nccl_dev(predicted)
    if number is not None and index is not None:
        if number == index or index in {nccl_dev(n) for n in nccl_nics}:
            return None
        return f"NCCL used NET/{index}, predicted NET/{number} (NCCL's device numbers)"
    if seen is None or predicted is None or not is_rdma_name(predicted):
        return None
    if seen == predicted or seen in nccl_nics:
        return None
    return f"NCCL used {seen} (NET/{index} in the log's NIC legend), predicted {predicted}"


def pxn_difference(
    predicted: str | None, used: tuple[int | None, int, str | None], nccl_nics: tuple[str, ...]
) -> str | None:
    """A PXN hop (``NET/IB/0(4)``: NIC device 0 of the proxy rank 4's GPU, reached over NVLink) against
    a prediction that names this GPU's own NIC: the NIC compared where the log's legend or NCCL's device
    number names both, else said not compared — never the same, the prediction not knowing PXN.
    ``used``: the line's NIC index, its proxy rank, the legend's name for the NIC (None: no legend)."""
    index, proxy, seen = used
    if predicted is None:  # the prediction names no NIC (or only the line does): nothing claimed
        return None
    number = nccl_dev(predicted)
    if number is not None and index is not None:
        if number == index or index in {nccl_dev(n) for n in nccl_nics}:
            return None
        return f"NCCL used NET/{index} through rank {proxy}'s GPU (PXN), predicted NET/{number}"
    if seen is not None and is_rdma_name(predicted):
        if seen == predicted or seen in nccl_nics:
            return None
        legend = f"NET/{index} in the log's NIC legend"
        return f"NCCL used {seen} ({legend}) through rank {proxy}'s GPU (PXN), predicted {predicted}"
    named = f"{seen}, NET/{index}" if seen is not None else f"NET/{index}"
    return f"NIC not compared: PXN through rank {proxy}'s NIC ({named}), predicted this GPU's {predicted}"


def log_gdr(log: NcclLog, host: str, index: int | None) -> tuple[bool | None, str]:
    """Whether the NICs NCCL uses on ``host`` do GPUDirect RDMA, from what the log says before any
    channel line: NCCL's Socket transport (never), "GPU Direct RDMA Disabled for HCA … (no module)",
    the line for this NIC, else the family of the NIC names in the host's legend when they all share one
    (``mlx5_*``: ConnectX, which does). (None, "") where the log does not say."""
    if log.network.get(host, "").lower() == "socket":
        return False, "the log: NCCL uses its Socket transport (TCP), no GPUDirect RDMA"
    if host in log.no_gdr_module:
        return False, "the log: GPU Direct RDMA Disabled (no module): no peer-memory module on this host"
    said = log.hca_gdr.get((host, index)) if index is not None else None
    if said is not None:
        return said, f"the log: GPU Direct RDMA {'Enabled' if said else 'Disabled'} for HCA {index}"
    names = [n for (h, _i), n in log.hca_names.items() if h == host]
    families = {family_of_name(n) for n in names}
    one = families.pop() if len(families) == 1 else None
    row = family_row(one) if one is not None else None
    if row is not None and row.gdr == "yes":
        return True, f"the log's NIC legend names {', '.join(sorted(names)[:3])}: {row.gdr_why}"
    return None, ""


def with_log_gdr(facts: PairFacts, log: NcclLog, hop: Hop) -> PairFacts:
    """A network hop's facts from a snapshot, its NIC's GPUDirect RDMA filled from the log where the
    snapshot leaves it unknown (:func:`log_gdr`); what the snapshot says is kept."""
    send = facts.side == "send"
    nic: NicFact | None = facts.nic_src if send else facts.nic_dst
    if nic is None or nic.gdr_capable is not None:
        return facts
    index, proxy = hop.nic
    capable, why = log_gdr(log, hop.host, index if proxy is None else None)
    if capable is None:
        return facts
    filled = replace(nic, gdr_capable=capable, no_gdr_why=None if capable else why)
    return replace(facts, nic_src=filled) if send else replace(facts, nic_dst=filled)


def with_log_cpu(facts: PairFacts, log: NcclLog, host: str | None) -> tuple[PairFacts, str | None]:
    """A pair's facts from a snapshot, the CPU filled from the log's topology dump (``CPU/0-0 (1/2/6)``:
    NCCL's arch/vendor/model, read per host) where the snapshot does not record its vendor; with the
    reason saying so (None where nothing was filled). What the snapshot says is kept."""
    if facts.cpu is not None:
        return facts, None
    kind = log.cpus.get(host) if host else None
    if kind is None and len(log.cpus) == 1 and len({r.host for r in log.ranks.values() if r.host}) <= 1:
        kind = next(iter(log.cpus.values()))  # a one-host log: its dump is that host's
    if kind is None:
        return facts, None
    why = f"the CPU ({kind}) from the log's topology dump: the snapshot does not record its vendor"
    return replace(facts, cpu=kind), why
