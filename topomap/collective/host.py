"""Inside one host: the ring NCCL builds over the GPUs a job uses, each hop's transport as NCCL decides it
(:func:`topomap.transport.decide.decide` on topomap's evidence), and what the ring can carry: the NVLink or
NVSwitch fabric at NCCL's per-link figure, PCIe peer-to-peer at NCCL's PCIe figure, host memory (SHM).
Measured copy figures of the snapshot (``topomap measure``, ``attach``) stand in for a hop's link where
every hop has one. NVLS: every GPU's answer from :func:`topomap.collective.nvls.nvls`."""

from __future__ import annotations

from dataclasses import dataclass, replace

from topomap.base.devices import cc_major
from topomap.base.part_names import model_of
from topomap.collective.bound import Bound, BoundKind, bound, tightest, unknown
from topomap.collective.consts import NVLS_GAIN, NVLS_SINCE, RING_NVLINK, RING_PCIE, RING_SHM, nccl_nvlink_bw, since
from topomap.collective.nvls import nvls as nvls_feature
from topomap.collective.nvls import on_nvswitch
from topomap.graph import Topology, gpu_node
from topomap.graph.evidence import nvlink
from topomap.model.facts import SETTLE, Bandwidth
from topomap.model.measured import measured_bandwidth
from topomap.model.nvlink_rate import nvlink_bundle_bandwidth
from topomap.model.snapshot import Gpu
from topomap.transport.decide import Decision, PairFacts, decide
from topomap.transport.facts import nccl_pci_bw, snapshot_facts
from topomap.transport.rules import NcclEnv

_ARCH_SM = {"volta": 70, "ampere": 80, "ada": 89, "hopper": 90, "blackwell": 100}
#: a CE copy (what `topomap measure`, nvbandwidth and p2pBandwidthLatencyTest time) moves 256 B payloads,
#: NCCL's SM copies 128 B (sjeaugey, nccl-tests#149): a measured copy is a little above what a ring gets
MEASURED_TO_RING = 0.95
NVLS_SETTLE = (
    "`nvidia-smi -q` (its Fabric section and CUDA version) or `topomap probe`",
    "the NCCL INFO log (NCCL_DEBUG=INFO): its NVLS lines",
)


def sm_of(g: Gpu) -> tuple[int | None, str | None]:
    """The GPU's compute capability as NCCL's ``sm`` (90) and its architecture, from the snapshot or the model."""
    model = model_of(g.name, g.pci_device_id)
    arch = model.architecture if model is not None else None
    cc = g.compute_capability or (model.cc if model is not None else None)  # the parts table's (GA102: 8.6)
    major = cc_major(cc)
    if major is not None and cc:
        minor = cc.split(".")[1] if "." in cc else "0"
        sm = major * 10 + int(minor[:1] or 0)
        arch = arch or next((a for a, s in _ARCH_SM.items() if s // 10 == major), None)
        return sm, arch
    if model is None:
        return None, None
    return _ARCH_SM.get(model.architecture), model.architecture


@dataclass(frozen=True)
class Hop:
    a: Gpu
    b: Gpu
    decision: Decision
    facts: PairFacts


@dataclass(frozen=True)
class Intra:
    """One host's figures for the GPUs a job uses there (``k`` of them)."""

    k: int
    ring: Bound | None  # None: one GPU, no ring inside the host
    nvls: Bound | None  # the NVLS all-reduce figure where NVLS is available, else None (``nvls_why``)
    nvls_can: str  # yes / no / unknown (NVLS: every GPU possible, with a release that has it)
    nvls_why: str
    p2p: Bound | None  # one GPU to the next (sendrecv)
    arch: str | None
    on_switch: bool | None


#: Steps of the NVLink-cycle search before index order is taken (a DGX-1's 8 GPUs need a few dozen).
HOP_SEARCH_STEPS = 20_000


def hop_order(topo: Topology, gpus: list[Gpu]) -> list[Gpu]:
    """The order NCCL's ring visits the GPUs: index order, or — where index order leaves NVLink and a
    cycle over NVLink alone exists (a DGX-1's hybrid cube mesh) — that cycle (searched up to 16 GPUs, for at
    most :data:`HOP_SEARCH_STEPS` steps)."""
    if len(gpus) <= 2 or all(_nv(topo, a, b) for a, b in _pairs(gpus)) or len(gpus) > 16:
        return gpus
    near = {g.index: [o for o in gpus if o.index != g.index and _nv(topo, g, o)] for g in gpus}
    path = [gpus[0]]
    budget = [HOP_SEARCH_STEPS]  # a cycle search is exponential where none exists: give up, take index order

    def extend() -> bool:
        if len(path) == len(gpus):
            return any(o.index == gpus[0].index for o in near[path[-1].index])
        for o in near[path[-1].index]:
            budget[0] -= 1
            if budget[0] < 0:
                return False
            if all(o.index != p.index for p in path):
                path.append(o)
                if extend():
                    return True
                path.pop()
        return False

    return list(path) if extend() else gpus


def _pairs(order: list[Gpu]) -> list[tuple[Gpu, Gpu]]:
    return [(order[i], order[(i + 1) % len(order)]) for i in range(len(order))]


def _nv(topo: Topology, a: Gpu, b: Gpu) -> bool:
    return nvlink(topo, gpu_node(a), gpu_node(b)).usable.yes


def intra(topo: Topology, gpus: list[Gpu], mode: str, env: NcclEnv, version: str | None) -> Intra:
    """The ring, NVLS and one-to-the-next figures of one host's GPUs under ``mode`` (per-gpu, one-process,
    containers) and NCCL ``version`` with ``env``."""
    sms = [sm_of(g) for g in gpus]
    arch = next((a for _, a in sms if a), None)
    if len(gpus) < 2:
        return Intra(len(gpus), None, None, "no", "one GPU", None, arch, None)
    order = hop_order(topo, gpus)
    hops = [_hop(topo, a, b, mode, len(gpus), env, version) for a, b in _pairs(order)]
    figures = [_hop_bound(topo, h, version) for h in hops]
    ring = _ring_bound(topo, order, hops, figures, version)
    switch = all(on_nvswitch(topo, g) for g in gpus) if all(on_nvswitch(topo, g) is not None for g in gpus) else None
    nv_bound, can, why = _nvls(topo, gpus, ring, env, version, arch, hops)
    p2p = tightest(figures) if figures else None
    return Intra(len(gpus), ring, nv_bound, can, why, p2p, arch, switch)


def _hop(topo: Topology, a: Gpu, b: Gpu, mode: str, k: int, env: NcclEnv, version: str | None) -> Hop:
    f = snapshot_facts(topo, a, b, mode == "one-process", k)
    if mode == "containers":
        f = replace(f, same_container=False)
    return Hop(a, b, decide(f, env, version), f)


def _per_link(g: Gpu, version: str | None) -> tuple[float, str] | None:
    sm, _ = sm_of(g)
    return nccl_nvlink_bw(sm, version) if sm is not None else None


#: The data rate per link per direction NCCL's per-link figure (topo.h) stands for, by compute capability:
#: NCCL models every part of an architecture alike; a part whose own links carry less (an export variant:
#: the H800's 18 links carry 200 GB/s, not 18 × 25) gets NCCL's figure scaled down by the difference.
_NCCL_NOMINAL: dict[int, float] = {70: 25.0, 80: 25.0, 86: 14.0625, 90: 25.0, 100: 50.0}
#: a part's figure scales NCCL's only where it is clearly lower, not by rounding
_CAP_MARGIN = 0.98


def _hardware_capped(nccl_gbps: float, words: str, links: int, sm: int | None, hw: Bandwidth) -> tuple[float, str]:
    """NCCL's figure for ``links`` NVLinks, scaled down where the part itself carries less than NCCL assumes
    for its architecture (the parts table's figure, :func:`topomap.model.nvlink_rate.nvlink_bundle_bandwidth`,
    the one decision every view asks; issue 30 item 1)."""
    nominal = None if sm is None else _NCCL_NOMINAL.get(sm, _NCCL_NOMINAL.get(sm // 10 * 10))
    high = hw.high
    if high is None or nominal is None or links <= 0:
        return nccl_gbps, words
    factor = high / (links * nominal)
    if factor >= _CAP_MARGIN:
        return nccl_gbps, words
    carries = f"the part carries {high:g} GB/s on {links} links: {hw.tag or hw.source}"
    return nccl_gbps * factor, f"{words} × {factor:.3g} ({carries})"


def _hop_bound(topo: Topology, h: Hop, version: str | None) -> Bound:
    """What one hop carries, by the transport NCCL picks for it."""
    a, b, d = gpu_node(h.a), gpu_node(h.b), h.decision
    measured = measured_bandwidth(topo.snapshot, a, b)
    if d.transport == "P2P" and h.facts.nvlink:
        fact = nvlink(topo, a, b)
        if fact.via == "xgmi":  # AMD (issue 35): RCCL's rings over the XGMI mesh are not NCCL's NVLink ring
            return _xgmi_unmodelled(a, b, fact.links, fact.bandwidth.gbps)
        per = _per_link(h.a, version)
        if per is None or not fact.links:
            return _nvlink_unrated(a, b, fact.links, fact.bandwidth.gbps, fact.bandwidth.lower_bound)
        else:
            words = f"{fact.links} NVLinks × {per[1]}"
            base, words = _hardware_capped(fact.links * per[0], words, fact.links, sm_of(h.a)[0], fact.bandwidth)
        if measured is not None:
            return bound("nvlink", measured[0] * MEASURED_TO_RING, RING_NVLINK, f"{a} → {b} measured", "measured")
        return bound("nvlink", base, RING_NVLINK, words)
    if d.transport in ("P2P", "SHM"):
        bw = h.facts.path_bw_gbs
        kind: BoundKind = "pcie-p2p" if d.transport == "P2P" else "shm"
        if bw is None:
            return _pcie_unrated(h, kind, a, b)
        if measured is not None:
            kind = "pcie-p2p" if d.transport == "P2P" else "shm"
            return bound(kind, measured[0] * MEASURED_TO_RING, RING_PCIE, f"{a} → {b} measured", "measured")
        if d.transport == "P2P":
            return bound("pcie-p2p", bw, RING_PCIE, f"PCIe peer-to-peer {a} → {b} at NCCL's {bw:g} GB/s")
        return bound("shm", bw, RING_SHM, f"SHM through host memory {a} → {b} (NCCL's PCIe {bw:g} GB/s)")
    if d.transport in ("NET", "NET+GDR"):
        nic = h.facts.nic_src
        if nic is None or nic.bw_gbs is None:
            return unknown("network", f"{a} → {b} over the network", ("the NIC's line rate",), (SETTLE["nic_speed"],))
        return bound("network", nic.bw_gbs, RING_PCIE, f"{a} → {b} through NIC {nic.name} inside the host")
    return unknown("unknown", f"{a} → {b}: {d.detail or 'transport not decided'}", d.reasons, _settle_of(h.facts))


def _xgmi_unmodelled(a: str, b: str, links: int | None, gbps: float | None) -> Bound:
    """An XGMI hop (AMD, issue 35): its link figure is known, but what RCCL's collectives reach over the
    XGMI mesh (RCCL runs many rings across a fully connected hive) is not modelled here, so no NVLink
    efficiency is applied to it; rccl-tests on the machine settles it."""
    rate = f", {gbps:g} GB/s per direction" if gbps is not None else ""
    words = f"{a} → {b} over XGMI ({links or '?'} link{'' if links == 1 else 's'}{rate}): RCCL's collectives over XGMI not modelled"  # noqa: E501
    return unknown(
        "unknown", words, ("RCCL's collective bandwidth over the XGMI mesh",),
        ("`all_reduce_perf -b 8 -e 8G -f 2 -g <GPUs>` of rccl-tests on the machine (then `topomap nccl --tests`)",),
    )  # fmt: skip


def _nvlink_unrated(a: str, b: str, links: int | None, gbps: float | None, lower: bool) -> Bound:
    """NVLink whose per-link figure NCCL would use is not known (no GPU model or compute capability):
    unknown, between the slowest part that can report these links and the fastest (NCCL's 40.1 GB/s)."""
    words = f"{a} → {b} over NVLink{f' ({links} links)' if links else ''}, the GPU model not recorded"
    low = gbps * 0.82 * RING_NVLINK.low if gbps is not None else None
    high = links * 40.1 * RING_NVLINK.high if links else None
    if gbps is not None and not lower:
        return bound("nvlink", gbps * 0.82, RING_NVLINK, f"{words}: {gbps:g} GB/s nominal × 0.82")
    return Bound(
        "nvlink", None, low, high, words, "model", ("the GPU model (its NVLink rate)",), (SETTLE["gpu_model"],)
    )


#: NCCL's inter-socket figures, GB/s (src/graph/topo.h): Broadwell QPI 6 to Emerald Rapids 40; AMD 16
_SYS_RANGE = (6.0, 40.0)


def _pcie_unrated(h: Hop, kind: BoundKind, a: str, b: str) -> Bound:
    """A PCIe hop whose figure is not known: its PCIe links are not recorded, or it crosses the
    inter-socket link of an unknown CPU (NCCL's figure for it is 6 to 40 GB/s)."""
    eff = RING_PCIE if kind == "pcie-p2p" else RING_SHM
    links = [x for x in (nccl_pci_bw(h.a), nccl_pci_bw(h.b)) if x is not None]
    if h.facts.path == "SYS" and len(links) == 2:
        pci = min(links)
        low, high = min(pci, _SYS_RANGE[0]) * eff.low, min(pci, _SYS_RANGE[1]) * eff.high
        return Bound(
            kind, None, low, high, f"{a} → {b} over PCIe across the CPU sockets ({'P2P' if kind == 'pcie-p2p' else 'SHM'})",  # noqa: E501
            "model", ("the CPU model (NCCL's inter-socket figure)",), ("`lscpu` appended to the paste",),
        )  # fmt: skip
    return unknown(kind, f"{a} → {b} over PCIe", ("the GPUs' PCIe link (generation, width)",), (SETTLE["pcie_link"],))


def _settle_of(f: PairFacts) -> tuple[str, ...]:
    if f.path is None:
        return (SETTLE["path"],)
    if f.nvlink is None:
        return (SETTLE["nvlink"],)
    return ("`lscpu` appended to the paste (the CPU vendor sets NCCL's P2P level)",)


def _ring_bound(topo: Topology, order: list[Gpu], hops: list[Hop], figures: list[Bound], version: str | None) -> Bound:
    """The ring's figure: over NVLink alone, each GPU's links to the fabric (or to the ring's other GPUs
    on a direct mesh, where NCCL runs several rings) at NCCL's per-link figure; otherwise the slowest hop."""
    if not all(f.kind == "nvlink" and f.known for f in figures) or any(f.origin == "measured" for f in figures):
        return tightest(figures)
    per_gpu: list[Bound] = []
    for g in order:
        per = _per_link(g, version)
        links = _gpu_links(topo, g, order)
        if per is None or links is None:
            return tightest(figures)
        words = f"the NVLink/NVSwitch fabric: {links} links × {per[1]}"
        hw = nvlink_bundle_bandwidth(g, links, topo.snapshot)
        base, words = _hardware_capped(links * per[0], words, links, sm_of(g)[0], hw)
        per_gpu.append(bound("nvlink", base, RING_NVLINK, words))
    return tightest(per_gpu)


def _gpu_links(topo: Topology, g: Gpu, order: list[Gpu]) -> int | None:
    """A GPU's NVLinks a ring over ``order`` can use: to the NVSwitch fabric, or summed over its direct
    links to the other GPUs."""
    gid = gpu_node(g)
    total = 0
    for o in order:
        if o.index == g.index:
            continue
        fact = nvlink(topo, gid, gpu_node(o))
        if fact.links is None:
            return None
        if fact.via == "nvswitch":
            return fact.links
        total += fact.links or 0
    return total or None


def _nvls(
    topo: Topology, gpus: list[Gpu], ring: Bound, env: NcclEnv, version: str | None, arch: str | None, hops: list[Hop]
) -> tuple[Bound | None, str, str]:
    """NVLS for these GPUs: its all-reduce figure (the fabric's × :data:`NVLS_GAIN`), yes / no / unknown, why."""
    if not since(version, NVLS_SINCE):
        return None, "no", f"NCCL {version}: NVLS came in 2.17"
    answers = [nvls_feature(topo, g, env) for g in gpus]
    no = next((a for a in answers if a.can == "no"), None)
    if no is not None:
        return None, "no", no.why
    if any(a.can == "unknown" for a in answers):
        why = next(a.why for a in answers if a.can == "unknown")
        return None, "unknown", why
    if ring.gbps is None or ring.kind != "nvlink" or arch not in NVLS_GAIN:
        return None, "unknown", "the NVLink fabric's figure is not known"
    gain = NVLS_GAIN[arch]
    b = ring.scaled(gain, f"NVLS (NVLink SHARP) in the NVSwitches: {gain:g} × the fabric's ring figure")
    assumed = ("NVLS available: the driver's multicast support is not recorded (Fabric Manager running, no VM)",)
    return replace(b, kind="nvls", assumed=assumed), "yes", answers[0].why
