"""Two lots compared fact by fact: which is better for work across its GPUs, and why.

Every fact comes from ``topomap.graph.evidence`` (NVLink usable and its links, P2P, the GPU's
nearest NIC and GPUDirect, the trained PCIe link) and ``topomap.model.facts`` (model, memory), so
diff never disagrees with map or check. Changes are directed (worse / better for B against A, or
unknown) and identical changes collapse ("28 GPU pairs: NV18 → NV12"). NICs are compared by the GPU
they serve, not by index. Equivalence needs the compared facts known on both sides: a side that
cannot tell the GPU model, count or links makes the answer "cannot confirm", which is not
equivalence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from topomap.base.links import class_rank, nic_bandwidth_gbps
from topomap.diff.changes import FIELD_FORMATS, Change, Direction, NotCompared, fmt_value
from topomap.diff.flow import diff_flow
from topomap.diff.matching import match_devices
from topomap.diff.results import DiffResult, Match
from topomap.flow.spec import Flow
from topomap.graph import Topology, build
from topomap.graph.evidence import gpu_usable, nearest_nic, nvlink, pcie_p2p, pcie_path_class
from topomap.model.facts import (
    SETTLE,
    UNKNOWN_BW,
    Bandwidth,
    PcieLinkFact,
    gpu_memory,
    gpu_model_name,
    gpu_pcie_link,
    nic_link_layer,
    nic_usable,
)
from topomap.model.ranking import Comparison, compare_bandwidth
from topomap.model.snapshot import Gpu, Snapshot
from topomap.model.source_facts import source_knows


def diff_snapshots(
    a: Snapshot,
    b: Snapshot,
    match: Match = "index",
    names: tuple[str, str] = ("A", "B"),
    flow: Flow | None = None,
) -> DiffResult:
    """B against A; with a flow (read, not yet bound), also the flow's arrows and plan on each lot.
    Each lot's topology is built once and serves both comparisons."""
    mapping, notes, how = match_devices(a, b, match)
    out = DiffResult(a_name=names[0], b_name=names[1], match=how, mapping=mapping, notes=notes)
    ta, tb = build(a), build(b)
    _cmp(out, "host", "host", "sockets", a.host.sockets, b.host.sockets)
    _cmp(out, "host", "host", "CPU", a.host.cpu_model, b.host.cpu_model)
    _cmp(out, "software", "software", "driver", a.software.driver_version, b.software.driver_version)
    _cmp(out, "software", "software", "CUDA", a.software.cuda_driver_version, b.software.cuda_driver_version)
    usable_a = [g for g in a.gpus if gpu_usable(ta, f"gpu{g.index}").yes]
    usable_b = [g for g in b.gpus if gpu_usable(tb, f"gpu{g.index}").yes]
    _cmp(out, "gpus", "GPUs", "usable GPUs", len(usable_a), len(usable_b), better=_more)
    _gpus(out, ta, tb)
    _gpu_pairs(out, ta, tb)
    _gpu_nics(out, ta, tb)
    _nic_inventory(out, a, b)
    _unconfirmed(out, a, b)
    ua, ub = set(a.source.unknown_fields), set(b.source.unknown_fields)
    for f in sorted(ua | ub):
        side = "both" if f in ua and f in ub else out.a_name if f in ua else out.b_name
        out.not_compared.append(NotCompared(f, side))
    ra, rb = set(a.source.path_recorded_as.items()), set(b.source.path_recorded_as.items())
    for r in sorted(ra | rb):
        side = "both" if r in ra and r in rb else out.a_name if r in ra else out.b_name
        out.not_compared.append(NotCompared("pairs.path", side, recorded_as=r))
    out.not_compared = sorted(set(out.not_compared), key=lambda x: x.entry)
    if flow is not None:
        diff_flow(out, flow, ta, tb)
    return out


def _cmp(
    out: DiffResult,
    kind: str,
    subject: str,
    fieldname: str,
    va: Any,
    vb: Any,
    fmt: Callable[[Any], str] = fmt_value,
    better: Callable[[Any, Any], bool | None] | None = None,
) -> None:
    """Record a change of one fact; ``better(va, vb)`` says whether B's value is better (None: neither)."""
    if va is None or vb is None:
        if va is not None or vb is not None:
            out.not_compared.append(NotCompared(fieldname, out.a_name if va is None else out.b_name, kind))
        return
    if va == vb:
        return
    direction: Direction = "neutral"
    if better is not None:
        verdict = better(va, vb)
        direction = "neutral" if verdict is None else "better" if verdict else "worse"
    what = "" if fieldname in ("path", "links", "NICs") else f"{fieldname} "
    text = f"{subject}: {what}{fmt(va)} → {fmt(vb)}"
    out.changes.append(Change(kind=kind, subject=subject, field=fieldname, a=va, b=vb, direction=direction, text=text))


def _more(va: Any, vb: Any) -> bool | None:
    return None if va == vb else bool(vb > va)


def _recorded_memory(g: Gpu) -> int | None:
    """The card's memory as its snapshot records it. A figure ``gpu_memory`` derives from the model
    is nominal: set against a recorded one it would show a change that is not there, so it is not
    compared (the side is listed as not knowing it)."""
    mem = gpu_memory(g)
    return None if mem.derived else mem.total_bytes


def _gpus(out: DiffResult, ta: Topology, tb: Topology) -> None:
    gb = {f"gpu{x.index}": x for x in tb.snapshot.gpus}
    for x in ta.snapshot.gpus:
        sid = f"gpu{x.index}"
        y = gb.get(out.mapping.get(sid, ""))
        if y is None:
            continue
        _cmp(out, "gpu", sid, "model", gpu_model_name(x)[0], gpu_model_name(y)[0])
        _cmp(out, "gpu", sid, "memory", _recorded_memory(x), _recorded_memory(y), FIELD_FORMATS["memory"], _more)
        if "amd" not in (x.vendor, y.vendor):  # an AMD GPU has no CUDA compute capability (issue 35)
            _cmp(out, "gpu", sid, "compute capability", x.compute_capability, y.compute_capability)
        _pcie_link(out, sid, gpu_pcie_link(x), gpu_pcie_link(y))
        _cmp(out, "gpu", sid, "MIG", x.mig.enabled if x.mig else None, y.mig.enabled if y.mig else None)
        _cmp(out, "numa", sid, "NUMA node", x.numa_node, y.numa_node)


def _link(link: PcieLinkFact) -> str | None:
    return f"Gen{link.gen} x{link.width}" if link.gen is not None and link.width is not None else None


def _pcie_link(out: DiffResult, sid: str, la: PcieLinkFact, lb: PcieLinkFact) -> None:
    """A GPU's own PCIe link on A and on B, ranked by its figure; a side whose figure is a topology
    file's placeholder (not the machine's) is not compared, and the note says what settles it."""
    placeholders = [name for name, link in ((out.a_name, la), (out.b_name, lb)) if link.placeholder]
    if placeholders and _link(la) is not None and _link(lb) is not None:
        side = placeholders[0] if len(placeholders) == 1 else "both"
        out.not_compared.append(NotCompared("PCIe link", side, "pcie"))
        note = (
            f"PCIe links of {' and '.join(placeholders)}: the topology file's placeholders, not the machine's, "
            f"so not compared; {SETTLE['pcie_link_machine']} settles them"
        )
        if note not in out.notes:
            out.notes.append(note)
        return
    _cmp(
        out,
        "pcie",
        sid,
        "PCIe link",
        _link(la),
        _link(lb),
        better=_by(compare_bandwidth(la.bandwidth(), lb.bandwidth())),
    )


def _by(cmp: Comparison) -> Callable[[Any, Any], bool | None]:
    """A comparison as ``_cmp``'s ``better``: True where B ranks better, False worse, None otherwise."""
    verdict = True if cmp.verdict == "better-b" else False if cmp.verdict == "better-a" else None
    return lambda _a, _b: verdict


def _nv_state(topo: Topology, a: str, b: str) -> tuple[str | None, int | None, Bandwidth, bool]:
    """A pair's NVLink as text (``NV18``, ``no NVLink (SYS)``, ``NVLink not usable``), its usable link
    count, its bundle's figure and whether the pair has no NVLink at all; (None, None, …) when the
    source cannot tell."""
    nv = nvlink(topo, a, b)
    if nv.usable.value == "unknown":
        return None, None, nv.bandwidth, False
    if nv.usable.yes and nv.via == "xgmi":  # AMD (issue 35): the link family and count, not an NV# code
        return f"XGMI ({nv.links or '?'} link{'s' if (nv.links or 0) != 1 else ''})", nv.links, nv.bandwidth, False
    if nv.usable.yes:
        return f"NV{nv.links}", nv.links, nv.bandwidth, False
    if nv.links:
        return f"NV{nv.links} not usable", 0, nv.bandwidth, False
    return f"no NVLink ({pcie_path_class(topo, a, b) or 'path unknown'})", 0, nv.bandwidth, True


def _nvlink_direction(na: int | None, nb: int | None, ba: Bandwidth, bb: Bandwidth) -> tuple[Direction, str]:
    """B's NVLink against A's: gained or lost outright where one side has none; else their figures,
    ranked only where the ranges do not overlap (:func:`~topomap.model.ranking.compare_bandwidth`)."""
    if not na or not nb:
        return ("better" if nb else "worse") if (na or nb) else "neutral", ""
    cmp = compare_bandwidth(ba, bb)
    if cmp.verdict == "cannot-tell":
        return "unknown", f"cannot tell: {cmp.reason}" + (f"; {cmp.settle} settles it" if cmp.settle else "")
    return cmp.direction, cmp.reason


def _gpu_pairs(out: DiffResult, ta: Topology, tb: Topology) -> None:
    ids = [f"gpu{g.index}" for g in ta.snapshot.gpus]
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            ma, mb = out.mapping.get(a), out.mapping.get(b)
            if ma is None or mb is None or tb.gpu(ma) is None or tb.gpu(mb) is None:
                continue
            subject = f"{a}–{b}"
            sa, na, ba, none_a = _nv_state(ta, a, b)
            sb, nb, bb, none_b = _nv_state(tb, ma, mb)
            if sa is None or sb is None:
                if (sa is None) != (sb is None):
                    side = out.a_name if sa is None else out.b_name
                    out.not_compared.append(NotCompared("NVLink between GPU pairs", side))
            elif sa != sb and not (none_a and none_b):
                direction, why = _nvlink_direction(na, nb, ba, bb)
                text = f"{subject}: {sa} → {sb}"
                out.changes.append(Change(kind="nvlink", subject=subject, field="links", a=sa, b=sb, text=text))
                out.changes[-1] = msgspec.structs.replace(out.changes[-1], direction=direction, why=why)
            if na or nb:
                continue  # NVLink carries the pair on at least one side: its PCIe path is not the story
            _pcie_pair(out, subject, ta, tb, (a, b), (ma, mb), nvlink_unknown=sa is None or sb is None)


def _pcie_pair(
    out: DiffResult,
    subject: str,
    ta: Topology,
    tb: Topology,
    on_a: tuple[str, str],
    on_b: tuple[str, str],
    nvlink_unknown: bool = False,
) -> None:
    """A GPU pair without NVLink on either side: its PCIe path class and P2P. Where a side does not
    record NVLink (a static NCCL file), NVLink may carry the pair there: a class change is listed but
    not ranked, with what settles it."""
    ca, cb = pcie_path_class(ta, *on_a), pcie_path_class(tb, *on_b)
    _cmp(out, "pair", subject, "path", ca, cb, better=lambda x, y: None if x == y else class_rank(y) < class_rank(x))
    last = out.changes[-1] if out.changes else None
    if nvlink_unknown and last is not None and last.kind == "pair" and last.subject == subject:
        why = f"cannot tell: NVLink is not recorded, and may carry the pair; {SETTLE['nvlink']} settles it"
        out.changes[-1] = msgspec.structs.replace(last, direction="unknown", why=why)
    pa, pb = pcie_p2p(ta, *on_a), pcie_p2p(tb, *on_b)
    if pa.value != pb.value and "unknown" not in (pa.value, pb.value):
        d: Direction = "better" if pb.yes else "worse"
        ta_ = "P2P OK" if pa.yes else "no P2P"
        tb_ = "P2P OK" if pb.yes else "no P2P"
        if pa.assumed or pb.assumed:
            ta_ += " (assumed)" if pa.assumed else ""
            tb_ += " (assumed)" if pb.assumed else ""
        text = f"{subject}: {ta_} → {tb_}"
        out.changes.append(Change(kind="p2p", subject=subject, field="P2P", a=ta_, b=tb_, direction=d, text=text))


def _gpu_nics(out: DiffResult, ta: Topology, tb: Topology) -> None:
    """Each GPU's nearest usable NIC on A and on B: class, GPUDirect, line rate (NICs matched by the
    GPU they serve, not by index)."""
    for x in ta.snapshot.gpus:
        sid = f"gpu{x.index}"
        mid = out.mapping.get(sid)
        if mid is None or tb.gpu(mid) is None or not gpu_usable(ta, sid).yes or not gpu_usable(tb, mid).yes:
            continue
        ca, cb = nearest_nic(ta, sid), nearest_nic(tb, mid)
        if ca.nic is None and cb.nic is None:
            continue
        pa = f"{ca.path}" if ca.nic is not None and ca.path else ("no NIC" if ca.nic is None else None)
        pb = f"{cb.path}" if cb.nic is not None and cb.path else ("no NIC" if cb.nic is None else None)
        _cmp(
            out,
            "proximity",
            sid,
            "nearest NIC",
            pa,
            pb,
            better=lambda u, v: None if u == v else _nic_rank(v) < _nic_rank(u),
        )
        if ca.gdr.value != cb.gdr.value and "unknown" not in (ca.gdr.value, cb.gdr.value):
            ga = "GPUDirect RDMA" if ca.gdr.yes else "no GPUDirect"
            gb = "GPUDirect RDMA" if cb.gdr.yes else "no GPUDirect"
            direction: Direction = "better" if cb.gdr.yes else "worse"
            text = f"{sid}: GPUDirect RDMA {'gained' if cb.gdr.yes else 'lost'}"
            out.changes.append(
                Change(kind="gdr", subject=sid, field="GPUDirect", a=ga, b=gb, direction=direction, text=text)
            )
        sa = ca.nic.speed_gbit_s if ca.nic else None
        sb = cb.nic.speed_gbit_s if cb.nic else None
        rates = compare_bandwidth(_line_rate(sa), _line_rate(sb))
        _cmp(out, "nic", sid, "its NIC's line rate", sa, sb, lambda v: f"{v:g} Gb/s", _by(rates))


def _line_rate(gbit_s: float | None) -> Bandwidth:
    """A NIC's line rate as a figure (GB/s per direction, the unit every other link has)."""
    if gbit_s is None:
        return UNKNOWN_BW
    return Bandwidth(nic_bandwidth_gbps(gbit_s), "spec", f"line rate {gbit_s:g} Gb/s")


def _nic_rank(v: str) -> int:
    return 9 if v == "no NIC" else class_rank(v)


#: A NIC's link layer (``model.facts.nic_link_layer``) in the words ``show`` and ``map`` use; the
#: last two say the source did not record it.
_LAYER_WORDS = {
    "infiniband": "InfiniBand",
    "roce": "RoCE",
    "ethernet": "Ethernet (no RDMA)",
    "efa": "EFA",
    "rdma": "RDMA, link layer not recorded",
    "network": "kind not recorded",
}


def nic_inventory(s: Snapshot) -> tuple[str, str | None]:
    """The NICs as ``show`` describes them: how many, those whose port is down (``nic_usable``) named
    apart (``8 NICs``, ``8 NICs, 2 ports down``), and by link layer (``nic_link_layer``: ``8
    InfiniBand``), None when a NIC's layer is not recorded."""
    down = sum(nic_usable(n).no for n in s.nics)
    count_text = (f"{len(s.nics)} NICs" if s.nics else "no NICs") + (f", {down} ports down" if down else "")
    layers: dict[str, int] = {}
    for n in s.nics:
        layer = nic_link_layer(n)
        if layer in ("rdma", "network"):
            return count_text, None
        layers[_LAYER_WORDS.get(layer, layer)] = layers.get(_LAYER_WORDS.get(layer, layer), 0) + 1
    return count_text, "; ".join(f"{k} {w}" for w, k in sorted(layers.items(), key=lambda kv: (-kv[1], kv[0])))


def _nic_rates(s: Snapshot) -> str | None:
    """The usable NICs' line rates, counted (``8 × 400 Gb/s``); None when one is not recorded."""
    usable = [n for n in s.nics if not nic_usable(n).no]
    if not usable or any(n.speed_gbit_s is None for n in usable):
        return None
    count: dict[float, int] = {}
    for n in usable:
        count[n.speed_gbit_s or 0.0] = count.get(n.speed_gbit_s or 0.0, 0) + 1
    return ", ".join(f"{k} × {r:g} Gb/s" for r, k in sorted(count.items(), reverse=True))


def _nic_inventory(out: DiffResult, a: Snapshot, b: Snapshot) -> None:
    """The NICs in show's words: how many, their link layers and line rates where both record them."""
    (ca, la), (cb, lb) = nic_inventory(a), nic_inventory(b)
    _cmp(out, "nics", "NICs", "NICs", ca, cb)
    if la is not None and lb is not None:  # a layer not recorded is in the source's own unknown list
        _cmp(out, "nics", "NICs", "link layers", la, lb)
    _cmp(out, "nics", "NICs", "line rates", _nic_rates(a), _nic_rates(b))


def _unconfirmed(out: DiffResult, a: Snapshot, b: Snapshot) -> None:
    """Facts equivalence needs that one side cannot tell."""
    for fact, words in (("gpu_model", "GPU models"), ("nvlink", "which GPU pairs NVLink joins")):
        for snap, name in ((a, out.a_name), (b, out.b_name)):
            unnamed = any(gpu_model_name(g)[0] is None for g in snap.gpus)
            if not source_knows(snap, fact) or (fact == "gpu_model" and unnamed):
                out.unconfirmed.append(f"{name} does not record {words}")
                if fact == "nvlink":
                    out.unrankable.append(out.unconfirmed[-1])
    if any(g.lost for g in a.gpus) or any(g.lost for g in b.gpus):
        out.unconfirmed.append("a GPU was lost during a probe")
    out.unconfirmed = list(dict.fromkeys(out.unconfirmed))
    out.unrankable = list(dict.fromkeys(out.unrankable))
