"""Arrows sent by NCCL: an ``exchange`` step or an arrow marked ``nccl: true`` gets, for each GPU pair,
the transport NCCL would choose (:func:`topomap.transport.decide.decide`, the function
``topomap nccl`` asks) as its medium evidence:

- P2P → ``gpu-link`` (NVLink, or PCIe peer-to-peer);
- SHM → ``host-memory``, staged through host memory, even where topomap sees P2P possible;
- NET / NET+GDR → ``network``, and "no GPUDirect RDMA" on the arrow when NCCL will not use it;
- unknown stays unknown, with what would settle it.

The rule that decided it and the variables that would change it are the arrow's notes.
"""

from __future__ import annotations

from dataclasses import replace

from topomap.base.links import nic_bandwidth_gbps
from topomap.flow.decision import Decision, Medium, on_host, on_host_all, pcie_bandwidth
from topomap.flow.spec import Flow, FlowArrow, FlowError, names
from topomap.graph import Topology
from topomap.graph.evidence import gpu_usable, memory_node, nearest_nic, pcie_path_class
from topomap.graph.nodeid import nic_node
from topomap.graph.query import pcie_leg
from topomap.graph.routes import route
from topomap.model.facts import SETTLE, UNKNOWN_BW, Bandwidth
from topomap.transport.decide import Decision as NcclDecision
from topomap.transport.decide import decide
from topomap.transport.facts import remote_facts, snapshot_facts
from topomap.transport.rules import PATH_ORDER, RULES, NcclEnv, version_problem

#: NCCL's transport → the flow's medium (NET and NET+GDR are the network; unknown is decided apart).
MEDIUM_OF: dict[str, Medium] = {
    "P2P": "gpu-link",
    "SHM": "host-memory",
    "NET": "network",
    "NET+GDR": "network",
    "COLLNET": "network",
}
#: Rules whose "unknown" still means the network (only GPUDirect RDMA is not known).
_NETWORK_RULES = ("other-host", "net-intra", "shm-disabled-env")


# --- the flow file's side ----------------------------------------------------------------------------


def nccl_env(flow: Flow) -> NcclEnv:
    """The flow's ``nccl_env`` as NCCL reads it (``true``/``false`` as 1/0)."""
    out: dict[str, str] = {}
    for key, value in flow.spec.nccl_env.items():
        out[key] = ("1" if value else "0") if isinstance(value, bool) else str(value)
    return NcclEnv(tuple(sorted(out.items())))


def check_nccl(flow: Flow) -> None:
    """``nccl: true`` only on exchange steps and arrows whose steps all run on GPUs; ``nccl_env`` keys
    are NCCL variables and its levels path types — else a one-line error naming the line."""
    spec, origin = flow.spec, flow.path
    for key, value in spec.nccl_env.items():
        line = flow.line(f"$.nccl_env.{key}")
        if not key.startswith("NCCL_"):
            raise FlowError(f"{origin}:{line}: nccl_env: {key!r} is not an NCCL variable", hint="e.g. NCCL_P2P_LEVEL")
        text = str(value).strip().upper()
        if key.endswith("_LEVEL") and text not in (*PATH_ORDER, "NODE") and not text.isdigit():
            raise FlowError(
                f"{origin}:{line}: nccl_env: {key}={value!r} is not a path level", hint="LOC, NVL, PIX, PXB, PHB or SYS"
            )
    problem = version_problem(spec.nccl_version) if spec.nccl_version is not None else None
    if problem:
        what = f"{origin}:{flow.line('$.nccl_version')}: nccl_version: {spec.nccl_version!r} is {problem}"
        raise FlowError(what, hint="e.g. nccl_version: '2.21.5' (quoted)")
    for name, st in spec.steps.items():
        if not st.nccl:
            continue
        where = f"{origin}:{flow.line(f'$.steps.{name}.nccl')}: step {name}"
        if st.kind != "exchange":
            raise FlowError(
                f"{where}: `nccl: true` is for exchange steps (a {st.kind} step moves no data itself)",
                hint="mark the arrow that NCCL sends instead: {from: A, to: B, nccl: true}",
            )
        _gpus_only(flow, name, where)
    for i, a in enumerate(spec.arrows):
        if a.nccl:
            where = f"{origin}:{flow.line(f'$.arrows[{i}].nccl')}: arrow {i + 1}"
            for s in names(a.src) + names(a.dst):
                _gpus_only(flow, s, where)


def _gpus_only(flow: Flow, step: str, where: str) -> None:
    bad = [p.label() for p in flow.steps[step].placements if p.kind != "gpu"]
    if bad:
        raise FlowError(
            f"{where}: NCCL moves data between GPUs, but step {step} is on {bad[0]}",
            hint="place the step on GPUs (HOST:gpuN, HOST:gpus), or drop `nccl: true`",
        )


def nccl_marked(flow: Flow, a: FlowArrow) -> bool:
    """Whether NCCL sends this concrete arrow: an exchange step marked ``nccl`` (its replicas' pairs),
    or a marked flow arrow from its source step to its destination step."""
    if a.src_step == a.dst_step:
        st = flow.spec.steps.get(a.src_step)
        return st is not None and st.nccl and st.kind == "exchange"
    return any(x.nccl and a.src_step in names(x.src) and a.dst_step in names(x.dst) for x in flow.spec.arrows)


# --- the decision ---------------------------------------------------------------------------------


def nccl_arrow(flow: Flow, a: FlowArrow, base: Decision, topos: dict[str, Topology | None]) -> Decision:
    """The arrow's decision when NCCL sends it: ``base`` (topomap's own reading) where NCCL adds
    nothing (the same GPU, an unusable GPU), else NCCL's transport as the medium."""
    s, d = a.src, a.dst
    if s.kind != "gpu" or d.kind != "gpu" or base.medium == "local":
        return base
    for p in (s, d):
        topo = topos.get(p.host)
        if topo is not None and p.gpu and not gpu_usable(topo, p.gpu).yes:
            return base
    env, per_host = nccl_env(flow), flow.spec.nccl_processes == "per-host"
    if s.host != d.host:
        return _cross_host(a, base, topos, (env, flow.spec.nccl_version))
    topo = topos.get(s.host)
    ga, gb = (topo.gpu(s.gpu or ""), topo.gpu(d.gpu or "")) if topo is not None else (None, None)
    if topo is None or ga is None or gb is None:
        why = f"NCCL's transport unknown: {s.host} has no snapshot" if topo is None else "NCCL's transport unknown"
        return replace(base, reasons=(why, *base.reasons))
    nd = decide(snapshot_facts(topo, ga, gb, per_host), env, flow.spec.nccl_version)
    return _same_host(a, base, topo, nd)


def nccl_note(nd: NcclDecision) -> str:
    """The arrow's note: NCCL's transport, how, the rule and why, and what would change it."""
    head = f"NCCL {nd.transport}" if nd.transport != "unknown" else "NCCL transport unknown"
    detail = f" ({nd.detail})" if nd.detail else ""
    if nd.transport == "P2P" and nd.detail:  # a P2P detail is NCCL's own name for it: "NCCL P2P/CUMEM over NVLink"
        head, detail = f"NCCL {nd.detail}", ""
    question = nd.flavour.question if nd.flavour is not None else ""
    why = "; ".join(r for r in nd.reasons if r != question)  # the medium, not the flavour
    change = f"; {', '.join(nd.env)} would change it" if nd.env else ""
    return f"{head}{detail} — rule {nd.rule}: {RULES[nd.rule].text}" + (f"; {why}" if why else "") + change


def _with(base: Decision, nd: NcclDecision, *extra: str) -> Decision:
    return replace(base, reasons=(nccl_note(nd), *extra, *base.reasons), nccl=nd)


def _same_host(a: FlowArrow, base: Decision, topo: Topology, nd: NcclDecision) -> Decision:
    host, ga, gb = a.src.host, a.src.gpu or "", a.dst.gpu or ""
    medium = MEDIUM_OF.get(nd.transport)
    if medium is None and nd.rule in _NETWORK_RULES:
        medium = "network"
    before = f"without NCCL topomap reads it as {base.medium} ({base.via})"
    if medium is None:
        return Decision(
            "unknown",
            "unknown",
            base.path,
            base.route,
            UNKNOWN_BW,
            (nccl_note(nd), *base.reasons),
            base.assumptions,
            ("gpu-link (NCCL P2P)", "host-memory (NCCL SHM)"),
            base.settle or SETTLE["path"],
            nccl=nd,
        )
    if medium == base.medium:
        return _with(base, nd)
    if medium == "gpu-link":  # NCCL's P2P where topomap could not confirm it: the PCIe route, assumed
        pcie = route(topo, ga, gb)
        note = "P2P as NCCL assumes it (NVML P2P status not recorded)"
        dec = Decision("gpu-link", "pcie-p2p", pcie.path, on_host_all(host, pcie.nodes))
        reasons = (nccl_note(nd), before, *pcie.notes)
        bw = pcie_bandwidth(pcie.bandwidth_gbps, topo.snapshot)
        return replace(dec, bandwidth=bw, reasons=reasons, assumptions=(note,), nccl=nd)
    if medium == "host-memory":
        return _shm(host, topo, ga, gb, pcie_path_class(topo, ga, gb), nd, before)
    return _loopback(host, topo, ga, gb, nd, before)


def _shm(host: str, topo: Topology, ga: str, gb: str, cls: str | None, nd: NcclDecision, before: str) -> Decision:
    """NCCL's SHM: GPU A → the host memory serving it → GPU B, at the narrower PCIe leg."""
    mem = memory_node(topo, ga) or "host"
    n1, bw1, _, l1 = pcie_leg(topo, ga, mem)
    n2, bw2, _, l2 = pcie_leg(topo, mem, gb)
    bws = [b for b in (bw1, bw2) if b is not None]
    rt = on_host_all(host, n1 + n2[1:])
    bw = pcie_bandwidth(min(bws) if len(bws) == 2 else None, topo.snapshot)
    reasons = (nccl_note(nd), f"staged through host memory by NCCL's SHM transport; {before}", *l1, *l2)
    return Decision("host-memory", "pcie", cls, rt, bw, reasons, nccl=nd)  # via as any staged pair: over PCIe


def _loopback(host: str, topo: Topology, ga: str, gb: str, nd: NcclDecision, before: str) -> Decision:
    """NCCL's network between two GPUs of one host: out through A's NIC, back in through B's."""
    out, back = nearest_nic(topo, ga).nic, nearest_nic(topo, gb).nic
    if out is None or back is None:
        rt: tuple[str, ...] = (on_host(host, ga), on_host(host, gb))
        return Decision("network", "nccl-net", "NET", rt, UNKNOWN_BW, (nccl_note(nd), before), nccl=nd)
    n1, bw1, _, l1 = pcie_leg(topo, ga, nic_node(out))
    n2, bw2, _, l2 = pcie_leg(topo, nic_node(back), gb)
    caps = [bw1, bw2] + [nic_bandwidth_gbps(n.speed_gbit_s) if n.speed_gbit_s else None for n in (out, back)]
    bw = UNKNOWN_BW
    if None not in caps:
        figure = min(c for c in caps if c is not None)
        bw = Bandwidth(figure, "spec", "the narrower of the NICs' line rates and their PCIe legs (nominal)")
    hops = (*n1, "network", *n2) if out.name != back.name else (*n1, *n2[1:])
    notes = (nccl_note(nd), _gdr_said(nd, host), before, *l1, *l2)
    return Decision("network", "nccl-net", "NET", on_host_all(host, hops), bw, notes, nccl=nd)


def _gdr_said(nd: NcclDecision, host: str) -> str:
    if nd.transport == "NET+GDR":
        return f"GPUDirect RDMA on {host} (NCCL uses it)"
    if nd.transport == "NET":
        return f"no GPUDirect RDMA on {host}: NCCL stages the sends through host memory"
    return f"GPUDirect RDMA on {host} unknown: whether NCCL uses it is not decided"


def _cross_host(
    a: FlowArrow, base: Decision, topos: dict[str, Topology | None], rules: tuple[NcclEnv, str | None]
) -> Decision:
    """Two hosts: NCCL's network from each sending side (both for an arrow both ways); multi-node
    NVLink where topomap found the GPUs in one fabric clique (NCCL's P2P over MNNVL)."""
    if base.via == "mnnvl":
        note = "NCCL P2P over multi-node NVLink (one fabric clique; NCCL_MNNVL_ENABLE=0 would turn it off)"
        return replace(base, reasons=(note, *base.reasons))
    env, version = rules
    sides = [(a.src, a.dst)] + ([(a.dst, a.src)] if a.both_ways else [])
    decided: list[NcclDecision] = []
    notes: list[str] = []
    for src, _dst in sides:
        topo = topos.get(src.host)
        gpu = topo.gpu(src.gpu or "") if topo is not None else None
        nd = decide(remote_facts(topo, gpu), env, version)
        decided.append(nd)
        lead = f"from {src.label()}: " if a.both_ways else ""
        notes += [lead + nccl_note(nd), lead + _gdr_said(nd, src.host)]
    first = decided[0]
    if base.medium != "network":  # a host without a NIC on record: NCCL still uses the network
        return replace(base, reasons=(*notes, *base.reasons), nccl=first)
    return replace(base, reasons=(*notes, *base.reasons), nccl=_worst(decided))


def _worst(decided: list[NcclDecision]) -> NcclDecision:
    """The direction an arrow both ways shows first: without GPUDirect RDMA, else unknown, else GDR."""
    order = {"NET": 0, "unknown": 1, "SHM": 2, "NET+GDR": 3, "P2P": 4, "COLLNET": 5}
    return min(decided, key=lambda nd: order.get(nd.transport, 9))
