"""The search for the best group of K GPUs under the objective of :mod:`topomap.place.objective`:
exact where it can finish, bounded always (issue 36 item 2: `place --gpus 8` on a 64-GPU `topo -m`
of mixed links ran over 60 s, `check` with `gpu_groups: {k: 16}` on 32 GPUs too).

How it stays fast:

- **Classes**: interchangeable GPUs (:func:`topomap.place.objective.classes`) are one choice with a
  count (an NVSwitch domain of 72 GPUs is one class), and a group of counts stands for all the groups
  it makes (``ties`` counts them).
- **Thresholds**: the first measure is the slowest link, so the search runs one pass per link rank,
  best first: pass θ keeps only the classes linked to every class chosen at rank θ or better (a
  candidate set, as bitmasks), and scores the groups whose slowest link is exactly θ. The first pass
  that finds a group proves the best slowest link; a pass that also finds a group scoring less ends
  the search (every group of a lower pass scores less than both).
- **Bounds**: a branch is cut when its candidates cannot fill the group (their capacity, then a greedy
  colouring: classes that cannot pair with each other give at most one class's members), and when an
  upper bound of every group it holds (slowest so far; GPUDirect, NICs, NVLink total and pairs per rank
  as if every pair still to come were the best) scores below the runner-up found so far.
- **A limit**: at most :data:`SEARCH_LIMIT` steps. A search that needs more stops and says so
  (:attr:`Found.complete` false): the group is then the best found, its ``ties`` and next best are among
  the groups examined, and its slowest link is still proven (:attr:`Found.slowest_proven`) once any
  group was found, since the passes above it had ended with none.

Every step is deterministic, so the same input gives the same answer on every machine.
"""

from __future__ import annotations

import math
from itertools import combinations

from topomap.place.nics import allowed
from topomap.place.objective import (
    LINK_PATTERNS,
    PATTERNS,
    Found,
    Score,
    Space,
    State,
    build_space,
    classes,
    group_score,
    nic_terms,
)

__all__ = [
    "LINK_PATTERNS",
    "PATTERNS",
    "SEARCH_LIMIT",
    "Found",
    "Score",
    "Space",
    "build_space",
    "group_score",
    "search",
]

#: Search steps (a group of classes tried, bounded first) one search may take: about 3 s on this
#: project's 2-core machine, whatever the input.
SEARCH_LIMIT = 200_000


def _bits(mask: int) -> list[int]:
    """The positions of the set bits of ``mask``, lowest first."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class _Stop(Exception):
    """The step limit is reached."""


def search(space: Space, k: int, limit: int | None = None) -> Found:
    """The best group of ``k`` candidates under :func:`group_score`, by classes and passes (module
    docstring), within ``limit`` steps (default :data:`SEARCH_LIMIT`): exact when the answer says
    :attr:`Found.complete`."""
    return _Engine(space, k, classes(space), SEARCH_LIMIT if limit is None else limit).run()


class _Engine:
    """One search: the classes' ranks, NVLink figures and NIC facts, then the passes."""

    def __init__(self, space: Space, k: int, groups: list[list[int]], limit: int) -> None:
        self.space, self.k, self.groups, self.limit = space, k, groups, limit
        self.linked = space.linked and k >= 2
        n = len(groups)
        reps = [g[0] for g in groups]
        self.size = [len(g) for g in groups]
        top = space.levels
        if self.linked:
            self.crank = [[space.rank[reps[q]][reps[r]] if q != r else top for r in range(n)] for q in range(n)]
            self.intra = [space.rank[g[0]][g[1]] if len(g) > 1 else top for g in groups]
            self.cnv = [
                [space.link(reps[q], reps[r]).nvlink_mgbps if q != r else 0 for r in range(n)] for q in range(n)
            ]
            self.intra_nv = [space.link(g[0], g[1]).nvlink_mgbps if len(g) > 1 else 0 for g in groups]
        self.gdr = [allowed(space.cands[r].nics)[0].gdr.yes if space.nics else False for r in reps]
        self.numa = [space.cands[r].numa_node for r in reps]
        self.state = State()
        self.steps = 0
        self.chosen: list[tuple[int, int]] = []  # (class, count), in the order chosen
        self.compat: list[int] = []
        self.cap: list[int] = []
        self.nv = 0
        self.hist = [0] * space.levels
        self.gain = [0] * n
        self.best_links: list[list[int]] = []
        self.caps_one = False

    # --- the passes ---------------------------------------------------------------------------

    def run(self) -> Found:
        complete = True
        try:
            if not self.linked:
                self._pass(None)
            else:
                for theta in range(self.space.levels - 1, -1, -1):
                    self._pass(theta)
                    if self.state.best is not None and self.state.second is not None:
                        break
        except _Stop:
            complete = False
        st = self.state
        if st.best is None:  # stopped before any group: the greedy one, said to be no more than that
            members = self._greedy()
            return Found(members, group_score(self.space, members), 1, None, None, False, False, self.steps, self.limit)
        score, best = st.best
        second = st.second
        return Found(
            best,
            score,
            st.ties,
            second[1] if second else None,
            second[0] if second else None,
            complete,
            True,  # the passes above the best one ended with no group (module docstring)
            self.steps,
            self.limit,
        )

    def _pass(self, theta: int | None) -> None:
        """Every group whose pairs are all at rank ``theta`` or better, scored when its slowest link is
        ``theta`` (``None``: no link objective, every group)."""
        n = len(self.groups)
        everyone = (1 << n) - 1
        if theta is None:
            self.compat = [everyone & ~(1 << q) for q in range(n)]
            self.cap = list(self.size)
        else:
            self.compat = [sum(1 << r for r in range(n) if r != q and self.crank[q][r] >= theta) for q in range(n)]
            self.cap = [self.size[q] if self.intra[q] >= theta else 1 for q in range(n)]
            self.best_links = [self._best_links(q, theta) for q in range(n)]
        self.caps_one = all(c == 1 for c in self.cap)
        self._dfs(everyone, self.k, self.space.levels, theta)

    def _best_links(self, q: int, theta: int) -> list[int]:
        """For ``m`` below K: the sum of the ``m`` best NVLink figures (MB/s) from a member of class ``q``
        to other members it may pair with at ``theta``."""
        row = [self.cnv[q][r] for r in range(len(self.groups)) if r != q and self.crank[q][r] >= theta
               for _ in range(min(self.size[r], self.k))]  # fmt: skip
        row += [self.intra_nv[q]] * (min(self.size[q], self.k) - 1 if self.intra[q] >= theta else 0)
        row.sort(reverse=True)
        sums = [0]
        for x in row[: self.k]:
            sums.append(sums[-1] + x)
        return sums + [sums[-1]] * (self.k + 1 - len(sums))

    def _dfs(self, cands: int, left: int, slowest: int, theta: int | None) -> None:
        self.steps += 1
        if self.steps > self.limit:
            raise _Stop
        if left == 0:
            if theta is None or slowest == theta:
                self._offer(slowest)
            return
        if self._cannot_fill(cands, left) or self._beaten(cands, slowest, left):
            return
        while cands:
            low = cands & -cands
            q = low.bit_length() - 1
            cands ^= low
            self.steps += len(self.chosen)
            link = min((self.crank[q][r] for r, _ in self.chosen), default=self.space.levels) if self.linked else 0
            for c in range(min(left, self.cap[q]), 0, -1):
                inner = self.intra[q] if self.linked and c >= 2 else self.space.levels
                self._add(q, c, 1)
                self._dfs(cands & self.compat[q], left - c, min(slowest, link, inner), theta)
                self._add(q, c, -1)

    def _add(self, q: int, c: int, sign: int) -> None:
        """Class ``q`` with ``c`` members joins the group (``sign`` 1) or leaves it (-1): the NVLink total,
        the pairs per rank and each class's NVLink gain towards the group follow."""
        if sign < 0:
            self.chosen.pop()
        if self.linked:
            for r, d in self.chosen:
                self.hist[self.crank[q][r]] += sign * c * d
                self.nv += sign * c * d * self.cnv[q][r]
            if c >= 2:
                self.hist[self.intra[q]] += sign * c * (c - 1) // 2
                self.nv += sign * c * (c - 1) // 2 * self.intra_nv[q]
            row = self.cnv[q]
            gain = self.gain
            self.steps += len(gain) // 16
            for j in range(len(gain)):
                gain[j] += sign * c * row[j]
            gain[q] += sign * c * self.intra_nv[q]
        if sign > 0:
            self.chosen.append((q, c))

    # --- bounds -------------------------------------------------------------------------------

    def _cannot_fill(self, cands: int, left: int) -> bool:
        """The candidates cannot make ``left`` more members: their capacity, then a greedy colouring
        (classes that cannot pair with one another give at most one class's members)."""
        count = cands.bit_count()
        self.steps += count // 8
        total = count if self.caps_one else sum(self.cap[q] for q in _bits(cands))
        if total < left:
            return True
        if not self.linked:
            return False
        total, rest, work = 0, cands, 0
        while rest and total < left:
            most, free = 0, rest
            while free:
                low = free & -free
                q = low.bit_length() - 1
                most = max(most, self.cap[q])
                rest &= ~low
                free &= ~low & ~self.compat[q]  # the colour's classes pair with none of each other
                work += 1
            total += most
        self.steps += work // 8
        return total < left

    def _beaten(self, cands: int, slowest: int, left: int) -> bool:
        """Every group below this branch scores less than the runner-up found so far: compared measure
        by measure with an upper bound of each (slowest so far; GPUDirect and distinct NICs as if every
        member to come added one; the NVLink total as if each member to come brought its gain towards
        the group and half its best links to the others; every pair to come at the best rank)."""
        second = self.state.second
        if second is None:
            return False
        bar = second[0]
        if slowest != bar[0] or not self.linked:
            return slowest < bar[0]
        chosen = self.chosen
        if self.space.nics:
            gdr = sum(c for q, c in chosen if self.gdr[q]) + min(
                left, sum(self.cap[q] for q in _bits(cands) if self.gdr[q])
            )
            if (gdr, self.k) != bar[1:3]:
                return (gdr, self.k) < bar[1:3]
        twice = 2 * self.nv + self._future_nv(cands, left)
        if twice != 2 * bar[3]:
            return twice < 2 * bar[3]
        hist = list(self.hist)
        hist[-1] += left * sum(c for _, c in chosen) + left * (left - 1) // 2  # every pair to come at the best rank
        nodes = {self.numa[q] for q, _ in chosen if self.numa[q] is not None}
        numa = len(nodes) + sum(c for q, c in chosen if self.numa[q] is None)
        return (tuple(reversed(hist)), -numa) < bar[4:]

    def _future_nv(self, cands: int, left: int) -> int:
        """Twice an upper bound of the NVLink total the ``left`` members still to come add (MB/s): the
        ``left`` best of (twice the gain towards the group + the sum of the best ``left - 1`` links to
        any candidate) over the candidates' members."""
        values: list[int] = []
        for q in _bits(cands):
            values += [2 * self.gain[q] + self.best_links[q][left - 1]] * min(self.cap[q], left)
        self.steps += len(values) // 8
        values.sort(reverse=True)
        return sum(values[:left])

    # --- groups -------------------------------------------------------------------------------

    def _offer(self, slowest: int) -> None:
        """Score the group of the counts chosen (the same score :func:`group_score` gives it, from the
        sums kept on the way down) and offer it with the number of groups its counts stand for."""
        members = tuple(sorted(m for q, c in self.chosen for m in self.groups[q][:c]))
        many = math.prod(math.comb(self.size[q], c) for q, c in self.chosen)
        if not self.linked:  # no pair (one GPU, or no link objective): the definition is cheap
            score = group_score(self.space, members)
        else:
            gdr, distinct = nic_terms(self.space, members)
            nodes = {self.numa[q] for q, _ in self.chosen if self.numa[q] is not None}
            numa = len(nodes) + sum(c for q, c in self.chosen if self.numa[q] is None)
            score = (slowest, gdr, distinct, self.nv, tuple(reversed(self.hist)), -numa)
        self.steps += self.k
        self.state.offer(score, members, many)

    def _greedy(self) -> tuple[int, ...]:
        """A group built one GPU at a time, each the one whose slowest link to those taken is best
        (lowest index on a tie), from the best-linked pair: for a search stopped before any group."""
        space = self.space
        n = len(space.cands)
        if not space.linked or self.k < 2:
            return tuple(range(self.k))
        first = max(combinations(range(n), 2), key=lambda p: (space.rank[p[0]][p[1]], -p[0], -p[1]))
        group = [first[0], first[1]]
        while len(group) < self.k:
            rest = [i for i in range(n) if i not in group]
            group.append(max(rest, key=lambda i: (min(space.rank[i][j] for j in group), -i)))
        return tuple(sorted(group))
