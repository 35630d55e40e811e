"""Structure for sources that give only path classes (an imported ``topo -m``): the least PCIe tree
that reproduces every known class, and NVLink bundles from NV# cells. Everything built here is
marked ``inferred`` and nothing is invented that the classes do not imply: devices whose relation
the matrix does not give (NV# pairs carry no PCIe class) join their NUMA node's group unless a
SYS cell separates them."""

from __future__ import annotations

from topomap.graph.topology import FABRIC, Topology, gpu_node, natural_key, nic_node
from topomap.links import NVLINKS_PER_GPU, NVLINKS_PER_GPU_ANY, PCIE_CLASSES, class_rank, parse_path
from topomap.model import Gpu


class _Union:
    def __init__(self, items: list[str]) -> None:
        self.parent = {i: i for i in items}

    def find(self, x: str) -> str:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[list[str]]:
        out: dict[str, list[str]] = {}
        for i in self.parent:
            out.setdefault(self.find(i), []).append(i)
        return sorted(sorted(v, key=natural_key) for v in out.values())


def numa_node(topo: Topology, numa: object, label: str | None = None) -> str:
    """The graph node of a NUMA node (``numa0``), created on first use; None → one unknown node."""
    node = f"numa{numa}" if numa is not None else "numa-unknown"
    if node not in topo.graph:
        cpus = next((n.cpus for n in topo.snapshot.host.numa_nodes if n.id == numa), None)
        text = label or (f"NUMA {numa}" if numa is not None else "NUMA node unknown")
        topo.graph.add_node(node, kind="numa", label=text, cpus=cpus or "", inferred=numa is None)
        topo.graph.add_edge("host", node, kind="attach")
    return node


def _slug(node: str) -> str:
    return node.replace(":", "-")


def infer_tree(topo: Topology) -> None:
    """Least PCIe structure reproducing the pairs' PCIe classes (ultrametric clustering)."""
    from topomap.graph.build import pcie_edge

    snap, g = topo.snapshot, topo.graph
    topo.inferred = True
    ids = {f"gpu{x.index}": gpu_node(x) for x in snap.gpus} | {f"nic{n.index}": nic_node(n) for n in snap.nics}
    devs = sorted(ids.values(), key=natural_key)
    level: dict[frozenset[str], int] = {}
    for p in snap.pairs:
        cls = p.pcie_path or (p.path if p.path in PCIE_CLASSES else None)
        if cls is not None and p.a in ids and p.b in ids:
            level[frozenset((ids[p.a], ids[p.b]))] = class_rank(cls)  # PIX 1 … SYS 5
    numa_of: dict[str, object] = {gpu_node(x): x.numa_node for x in snap.gpus}
    numa_of |= {nic_node(n): n.numa_node for n in snap.nics}
    clusters: dict[int, list[list[str]]] = {}
    for t in (1, 2, 3, 4):
        u = _Union(devs)
        for pair, r in level.items():
            if r <= t:
                a, b = sorted(pair)
                u.union(a, b)
        if t == 4:
            _join_by_numa(u, devs, numa_of, level)
        clusters[t] = u.groups()
    sides = clusters[4]
    per_numa: dict[object, list[int]] = {}
    for k, grp in enumerate(sides):
        known = sorted({numa_of[d] for d in grp if numa_of.get(d) is not None}, key=str)
        numa: object = known[0] if len(known) == 1 else (None if not known else "+".join(map(str, known)))
        if len(known) > 1:
            joined = ", ".join(map(str, known))
            topo.notes.append(f"the matrix puts NUMA nodes {joined} on one side (NODE between them)")
        per_numa.setdefault(numa, []).append(k)
    side_node: dict[int, str] = {}
    for numa, ks in per_numa.items():
        if len(ks) == 1:
            side_node[ks[0]] = numa_node(topo, numa)
            continue
        what = f"NUMA {numa}" if numa is not None else "NUMA node unknown"
        if numa is not None:
            # devices of one NUMA node that the matrix separates by SYS (seen on an 8x RTX 4090 box)
            topo.notes.append(
                f"the matrix puts devices of NUMA node {numa} on {len(ks)} sides with SYS between them; "
                "drawn as separate parts of that node"
            )
        for part, k in enumerate(ks, 1):
            node = f"numa{numa}-part{part}" if numa is not None else f"numa-unknown-{part}"
            label = f"{what}, part {part} of {len(ks)} (SYS to the other parts in the matrix)"
            side_node[k] = numa_node_named(topo, node, label, numa)
    for k, grp in enumerate(sides):
        numa_n = side_node[k]
        for d in grp:
            topo.locality[d] = k
        related = {d for pair in level for d in pair}
        for hb_grp in [c for c in clusters[3] if c[0] in grp]:
            if len(hb_grp) == 1 and hb_grp[0] not in related:
                # no path class to anything: nothing implies a bridge, the device hangs off its node
                g.add_edge(numa_n, hb_grp[0], kind="attach")
                topo.chains[hb_grp[0]] = [numa_n, hb_grp[0]]
                continue
            hb = f"pci:inferred-hb-{_slug(hb_grp[0])}"
            g.add_node(hb, kind="host-bridge", label="host bridge", inferred=True)
            g.add_edge(numa_n, hb, kind="attach")
            for pxb in [c for c in clusters[2] if c[0] in hb_grp]:
                pix_groups = [c for c in clusters[1] if c[0] in pxb]
                upper: str | None = None
                if len(pix_groups) > 1:
                    upper = f"pci:inferred-sw-{_slug(pxb[0])}"
                    g.add_node(upper, kind="switch", label="PCIe switch", inferred=True)
                    pcie_edge(topo, hb, upper, None, None)
                for pix in pix_groups:
                    base = [hb] + ([upper] if upper else [])
                    if len(pix) > 1:
                        sw = f"pci:inferred-sw-{_slug(pix[0])}"
                        g.add_node(sw, kind="switch", label="PCIe switch", inferred=True)
                        if upper:
                            port = f"pci:inferred-port-{_slug(pix[0])}"
                            g.add_node(port, kind="port", label="", inferred=True)
                            pcie_edge(topo, upper, port, None, None)
                            pcie_edge(topo, port, sw, None, None)
                            base = [*base, port]
                        else:
                            pcie_edge(topo, hb, sw, None, None)
                        base = [*base, sw]
                    for d in pix:
                        pcie_edge(topo, base[-1], d, None, None)
                        topo.chains[d] = [*base, d]
    if level:
        topo.notes.append("PCIe structure inferred from path classes (the source has no PCI tree)")
    topo.notes[:] = list(dict.fromkeys(topo.notes))


def numa_node_named(topo: Topology, node: str, label: str, numa: object) -> str:
    if node not in topo.graph:
        cpus = next((n.cpus for n in topo.snapshot.host.numa_nodes if n.id == numa), None)
        topo.graph.add_node(node, kind="numa", label=label, cpus=cpus or "", inferred=True)
        topo.graph.add_edge("host", node, kind="attach")
    return node


def _join_by_numa(u: _Union, devs: list[str], numa_of: dict[str, object], level: dict[frozenset[str], int]) -> None:
    """Join groups on one NUMA node (or both of unknown node) whose relation the matrix leaves open
    (no SYS cell between any of their members): an NV# pair, or no cell at all, is no evidence of a
    socket boundary."""
    sys_pairs = {pair for pair, r in level.items() if r >= 5}
    changed = True
    while changed:
        changed = False
        groups = _groups(u, devs)
        for i, ga in enumerate(groups):
            for gb in groups[i + 1 :]:
                na = {numa_of.get(d) for d in ga} - {None}
                nb = {numa_of.get(d) for d in gb} - {None}
                if na != nb:
                    continue  # both unknown (nothing separates them) or the same known node
                if any(frozenset((x, y)) in sys_pairs for x in ga for y in gb):
                    continue
                u.union(ga[0], gb[0])
                changed = True
                break
            if changed:
                break


def _groups(u: _Union, devs: list[str]) -> list[list[str]]:
    out: dict[str, list[str]] = {}
    for d in devs:
        out.setdefault(u.find(d), []).append(d)
    return list(out.values())


def _links_per_gpu(gpus: list[Gpu]) -> tuple[int, str]:
    """The most NVLinks these GPUs can have, and why: the generation's count where the model or
    compute capability implies one (the smallest over the GPUs), else the most any GPU has."""
    from topomap.graph.evidence import model_nvlink_generation

    known = [(NVLINKS_PER_GPU[gen], why) for gen, why in map(model_nvlink_generation, gpus) if gen in NVLINKS_PER_GPU]
    if len(known) == len(gpus) and known:
        most, why = min(known)
        return most, f"links a GPU of {why} has"
    return NVLINKS_PER_GPU_ANY, "links any GPU has (the model is not recorded)"


def nvlinks_from_pairs(topo: Topology, by_id: dict[str, Gpu]) -> None:
    """NV# pairs from a source that lists no links (an imported matrix). Three or more GPUs joined
    all-to-all by the same NV# sit on an NVSwitch fabric: one inferred hub, not n(n-1)/2 edges.
    Other NV# pairs (a two-GPU bridge, the DGX-1 cube mesh) are direct links."""
    from topomap.graph.build import nvlink_edge

    nv: dict[frozenset[str], int] = {}
    for p in topo.snapshot.pairs:
        kind, n = parse_path(p.path or "")
        if kind == "NV" and p.a in by_id and p.b in by_id and n > 0:
            nv[frozenset((p.a, p.b))] = n
    gpus = sorted({x for pair in nv for x in pair}, key=natural_key)
    counts = set(nv.values())
    full = len(gpus) >= 3 and len(counts) == 1 and len(nv) == len(gpus) * (len(gpus) - 1) // 2
    if full:
        n = counts.pop()
        need, have, model = (len(gpus) - 1) * n, *_links_per_gpu([by_id[x] for x in gpus])
        if need > have:  # more links than a GPU has: only a switch gives every pair n links
            topo.graph.add_node(
                FABRIC, kind="nvswitch", label="NVSwitch fabric (inferred)", switches=0, inferred=True
            )
            for x in gpus:
                nvlink_edge(topo, x, FABRIC, n, by_id[x])
            topo.notes.append(
                f"{len(gpus)} GPUs all-to-all NV{n}: {len(gpus) - 1} peers × {n} links = {need} links a GPU, "
                f"more than the {have} {model}: an NVSwitch fabric (inferred)"
            )
            return
        topo.notes.append(
            f"{len(gpus)} GPUs all-to-all NV{n}: {len(gpus) - 1} peers × {n} links = {need} links a GPU, within "
            f"the {have} {model}: drawn as direct links (inferred; an NVSwitch would print the same)"
        )
    for pair, n in sorted(nv.items(), key=lambda kv: sorted(kv[0], key=natural_key)):
        a, b = sorted(pair, key=natural_key)
        nvlink_edge(topo, a, b, n, by_id[a])
