"""The hosts of a merged cluster in groups of alike hosts: the one grouping every view of a cluster
asks (``show``, ``matrix``, ``nccl``, ``check``, ``diff``, ``place``, ``report``; issue 34).

Hosts are alike when their snapshots are equal but for the fields that name a host
(:mod:`topomap.model.alike`): every view gives them the same answer, so a view works out the first
host of each group and says it once — "512 hosts alike (8 × NVIDIA H200, NV18 all pairs, 10 NICs)" —
then how each other group differs from the largest one, in the words of the cluster facts
(:mod:`topomap.cluster.shape`, :mod:`topomap.cluster.hostfacts`: the facts `topomap cluster`
compares) and, for a field no fact covers (a GPU lost from the bus, say), in the snapshot's own
field names. Grouping costs one small encode per host (:class:`topomap.model.alike.AlikeKeys`); the
facts are read once per group.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from topomap.base.errors import TopomapError
from topomap.base.links import is_xgmi
from topomap.cluster.differs import differs_text
from topomap.cluster.hostfacts import FACT_NAME, HOST_FACTS
from topomap.cluster.shape import PART_NAME, PARTS, Shape, part_text, shape_of
from topomap.model.alike import AlikeKeys, field_changes
from topomap.model.facts import gpu_model_name
from topomap.model.snapshot import Snapshot

#: The snapshot fields each compared fact is read from: a field change under a fact that already
#: says how the group differs is not said again in field names.
FACT_FIELDS: dict[str, tuple[str, ...]] = {
    "gpus": ("gpus[].name", "gpus[].memory_total_bytes", "gpus[].pci_device_id", "gpus[].derived"),
    "nvlink": ("pairs[].nvlinks", "pairs[].path"),
    "rails": ("pairs[].path", "pairs[].pcie_path"),
    "pcie_tree": ("pci",),
    "driver": ("software.driver_version",),
    "cuda": ("software.cuda_driver_version",),
    "pcie_widths": ("gpus[].pcie",),
    "nics": ("nics[].speed_gbit_s", "nics[].state"),
    "fabric": ("gpus[].fabric",),
    "health": ("findings",),
}
#: Field changes said per group before "… and N more" (`topomap diff` of two hosts lists every one).
FIELDS_SHOWN = 6


@dataclass(frozen=True)
class HostGroup:
    """Alike hosts: their label (A has the most hosts), names (sorted), indexes among the merged
    snapshot's members, the first of them (it stands for all: every view answers it once), the
    group in words, and how it differs from group A (empty for A)."""

    label: str
    hosts: tuple[str, ...]
    members: tuple[int, ...]
    first: Snapshot
    summary: str
    differs: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.hosts)

    def headline(self) -> str:
        """``512 hosts alike (8 × NVIDIA H200, NV18 all pairs, 10 NICs)``; one host: ``1 host (…)``."""
        n = len(self.hosts)
        return f"{n} hosts alike ({self.summary})" if n > 1 else f"1 host ({self.summary})"

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "hosts": list(self.hosts),
            "first": self.hosts[0],
            "summary": self.summary,
            "differs": list(self.differs),
        }


@dataclass(frozen=True)
class Grouping:
    """A merged snapshot's hosts in groups of alike hosts, the largest first."""

    origin: str
    groups: tuple[HostGroup, ...]
    names: tuple[str, ...]  # every host, in the merged snapshot's order
    label_of: dict[str, str]  # host name → its group's label
    by_label: dict[str, HostGroup] = field(default_factory=dict)

    @property
    def main(self) -> HostGroup:
        return self.groups[0]

    @property
    def others(self) -> tuple[HostGroup, ...]:
        return self.groups[1:]

    @property
    def differing(self) -> int:
        """How many hosts are outside group A."""
        return sum(len(g) for g in self.others)

    def group_of(self, name: str) -> HostGroup:
        return self.by_label[self.label_of[name]]

    def to_json(self) -> dict[str, Any]:
        """The grouping as every view's --json names it (``groups``): each group's label, hosts, first
        host, summary and differences; host names sorted within each group."""
        return {"hosts": len(self.names), "groups": [g.to_json() for g in self.groups]}


def group_hosts(merged: Snapshot) -> Grouping:
    """The groups of alike hosts of a merged snapshot (``topomap merge``); a host snapshot is one group."""
    hosts = list(merged.members) if merged.source.kind == "merge" else [merged]
    return group_named([(h.host.hostname or f"host{i}", h) for i, h in enumerate(hosts)], merged.source.origin)


def group_named(named: list[tuple[str, Snapshot]], origin: str) -> Grouping:
    """The groups of alike hosts among named host snapshots (a flow's hosts, say); names unique."""
    names = [n for n, _h in named]
    hosts = [h for _n, h in named]
    keys = AlikeKeys()
    by_key: dict[bytes, list[int]] = {}
    for i, h in enumerate(hosts):
        by_key.setdefault(keys.key(h), []).append(i)
    order = sorted(by_key.values(), key=lambda ix: (-len(ix), min(names[i] for i in ix)))
    first = [min(ix, key=lambda i: names[i]) for ix in order]
    facts = [_facts(hosts[i]) for i in first]
    groups: list[HostGroup] = []
    label_of: dict[str, str] = {}
    for k, (ix, f) in enumerate(zip(order, first)):
        label = group_label(k)
        differs = () if k == 0 else _differs(hosts[f], facts[k], hosts[first[0]], facts[0], len(order[0]))
        member_names = tuple(sorted(names[i] for i in ix))
        groups.append(
            HostGroup(label, member_names, tuple(sorted(ix)), hosts[f], _summary(hosts[f], facts[k]), differs)
        )
        for n in member_names:
            label_of[n] = label
    return Grouping(origin, tuple(groups), tuple(names), label_of, {g.label: g for g in groups})


def one_host(merged: Snapshot, name: str) -> Snapshot:
    """The member of a merged snapshot named ``name``; an unknown name is an error naming the closest."""
    hosts = list(merged.members) if merged.source.kind == "merge" else [merged]
    for h in hosts:
        if h.host.hostname == name:
            return h
    import difflib  # start-up: only the error path needs it

    have = [h.host.hostname or "?" for h in hosts]
    near = difflib.get_close_matches(name, have, n=3)
    hint = f"did you mean {', '.join(near)}?" if near else f"its hosts: {', '.join(have[:4])}, … ({len(have)} in all)"
    raise TopomapError(f"--host {name!r}: no host of that name in {merged.source.origin}", hint=hint)


# --- facts, summary, differences ----------------------------------------------------------------

_Facts = tuple[Shape, dict[str, object]]


def _facts(h: Snapshot) -> _Facts:
    """The shape and the per-host facts of one host (the facts `topomap cluster` compares)."""
    return shape_of(h), {hf.name: hf.read(h) for hf in HOST_FACTS}


def _summary(h: Snapshot, facts: _Facts) -> str:
    """The group in a few words: GPU count and model, NVLink, NICs, driver."""
    shape, per_host = facts
    bits = [_gpus(h), _xgmi(h) or _nvlink(shape, len(h.gpus)), f"{len(h.nics)} NIC{'s' if len(h.nics) != 1 else ''}"]
    if per_host["driver"] is not None:
        bits.append(f"driver {per_host['driver']}")
    return ", ".join(bits)


def _gpus(h: Snapshot) -> str:
    if not h.gpus:
        return "no GPU"
    models = Counter(gpu_model_name(g)[0] or "GPU of unknown model" for g in h.gpus if not g.lost)
    text = ", ".join(f"{n} × {m}" for m, n in models.items()) or "no GPU in view"
    lost = sum(g.lost for g in h.gpus)
    return text + (f" ({lost} lost from the bus)" if lost else "")


def _xgmi(h: Snapshot) -> str | None:
    """AMD GPUs (issue 35): ``XGMI all pairs`` or ``12 pairs XGMI``; None where no pair is on XGMI."""
    n = sum(1 for p in h.pairs if is_xgmi(p.path))
    if not n:
        return None
    gpus = len(h.gpus)
    return "XGMI all pairs" if n == gpus * (gpus - 1) // 2 else f"{n} pair{'s' if n != 1 else ''} XGMI"


def _nvlink(shape: Shape, gpus: int) -> str:
    """``NV18 all pairs``; ``27 pairs NV18, 1 pair NV12``; ``no NVLink``; ``NVLink unknown``."""
    if shape.nvlink is None:
        return "NVLink unknown"
    if not shape.nvlink:
        return "no NVLink"
    counts = Counter(n for _a, _b, n in shape.nvlink)
    if len(counts) == 1 and len(shape.nvlink) == gpus * (gpus - 1) // 2:
        return f"NV{next(iter(counts))} all pairs"
    return ", ".join(f"{c} pair{'s' if c != 1 else ''} NV{n}" for n, c in sorted(counts.items(), reverse=True))


def _differs(h: Snapshot, facts: _Facts, usual: Snapshot, usual_facts: _Facts, alike: int) -> tuple[str, ...]:
    """How a group's first host differs from group A's: each compared fact that differs (as `topomap
    cluster` words it), then each snapshot field no such fact covers."""
    than = f"the {alike} alike" if alike > 1 else "host A"
    out: list[str] = []
    covered: list[str] = []
    (shape, mine), (shape0, theirs) = facts, usual_facts
    for part in PARTS:
        a, b = shape.part(part), shape0.part(part)
        if a != b:
            show = partial(part_text, part)
            text = f"{show(a)} ({than}: {show(b)})" if part == "gpus" else _value(a, b, show, than)
            out.append(f"{PART_NAME[part]}: {text}")
            covered += FACT_FIELDS[part]
    for hf in HOST_FACTS:
        a, b = mine[hf.name], theirs[hf.name]
        if a != b:
            out.append(f"{FACT_NAME[hf.name]}: {_value(a, b, hf.text, than)}")
            covered += FACT_FIELDS[hf.name]
    raw = [c for c in field_changes(h, usual) if not _covered(c[0], covered)]
    out += [f"{_path_words(p)}: {_shown(a)} ({than}: {_shown(b)})" for p, a, b in raw[:FIELDS_SHOWN]]
    if len(raw) > FIELDS_SHOWN:
        out.append(f"and {len(raw) - FIELDS_SHOWN} more fields (topomap diff of two hosts lists every one)")
    return tuple(out) or ("nothing a view reads (only fields that name a host)",)


def _value(a: object, b: object, show: Any, than: str) -> str:
    if a is None:
        return f"unknown (not in its source) ({than}: {show(b)})"
    if b is None:
        return f"{show(a)} ({than}: unknown)"
    return differs_text(a, b, show, than)


def _covered(path: str, fields: list[str]) -> bool:
    plain = ".".join(p.split("[", 1)[0] + ("[]" if "[" in p else "") for p in path.split("."))
    return any(plain == f or plain.startswith(f + ".") or plain.startswith(f + "[") for f in fields)


def _path_words(path: str) -> str:
    """``gpus[gpu3].lost`` → ``gpu3 lost``; ``nics[mlx5_0].state`` → ``mlx5_0 state``."""
    words = []
    for part in path.split("."):
        name, _, item = part.partition("[")
        words.append(item.rstrip("]") if item else name.replace("_", " "))
    return " ".join(words)


def _shown(v: object) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    text = str(v)
    return text if len(text) <= 60 else text[:57] + "…"


def group_label(i: int) -> str:
    """A, B, … Z, AA, AB, …"""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = chr(65 + r) + out
    return out
