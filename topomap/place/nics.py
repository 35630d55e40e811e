"""A NIC for each GPU of a group: each GPU may take any usable NIC at its best path class
(:func:`topomap.graph.evidence.nics_at_best_class`, with its GPUDirect answer), and the group's
assignment maximises first the GPUs with a GPUDirect NIC, then the distinct NICs; among the
assignments that reach both, GPU by GPU (in group order) the NIC with the fewest GPUs on it so far,
then the lowest NIC index, so GPUs that must share spread evenly. NCCL likewise spreads GPUs over
equally near NICs. The search scores a group by the first two measures only.

How: every NIC at one GPU's best class has the same path class, so GPUDirect differs between them
only where the source turns it off for one NIC; a GPU that has any GPUDirect option takes one (the
first measure). The most distinct NICs is then a maximum bipartite matching of GPUs to their allowed
NICs (GPUs left over share a NIC, which adds nothing); the assignment is built GPU by GPU, keeping a
NIC only when the rest can still reach the maximum. Polynomial in the group size and
the NICs per class, so no bound on either is needed.
"""

from __future__ import annotations

from collections.abc import Sequence

from topomap.model.facts import NicChoice


def allowed(options: Sequence[NicChoice]) -> tuple[NicChoice, ...]:
    """The options a GPU may take: the GPUDirect ones if any, else all (lowest NIC index first)."""
    gdr = tuple(o for o in options if o.gdr.yes)
    return gdr or tuple(options)


def _name(choice: NicChoice) -> str | None:
    return choice.nic.name if choice.nic is not None else None


def _matching(sets: Sequence[Sequence[str]], taken: frozenset[str]) -> int:
    """The most GPUs that each get a distinct NIC from their set, avoiding ``taken`` (Kuhn's
    augmenting paths)."""
    owner: dict[str, int] = {}

    def augment(g: int, seen: set[str]) -> bool:
        for name in sets[g]:
            if name in taken or name in seen:
                continue
            seen.add(name)
            if name not in owner or augment(owner[name], seen):
                owner[name] = g
                return True
        return False

    return sum(augment(g, set()) for g in range(len(sets)))


def assign(options: Sequence[Sequence[NicChoice]]) -> tuple[tuple[NicChoice, ...], int, int]:
    """One NIC per GPU (``options[i]``: GPU i's NICs at its best class, lowest index first, never
    empty) → (the choices, GPUs with GPUDirect, distinct NICs)."""
    choices = [allowed(o) for o in options]
    names = [[n for n in dict.fromkeys(_name(c) for c in cs) if n is not None] for cs in choices]
    best = _matching(names, frozenset())
    out: list[NicChoice] = []
    used: set[str] = set()
    load: dict[str | None, int] = {}
    for g, cs in enumerate(choices):
        rest = names[g + 1 :]
        for c in sorted(cs, key=lambda c: load.get(_name(c), 0)):  # stable: lowest index among the least used
            name = _name(c)
            fixed = used | ({name} if name is not None else set())
            if len(fixed) + _matching(rest, frozenset(fixed)) == best:
                out.append(c)
                used = fixed
                load[name] = load.get(name, 0) + 1
                break
        else:  # unreachable: the matching's own choice for this GPU always qualifies
            out.append(cs[0])
    return tuple(out), sum(c.gdr.yes for c in out), best
