"""Structure for sources that give only path classes (an imported ``topo -m``): the least PCIe tree
that reproduces every known class, and NVLink bundles from NV# cells. Everything built here is
marked ``inferred`` and nothing is invented that the classes do not imply: devices whose relation
the matrix does not give (NV# pairs carry no PCIe class) join their NUMA node's group unless a
SYS cell separates them. Each device stays on the NUMA node the file's column records, and a note
names any cell that contradicts that column."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from topomap.base.links import PCIE_CLASSES, class_rank, nvlinks_of, pcie_class_of
from topomap.base.parts import max_nvlinks
from topomap.graph.edges import nvlink_edge, pcie_edge
from topomap.graph.nodeid import (
    HOST,
    gpu_id,
    inferred_host_bridge,
    inferred_port,
    inferred_switch,
    inferred_upper_switch,
    nic_name,
    numa_id,
    numa_unknown_part,
)
from topomap.graph.topology import FABRIC, Topology, gpu_node, natural_key, nic_node
from topomap.model.facts import model_nvlink_generation
from topomap.model.snapshot import Gpu


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
    node = numa_id(numa)
    if node not in topo.light:
        cpus = next((n.cpus for n in topo.snapshot.host.numa_nodes if n.id == numa), None)
        text = label or (f"NUMA {numa}" if numa is not None else "NUMA node unknown")
        topo.light.add_node(node, kind="numa", label=text, cpus=cpus or "", inferred=numa is None)
        topo.light.add_edge(HOST, node, kind="attach")
    return node


def infer_tree(topo: Topology) -> None:
    """Least PCIe structure reproducing the pairs' PCIe classes (ultrametric clustering). Each device
    hangs under the NUMA node the source records for it; where the classes contradict that column
    (NODE between NUMA nodes, SYS within one) the recorded node is kept and a note names the cell."""
    snap = topo.snapshot
    topo.inferred = True
    ids = {gpu_id(x.index): gpu_node(x) for x in snap.gpus} | {f"nic{n.index}": nic_node(n) for n in snap.nics}
    devs = sorted(ids.values(), key=natural_key)
    level: dict[frozenset[str], int] = {}
    for p in snap.pairs:
        cls = p.pcie_path or pcie_class_of(p.path)
        if cls is not None and p.a in ids and p.b in ids:
            level[frozenset((ids[p.a], ids[p.b]))] = class_rank(cls)  # PIX 1 … SYS 5
    numa_of: dict[str, int | None] = {gpu_node(x): x.numa_node for x in snap.gpus}
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
    cells = _Cells(level, {node: sid.upper() for sid, node in ids.items()})
    place = _Placement(topo, clusters, numa_of, cells).numa_nodes()
    related = {d for pair in level for d in pair}
    for k, grp in enumerate(clusters[4]):
        for d in grp:
            topo.locality[d] = k  # the matrix's side (SYS between sides), not a NUMA node
        for hb_grp in [c for c in clusters[3] if c[0] in grp]:
            _host_bridge(topo, place[hb_grp[0]], hb_grp, clusters, related, level)
    if level:
        topo.notes.append("PCIe structure inferred from path classes (the source has no PCI tree)")
    topo.notes[:] = list(dict.fromkeys(topo.notes))


def _host_bridge(
    topo: Topology,
    numa_n: str,
    hb_grp: list[str],
    clusters: dict[int, list[list[str]]],
    related: set[str],
    level: dict[frozenset[str], int],
) -> None:
    """One host bridge's subtree: a switch per PIX group, an upper switch over the PIX groups of one
    PXB group, and a switch of its own for each lone device of a PXB group whose lone devices are
    PXB to each other (PXB: several bridges, so they cannot both sit on the upper switch)."""
    g = topo.light
    if len(hb_grp) == 1 and hb_grp[0] not in related:
        # no path class to anything: nothing implies a bridge, the device hangs off its node
        g.add_edge(numa_n, hb_grp[0], kind="attach")
        topo.chains[hb_grp[0]] = [numa_n, hb_grp[0]]
        return
    hb = inferred_host_bridge(hb_grp[0])
    g.add_node(hb, kind="host-bridge", label="host bridge", inferred=True)
    g.add_edge(numa_n, hb, kind="attach")
    for pxb in [c for c in clusters[2] if c[0] in hb_grp]:
        pix_groups = [c for c in clusters[1] if c[0] in pxb]
        upper: str | None = None
        if len(pix_groups) > 1:
            upper = inferred_upper_switch(pxb[0])
            g.add_node(upper, kind="switch", label="PCIe switch", inferred=True)
            pcie_edge(topo, hb, upper, None, None)
        lone = [c[0] for c in pix_groups if len(c) == 1]
        lone_apart = any(frozenset((a, b)) in level for i, a in enumerate(lone) for b in lone[i + 1 :])
        for pix in pix_groups:
            base = [hb] + ([upper] if upper else [])
            if len(pix) > 1 or (upper and lone_apart):
                sw = inferred_switch(pix[0])
                g.add_node(sw, kind="switch", label="PCIe switch", inferred=True)
                if upper:
                    port = inferred_port(pix[0])
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


def numa_node_named(topo: Topology, node: str, label: str, numa: object) -> str:
    if node not in topo.light:
        cpus = next((n.cpus for n in topo.snapshot.host.numa_nodes if n.id == numa), None)
        topo.light.add_node(node, kind="numa", label=label, cpus=cpus or "", inferred=True)
        topo.light.add_edge(HOST, node, kind="attach")
    return node


SETTLE_NUMA = "`lscpu`, `numactl -H` or `topomap probe` on the machine settles it"


class _Cells:
    """The matrix's cells by graph node pairs, named as the file names them (``GPU0–NIC6``)."""

    def __init__(self, level: dict[frozenset[str], int], label: dict[str, str]) -> None:
        self.level, self.label = level, label

    def name(self, a: str, b: str) -> str:
        x, y = sorted((a, b), key=natural_key)
        return f"{self.label.get(x, x)}–{self.label.get(y, y)}"

    def known_as(self, d: str) -> str:
        """The file's name of a device, with the NIC's own name where the legend gives one (``NIC1 (mlx5_1)``)."""
        label = self.label.get(d, d)
        own = nic_name(d)
        return f"{label} ({own})" if own is not None and own != label else label

    def cls(self, a: str, b: str) -> str:
        return str(PCIE_CLASSES[self.level[frozenset((a, b))] - 1])

    def between(self, devs: list[str], test: Callable[[int], bool]) -> list[tuple[str, str]]:
        """The pairs of ``devs`` whose class passes ``test`` (rank: PIX 1 … SYS 5), in the file's order."""
        ordered = sorted(set(devs), key=natural_key)
        return [
            (a, b)
            for i, a in enumerate(ordered)
            for b in ordered[i + 1 :]
            if frozenset((a, b)) in self.level and test(self.level[frozenset((a, b))])
        ]


class _Placement:
    """Which NUMA node (graph id) each host bridge hangs under: the node the NUMA column records for
    its devices, never one the file does not name. A bridge whose devices have no recorded node takes
    its side's one recorded node (NODE: the same NUMA node), else an unknown node. Where the classes
    contradict the column, the column wins and a note names the cell."""

    def __init__(
        self, topo: Topology, clusters: dict[int, list[list[str]]], numa_of: dict[str, int | None], cells: _Cells
    ) -> None:
        self.topo, self.clusters, self.numa_of, self.cells = topo, clusters, numa_of, cells
        self.key: dict[str, int | None] = {}  # host-bridge group (its first device) → NUMA node
        self.devices: dict[str, list[str]] = {}  # host-bridge group → its devices

    def numa_nodes(self) -> dict[str, str]:
        """Host-bridge group (its first device) → the graph node of its NUMA node."""
        sides = self.clusters[4]
        unknown_sides = [k for k, side in enumerate(sides) if self._side(side)]
        self._split_numa_notes()
        out: dict[str, str] = {}
        for k, side in enumerate(sides):
            heads = [c[0] for c in self.clusters[3] if c[0] in side]
            for head in heads:
                numa = self.key[head]
                if numa is not None:
                    out[head] = numa_node(self.topo, numa)
                elif len(unknown_sides) == 1:
                    out[head] = numa_node(self.topo, None)
                else:
                    part, n = unknown_sides.index(k) + 1, len(unknown_sides)
                    label = f"NUMA node unknown, part {part} of {n} (SYS to the other parts in the matrix)"
                    out[head] = numa_node_named(self.topo, numa_unknown_part(part), label, None)
            self._mark_node_links(sorted({out[h] for h in heads}, key=natural_key))
        return out

    def _side(self, side: list[str]) -> bool:
        """Key each host bridge of one side; True when one of them has no recorded NUMA node."""
        groups = [c for c in self.clusters[3] if c[0] in side]
        own = {c[0]: sorted({n for d in c if (n := self.numa_of.get(d)) is not None}) for c in groups}
        recorded = sorted({n for ns in own.values() for n in ns})
        for c in groups:
            ns = own[c[0]]
            self.devices[c[0]] = c
            if len(ns) > 1:
                self._bridge_conflict(c, ns)
            self.key[c[0]] = ns[0] if ns else (recorded[0] if len(recorded) == 1 else None)
        if len(recorded) > 1:
            self._node_conflict([d for c in groups for d in c], recorded)
        return any(self.key[c[0]] is None for c in groups)

    def _numa(self, d: str) -> int | None:
        return next(self.key[h] for h, c in self.devices.items() if d in c)

    def _where(self, d: str) -> str:
        """Why a device is on its NUMA node: the column, or a device under the same host bridge."""
        name = self.cells.label.get(d, d)
        own = self.numa_of.get(d)
        if own is not None:
            return f"{name} is on NUMA {own}"
        head = next(h for h, c in self.devices.items() if d in c)
        peer = next((x for x in self.devices[head] if self.numa_of.get(x) is not None), None)
        if peer is None:
            return f"{name} (NUMA node not recorded) is NODE or closer to devices of NUMA {self.key[head]}"
        return f"{name} shares a host bridge with {self.cells.label.get(peer, peer)} (NUMA {self.key[head]})"

    def _bridge_conflict(self, group: list[str], ns: list[int]) -> None:
        """PHB or closer between devices of different recorded NUMA nodes: one bridge, one node."""
        a = next(x for x in group if self.numa_of.get(x) == ns[0])
        b = next(y for y in group if self.numa_of.get(y) not in (None, ns[0]))
        self.topo.notes.append(
            f"the matrix contradicts the NUMA column: {self.cells.label.get(a, a)} (NUMA {ns[0]}) and "
            f"{self.cells.label.get(b, b)} (NUMA {self.numa_of[b]}) sit under one host bridge by their classes; "
            f"that bridge is drawn under NUMA {ns[0]}; {SETTLE_NUMA}"
        )

    def _node_conflict(self, devs: list[str], recorded: list[int]) -> None:
        """NODE (or closer) between devices of different recorded NUMA nodes: both nodes kept."""
        known = [d for d in devs if self._numa(d) is not None]
        pairs = [(a, b) for a, b in self.cells.between(known, lambda r: r <= 4) if self._numa(a) != self._numa(b)]
        joined = ", ".join(map(str, recorded))
        cell = ""
        if pairs:  # the plainest witness: both ends with a NUMA node of their own in the column
            a, b = min(pairs, key=lambda p: sum(self.numa_of.get(x) is None for x in p))
            cell = f"{self.cells.name(a, b)} is {self.cells.cls(a, b)} (one NUMA node), yet {self._where(a)} and "
            cell += f"{self._where(b)}; "
        self.topo.notes.append(
            f"the matrix contradicts the NUMA column: {cell}NUMA nodes {joined} kept as recorded. Devices NODE to "
            "each other across them may share one socket (sub-NUMA clustering, SNC/NPS), so the link between "
            f"these nodes need not be the inter-socket one; {SETTLE_NUMA}"
        )
        lost = [d for d in sorted(devs, key=natural_key) if self._numa(d) is None]
        if lost:
            names = ", ".join(self.cells.known_as(d) for d in lost)
            self.topo.notes.append(
                f"{names}: NUMA node not recorded, and the matrix puts them NODE to devices of NUMA nodes {joined}: "
                "drawn on an unknown NUMA node; `topomap probe` on the machine settles it"
            )

    def _split_numa_notes(self) -> None:
        """SYS between devices of one recorded NUMA node: kept on that node (no invented parts)."""
        by_numa: dict[int, list[str]] = {}
        for head, c in self.devices.items():
            numa = self.key[head]
            if numa is not None:
                by_numa.setdefault(numa, []).extend(c)
        for numa, members in sorted(by_numa.items()):
            pairs = self.cells.between(members, lambda r: r >= 5)
            if not pairs:
                continue
            a, b = pairs[0]
            more = f"; {len(pairs) - 1} more cells like it" if len(pairs) > 1 else ""
            where = [self.cells.label.get(d, d) if self.numa_of.get(d) is not None else self._where(d) for d in (a, b)]
            self.topo.notes.append(
                f"the matrix contradicts the NUMA column: {self.cells.name(a, b)} is SYS (crosses the interconnect "
                f"between NUMA nodes{more}), yet the column puts {where[0]} and {where[1]} on NUMA {numa}; kept on "
                f"NUMA {numa} as recorded. SYS within one NUMA node may mean sub-NUMA clustering (NPS/SNC) that "
                f"the column folds into one node, or firmware that reports the affinity wrongly; {SETTLE_NUMA}"
            )

    def _mark_node_links(self, nodes: list[str]) -> None:
        """The links between NUMA nodes of one side (the matrix puts their devices NODE to each other),
        marked ``matrix_class``, so a route over one can say the matrix does not call it inter-socket
        (build makes every link between NUMA nodes an smp link)."""
        for i, a in enumerate(nodes):
            for b in nodes[i + 1 :]:
                self.topo.light.add_edge(a, b, kind="smp", matrix_class="NODE")


def _join_by_numa(u: _Union, devs: list[str], numa_of: Mapping[str, object], level: dict[frozenset[str], int]) -> None:
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
    known = [(max_nvlinks(gen), why) for gen, why in map(model_nvlink_generation, gpus) if gen is not None]
    known = [(most, why) for most, why in known if most]
    if len(known) == len(gpus) and known:
        most, why = min(known)
        return most, f"links a GPU of {why} has"
    return max_nvlinks(), "links any GPU has (the model is not recorded)"


def _unrecorded_pairs(topo: Topology, gpus: list[str], nv: dict[frozenset[str], int]) -> list[frozenset[str]] | None:
    """The pairs of ``gpus`` whose path the source does not record (no pair, or a null path); None when
    one of them is recorded as something other than NV# (a PCIe class: not all-to-all NVLink)."""
    recorded = {frozenset((p.a, p.b)): p.path for p in topo.snapshot.pairs}
    out: list[frozenset[str]] = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            pair = frozenset((a, b))
            if pair in nv:
                continue
            if recorded.get(pair) is not None:
                return None
            out.append(pair)
    return out


def nvlinks_from_pairs(topo: Topology, by_id: dict[str, Gpu]) -> None:
    """NV# pairs from a source that lists no links (an imported matrix). Three or more GPUs joined
    all-to-all by the same NV# sit on an NVSwitch fabric: one inferred hub, not n(n-1)/2 edges.
    Other NV# pairs (a two-GPU bridge, the DGX-1 cube mesh) are direct links."""
    nv: dict[frozenset[str], int] = {}
    for p in topo.snapshot.pairs:
        n = nvlinks_of(p.path)
        if n > 0 and p.a in by_id and p.b in by_id:
            nv[frozenset((p.a, p.b))] = n
    gpus = sorted({x for pair in nv for x in pair}, key=natural_key)
    counts = set(nv.values())
    unrecorded = _unrecorded_pairs(topo, gpus, nv)
    full = len(gpus) >= 3 and len(counts) == 1 and unrecorded is not None
    if full and unrecorded is not None:
        n = counts.pop()
        peers = min(sum(1 for pair in nv if x in pair) for x in gpus)  # the fewest NV# peers any GPU has
        need, have, model = peers * n, *_links_per_gpu([by_id[x] for x in gpus])
        if need > have:  # more links than a GPU has: only a switch gives every pair n links
            topo.light.add_node(FABRIC, kind="nvswitch", label="NVSwitch fabric (inferred)", switches=0, inferred=True)
            for x in gpus:
                nvlink_edge(topo, x, FABRIC, n, by_id[x])
            shape = (
                f"all-to-all NV{n}: {peers}" if not unrecorded else f"NV{n} on every pair recorded: at least {peers}"
            )
            left = f" ({len(unrecorded)} pair(s) not recorded)" if unrecorded else ""
            topo.notes.append(
                f"{len(gpus)} GPUs {shape} peers × {n} links = {need} links a GPU, more than the {have} {model}: "
                f"an NVSwitch fabric (inferred){left}"
            )
            return
        if not unrecorded:  # within a GPU's links: direct links would print the same matrix
            topo.notes.append(
                f"{len(gpus)} GPUs all-to-all NV{n}: {peers} peers × {n} links = {need} links a GPU, within "
                f"the {have} {model}: drawn as direct links (inferred; an NVSwitch would print the same)"
            )
    for pair, n in sorted(nv.items(), key=lambda kv: sorted(kv[0], key=natural_key)):
        a, b = sorted(pair, key=natural_key)
        nvlink_edge(topo, a, b, n, by_id[a])
