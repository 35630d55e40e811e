"""Mapped arrows collapsed into bundles: one per flow arrow between two steps, host pair and medium.

A flow arrow between replicated steps (a step on eight GPUs, an all-to-all exchange) becomes
many concrete arrows. Every picture and the summarised `map` show them as one bundle —
"28× gpu-link · nvswitch NV18 · 450 GB/s spec" — with the range of bandwidths when they differ.
Pure data: no rich, no Graphviz. Relies only on MappedArrow's fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from topomap.base.units import fmt_bytes, fmt_gbps, fmt_seconds
from topomap.flow import Placement
from topomap.flow.mapping import FlowMap, MappedArrow
from topomap.graph.nodeid import hop_node, nic_name
from topomap.render.notes import NoteLine, compress, group_notes, ranges


def compress_places(places: Sequence[Placement], with_host: bool = True) -> str:
    """`lot:gpu0, lot:gpu1, … lot:gpu7` → `lot:gpu0–7`; other places listed once each, in order.
    ``with_host`` False: without the `lot:` of a GPU span (places on one host)."""
    gpus: dict[str, list[int]] = {}
    order: list[tuple[str, str]] = []  # ("gpu", host) for a host's GPU span, ("", label) for another place
    for p in places:
        n = p.gpu_index()
        if n is not None:
            if p.host not in gpus:
                gpus[p.host] = []
                order.append(("gpu", p.host))
            if n not in gpus[p.host]:
                gpus[p.host].append(n)
        elif ("", item := p.label() if with_host or p.gpu is None else p.gpu) not in order:
            order.append(("", item))
    out: list[str] = []
    for kind, what in order:
        if kind == "gpu":
            out.append((f"{what}:" if with_host else "") + "gpu" + ranges(sorted(gpus[what])).replace(", ", ","))
        else:
            out.append(what)
    return ", ".join(out)


@dataclass
class Bundle:
    """Concrete arrows of one flow arrow between two steps on one host pair, over one medium."""

    src_step: str
    dst_step: str
    src_host: str
    dst_host: str
    medium: str
    arrows: list[MappedArrow] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.arrows)

    @property
    def label(self) -> str | None:
        """The flow arrow's own label(s), once each."""
        seen = list(dict.fromkeys(a.label for a in self.arrows if a.label))
        return " / ".join(seen) if seen else None

    @property
    def both_ways(self) -> bool:
        return any(a.both_ways for a in self.arrows)

    @property
    def slowest(self) -> MappedArrow:
        """The arrow with the lowest known bandwidth (an unknown one when none is known)."""
        known = [a for a in self.arrows if a.bandwidth_gbps is not None]
        return min(known, key=lambda a: a.bandwidth_gbps or 0.0) if known else self.arrows[0]

    def via_text(self) -> str:
        """`nvswitch NV18`, `pcie PHB/SYS`, `ethernet NET`: how the arrows travel."""
        vias = list(dict.fromkeys(a.via for a in self.arrows))
        paths = list(dict.fromkeys(a.path for a in self.arrows if a.path))
        text = "/".join(vias)
        if paths:
            text += " " + "/".join(paths)
        return text

    def bandwidth_text(self) -> str:
        known = [a for a in self.arrows if a.bandwidth_gbps is not None]
        unknown = len(self.arrows) - len(known)
        if not known:
            return "bandwidth unknown"
        sources = "/".join(dict.fromkeys(a.bandwidth_source for a in known))
        lo = min(a.bandwidth_gbps or 0.0 for a in known)
        hi = max(a.bandwidth_gbps or 0.0 for a in known)
        pre = "≥ " if any(a.lower_bound for a in known) else ""
        text = (
            f"{pre}{fmt_gbps(lo)} GB/s {sources}" if lo == hi else f"{pre}{fmt_gbps(lo)}–{fmt_gbps(hi)} GB/s {sources}"
        )
        if unknown:
            text += f", {unknown} unknown"
        return text

    def volume_text(self) -> str:
        """Volume of one arrow and the time of the slowest (`1 GiB in 2.2 ms`, `each` for bundles)."""
        a = self.slowest
        if a.volume_bytes is None:
            return ""
        text = fmt_bytes(a.volume_bytes) + (" each" if self.count > 1 else "")
        if a.seconds is not None:
            text += f" in {fmt_seconds(a.seconds)}" + (" (slowest)" if self.count > 1 else "")
        return text

    def nics(self) -> list[str]:
        """NICs the arrows leave and enter by (network bundles), by device name."""
        out, into = self.nic_ends()
        return list(dict.fromkeys([*out, *into]))

    def nic_ends(self) -> tuple[list[str], list[str]]:
        """The NICs the arrows leave by and those they enter by (network bundles), by device name, each
        once: a route goes through one NIC on each side."""
        out: list[str] = []
        into: list[str] = []
        for a in self.arrows:
            nics = [n for n in (nic_name(hop_node(hop)) for hop in a.route) if n is not None]
            if nics:
                out.append(nics[0])
            if len(nics) > 1:
                into.append(nics[-1])
        return list(dict.fromkeys(out)), list(dict.fromkeys(into))

    def nic_text(self, names: dict[str, str] | None = None) -> str:
        """The NICs in words: one arrow's route (``NIC mlx5_0 → mlx5_7``), or a bundle's NIC sets
        (``via 8 NICs mlx5_0, mlx5_3–9 → 8 NICs mlx5_0, mlx5_3–9``), never a list that reads as a route."""
        out, into = ([(names or {}).get(n, n) for n in side] for side in self.nic_ends())
        if not out and not into:
            return ""
        if len(out) <= 1 and len(into) <= 1:
            return "NIC " + " → ".join([*out, *into])

        def nic_set(side: list[str]) -> str:
            return compress(side) if len(side) == 1 else f"{len(side)} NICs {compress(side)}"

        if not into:
            return f"via {nic_set(out)}"
        return f"via {nic_set(out)} → {nic_set(into)}"

    def summary(self) -> str:
        """One line: `8× gpu-link · nvswitch NV18 · 450 GB/s spec · 1 GiB each in 2.2 ms (slowest)`."""
        bits = [(f"{self.count}× " if self.count > 1 else "") + self.medium, self.via_text(), self.bandwidth_text()]
        vol = self.volume_text()
        if vol:
            bits.append(vol)
        return " · ".join(b for b in bits if b)

    def places(self) -> str:
        """Where the bundle's arrows start and end: `lot:gpu0–7 → lot:gpu0–7`."""
        src = compress_places([a.src_place for a in self.arrows])
        dst = compress_places([a.dst_place for a in self.arrows])
        return f"{src} {'↔' if self.both_ways else '→'} {dst}"


def bundles(fmap: FlowMap) -> list[Bundle]:
    """Bundles in the order their first arrow appears in the flow."""
    out: dict[tuple[str, str, str, str, str], Bundle] = {}
    for a in fmap.arrows:
        key = (a.src_step, a.dst_step, a.src_place.host, a.dst_place.host, a.medium)
        if key not in out:
            out[key] = Bundle(*key)
        out[key].arrows.append(a)
    return list(out.values())


def grouped_notes(groups: list[Bundle]) -> list[NoteLine]:
    """Each kind of note once, with the devices and hosts it covers and the bundle numbers (1-based)
    it applies to (:func:`topomap.render.notes.group_notes`, the one grouping)."""
    return group_notes((n, k) for k, b in enumerate(groups, 1) for a in b.arrows for n in a.notes)
