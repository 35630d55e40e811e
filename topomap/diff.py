"""Semantic comparison of two snapshots ("rented lots"), optionally under a flow.

Only what both sources know is compared; what one side cannot know is listed, not guessed.
GPUs and NICs are matched by index (what users mean by "GPU 0"), or by structure: the
renumbering that makes the two typed topologies isomorphic, so renumbered but identical
machines diff as equal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx
from networkx.algorithms import isomorphism

from topomap.links import class_rank
from topomap.model import Gpu, Nic, Pair, Snapshot

Match = Literal["index", "structure"]


@dataclass(frozen=True)
class Change:
    kind: str  # "host", "software", "gpus", "gpu", "nics", "nic", "pair", "p2p", "proximity"
    subject: str  # "gpu2", "gpu2–gpu3", "nic3"
    field: str
    a: Any
    b: Any
    text: str


@dataclass
class ArrowRow:
    src: str
    dst: str
    a: dict[str, Any]
    b: dict[str, Any]
    medium_changed: bool
    slower: bool


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

    @property
    def same(self) -> bool:
        return not self.changes and not any(r.medium_changed or r.slower for r in self.arrows)

    def summary(self) -> str:
        """One paragraph: the difference that matters first."""
        if self.same:
            text = f"{self.b_name} is equivalent to {self.a_name} in everything both sources record"
            if self.match == "structure" and any(k != v for k, v in self.mapping.items()):
                text += (
                    " (devices renumbered: " + ", ".join(f"{k}→{v}" for k, v in self.mapping.items() if k != v) + ")"
                )
            return text + "."
        parts: list[str] = []
        by = {c.kind for c in self.changes}
        gpu_fields = {c.field for c in self.changes if c.kind in ("gpu", "gpus")}
        count = next((c for c in self.changes if c.kind == "gpus" and c.field == "count"), None)
        if count is not None:
            parts.append(f"{self.b_name} has {count.b} GPUs where {self.a_name} has {count.a}")
        elif gpu_fields:
            parts.append(f"{self.b_name} differs in its GPUs ({', '.join(sorted(gpu_fields))})")
        elif any(f.startswith("gpus.name") for f in self.not_compared):
            parts.append(f"{self.b_name} has as many GPUs as {self.a_name} (models not recorded by a source)")
        else:
            parts.append(f"{self.b_name} has the same GPUs")
        pair_changes = [c for c in self.changes if c.kind == "pair" and c.field == "path"]
        worse = [c for c in pair_changes if _rank(c.b) > _rank(c.a)]
        if pair_changes:
            gpu_pairs = [c for c in pair_changes if c.subject.count("gpu") == 2]
            desc = _dominant(gpu_pairs or pair_changes)
            parts.append(
                f"{len(gpu_pairs)} GPU pair(s) change path{desc}"
                if gpu_pairs
                else f"{len(pair_changes)} pair(s) change path"
            )
            if worse and any(c.a and str(c.a).startswith("NV") and not str(c.b or "").startswith("NV") for c in worse):
                parts.append("some GPU pairs lose NVLink and go through PCIe or host memory instead")
        if "p2p" in by:
            parts.append(f"P2P status changes on {len({c.subject for c in self.changes if c.kind == 'p2p'})} pair(s)")
        if "proximity" in by:
            parts.append(f"{sum(1 for c in self.changes if c.kind == 'proximity')} GPU–NIC placement(s) change")
        if "nic" in by or "nics" in by:
            parts.append("the NICs differ")
        if "software" in by:
            parts.append("driver/CUDA versions differ")
        if self.arrows:
            moved = sum(r.medium_changed for r in self.arrows)
            slower = sum(r.slower for r in self.arrows)
            parts.append(f"{moved} of {len(self.arrows)} flow arrows change medium, {slower} get slower")
        return "; ".join(parts) + "."


def _rank(code: Any) -> int:
    try:
        return class_rank(str(code))
    except ValueError:
        return 99


def _dominant(changes: list[Change]) -> str:
    counts: dict[tuple[Any, Any], int] = {}
    for c in changes:
        counts[(c.a, c.b)] = counts.get((c.a, c.b), 0) + 1
    (a, b), n = max(counts.items(), key=lambda kv: kv[1])
    return f" (mostly {a} → {b}, {n} of them)" if len(counts) > 1 else f" ({a} → {b})"


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


def match_devices(a: Snapshot, b: Snapshot, how: Match) -> tuple[dict[str, str], list[str]]:
    """A id → B id. ``structure``: an isomorphism of the typed GPU/NIC graphs (identity when it
    is one); none existing, fall back to index with a note."""
    ids_a = [f"gpu{x.index}" for x in a.gpus] + [f"nic{n.index}" for n in a.nics]
    ids_b = set([f"gpu{x.index}" for x in b.gpus] + [f"nic{n.index}" for n in b.nics])
    by_index = {i: i for i in ids_a if i in ids_b}
    if how == "index":
        return by_index, []
    ga, gb = _typed_graph(a), _typed_graph(b)
    if all(gb.has_edge(u, v) and gb.edges[u, v]["path"] == d["path"] for u, v, d in ga.edges(data=True)) and set(
        ga.nodes
    ) == set(gb.nodes):
        return by_index, []
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
        return mapping, []
    return by_index, ["no renumbering makes the two machines' structures equal: compared by index"]


# --- comparison ----------------------------------------------------------------------------------


def _cmp(
    out: DiffResult,
    kind: str,
    subject: str,
    fieldname: str,
    va: Any,
    vb: Any,
    fmt: Callable[[Any], str] = str,
) -> None:
    if va is None or vb is None:
        if va is not None or vb is not None:
            side = out.a_name if va is None else out.b_name
            out.not_compared.append(f"{kind}.{fieldname} (unknown in {side})")
        return
    if va != vb:
        what = "" if fieldname == "path" else f"{fieldname} "
        out.changes.append(Change(kind, subject, fieldname, va, vb, f"{subject}: {what}{fmt(va)} → {fmt(vb)}"))


def _gib(v: Any) -> str:
    return f"{int(v) / 2**30:.0f} GiB"


def diff_snapshots(a: Snapshot, b: Snapshot, match: Match = "index", names: tuple[str, str] = ("A", "B")) -> DiffResult:
    mapping, notes = match_devices(a, b, match)
    out = DiffResult(a_name=names[0], b_name=names[1], match=match, mapping=mapping, notes=notes)
    _cmp(out, "host", "host", "sockets", a.host.sockets, b.host.sockets)
    _cmp(out, "host", "host", "NUMA nodes", len(a.host.numa_nodes) or None, len(b.host.numa_nodes) or None)
    _cmp(out, "host", "host", "CPU", a.host.cpu_model, b.host.cpu_model)
    _cmp(out, "software", "software", "driver", a.software.driver_version, b.software.driver_version)
    _cmp(out, "software", "software", "CUDA", a.software.cuda_driver_version, b.software.cuda_driver_version)
    _cmp(out, "gpus", "GPUs", "count", len(a.gpus), len(b.gpus))
    _cmp(out, "nics", "NICs", "count", len([n for n in a.nics if n.rdma]), len([n for n in b.nics if n.rdma]))
    gb = {f"gpu{x.index}": x for x in b.gpus}
    for x in a.gpus:
        ida = f"gpu{x.index}"
        y = gb.get(mapping.get(ida, ""))
        if y is not None:
            _gpu(out, ida, x, y)
    nb = {f"nic{n.index}": n for n in b.nics}
    for n in a.nics:
        m = nb.get(mapping.get(f"nic{n.index}", ""))
        if m is not None:
            _nic(out, f"nic{n.index}", n, m)
    _pairs(out, a, b, mapping)
    ua, ub = set(a.source.unknown_fields), set(b.source.unknown_fields)
    for f in sorted(ua | ub):
        side = "both" if f in ua and f in ub else out.a_name if f in ua else out.b_name
        out.not_compared.append(f"{f} (unknown in {side})")
    out.not_compared = sorted(set(out.not_compared))
    return out


def _gpu(out: DiffResult, sid: str, x: Gpu, y: Gpu) -> None:
    _cmp(out, "gpu", sid, "model", x.name, y.name)
    _cmp(out, "gpu", sid, "memory", x.memory_total_bytes, y.memory_total_bytes, _gib)
    _cmp(out, "gpu", sid, "compute capability", x.compute_capability, y.compute_capability)
    _cmp(out, "gpu", sid, "NUMA node", x.numa_node, y.numa_node)
    px, py = x.pcie, y.pcie
    for f in ("gen_max", "width_max", "gen_current", "width_current"):
        _cmp(out, "gpu", sid, f"PCIe {f.replace('_', ' ')}", getattr(px, f, None), getattr(py, f, None))
    _cmp(out, "gpu", sid, "MIG", x.mig.enabled if x.mig else None, y.mig.enabled if y.mig else None)
    fx, fy = x.fabric, y.fabric
    _cmp(out, "gpu", sid, "fabric state", fx.state if fx else None, fy.state if fy else None)


def _nic(out: DiffResult, sid: str, n: Nic, m: Nic) -> None:
    _cmp(out, "nic", sid, "kind", None if n.kind == "unknown" else n.kind, None if m.kind == "unknown" else m.kind)
    _cmp(out, "nic", sid, "speed", n.speed_gbit_s, m.speed_gbit_s, lambda v: f"{v:g} Gb/s")


def _pairs(out: DiffResult, a: Snapshot, b: Snapshot, mapping: dict[str, str]) -> None:
    pb: dict[frozenset[str], Pair] = {frozenset((p.a, p.b)): p for p in b.pairs}
    for p in a.pairs:
        ma, mb = mapping.get(p.a), mapping.get(p.b)
        if ma is None or mb is None:
            continue
        q = pb.get(frozenset((ma, mb)))
        if q is None:
            continue
        gpu_nic = p.a.startswith("gpu") != p.b.startswith("gpu")
        if gpu_nic:
            nic, gpu = (p.a, p.b) if p.a.startswith("nic") else (p.b, p.a)
            if p.path is not None and q.path is not None and p.path != q.path:
                out.changes.append(
                    Change("proximity", f"{gpu}–{nic}", "path", p.path, q.path, f"{nic}: {p.path} → {q.path} of {gpu}")
                )
            elif (p.path is None) != (q.path is None):
                out.not_compared.append("pairs.path (unknown on one side)")
            continue
        subject = f"{p.a}–{p.b}"
        _cmp(out, "pair", subject, "path", p.path, q.path)
        if p.p2p is not None and q.p2p is not None:
            for cap in ("read", "write", "nvlink", "atomics"):
                _cmp(out, "p2p", subject, cap, getattr(p.p2p, cap), getattr(q.p2p, cap))
        elif (p.p2p is None) != (q.p2p is None):
            out.not_compared.append(f"pairs.p2p (unknown in {out.a_name if p.p2p is None else out.b_name})")


# --- under a flow --------------------------------------------------------------------------------


def diff_flow(result: DiffResult, flow_path: str, a: Snapshot, b: Snapshot) -> None:
    """Map the flow on A and on B (every host with a snapshot bound to that lot) and compare."""
    from topomap.flow import read_flow
    from topomap.graph import build
    from topomap.mapping import gpus_of, map_flow

    maps = []
    for snap in (a, b):
        flow = read_flow(flow_path)
        topo = build(snap)
        topos = {h: (None if f is None and h not in _gpu_hosts(flow) else topo) for h, f in flow.host_files.items()}
        from topomap.flow import bind

        bind(flow, gpus_of(topos))
        maps.append(map_flow(flow, topos))
    for x, y in zip(maps[0].arrows, maps[1].arrows):
        ja, jb = x.to_json(), y.to_json()
        slower = (
            x.bandwidth_gbps is not None
            and y.bandwidth_gbps is not None
            and y.bandwidth_gbps < x.bandwidth_gbps * 0.999
        )
        result.arrows.append(
            ArrowRow(src=x.src, dst=x.dst, a=ja, b=jb, medium_changed=x.medium != y.medium, slower=slower)
        )


def _gpu_hosts(flow: Any) -> set[str]:
    """Hosts a flow places steps on by GPU: they need a snapshot even if the file says null."""
    return {p.host for st in flow.steps.values() for p in st.placements if p.kind == "gpu"}


def diff_clusters(a: Snapshot, b: Snapshot, match: Match = "index") -> dict[str, Any]:
    """Two clusters (or a cluster and a host) compared host by host, matched by host name."""
    from topomap.model import hosts_of

    ha = {h.host.hostname or f"host{k}": h for k, h in enumerate(hosts_of(a))}
    hb = {h.host.hostname or f"host{k}": h for k, h in enumerate(hosts_of(b))}
    only_a = sorted(set(ha) - set(hb))
    only_b = sorted(set(hb) - set(ha))
    per_host: dict[str, Any] = {}
    differing = []
    for name in sorted(set(ha) & set(hb)):
        d = diff_snapshots(ha[name], hb[name], match, (f"A:{name}", f"B:{name}"))
        per_host[name] = {
            "same": d.same,
            "summary": d.summary(),
            "changes": [c.text for c in d.changes],
            "not_compared": d.not_compared,
        }
        if not d.same:
            differing.append(name)
    same = not differing and not only_a and not only_b
    bits = [f"{len(per_host)} host(s) in both"]
    bits.append(
        f"{len(differing)} differ"
        + (f" ({', '.join(differing[:6])}{' …' if len(differing) > 6 else ''})" if differing else "")
    )
    if only_a:
        bits.append(f"only in A: {', '.join(only_a)}")
    if only_b:
        bits.append(f"only in B: {', '.join(only_b)}")
    return {
        "same": same,
        "summary": "; ".join(bits) + ".",
        "only_in_a": only_a,
        "only_in_b": only_b,
        "hosts": per_host,
    }
