"""Join per-host snapshots into one cluster snapshot (``source.kind == "merge"``).

A cluster is probed with the scheduler people already have (``srun --ntasks-per-node=1
topomap probe -o $(hostname).json``, a Kubernetes Job, pdsh), then merged. Host names must be
unique: they are how flows, diffs and checks name the hosts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from typing import Any

from topomap import __version__
from topomap.base.errors import TopomapError
from topomap.base.notes import compress
from topomap.model.facts import fabric_clique, fabric_ready
from topomap.model.pack import collector_paused
from topomap.model.snapshot import Host, Snapshot, Source, hosts_of

# PCIe path classes from nearest to farthest (`nvidia-smi topo -m` legend).
_NEAR = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4}
NOTE = "consistency: "


def host_name(snap: Snapshot) -> str | None:
    return snap.host.hostname


def merge(snaps: list[tuple[str, Snapshot]]) -> Snapshot:
    """Merged snapshot of (file, snapshot) pairs; nested merges are flattened."""
    return merge_reported(snaps)[0]


def merge_reported(snaps: list[tuple[str, Snapshot]]) -> tuple[Snapshot, list[str]]:
    """:func:`merge`, and where the hosts differ (:func:`consistency`, one line each), as the merged
    snapshot's notes also record them. The cycle collector is held off meanwhile
    (topomap.model.pack.collector_paused): merging makes no cycle, and a collector pass over the hosts
    read before (a million objects at 10,000 hosts) finds none."""
    with collector_paused():
        return _merge(snaps)


def _merge(snaps: list[tuple[str, Snapshot]]) -> tuple[Snapshot, list[str]]:
    members: list[Snapshot] = []
    origin_of: dict[str, str] = {}
    for path, snap in snaps:
        for m in hosts_of(snap):
            name = host_name(m)
            if not name:
                raise TopomapError(
                    f"{path}: the snapshot names no host",
                    hint="set host.hostname (probe snapshots always have one; imports do not)",
                )
            if name in origin_of:
                raise TopomapError(
                    f"{path}: host {name!r} is also in {origin_of[name]}",
                    hint="each host once: probe every node and merge the per-node files",
                )
            origin_of[name] = path
            members.append(m)
    if len(members) < 2:
        raise TopomapError("merge needs snapshots of at least two hosts")
    members.sort(key=lambda m: host_name(m) or "")
    notes = [f"{host_name(m)}: {m.source.kind} {m.source.origin}" for m in members]
    findings = consistency(members)
    merged = Snapshot(
        source=Source(
            kind="merge",
            origin=f"merge of {len(members)} hosts",
            tool=f"topomap {__version__}",
            notes=notes + [NOTE + line for line in findings],
        ),
        host=Host(),
        members=members,
    )
    return merged, findings


def consistency(hosts: list[Snapshot]) -> list[str]:
    """Where hosts of one cluster differ from the rest, one line each (empty: consistent).

    Compared, each against the value most hosts have: the driver version, the GPU count and
    model, the GPU↔NIC rail layout (each GPU's nearest RDMA NICs by PCIe path class), each NIC's
    line rate and state, and the NVLink fabric cliques (keyed by cluster UUID and clique id). A
    fact a host's source does not carry is listed as unknown there, never as an outlier.

    Each host's facts are read in one pass over the hosts (:class:`_Row`), then compared: a
    cluster of 10,000 hosts is a heap of a million objects, and every further pass over them costs
    more per host than the last (issue 34: the merge step grew 33× for 10× the hosts)."""
    memo: dict[tuple[object, ...], object] = {}  # rails, once per distinct (pairs list, NICs)
    rows = [_Row(h, _rails_of(h, memo)) for h in hosts]
    names = [r.name for r in rows]
    lines: list[str] = []
    lines += _compare_lists(names, [r.driver for r in rows], "driver version")
    lines += _compare_lists(names, [r.gpus for r in rows], "GPU count")
    lines += _compare_lists(names, [r.model for r in rows], "GPU model")
    lines += _rail_lines(names, [r.rails for r in rows])
    lines += _nics(rows)
    lines += _fabric(rows)
    return lines


class _Row:
    """One host's compared facts, read once (:func:`consistency`)."""

    __slots__ = ("cliques", "down", "driver", "fabric", "gpus", "model", "name", "rails", "rates", "rdma")

    def __init__(self, h: Snapshot, rails: object) -> None:
        self.name = host_name(h) or "?"
        self.driver = h.software.driver_version
        self.gpus = len(h.gpus) if h.gpus else None
        self.model = _one({g.name for g in h.gpus if g.name})
        self.rails = rails
        self.rdma = {n.name for n in h.nics if n.rdma}
        rates: dict[str, float | None] = {}  # each NIC name's first NIC's rate
        for n in h.nics:
            rates.setdefault(n.name, n.speed_gbit_s)
        self.rates = rates
        self.down = [
            f"{n.name} {n.state}"
            for n in h.nics
            if n.rdma and n.state is not None and n.state.lower() not in ("active", "up")
        ]
        self.fabric, self.cliques = _fabric_of(h, self.name)


def _one(values: set[str]) -> str | None:
    return ", ".join(sorted(values)) if values else None


def _compare(
    hosts: list[Snapshot],
    what: str,
    fact: Callable[[Snapshot], Hashable | None],
    show: Callable[[Hashable], str] = str,
) -> list[str]:
    """Hosts whose ``fact`` differs from the most common value; hosts where it is unknown."""
    return _compare_values({host_name(h) or "?": fact(h) for h in hosts}, what, show)


def _compare_values(values: dict[str, Hashable | None], what: str, show: Callable[[Hashable], str] = str) -> list[str]:
    """Hosts (by name) whose value differs from the most common one; hosts where it is unknown."""
    return _compare_lists(list(values), list(values.values()), what, show)


def _compare_lists(names: list[str], values: list[Any], what: str, show: Callable[[Hashable], str] = str) -> list[str]:
    """:func:`_compare_values` over two parallel lists (the hosts' names, their values): a count of
    the values, then names only for the hosts that are not of the most common value."""
    counts = Counter(values)
    unknown_n = counts.pop(None, 0)
    lines = _unknown_on(names, values, what)
    if len(counts) <= 1:
        return lines
    common, n = counts.most_common(1)[0]
    known = len(values) - unknown_n
    odd: dict[Hashable, list[str]] = {}
    for name, v in zip(names, values):
        if v is not None and (v != common or 2 * n <= known):
            odd.setdefault(v, []).append(name)
    if 2 * n <= known:  # no value held by most hosts: each value with its hosts, none the odd one
        for value in sorted(odd, key=str):
            lines.append(f"{what}: {_names(sorted(odd[value]))} {show(value)} (no value held by most hosts)")
        return lines
    for value in sorted(odd, key=str):
        lines.append(f"{what}: {_names(sorted(odd[value]))} {show(value)}; {n} of {known} hosts {show(common)}")
    return lines


def _unknown_on(names: list[str], values: list[Any], what: str) -> list[str]:
    """The line naming the hosts where the value is unknown, when others know it."""
    unknown = sorted(n for n, v in zip(names, values) if v is None)
    if not unknown or len(unknown) == len(values):
        return []
    return [f"{what}: unknown on {_names(unknown)} (not in their source)"]


def _names(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def rails(h: Snapshot) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """Each GPU's nearest RDMA NICs (by name) and how near: ((gpu0, (PIX, mlx5_0)), ...): the host's rails
    (rail *i* is GPU *i*'s nearest NIC). None when the host has no RDMA NIC or no GPU↔NIC path."""
    nic_name = {f"nic{n.index}": n.name for n in h.nics if n.rdma}
    if not nic_name or not h.gpus:
        return None
    best: dict[str, tuple[int, list[str]]] = {}
    for p in h.pairs:
        if p.a in nic_name and p.b.startswith("gpu"):
            gpu, nic = p.b, p.a
        elif p.b in nic_name and p.a.startswith("gpu"):
            gpu, nic = p.a, p.b
        else:
            continue
        cls = p.pcie_path or p.path
        if cls not in _NEAR:
            continue
        rank = _NEAR[cls]
        have = best.get(gpu)
        if have is None or rank < have[0]:
            best[gpu] = (rank, [nic_name[nic]])
        elif rank == have[0]:
            have[1].append(nic_name[nic])
    if not best:
        return None
    classes = {v: k for k, v in _NEAR.items()}
    return tuple(
        (g, (classes[r], *sorted(names))) for g, (r, names) in sorted(best.items(), key=lambda kv: _index(kv[0]))
    )


def _rails_of(h: Snapshot, memo: dict[tuple[object, ...], object]) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """:func:`rails`, once per distinct (pairs list, NICs): hosts read from files of one build share
    their pairs list (topomap.model.pack), so a cluster of thousands works out a few layouts."""
    key = (id(h.pairs), tuple((n.index, n.name, n.rdma) for n in h.nics))
    if key not in memo:
        memo[key] = rails(h)
    value = memo[key]
    return value  # type: ignore[return-value]


def _index(dev: str) -> int:
    digits = "".join(c for c in dev if c.isdigit())
    return int(digits) if digits else -1


def _rail_lines(names: list[str], values: list[Any]) -> list[str]:
    """Hosts whose GPU→nearest-NIC layout differs from the most common one: the GPUs that differ."""
    lines = _compare_lists(names, values, "GPU↔NIC rail layout", lambda v: "")
    if len(set(values) - {None}) <= 1:
        return lines
    known = {k: v for k, v in zip(names, values) if v is not None}
    common, n = Counter(known.values()).most_common(1)[0]
    if 2 * n <= len(known):  # no layout held by most hosts: each host's, none the odd one
        out = _unknown_on(names, values, "GPU↔NIC rail layout")
        for name, layout in sorted(known.items()):
            shown = "; ".join(f"{g}→{show_rail(v)}" for g, v in layout[:4]) + ("; …" if len(layout) > 4 else "")
            out.append(f"GPU↔NIC rail layout: {name}: {shown} (no layout held by most hosts)")
        return out
    usual = dict(common)
    out = _unknown_on(names, values, "GPU↔NIC rail layout")
    for name, layout in sorted(known.items()):
        if layout == common:
            continue
        diffs = [
            f"{g}→{show_rail(v)} (most hosts: {show_rail(usual[g]) if g in usual else 'no such GPU'})"
            for g, v in layout
            if usual.get(g) != v
        ]
        diffs += [f"{g} missing (most hosts: {show_rail(v)})" for g, v in common if g not in dict(layout)]
        shown = "; ".join(diffs[:4]) + (f"; and {len(diffs) - 4} more GPUs" if len(diffs) > 4 else "")
        out.append(f"GPU↔NIC rail layout: {name} differs from {n} of {len(known)} hosts: {shown}")
    return out


def show_rail(value: tuple[str, ...]) -> str:
    cls, *names = value
    return f"{'/'.join(names)} {cls}"


def _nics(rows: list[_Row]) -> list[str]:
    """NIC line rates (per NIC name, against the most common rate) and ports not up."""
    lines: list[str] = []
    # hosts by their RDMA NICs and each NIC name's rate: a cluster has a few such kinds, and a NIC
    # whose rate is the same on every kind of host is the same on every host (nothing to say)
    kinds = {(frozenset(r.rdma), tuple(r.rates.items())) for r in rows}
    names = sorted({n for rdma, _rates in kinds for n in rdma})
    said: dict[str, list[str]] = {}  # one finding → the NICs it is true of (said once for them all)
    for name in names:
        if len({dict(rates).get(name) for rdma, rates in kinds if name in rdma}) <= 1:
            continue
        have = [r.name for r in rows if name in r.rdma]
        rates = [r.rates.get(name) for r in rows if name in r.rdma]
        for line in _compare_lists(have, rates, "NIC line rate", lambda v: f"{v:g} Gbit/s (as the host reports it)"):
            said.setdefault(line, []).append(name)
    for line, nics in said.items():
        who = f"NIC {nics[0]}" if len(nics) == 1 else f"NIC line rate of {len(nics)} NICs {compress(nics)}"
        lines.append(line.replace("NIC line rate", who if len(nics) > 1 else f"{who} line rate", 1))
    down: dict[str, list[str]] = {}
    for r in rows:
        for what in r.down:
            down.setdefault(what, []).append(r.name)
    for what, where in sorted(down.items()):
        lines.append(f"NIC state: {what} on {_names(sorted(where))}")
    return lines


def _fabric_of(h: Snapshot, name: str) -> tuple[list[str], set[tuple[str, int]]]:
    """One host's NVLink fabric: the lines about GPUs not ready, and its GPUs' cliques (cluster UUID,
    clique id)."""
    lines: list[str] = []
    keys: set[tuple[str, int]] = set()
    for g in h.gpus:
        f = g.fabric
        if f is None or f.state in (None, "not-supported"):
            continue
        ready = fabric_ready(h, g)
        if not ready.yes:
            lines.append(
                f"NVLink fabric: {name} gpu{g.index} state {f.state}, status {f.status or 'unknown'} "
                f"(not ready: {ready.why()}; `nvidia-smi -q -d FABRIC`; is nvidia-fabricmanager running?)"
            )
            continue
        key = fabric_clique(h, g)
        if key is not None:
            keys.add(key)
    if len(keys) > 1:
        shown = ", ".join(f"{c}/{q}" for c, q in sorted(keys))
        lines.append(f"NVLink fabric: {name} has GPUs in {len(keys)} cliques ({shown})")
    return lines, keys


def _fabric(rows: list[_Row]) -> list[str]:
    """NVLink fabric cliques keyed by (cluster UUID, clique id): members, and hosts that do not fit."""
    cliques: dict[tuple[str, int], set[str]] = {}
    lines: list[str] = []
    for r in rows:
        lines += r.fabric
        for key in r.cliques:
            cliques.setdefault(key, set()).add(r.name)
    if len(cliques) > 1:
        for (cluster, clique), members in sorted(cliques.items()):
            lines.append(f"NVLink fabric: clique {cluster}/{clique}: {_names(sorted(members))}")
    return lines
