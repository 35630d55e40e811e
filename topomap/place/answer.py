"""``place``: the best K GPUs of a snapshot for a pattern, with the reasons (the links inside the
group, what the next-best group would have lost, what could not be ranked) and the lines that pin a
job there. :func:`place_gpus` is the one entry; the search is :mod:`topomap.place.search`."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from topomap.base.errors import TopomapError
from topomap.base.notes import Note, said
from topomap.base.units import fmt_gbps
from topomap.graph import Topology
from topomap.model.facts import NicChoice, nic_family
from topomap.place.candidates import Candidate, PairLink, Skip, candidates
from topomap.place.lines import HIP_NOTE, Rank, command_lines, cuda_ordinals, gpu_cpus
from topomap.place.nics import assign
from topomap.place.search import PATTERNS, Found, Score, Space, build_space, search

BUSY_NOTE = (
    "busy GPUs: the snapshot records no processes or memory in use (topomap.snapshot/1 has no such "
    "field), so none was skipped as busy; check `nvidia-smi --query-compute-apps=gpu_bus_id,pid,used_memory "
    "--format=csv` before you start"
)


class PlaceError(TopomapError):
    """A placement that cannot be made: one line with the count available and why."""


@dataclass(frozen=True)
class ChosenGpu:
    gid: str
    index: int
    cuda_ordinal: int | None
    numa_node: int | None
    cpus: str | None
    cpus_source: str
    nic: str | None
    nic_path: str | None
    gdr: str  # yes / no / unknown
    nic_why: str


@dataclass
class PlaceResult:
    """The placement: the GPUs, their links and reasons, the skipped GPUs, the lines to use it."""

    origin: str
    pattern: str
    k: int
    nics: bool
    gpus: list[ChosenGpu]
    links: list[PairLink]
    slowest: PairLink | None
    ties: int
    runner_up: list[str] | None
    runner_lost: list[str]
    skipped: list[Skip]
    unranked: list[str]
    #: What the placement leaves to say: a note about one GPU of the group has that GPU as its ``gpu``
    #: subject (:func:`per_gpu`), so that the view says the GPUs that share its words once.
    notes: list[Note] = field(default_factory=list)
    commands: list[tuple[str, str]] = field(default_factory=list)
    #: The search ran to its end (``ties`` and the next best exact), else it stopped at its limit of
    #: ``search_limit`` steps and the group is the best found; ``slowest_proven``: no group has a
    #: faster slowest link, even then (:mod:`topomap.place.search`).
    search_complete: bool = True
    slowest_proven: bool = True
    search_steps: int = 0
    search_limit: int = 0

    def search_note(self) -> str | None:
        """What a search stopped at its limit means for the answer, in words; None when it finished."""
        if self.search_complete:
            return None
        slowest = "its slowest link is the best any group has" if self.slowest_proven else "nor is its slowest link"
        return (
            f"the search stopped at its limit of {self.search_limit:,} steps: this is the best group found, "
            f"not proven the best ({slowest}); the ties and the next best are among the groups examined"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "snapshot": self.origin,
            "pattern": self.pattern,
            "k": self.k,
            "gpus": [g.gid for g in self.gpus],
            "nics": [g.nic for g in self.gpus] if self.nics else None,
            "ranks": [
                {
                    "gpu": g.gid,
                    "index": g.index,
                    "cuda_ordinal": g.cuda_ordinal,
                    "numa_node": g.numa_node,
                    "cpus": g.cpus,
                    "cpus_source": g.cpus_source,
                    "nic": g.nic,
                    "nic_path": g.nic_path,
                    "gpudirect": g.gdr,
                }
                for g in self.gpus
            ],
            "links": [
                {"a": p.a, "b": p.b, "link": p.text, "known": p.certain, "unknown": p.unknown, "settle": p.settle}
                for p in self.links
            ],
            "slowest": self.slowest.text if self.slowest is not None else None,
            "ties": self.ties,
            "next_best": {"gpus": self.runner_up, "loses": self.runner_lost} if self.runner_up else None,
            "skipped": [{"gpu": s.gid, "reason": s.reason} for s in self.skipped],
            "unranked": self.unranked,
            "notes": [str(n) for n in self.notes],
            "commands": [{"for": what, "line": line} for what, line in self.commands],
            "search": {
                "complete": self.search_complete,
                "slowest_proven": self.slowest_proven,
                "steps": self.search_steps,
                "limit": self.search_limit,
            },
        }


def place_gpus(
    topo: Topology, k: int, pattern: str = "tp", nics: bool = False, exclude: set[str] | None = None
) -> PlaceResult:
    """The best ``k`` GPUs of one host for ``pattern`` (tp, ring, independent); raises
    :class:`PlaceError` when fewer GPUs are usable, saying how many and why."""
    if pattern not in PATTERNS:
        raise PlaceError(f"--pattern {pattern!r}: expected one of {', '.join(PATTERNS)}")
    snap = topo.snapshot
    excluded = exclude or set()
    unknown = sorted(excluded - {f"gpu{g.index}" for g in snap.gpus})
    if unknown:
        have = ", ".join(f"gpu{g.index}" for g in snap.gpus) or "none"
        raise PlaceError(f"--exclude {', '.join(unknown)}: no such GPU in {snap.source.origin}", hint=f"GPUs: {have}")
    cands, skipped = candidates(topo, excluded)
    if k < 1:
        raise PlaceError(f"--gpus {k}: ask for 1 GPU or more")
    if k > len(cands):
        why = "; ".join(f"{s.gid} {s.reason}" for s in skipped)
        have = f"{k} GPUs asked, {len(cands)} usable of {len(snap.gpus)} in {snap.source.origin}"
        raise PlaceError(
            have + (f" ({why})" if why else ""),
            hint=f"ask for --gpus {len(cands)} or fewer" if cands else "no GPU of this snapshot can be placed on",
        )
    space = build_space(topo, cands, pattern, nics)
    found = search(space, k)
    return _result(topo, space, found, k, skipped)


def _result(topo: Topology, space: Space, found: Found, k: int, skipped: list[Skip]) -> PlaceResult:
    chosen = [space.cands[i] for i in found.best]
    links = [space.link(i, j) for i, j in combinations(found.best, 2)] if space.linked else []
    ords = cuda_ordinals(topo.snapshot)
    picked, _, _ = assign([c.nics for c in chosen])
    gpus = [_chosen(topo, c, ords.by_gid.get(c.gid), nic) for c, nic in zip(chosen, picked)]
    runner = [space.cands[i].gid for i in found.runner_up] if found.runner_up is not None else None
    lost = _lost(space, found) if found.runner_up is not None else []
    res = PlaceResult(
        topo.snapshot.source.origin,
        space.pattern,
        k,
        space.nics,
        gpus,
        links,
        _slowest(space, found.best),
        found.ties,
        runner,
        lost,
        skipped,
        _unranked(links),
    )
    res.search_complete, res.slowest_proven = found.complete, found.slowest_proven
    res.search_steps, res.search_limit = found.steps, found.limit
    res.notes = _notes(space, gpus, ords.note, ords.by_gid)
    near = [tuple(o.nic.name for o in c.nics if o.nic is not None) for c in chosen]  # NCCL spreads over these
    ranks = [
        Rank(g.gid, g.index, g.cuda_ordinal, g.numa_node, g.cpus, g.nic, _rdma(topo, g.nic), _family(topo, g.nic), n)
        for g, n in zip(gpus, near)
    ]
    amd = bool(topo.snapshot.gpus) and all(g.vendor == "amd" for g in topo.snapshot.gpus)  # issue 35: HIP lines
    res.commands = command_lines(ranks, space.nics, not space.linked, amd=amd)
    if amd:
        res.notes = [Note(said(HIP_NOTE)) if n == ords.note else n for n in res.notes]
    return res


def _family(topo: Topology, name: str | None) -> str:
    """The NIC's family (model.facts.nic_family): the lines that choose it follow it (issue 30)."""
    nic = next((n for n in topo.snapshot.nics if n.name == name), None)
    return nic_family(nic).family if nic is not None else "unknown"


def _rdma(topo: Topology, name: str | None) -> bool:
    nic = next((n for n in topo.snapshot.nics if n.name == name), None)
    return nic is not None and nic.rdma and nic.kind != "ethernet"


def _chosen(topo: Topology, c: Candidate, ordinal: int | None, choice: NicChoice) -> ChosenGpu:
    g = topo.gpu(c.gid)
    assert g is not None
    cpus, source = gpu_cpus(topo.snapshot, g, c.numa_node)
    name = choice.nic.name if choice.nic is not None else None
    return ChosenGpu(
        c.gid, c.index, ordinal, c.numa_node, cpus, source, name, choice.path, choice.gdr.value, choice.gdr.why()
    )


def _slowest(space: Space, members: tuple[int, ...]) -> PairLink | None:
    if not space.linked or len(members) < 2:
        return None
    i, j = min(combinations(members, 2), key=lambda p: space.rank[p[0]][p[1]])
    return space.link(i, j)


def _unranked(links: list[PairLink]) -> list[str]:
    """For each fact the ranking could not use: how many pairs, and the command that settles it."""
    out: list[str] = []
    for fact in dict.fromkeys(p.unknown for p in links if p.unknown):
        pairs = [p for p in links if p.unknown == fact]
        settle = pairs[0].settle or ""
        out.append(
            f"could not be ranked on {fact}: unknown for {len(pairs)} of {len(links)} pair(s) in this group; "
            f"ranked on what is known (PCIe path class) instead — settle it with {settle}"
        )
    return out


def per_gpu(gid: str, words: str) -> Note:
    """A note about one GPU of the group ("gpu3: cores unknown: …"): ``gpu`` its subject, the rest its words."""
    return Note("{gpu}: " + said(words), gpu=gid)


def _notes(space: Space, gpus: list[ChosenGpu], ordinal_note: str, ords: dict[str, int | None]) -> list[Note]:
    notes = [Note(said(ordinal_note))]
    moved = [f"{g.gid} is CUDA {g.cuda_ordinal}" for g in gpus if g.cuda_ordinal not in (None, g.index)]
    if moved:
        notes.append(Note(said("CUDA ordinals differ from the nvidia-smi indices: " + ", ".join(moved))))
    notes.append(Note(said(BUSY_NOTE)))
    if space.nics:
        for g in gpus:
            if g.nic is None:
                notes.append(per_gpu(g.gid, g.nic_why or "no usable NIC recorded"))  # evidence says why, once
            elif g.gdr == "unknown":  # never said "without": unknown is unknown (issue 30)
                notes.append(per_gpu(g.gid, f"NIC {g.nic}, GPUDirect RDMA unknown — {g.nic_why}"))
            elif g.gdr != "yes":
                notes.append(per_gpu(g.gid, f"NIC {g.nic} without GPUDirect RDMA — {g.nic_why}"))
        names = [g.nic for g in gpus if g.nic]
        if len(set(names)) < len(names):
            notes.append(Note(said("some GPUs share a NIC (no other NIC as near to them is free in this group)")))
    for g in gpus:
        if g.cpus is None:
            notes.append(per_gpu(g.gid, g.cpus_source))
    return notes


def _lost(space: Space, found: Found) -> list[str]:
    """What the next-best group (strictly lower score) loses, at the first measure that decides."""
    assert found.runner_up is not None and found.runner_score is not None
    a, b = found.score, found.runner_score
    chosen, other = found.best, found.runner_up
    if a[0] != b[0]:
        mine, theirs = _slowest(space, chosen), _slowest(space, other)
        assert mine is not None and theirs is not None
        return [f"its slowest link is {theirs.text} ({theirs.a}–{theirs.b}) instead of {mine.text}"]
    if a[1] != b[1]:
        return [f"{b[1]} of its GPUs have a GPUDirect NIC of their own instead of {a[1]}"]
    if a[2] != b[2]:
        return [f"it uses {b[2]} distinct NIC(s) instead of {a[2]}"]
    if a[3] != b[3]:
        return [f"its NVLink total over the pairs is {fmt_gbps(b[3] / 1000)} GB/s instead of {fmt_gbps(a[3] / 1000)}"]
    if a[4] != b[4]:
        return [_fewer_best(space, a, b)]
    return [f"it spans {-b[5]} NUMA node(s) instead of {-a[5]}"]


def _fewer_best(space: Space, a: Score, b: Score) -> str:
    level = next(n for n, (x, y) in enumerate(zip(a[4], b[4])) if x != y)
    rank = space.levels - 1 - level
    example = next(pl for (i, j), pl in space.links.items() if space.rank[i][j] == rank)
    return f"{b[4][level]} of its pairs are {example.text} instead of {a[4][level]}"
