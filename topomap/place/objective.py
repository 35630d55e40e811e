"""The objective of a placement: what makes one group of K GPUs better than another, and which GPUs
are interchangeable. The search for the best group is :mod:`topomap.place.search`.

Objective (larger is better, compared in this order):

- ``tp`` / ``ring``: the slowest link inside the group (the pair ranks of
  :mod:`topomap.place.candidates`: NVLink by bundle bandwidth, then PCIe P2P by class PIX < … <
  SYS, then staged through host memory); with ``--nics``, under the group's NIC assignment
  (:mod:`topomap.place.nics`: each GPU one of its NICs at the best path class), the GPUs with a
  GPUDirect NIC (PIX/PXB), then the distinct NICs; the total (NVLink bandwidth summed over the
  pairs, then the pairs on each link rank, best rank first); then the fewest NUMA nodes.
- ``independent``: with ``--nics`` the GPUDirect NICs, then the distinct NICs; no link objective.

Ties go to the lowest indices. :func:`group_score` scores one group from its pairs (the
definition, which a brute force over every K-subset uses); :func:`classes` groups the GPUs whose link
to every other GPU and whose own facts are the same (every GPU of an NVSwitch fabric is alike), so a
search runs over how many GPUs to take from each class and takes the lowest indices of each.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from topomap.graph import Topology
from topomap.place.candidates import Candidate, PairLink, pair_link, rank_nvlink
from topomap.place.nics import allowed, assign

#: (slowest link rank, GPUDirect NICs, distinct NICs, NVLink total MB/s, pairs per rank best first, -NUMA nodes)
Score = tuple[int, int, int, int, tuple[int, ...], int]
LINK_PATTERNS = ("tp", "ring")
PATTERNS = ("tp", "ring", "independent")


@dataclass
class Space:
    """The candidates with every pair's link and its dense rank (0 worst; ``levels`` ranks)."""

    cands: list[Candidate]
    links: dict[tuple[int, int], PairLink]
    rank: list[list[int]]
    levels: int
    pattern: str
    nics: bool

    @property
    def linked(self) -> bool:
        return self.pattern in LINK_PATTERNS

    def link(self, i: int, j: int) -> PairLink:
        return self.links[(i, j) if i < j else (j, i)]


def build_space(topo: Topology, cands: list[Candidate], pattern: str, nics: bool) -> Space:
    """Rank every pair of candidates (only for the link patterns)."""
    n = len(cands)
    links: dict[tuple[int, int], PairLink] = {}
    if pattern in LINK_PATTERNS:
        for i, j in combinations(range(n), 2):
            links[(i, j)] = pair_link(topo, cands[i].gid, cands[j].gid)
        links = dict(zip(links, rank_nvlink(list(links.values()))))  # overlapping figures share a rank
    keys = sorted({pl.key for pl in links.values()})
    dense = {k: r for r, k in enumerate(keys)}
    rank = [[-1] * n for _ in range(n)]
    for (i, j), pl in links.items():
        rank[i][j] = rank[j][i] = dense[pl.key]
    return Space(cands, links, rank, len(keys), pattern, nics)


def nic_terms(space: Space, members: tuple[int, ...]) -> tuple[int, int]:
    """GPUs with a GPUDirect NIC and distinct NICs under the group's NIC assignment."""
    if not space.nics:
        return 0, 0
    _, gdr, distinct = assign([space.cands[i].nics for i in members])
    return gdr, distinct


def numa_count(space: Space, members: tuple[int, ...]) -> int:
    nodes = [space.cands[i].numa_node for i in members]
    return len({x for x in nodes if x is not None}) + sum(x is None for x in nodes)


def group_score(space: Space, members: tuple[int, ...]) -> Score:
    """The objective of one group (positions in ``space.cands``), straight from its pairs."""
    gdr, distinct = nic_terms(space, members)
    if not space.linked:
        return (0, gdr, distinct, 0, (), 0)
    pairs = list(combinations(members, 2))
    slowest = min((space.rank[i][j] for i, j in pairs), default=space.levels)
    hist = [0] * space.levels
    for i, j in pairs:
        hist[space.rank[i][j]] += 1
    nv_total = sum(space.link(i, j).nvlink_mgbps for i, j in pairs)
    return (slowest, gdr, distinct, nv_total, tuple(reversed(hist)), -numa_count(space, members))


@dataclass
class Found:
    """The best group (positions), its score, how many groups tie with it, and the best group
    scoring strictly less (None when every group ties). ``complete``: the search ran to its end, so
    the group is the best there is and ``ties`` and the runner-up are exact; else it stopped after
    ``steps`` (its ``limit``) and the group is the best found. ``slowest_proven``: no group has a
    faster slowest link (proven even where the rest of the search stopped)."""

    best: tuple[int, ...]
    score: Score
    ties: int
    runner_up: tuple[int, ...] | None
    runner_score: Score | None
    complete: bool = True
    slowest_proven: bool = True
    steps: int = 0
    limit: int = 0


def classes(space: Space) -> list[list[int]]:
    """Interchangeable candidates: same own facts, same link rank to every other candidate."""
    out: list[list[int]] = []
    for i, c in enumerate(space.cands):
        own = _own(space, c)
        for cls in out:
            if _own(space, space.cands[cls[0]]) == own and _alike(space, i, cls[0]):
                cls.append(i)
                break
        else:
            out.append([i])
    return out


def _alike(space: Space, i: int, j: int) -> bool:
    """Swapping ``i`` and ``j`` changes no pair rank (the link patterns read pair ranks)."""
    if not space.linked:
        return True
    ri, rj = space.rank[i], space.rank[j]
    return all(ri[k] == rj[k] for k in range(len(ri)) if k != i and k != j)


def _own(space: Space, c: Candidate) -> tuple[object, ...]:
    """A candidate's own facts the objective reads: NUMA node (link patterns) and its NIC options.
    Options no other candidate has count only as (GPUDirect, a NIC at all); shared ones by name, so
    two candidates are alike when every group's NIC assignment scores the same with either."""
    numa: tuple[object, ...] = (c.numa_node,) if space.linked else ()
    if not space.nics:
        return numa
    mine = allowed(c.nics)
    names = {n for n in c.nic_names if n is not None}
    shared = any(x is not c and names & set(x.nic_names) for x in space.cands)
    if not shared:
        return (*numa, "own", mine[0].gdr.yes, any(o.nic is not None for o in mine))
    return (*numa, "shared", tuple((o.nic.name if o.nic else None, o.gdr.yes) for o in c.nics))


class State:
    """Best and runner-up (score, members), and how many groups tie with the best."""

    def __init__(self) -> None:
        self.best: tuple[Score, tuple[int, ...]] | None = None
        self.second: tuple[Score, tuple[int, ...]] | None = None
        self.ties = 0

    def offer(self, score: Score, members: tuple[int, ...], many: int) -> None:
        if self.best is None or score > self.best[0]:
            self.second, self.best, self.ties = self.best, (score, members), many
        elif score == self.best[0]:
            self.ties += many
            if members < self.best[1]:
                self.best = (score, members)
        elif self.second is None or score > self.second[0] or (score == self.second[0] and members < self.second[1]):
            self.second = (score, members)
