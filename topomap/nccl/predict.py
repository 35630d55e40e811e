"""Per ordered rank pair: the transport NCCL will choose (from a snapshot or a log's own topology
dump), what the log says it chose, and the reason for every difference."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from topomap.base.errors import TopomapError
from topomap.graph import Topology, build, gpu_node
from topomap.graph.evidence import nearest_nic
from topomap.model.snapshot import Gpu, Snapshot
from topomap.nccl.compare import nic_difference, p2p_differences, seen_p2p, with_log_cpu, with_log_gdr
from topomap.nccl.facts import dump_facts, env_of, log_remote_facts, nic_fact, remote_facts, snapshot_facts
from topomap.nccl.features import GpuFeatures, features
from topomap.nccl.logread import Hop, NcclLog, short_bus
from topomap.transport.decide import Decision, PairFacts, decide, gdr_answer
from topomap.transport.facts import has_nvlink_peer
from topomap.transport.rccl_decide import decide_rccl
from topomap.transport.rccl_rules import rccl_rules_used
from topomap.transport.rules import NcclEnv, Transport, rules_used


def gpu_label(host: str | None, gpu: str | None, bus: str | None) -> str | None:
    """A rank's GPU by name (``gpu3``) or bus (``bus 33000``), its host first where given (``vm-host40:…``)."""
    name = gpu if gpu is not None else (f"bus {bus}" if bus else None)
    return f"{host}:{name or '?'}" if host else name


@dataclass(frozen=True)
class Entry:
    """One (rank pair, transport) entry: predicted against observed (None without a log)."""

    src_rank: int
    dst_rank: int
    #: The GPU each rank ran on, by its snapshot name (``gpu3``); None where only its bus is known (``src_bus``).
    src_gpu: str | None
    dst_gpu: str | None
    decision: Decision
    observed: Transport | None = None
    via: str | None = None
    why_different: str | None = None
    #: Each rank's host where the GPU's name is to carry it (a hop between hosts, a host of a cluster):
    #: --json's GPU names lead with it (``vm-host40:bus 33000``), the table names it by a short id.
    src_host: str | None = None
    dst_host: str | None = None
    #: The bus id a log gives for a rank's GPU (``33000``) where no snapshot names the GPU.
    src_bus: str | None = None
    dst_bus: str | None = None

    @property
    def src_name(self) -> str | None:
        """The sending GPU as --json names it: ``gpu3``, ``bus 33000``, ``vm-host40:bus 33000``."""
        return gpu_label(self.src_host, self.src_gpu, self.src_bus)

    @property
    def dst_name(self) -> str | None:
        """The receiving GPU as --json names it (see :attr:`src_name`)."""
        return gpu_label(self.dst_host, self.dst_gpu, self.dst_bus)

    @property
    def same(self) -> bool:
        """As predicted: the transport and, where both say it, the P2P flavour and the NIC (issue 30)."""
        return self.observed is not None and self.observed == self.decision.transport and self.why_different is None

    def to_json(self) -> dict[str, Any]:
        return {
            "src_rank": self.src_rank,
            "dst_rank": self.dst_rank,
            "src_gpu": self.src_name,
            "dst_gpu": self.dst_name,
            "predicted": self.decision.transport,
            "detail": self.decision.detail,
            "rule": self.decision.rule,
            "env": list(self.decision.env),
            "reasons": list(self.decision.reasons),
            "observed": self.observed,
            "via": self.via,
            "same": self.same if self.observed is not None else None,
            "why_different": self.why_different,
        }


@dataclass(frozen=True)
class GpuNic:
    gpu: str
    nic: str | None
    path: str | None
    gdr: str  # yes / no / unknown
    why: str


@dataclass
class NcclReport:
    entries: list[Entry]
    nics: list[GpuNic] = field(default_factory=list)
    features: list[GpuFeatures] = field(default_factory=list)  # PXN, NVLS, multi-node NVLink per GPU
    env: NcclEnv = field(default_factory=NcclEnv)
    version: str | None = None
    source: str = ""
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    library: str = "nccl"  # "rccl": RCCL's rules (AMD GPUs, issue 35)

    @property
    def rules(self) -> str:
        """The rules followed, in words: NCCL's by release, or RCCL's."""
        return rccl_rules_used(self.version) if self.library == "rccl" else rules_used(self.version)

    @property
    def compared(self) -> list[Entry]:
        return [e for e in self.entries if e.observed is not None]

    @property
    def agreement(self) -> tuple[int, int]:
        """(entries as predicted: the transport, its P2P flavour and its NIC, entries compared)."""
        c = self.compared
        return sum(1 for e in c if e.same), len(c)

    def to_json(self) -> dict[str, Any]:
        same, total = self.agreement
        return {
            "rules": self.rules,
            "library": self.library,
            "source": self.source,
            "nccl_version": self.version,
            "env": self.env.set_vars(),
            "pairs": [e.to_json() for e in self.entries],
            "nics": [{"gpu": n.gpu, "nic": n.nic, "path": n.path, "gdr": n.gdr, "why": n.why} for n in self.nics],
            "features": [
                {
                    "gpu": f.gpu,
                    **{
                        name: {"can": feat.can, "why": feat.why, "env": feat.env}
                        for name, feat in (("pxn", f.pxn), ("nvls", f.nvls), ("mnnvl", f.mnnvl))
                    },
                }
                for f in self.features
            ],
            "agreement": {"same": same, "total": total} if total else None,
            "notes": self.notes,
            "skipped": self.skipped,
        }


NO_VERSION_NOTE = "no NCCL version given: --nccl-version 2.18.3 predicts for an older release"

#: how ranks run on the host: one process per GPU, one process for all, or one container per rank
RANK_MODES = ("per-gpu", "one-process", "containers")


def parse_ranks(spec: str | None, snap: Snapshot) -> tuple[list[Gpu], str]:
    """``--ranks``: ``per-gpu`` (default: one process per GPU, rank i on the i-th GPU), ``one-process``,
    ``containers`` (one container per rank, each with its own hostname, as Docker and Kubernetes give),
    or a GPU index list ``2,3,0`` (``gpu2``/``GPU2`` too; rank i on that GPU); ``LIST:MODE`` for both."""
    gpus = sorted(snap.gpus, key=lambda g: g.index)
    if not spec:
        return gpus, "per-gpu"
    head, _, tail = spec.partition(":")
    mode = next((m for m in RANK_MODES if m in (head, tail)), "per-gpu")
    if tail and tail not in RANK_MODES:
        raise TopomapError(f"--ranks {spec!r}: {tail!r} is not a rank mode", hint="per-gpu, one-process or containers")
    if head in RANK_MODES:
        return gpus, mode
    by_index = {g.index: g for g in gpus}
    try:
        chosen = [by_index[i] for i in _indexes(head)]
    except (KeyError, ValueError) as err:
        have = ", ".join(str(i) for i in sorted(by_index))
        raise TopomapError(
            f"--ranks {spec!r}: not GPU indexes of this snapshot ({have}) nor a rank mode",
            hint="--ranks 0,1,2,3, --ranks 0-3, --ranks one-process or --ranks containers",
        ) from err
    twice = sorted({g.index for g in chosen if chosen.count(g) > 1})
    if twice:
        raise TopomapError(
            f"--ranks {spec!r}: gpu{twice[0]} is given twice; NCCL refuses two ranks on one GPU",
            hint="one rank per GPU",
        )
    return chosen, mode


def _indexes(text: str) -> list[int]:
    """``0,1,2``, ``gpu3``/``GPU3``, ``0-3`` (a range) → GPU indexes; ValueError on anything else."""
    out: list[int] = []
    for part in text.split(","):
        item = part.strip().lower().removeprefix("gpu")
        lo, dash, hi = item.partition("-")
        if dash and int(hi) - int(lo) > 4096:  # no host has so many GPUs (0-99999999999 ran out of memory)
            raise ValueError(item)
        out += list(range(int(lo), int(hi) + 1)) if dash else [int(item)]
    return out


_MODE_NOTE = {
    "per-gpu": "one process per GPU",
    "one-process": "one process for all GPUs",
    "containers": "one container per rank (its own hostname and /dev/shm)",
}


def predict_snapshot(
    snap: Snapshot, env: NcclEnv, ranks: str | None = None, version: str | None = None, topo: Topology | None = None
) -> NcclReport:
    """Every ordered pair of ranks on the snapshot's host, by the rules of NCCL ``version`` (default:
    the newest release family); ``topo``: the snapshot's graph when the caller has built it. One host:
    a merged snapshot goes to :func:`topomap.nccl.nodes.predict`."""
    topo = topo if topo is not None else build(snap)
    gpus, mode = parse_ranks(ranks, snap)

    def facts(a: Gpu, b: Gpu) -> PairFacts:
        f = snapshot_facts(topo, a, b, mode == "one-process", len(gpus))
        return replace(f, same_container=False) if mode == "containers" else f

    amd = bool(gpus) and all(g.vendor == "amd" for g in gpus)  # RCCL's rules for AMD GPUs (issue 35)
    rule = decide_rccl if amd else decide
    entries = [
        Entry(i, j, gpu_node(a), gpu_node(b), rule(facts(a, b), env, version))
        for i, a in enumerate(gpus)
        for j, b in enumerate(gpus)
        if i != j
    ]
    report = NcclReport(
        entries,
        nics=_nics(topo, gpus, env, version),
        features=features(topo, gpus, env),
        env=env,
        version=version,
        source=snap.source.origin or snap.source.kind,
        library="rccl" if amd else "nccl",
    )
    report.notes.append("ranks: " + _MODE_NOTE[mode])
    if version is None:
        report.notes.append(NO_VERSION_NOTE)
    if snap.host.virtualization:
        report.notes.append(
            f"a virtual machine ({snap.host.virtualization}): the hypervisor may refuse P2P that the path allows; "
            "`nvidia-smi topo -p2p rw` in the VM tells it"
        )
    return report


def _nics(topo: Topology, gpus: list[Gpu], env: NcclEnv, version: str | None) -> list[GpuNic]:
    """Each GPU's NIC and GPUDirect RDMA: ``yes``, ``no``, ``receive only`` (sends stage through host
    memory: a GPU before Ampere without an NVLink peer) or ``unknown``."""
    out = []
    for g in gpus:
        nic = nic_fact(topo, gpu_node(g))
        peer = has_nvlink_peer(topo, g, gpus)
        recv = gdr_answer(nic, env, g.compute_capability, peer, version=version)
        send = gdr_answer(nic, env, g.compute_capability, peer, read=True, version=version)
        if recv is not None and recv[0] and send is None:
            gdr, why = (
                "unknown",
                (
                    f"receives: {recv[1]}; sends unknown: the GPU's compute capability or NVLink peers are not "
                    "recorded (NCCL reads GPU memory over the NIC from a GPU before Ampere only with an NVLink peer)"
                ),
            )
        elif recv is None or send is None:
            said = nearest_nic(topo, gpu_node(g)).gdr  # the evidence's own reason where it is the NIC's
            gdr = "unknown"
            why = (
                said.why()
                if said.value == "unknown"
                else "the NIC's path to the GPU or its GDR support is not recorded"
            )
        elif recv[0] and not send[0]:
            gdr, why = "receive only", send[1]
        else:
            gdr, why = ("yes" if recv[0] else "no"), recv[1]
        out.append(GpuNic(gpu_node(g), nic.name, nic.path, gdr, why))
    return out


def _snapshot_gpu(snap: Snapshot, log: NcclLog, rank: int) -> Gpu | None:
    """The snapshot GPU a log rank ran on: by bus id, else by NVML index, else by CUDA ordinal."""
    info = log.ranks.get(rank)
    if info is None:
        return None
    for g in snap.gpus:
        if info.bus and g.pci_bus_id and short_bus(g.pci_bus_id.replace(":", "").replace(".", "")) == info.bus:
            return g
    idx = info.nvml_dev if info.nvml_dev is not None else info.cuda_dev
    return next((g for g in snap.gpus if g.index == idx), None)


def compare_log(log: NcclLog, snap: Snapshot | None, extra: NcclEnv, version: str | None = None) -> NcclReport:
    """Each (rank pair, observed transport) of the log against the prediction; ``version`` stands in for
    a log that does not print its NCCL version."""
    env = env_of(log, extra)
    if log.version is None and version is not None:
        log = replace(log, version=version)
    topo = build(snap) if snap is not None else None
    seen: dict[tuple[int, int, Transport], dict[str | None, Hop]] = {}
    for h in log.hops:  # one line per side: a network entry may be printed by its sender and its receiver
        seen.setdefault((h.src, h.dst, h.transport), {}).setdefault(h.side, h)
    entries = []
    for (src, dst, observed), sides in seen.items():
        tried = [_entry(log, snap, topo, env, src, dst, observed, hop) for hop in sides.values()]
        # the first side whose facts decide it (the sender's first): never chosen by what was observed
        entries.append(next((e for e in tried if e.decision.transport != "unknown"), tried[0]))
    entries.sort(key=lambda e: (e.src_rank, e.dst_rank, str(e.observed)))
    report = NcclReport(
        entries,
        env=env,
        version=log.version,
        source=log.path,
        notes=list(log.inferred),
        skipped=list(log.skipped),
        library=log.library,
    )
    if snap is None and not log.gpu_paths:
        report.notes.append(
            "no snapshot and no topology dump in the log (NCCL_DEBUG_SUBSYS=GRAPH): only the host "
            "split is known; give a snapshot of the machine to predict the rest"
        )
    if len(log.comms) > 1:
        report.notes.append(f"{len(log.comms)} communicators in the log; pairs are keyed by rank")
    return report


def _entry(
    log: NcclLog,
    snap: Snapshot | None,
    topo: Topology | None,
    env: NcclEnv,
    src: int,
    dst: int,
    observed: Transport,
    hop: Hop,
) -> Entry:
    via = hop.via
    channels: tuple[str, ...] = ()
    from_log: str | None = None  # a fact the snapshot lacks, filled from the log (with_log_cpu)
    ra, rb = log.ranks.get(src), log.ranks.get(dst)
    ga = _snapshot_gpu(snap, log, src) if snap is not None else None
    gb = _snapshot_gpu(snap, log, dst) if snap is not None else None
    hosts_known = ra is not None and rb is not None and ra.host is not None and rb.host is not None
    if hosts_known and ra is not None and rb is not None and ra.host != rb.host:
        side: Literal["send", "receive"] = "receive" if hop.side == "receive" else "send"
        local = gb if side == "receive" else ga
        facts = remote_facts(topo, local, side) if topo is not None else _log_remote(log, env, hop)
        facts = replace(with_log_gdr(facts, log, hop) if topo is not None else facts, mnnvl=_log_mnnvl(log))
        if topo is not None and local is not None:
            channels = nearest_nic(topo, gpu_node(local)).channels
    elif not hosts_known:
        return Entry(
            src,
            dst,
            _gpu_of(ga),
            _gpu_of(gb),
            _unknown(f"the log does not say which host runs rank {src if ra is None or ra.host is None else dst}"),
            observed,
            via,
            "prediction unknown: the log's lines for this rank were cut",
            *((_host(ra), _host(rb)) if _hosts_named(log) else (None, None)),
            src_bus=_bus_of(ga, ra),
            dst_bus=_bus_of(gb, rb),
        )
    else:
        same_pid = ra.pid == rb.pid if ra is not None and rb is not None and ra.pid and rb.pid else None
        if topo is not None and ga is not None and gb is not None:
            facts = snapshot_facts(topo, ga, gb, same_pid, _local_count(log, ra.host if ra else None))
            facts, from_log = with_log_cpu(facts, log, ra.host if ra else None)
        else:
            buses = (ra.bus if ra else None, rb.bus if rb else None)
            facts = dump_facts(log, (src, dst), buses, same_pid, ra.host if ra else None)
    d = (decide_rccl if log.library == "rccl" else decide)(facts, env, log.version)
    if from_log is not None:
        d = replace(d, reasons=(*d.reasons, from_log))
    why = explain(d, observed, via, env) or _finer(d, log, hop, env, channels)
    hosts = (_host(ra), _host(rb)) if _hosts_named(log) else (None, None)
    buses = (_bus_of(ga, ra), _bus_of(gb, rb))
    return Entry(src, dst, _gpu_of(ga), _gpu_of(gb), d, observed, via, why, *hosts, *buses)


def _finer(d: Decision, log: NcclLog, hop: Hop, env: NcclEnv, channels: tuple[str, ...]) -> str | None:
    """Where the transport agrees but the line shows another P2P flavour or NIC than predicted."""
    out = p2p_differences(d, seen_p2p(hop.via), env) if d.transport == "P2P" else []
    if d.transport.startswith("NET"):
        nic = nic_difference(d, log, hop, channels)
        out += [nic] if nic else []
    return "; ".join(out) or None


def _log_remote(log: NcclLog, env: NcclEnv, hop: Hop) -> PairFacts:
    """A network line without a snapshot: the NIC the line names, for the GPU of the rank whose host
    printed it — or, through PXN (``NET/IB/0(5)``), of the proxy rank whose NIC it is."""
    nic, proxy = hop.nic
    rank = proxy if proxy is not None else hop.local
    info = log.ranks.get(rank)
    host = info.host if info is not None and info.host else hop.host
    side: Literal["send", "receive"] = "receive" if hop.side == "receive" else "send"
    where = (host, info.bus if info else None, nic)
    pid = hop.pid if proxy is None else None  # the printing process is the local rank's
    return log_remote_facts(log, where, env.level("NCCL_NET_GDR_LEVEL") or "PXB", side, hop.local, pid)


def _log_mnnvl(log: NcclLog) -> bool | None:
    """Whether the log's communicator spans one multi-node NVLink clique: "MNNVL 1" with a clique as big
    as the communicator (or no size said); "MNNVL 0" says no; a smaller clique leaves pairs unknown."""
    if log.mnnvl is None:
        return None
    if not log.mnnvl:
        return False
    if log.clique_size is not None and log.nranks is not None and log.clique_size < log.nranks:
        return None
    return True


def _local_count(log: NcclLog, host: str | None) -> int | None:
    """The communicator's GPUs on ``host``: the log's localRanks, else the ranks it shows there."""
    if host is None:
        return None
    if host in log.local_ranks:
        return log.local_ranks[host]
    on_host = [r for r in log.ranks.values() if r.host == host]
    return len(on_host) or None


def _hosts_named(log: NcclLog) -> bool:
    """Whether the log's ranks span more than one host: then every GPU whose host is known carries it (the
    same bus id on two hosts is two GPUs); a one-host log names none."""
    return len({h for r in log.ranks.values() if (h := _host(r)) is not None}) > 1


def _host(info: Any) -> str | None:
    """The host a rank ran on, as a GPU's name leads with it (a placeholder such as "(unknown)" is none)."""
    host = getattr(info, "host", None)
    return host if host and not host.startswith("(") else None


def _gpu_of(g: Gpu | None) -> str | None:
    """The GPU a rank ran on, by the snapshot's name; None without a snapshot GPU (its bus may be known)."""
    return gpu_node(g) if g is not None else None


def _bus_of(g: Gpu | None, info: Any) -> str | None:
    """The bus id the log gives for a rank's GPU, where no snapshot GPU names it."""
    return info.bus if g is None and info is not None and info.bus else None


def _unknown(why: str) -> Decision:
    return Decision("unknown", "unknown", (), "", (why,))


def explain(d: Decision, observed: Transport, via: str, env: NcclEnv) -> str | None:
    """Why NCCL did something else than predicted; None when it did the predicted thing."""
    p = d.transport
    if p == observed:
        return None
    if p == "unknown":
        extra = ""
        if observed == "P2P" and via.endswith("/read"):
            extra = (
                "; '/read' shows NCCL saw NVLink between two compute-capability-8.0 GPUs (P2P read is used only there)"
            )
        return f"prediction unknown ({'; '.join(d.reasons)}){extra}"
    if observed == "P2P" and p in ("NET", "NET+GDR") and d.rule == "other-host":
        return (
            "NCCL used P2P between hosts: multi-node NVLink (one fabric clique; the log's 'MNNVL 1' init line "
            "or `nvidia-smi -q`'s Fabric section with a cluster UUID tells it)"
        )
    if observed == "P2P" and p in ("SHM", "NET", "NET+GDR"):
        return (
            "NCCL used P2P beyond what the facts allow: NVLink the snapshot does not record, "
            "NCCL_P2P_LEVEL raised, or an AMD CPU with two GPUs (P2P level SYS)"
        )
    if observed == "SHM" and p == "P2P":
        return (
            "NCCL refused P2P: NVML/CUDA reports P2P unsupported for this pair (consumer cards, VMs, "
            "ACS), NCCL_P2P_DISABLE/NCCL_P2P_LEVEL in an environment the log does not show, or the "
            "ranks are in separate containers"
        )
    if observed == "NET" and p == "NET+GDR":
        return (
            "GPUDirect RDMA not used: nvidia-peermem / dma-buf missing, NCCL_NET_GDR_LEVEL or "
            "NCCL_NET_GDR_READ=0, or the NIC chosen is farther than the nearest one"
        )
    if observed == "NET+GDR" and p == "NET":
        return (
            "GPUDirect RDMA used although not predicted: the NIC is closer than recorded, or NCCL_NET_GDR_LEVEL raised"
        )
    if observed.startswith("NET") and p in ("P2P", "SHM"):
        return (
            "NCCL used the network inside the host: NCCL_SHM_DISABLE/NCCL_P2P_DISABLE, a NIC within PXB "
            "of both GPUs faster than their path (ncclTopoCheckNet), or the ranks see different hosts "
            "(containers)"
        )
    return f"NCCL chose {observed} where {p} was predicted"
