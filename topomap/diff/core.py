"""Comparison of two lots ("rented lots"), optionally under a flow: which is better for the work,
and the few reasons that decide it.

Every fact comes from ``topomap.graph.evidence`` (NVLink usable and its links, P2P, the GPU's
nearest NIC and GPUDirect, the NUMA node serving a GPU, the trained PCIe link), so diff never
disagrees with map or check. Changes are directed (worse / better for B against A, or unknown)
and identical changes collapse ("28 GPU pairs: NV18 → NV12"). NICs are compared by the GPU they
serve, not by index. Equivalence needs the compared facts known on both sides: a side that cannot
tell the GPU model, count or links makes the answer "cannot confirm", which is not equivalence.
GPUs are matched by index, or by structure (the renumbering that makes the two typed topologies
isomorphic, so renumbered but identical machines diff as equal).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx
from networkx.algorithms import isomorphism

from topomap.base.links import class_rank
from topomap.base.units import fmt_gbps, fmt_span
from topomap.graph import Topology, build, natural_key
from topomap.graph.evidence import gpu_usable, nearest_nic, nvlink, pcie_p2p, pcie_path_class
from topomap.model.facts import gpu_pcie_link
from topomap.model.snapshot import Snapshot
from topomap.model.source_facts import source_knows

Match = Literal["index", "structure"]
Direction = Literal["worse", "better", "neutral", "unknown"]
Verdict = Literal["equivalent", "a-better", "b-better", "mixed", "different", "cannot-confirm"]

#: Exit status of `topomap diff` per verdict.
EXIT_STATUS: dict[Verdict, int] = {
    "equivalent": 0,
    "a-better": 1,
    "b-better": 1,
    "mixed": 1,
    "different": 1,
    "cannot-confirm": 3,
}

#: How much a kind of change weighs in the verdict's reasons (higher first).
WEIGHT: dict[str, int] = {
    "plan": 110,
    "gpus": 100,
    "gpu": 90,
    "nvlink": 80,
    "gdr": 70,
    "p2p": 60,
    "pair": 55,
    "proximity": 50,
    "numa": 40,
    "pcie": 35,
    "nics": 30,
    "nic": 25,
    "software": 10,
    "host": 5,
}


@dataclass(frozen=True)
class Change:
    kind: str  # gpus, gpu, nvlink, gdr, p2p, pair, proximity, numa, pcie, nics, nic, software, host
    subject: str  # "gpu2", "gpu2–gpu3"
    field: str
    a: Any
    b: Any
    text: str
    direction: Direction = "neutral"  # for B against A


@dataclass
class ArrowRow:
    src: str
    dst: str
    a: dict[str, Any]
    b: dict[str, Any]
    medium_changed: bool
    slower: bool | None  # None: cannot be told (a bandwidth unknown on one side)
    direction: Direction = "neutral"
    reason: str = ""


@dataclass
class DiffResult:
    a_name: str
    b_name: str
    match: Match
    mapping: dict[str, str]  # A id → B id
    changes: list[Change] = field(default_factory=list)
    not_compared: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    arrows: list[ArrowRow] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)  # facts one side cannot tell, needed for equivalence
    plan_lines: list[str] = field(default_factory=list)  # how the flow's plan changes (when it has a work block)

    @property
    def verdict(self) -> Verdict:
        dirs = [c.direction for c in self.changes] + [r.direction for r in self.arrows]
        worse, better = "worse" in dirs, "better" in dirs
        if worse and better:
            return "mixed"
        if (worse or better) and "unknown" in dirs:
            return "cannot-confirm"  # a change one side cannot tell may outweigh the known ones
        if worse:
            return "a-better"
        if better:
            return "b-better"
        if self.changes or any(r.medium_changed or r.direction != "neutral" for r in self.arrows):
            return "different"
        if self.unconfirmed:
            return "cannot-confirm"
        return "equivalent"

    @property
    def same(self) -> bool:
        return self.verdict == "equivalent"

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.verdict]

    def grouped(self) -> list[str]:
        """Changes with the same before → after collapsed into one line, heaviest first."""
        groups: dict[tuple[str, str, str, Direction], list[Change]] = {}
        for c in self.changes:
            groups.setdefault((c.kind, c.field, f"{_fmt(c.a)} → {_fmt(c.b)}", c.direction), []).append(c)
        lines: list[tuple[int, str]] = []
        for (kind, fieldname, arrow, _direction), items in groups.items():
            lines.append((WEIGHT.get(kind, 0), _group_line(kind, fieldname, arrow, items)))
        return [t for _, t in sorted(lines, key=lambda x: -x[0])]

    def reasons(self, limit: int = 3) -> list[str]:
        """The few changes that decide the verdict: regressions and gains, heaviest first."""
        decisive = [c for c in self.changes if c.direction in ("worse", "better", "unknown")]
        res = DiffResult(self.a_name, self.b_name, self.match, self.mapping, decisive)
        out = res.grouped()[:limit]
        flow = self.arrow_summary()
        if flow:
            out.append(flow)
        return out

    def arrow_summary(self) -> str:
        if not self.arrows:
            return ""
        moved = sum(r.medium_changed for r in self.arrows)
        worse = sum(r.direction == "worse" for r in self.arrows)
        better = sum(r.direction == "better" for r in self.arrows)
        unknown = sum(r.direction == "unknown" for r in self.arrows)
        slower_known = sum(r.slower is True for r in self.arrows)
        text = f"flow: {moved} of {len(self.arrows)} arrows change medium, {worse} get worse on {self.b_name}"
        if worse:
            text += f" ({slower_known} with a known GB/s drop; the rest by links or path class)"
        if better:
            text += f", {better} get better"
        if unknown:
            text += f", {unknown} slower: unknown (a bandwidth not recorded on one side)"
        return text

    def summary(self) -> str:
        """The verdict in one line."""
        v = self.verdict
        a, b = self.a_name, self.b_name
        work = "for this flow" if self.arrows else "for work across its GPUs"
        renumbered = ""
        if self.match == "structure" and any(k != x for k, x in self.mapping.items()):
            moved = ", ".join(f"{k}→{x}" for k, x in self.mapping.items() if k != x)
            renumbered = f" (devices renumbered: {moved})"
        if v == "equivalent":
            return f"{b} is equivalent to {a} in everything both sources record{renumbered}."
        dirs = {c.direction for c in self.changes} | {r.direction for r in self.arrows}
        if v == "cannot-confirm" and dirs & {"worse", "better"}:
            return f"cannot tell which lot is better {work}: " + "; ".join(self.reasons(4)) + "."
        if v == "cannot-confirm":
            return (
                f"cannot confirm that {b} is equivalent to {a}: nothing differs in what both record{renumbered}, "
                "but " + "; ".join(self.unconfirmed[:3]) + "."
            )
        if v == "a-better":
            return f"{a} is better than {b} {work}: " + "; ".join(self.reasons()) + "."
        if v == "b-better":
            return f"{b} is better than {a} {work}: " + "; ".join(self.reasons()) + "."
        if v == "mixed":
            return f"neither lot is better in everything {work}: " + "; ".join(self.reasons(4)) + "."
        return f"{b} differs from {a}: " + "; ".join(self.grouped()[:3]) + "."


def _fmt(v: Any) -> str:
    if v is None:
        return "unknown"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _group_line(kind: str, fieldname: str, arrow: str, items: list[Change]) -> str:
    if len(items) == 1:
        return items[0].text
    subjects = sorted({c.subject for c in items}, key=natural_key)
    what = {
        "nvlink": "GPU pairs",
        "p2p": "GPU pairs",
        "pair": "GPU pairs",
        "gdr": "GPUs",
        "proximity": "GPUs",
        "numa": "GPUs",
        "pcie": "GPUs",
        "gpu": "GPUs",
        "nic": "NICs",
    }.get(kind, "items")
    label = fieldname if fieldname not in ("path", "links", "GPUDirect", "P2P") else ""
    return f"{len(subjects)} {what}: {label + ' ' if label else ''}{arrow}".strip()


# --- matching ------------------------------------------------------------------------------------


def _typed_graph(s: Snapshot) -> nx.Graph:
    g = nx.Graph()
    for x in s.gpus:
        g.add_node(f"gpu{x.index}", kind="gpu", numa=x.numa_node)
    for n in s.nics:
        if n.rdma:
            g.add_node(f"nic{n.index}", kind="nic")
    for p in s.pairs:
        if p.a in g and p.b in g:
            g.add_edge(p.a, p.b, path=p.path)
    return g


def match_devices(a: Snapshot, b: Snapshot, how: Match) -> tuple[dict[str, str], list[str], Match]:
    """A id → B id, the notes, and how they were matched. ``structure``: an isomorphism of the typed
    GPU/NIC graphs (identity when it is one); none existing, index with a note."""
    ids_a = [f"gpu{x.index}" for x in a.gpus] + [f"nic{n.index}" for n in a.nics]
    ids_b = set([f"gpu{x.index}" for x in b.gpus] + [f"nic{n.index}" for n in b.nics])
    by_index = {i: i for i in ids_a if i in ids_b}
    if how == "index":
        return by_index, [], "index"
    ga, gb = _typed_graph(a), _typed_graph(b)
    if set(ga.nodes) == set(gb.nodes) and all(
        gb.has_edge(u, v) and gb.edges[u, v]["path"] == d["path"] for u, v, d in ga.edges(data=True)
    ):
        return by_index, [], "structure"
    gm = isomorphism.GraphMatcher(
        ga,
        gb,
        node_match=lambda x, y: (
            x["kind"] == y["kind"]
            and (x.get("numa") is None or y.get("numa") is None or x.get("numa") == y.get("numa"))
        ),
        edge_match=lambda x, y: x.get("path") == y.get("path"),
    )
    if gm.is_isomorphic():
        mapping = dict(sorted(gm.mapping.items()))
        for n in a.nics:
            if not n.rdma and f"nic{n.index}" in ids_b:
                mapping[f"nic{n.index}"] = f"nic{n.index}"
        return mapping, [], "structure"
    return by_index, ["no renumbering makes the two machines' structures equal: compared by index"], "index"


# --- comparison ----------------------------------------------------------------------------------


def _cmp(
    out: DiffResult,
    kind: str,
    subject: str,
    fieldname: str,
    va: Any,
    vb: Any,
    fmt: Callable[[Any], str] = _fmt,
    better: Callable[[Any, Any], bool | None] | None = None,
) -> None:
    """Record a change of one fact; ``better(va, vb)`` says whether B's value is better (None: neither)."""
    if va is None or vb is None:
        if va is not None or vb is not None:
            side = out.a_name if va is None else out.b_name
            out.not_compared.append(f"{kind}.{fieldname} (unknown in {side})")
        return
    if va == vb:
        return
    direction: Direction = "neutral"
    if better is not None:
        verdict = better(va, vb)
        direction = "neutral" if verdict is None else "better" if verdict else "worse"
    what = "" if fieldname in ("path", "links") else f"{fieldname} "
    out.changes.append(Change(kind, subject, fieldname, va, vb, f"{subject}: {what}{fmt(va)} → {fmt(vb)}", direction))


def _more(va: Any, vb: Any) -> bool | None:
    return None if va == vb else vb > va


def _gib(v: Any) -> str:
    return f"{int(v) / 2**20:.0f} MiB"


def diff_snapshots(a: Snapshot, b: Snapshot, match: Match = "index", names: tuple[str, str] = ("A", "B")) -> DiffResult:
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
        out.not_compared.append(f"{f} (unknown in {side})")
    out.not_compared = sorted(set(out.not_compared))
    return out


def _gpus(out: DiffResult, ta: Topology, tb: Topology) -> None:
    gb = {f"gpu{x.index}": x for x in tb.snapshot.gpus}
    for x in ta.snapshot.gpus:
        sid = f"gpu{x.index}"
        y = gb.get(out.mapping.get(sid, ""))
        if y is None:
            continue
        _cmp(out, "gpu", sid, "model", x.name, y.name)
        _cmp(out, "gpu", sid, "memory", x.memory_total_bytes, y.memory_total_bytes, _gib, _more)
        _cmp(out, "gpu", sid, "compute capability", x.compute_capability, y.compute_capability)
        la, lb = gpu_pcie_link(x), gpu_pcie_link(y)
        _cmp(out, "pcie", sid, "PCIe link", _link(la.gen, la.width), _link(lb.gen, lb.width), better=_faster_link)
        _cmp(out, "gpu", sid, "MIG", x.mig.enabled if x.mig else None, y.mig.enabled if y.mig else None)
        _cmp(out, "numa", sid, "NUMA node", x.numa_node, y.numa_node)


def _link(gen: int | None, width: int | None) -> str | None:
    return f"Gen{gen} x{width}" if gen is not None and width is not None else None


def _faster_link(va: str, vb: str) -> bool | None:
    from topomap.base.links import pcie_bandwidth_gbps

    def bw(v: str) -> float:
        gen, width = v[3:].split(" x")
        return pcie_bandwidth_gbps(int(gen), int(width)) or 0.0

    return None if bw(va) == bw(vb) else bw(vb) > bw(va)


def _nv_state(topo: Topology, a: str, b: str) -> tuple[str | None, int | None]:
    """A pair's NVLink as text (``NV18``, ``no NVLink (SYS)``, ``NVLink not usable``) and link count;
    (None, None) when the source cannot tell."""
    nv = nvlink(topo, a, b)
    if nv.usable.value == "unknown":
        return None, None
    if nv.usable.yes:
        return f"NV{nv.links}", nv.links
    if nv.links:
        return f"NV{nv.links} not usable", 0
    return f"no NVLink ({pcie_path_class(topo, a, b) or 'path unknown'})", 0


def _gpu_pairs(out: DiffResult, ta: Topology, tb: Topology) -> None:
    ids = [f"gpu{g.index}" for g in ta.snapshot.gpus]
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            ma, mb = out.mapping.get(a), out.mapping.get(b)
            if ma is None or mb is None or tb.gpu(ma) is None or tb.gpu(mb) is None:
                continue
            subject = f"{a}–{b}"
            sa, na = _nv_state(ta, a, b)
            sb, nb = _nv_state(tb, ma, mb)
            if sa is None or sb is None:
                if (sa is None) != (sb is None):
                    out.not_compared.append(
                        f"NVLink between GPU pairs (unknown in {out.a_name if sa is None else out.b_name})"
                    )
            elif sa != sb and not (sa.startswith("no NVLink") and sb.startswith("no NVLink")):
                direction: Direction = "neutral"
                if na != nb:
                    direction = "better" if (nb or 0) > (na or 0) else "worse"
                out.changes.append(Change("nvlink", subject, "links", sa, sb, f"{subject}: {sa} → {sb}", direction))
            if na or nb:
                continue  # NVLink carries the pair on at least one side: its PCIe path is not the story
            ca, cb = pcie_path_class(ta, a, b), pcie_path_class(tb, ma, mb)
            _cmp(
                out,
                "pair",
                subject,
                "path",
                ca,
                cb,
                better=lambda x, y: None if x == y else class_rank(y) < class_rank(x),
            )
            pa, pb = pcie_p2p(ta, a, b), pcie_p2p(tb, ma, mb)
            if pa.value != pb.value and "unknown" not in (pa.value, pb.value):
                d: Direction = "better" if pb.yes else "worse"
                ta_ = "P2P OK" if pa.yes else "no P2P"
                tb_ = "P2P OK" if pb.yes else "no P2P"
                if pa.assumed or pb.assumed:
                    ta_ += " (assumed)" if pa.assumed else ""
                    tb_ += " (assumed)" if pb.assumed else ""
                out.changes.append(Change("p2p", subject, "P2P", ta_, tb_, f"{subject}: {ta_} → {tb_}", d))


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
            word = "gained" if cb.gdr.yes else "lost"
            out.changes.append(Change("gdr", sid, "GPUDirect", ga, gb, f"{sid}: GPUDirect RDMA {word}", direction))
        sa = ca.nic.speed_gbit_s if ca.nic else None
        sb = cb.nic.speed_gbit_s if cb.nic else None
        _cmp(out, "nic", sid, "its NIC's line rate", sa, sb, lambda v: f"{v:g} Gb/s", _more)


def _nic_rank(v: str) -> int:
    return 9 if v == "no NIC" else class_rank(v)


def _nic_inventory(out: DiffResult, a: Snapshot, b: Snapshot) -> None:
    """RDMA NIC count, and their line rates where both sides record them."""

    def rates(s: Snapshot) -> str | None:
        rdma = [n for n in s.nics if n.rdma]
        if not rdma or any(n.speed_gbit_s is None for n in rdma):
            return None
        count: dict[float, int] = {}
        for n in rdma:
            count[n.speed_gbit_s or 0.0] = count.get(n.speed_gbit_s or 0.0, 0) + 1
        return ", ".join(f"{k} × {r:g} Gb/s" for r, k in sorted(count.items(), reverse=True))

    _cmp(out, "nics", "NICs", "RDMA NICs", len([n for n in a.nics if n.rdma]), len([n for n in b.nics if n.rdma]))
    _cmp(out, "nics", "NICs", "line rates", rates(a), rates(b))


def _unconfirmed(out: DiffResult, a: Snapshot, b: Snapshot) -> None:
    """Facts equivalence needs that one side cannot tell."""
    for fact, words in (("gpu_model", "GPU models"), ("nvlink", "which GPU pairs NVLink joins")):
        for snap, name in ((a, out.a_name), (b, out.b_name)):
            if not source_knows(snap, fact) or (fact == "gpu_model" and any(g.name is None for g in snap.gpus)):
                out.unconfirmed.append(f"{name} does not record {words}")
    if any(g.lost for g in a.gpus) or any(g.lost for g in b.gpus):
        out.unconfirmed.append("a GPU was lost during a probe")
    out.unconfirmed = list(dict.fromkeys(out.unconfirmed))


# --- under a flow --------------------------------------------------------------------------------

_MEDIUM_RANK = {"local": 0, "gpu-link": 1, "host-memory": 2, "network": 3}


def diff_flow(result: DiffResult, flow_path: str, a: Snapshot, b: Snapshot) -> None:
    """Map the flow on A and on B (every host with a snapshot bound to that lot) and compare."""
    from topomap.flow import bind, gpus_of, map_flow, read_flow, work_of

    maps = []
    plans = []
    for snap in (a, b):
        flow = read_flow(flow_path)
        topo = build(snap)
        topos = {h: (None if f is None and h not in _gpu_hosts(flow) else topo) for h, f in flow.host_files.items()}
        bind(flow, gpus_of(topos))
        maps.append(map_flow(flow, topos))
        work = work_of(flow)
        if work is not None and work.units:
            from topomap.plan import plan_flow

            plans.append(plan_flow(flow, topos))
    if len(plans) == 2:
        _plan_change(result, plans[0], plans[1])
    for x, y in zip(maps[0].arrows, maps[1].arrows):
        direction, reason, slower = _arrow_change(x.to_json(), y.to_json())
        result.arrows.append(
            ArrowRow(
                src=x.src,
                dst=x.dst,
                a=x.to_json(),
                b=y.to_json(),
                medium_changed=x.medium != y.medium,
                slower=slower,
                direction=direction,
                reason=reason,
            )
        )


def _plan_change(result: DiffResult, pa: Any, pb: Any) -> None:
    """How the flow's plan (topomap plan) changes from A to B: the best total, and why."""
    from topomap.plan import best_total_seconds, plan_changes

    ta, tb = best_total_seconds(pa), best_total_seconds(pb)
    result.plan_lines = plan_changes(pa, pb)
    if ta == tb:
        return
    direction: Direction = "unknown"
    if ta is not None and tb is not None:
        direction = "worse" if tb > ta * 1.001 else "better" if tb < ta * 0.999 else "neutral"
    elif ta is not None and tb is None:
        direction = "worse"  # nothing fits on B
    elif tb is not None:
        direction = "better"
    text = f"plan: best total {fmt_span(ta)} → {fmt_span(tb)} (calculated, see topomap plan)"
    result.changes.append(Change("plan", "plan", "best total", ta, tb, text, direction))


def _arrow_change(x: dict[str, Any], y: dict[str, Any]) -> tuple[Direction, str, bool | None]:
    """Is the arrow worse or better on B, why, and is it slower in GB/s (None: cannot be told)."""
    ma, mb = str(x["medium"]), str(y["medium"])
    ra_, rb_ = x.get("bandwidth_gbps"), y.get("bandwidth_gbps")
    ba = float(ra_) if isinstance(ra_, (int, float)) else None
    bb = float(rb_) if isinstance(rb_, (int, float)) else None
    exact = ba is not None and bb is not None and not x.get("lower_bound") and not y.get("lower_bound")
    slower: bool | None = None
    if exact and ba is not None and bb is not None:
        slower = bb < ba * 0.999
    if ma != mb:
        if "unknown" in (ma, mb):
            return "unknown", f"medium {ma} → {mb}", slower
        worse = _MEDIUM_RANK.get(mb, 9) > _MEDIUM_RANK.get(ma, 9)
        return ("worse" if worse else "better"), f"{ma} → {mb}", slower
    pa, pb = x.get("path"), y.get("path")
    if exact and ba is not None and bb is not None and abs(bb - ba) > ba * 0.001:
        return ("worse" if bb < ba else "better"), f"{fmt_gbps(ba)} → {fmt_gbps(bb)} GB/s", slower
    if pa != pb and isinstance(pa, str) and isinstance(pb, str):
        if pa.startswith("NV") and pb.startswith("NV") and pa[2:].isdigit() and pb[2:].isdigit():
            return ("worse" if int(pb[2:]) < int(pa[2:]) else "better"), f"{pa} → {pb} links", slower
        try:
            ra, rb = class_rank(pa), class_rank(pb)
        except ValueError:
            return "unknown", f"{pa} → {pb}", slower
        if ra != rb:
            return ("worse" if rb > ra else "better"), f"{pa} → {pb}", slower
    if not exact and (ba is None) != (bb is None):
        return "unknown", "bandwidth known on one side only", slower
    return "neutral", "", slower


def _gpu_hosts(flow: Any) -> set[str]:
    """Hosts a flow places steps on by GPU: they need a snapshot even if the file says null."""
    return {p.host for st in flow.steps.values() for p in st.placements if p.kind == "gpu"}


def _digest(s: Snapshot) -> bytes:
    """Content of a host snapshot apart from its name, for recognising identical hosts."""
    import hashlib

    import msgspec

    anon = msgspec.structs.replace(s, host=msgspec.structs.replace(s.host, hostname=None))
    return hashlib.blake2b(msgspec.json.encode(anon), digest_size=16).digest()


def diff_clusters(a: Snapshot, b: Snapshot, match: Match = "index") -> dict[str, Any]:
    """Two clusters (or a cluster and a host) compared host by host, matched by host name."""
    from topomap.model.snapshot import hosts_of

    ha = {h.host.hostname or f"host{k}": h for k, h in enumerate(hosts_of(a))}
    hb = {h.host.hostname or f"host{k}": h for k, h in enumerate(hosts_of(b))}
    only_a = sorted(set(ha) - set(hb))
    only_b = sorted(set(hb) - set(ha))
    per_host: dict[str, Any] = {}
    differing, unconfirmed = [], []
    seen: dict[tuple[bytes, bytes], DiffResult] = {}  # identical host pairs (a uniform cluster) diffed once
    for name in sorted(set(ha) & set(hb)):
        key = (_digest(ha[name]), _digest(hb[name]))
        if key not in seen:
            seen[key] = diff_snapshots(ha[name], hb[name], match, ("A", "B"))
        d = dataclasses.replace(seen[key], a_name=f"A:{name}", b_name=f"B:{name}")
        per_host[name] = {
            "same": d.same,
            "verdict": d.verdict,
            "summary": d.summary(),
            "changes": d.grouped(),
            "not_compared": d.not_compared,
        }
        if d.verdict == "cannot-confirm":
            unconfirmed.append(name)
        elif not d.same:
            differing.append(name)
    same = not differing and not only_a and not only_b and not unconfirmed
    bits = [f"{len(per_host)} host(s) in both"]
    bits.append(
        f"{len(differing)} differ"
        + (f" ({', '.join(differing[:6])}{' …' if len(differing) > 6 else ''})" if differing else "")
    )
    if unconfirmed:
        bits.append(f"{len(unconfirmed)} cannot be confirmed equal")
    if only_a:
        bits.append(f"only in A: {', '.join(only_a)}")
    if only_b:
        bits.append(f"only in B: {', '.join(only_b)}")
    exit_status = 0 if same else 1 if differing or only_a or only_b else 3
    return {
        "same": same,
        "exit_status": exit_status,
        "summary": "; ".join(bits) + ".",
        "only_in_a": only_a,
        "only_in_b": only_b,
        "hosts": per_host,
    }
