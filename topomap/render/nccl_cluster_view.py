"""`topomap nccl CLUSTER` as text (issue 34): the alike hosts' prediction once — the pairs inside a
host collapsed by decision, the cross-host pairs one line per rail — then the hosts that differ and
what their prediction changes, then where the per-host listing is (``--all``, ``--host NAME``)."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from topomap.cluster.groups import HostGroup
from topomap.nccl.cluster import Across, ClusterPrediction
from topomap.nccl.predict import Entry, NcclReport
from topomap.render.cluster_groups import closing, differing, opening
from topomap.render.nccl_view import Reasons, _features, pairs_text, summary, why_lines
from topomap.render.notes import compress
from topomap.transport.rules import rules_used

_STYLE = {"SHM": "yellow", "NET": "red", "unknown": "magenta"}


def _inside(report: NcclReport) -> Table:
    """The pairs inside one host, one row per decision (transport, how, rule, variables)."""
    rows: dict[tuple[str, str, str, tuple[str, ...]], list[str]] = {}
    for e in report.entries:
        d = e.decision
        rows.setdefault((d.transport, d.detail, d.rule, d.env), []).append(f"{e.src_rank}->{e.dst_rank}")
    t = Table(box=box.SIMPLE_HEAD)
    for col in ("local ranks", "predicted", "how", "rule", "changed by"):
        t.add_column(col)
    for (transport, detail, rule, env), pairs in rows.items():
        t.add_row(
            Text(pairs_text(pairs)), Text(transport, style=_STYLE.get(transport, "")), Text(detail), Text(rule),
            Text(", ".join(env[:3])),
        )  # fmt: skip
    return t


def _across(p: ClusterPrediction, lines: list[Across]) -> Table:
    """The cross-host pairs, one row per rail (and per pair of groups where a rail differs)."""
    t = Table(box=box.SIMPLE_HEAD)
    one_group = len(p.grouping.groups) == 1
    for col in ("rail", "GPUs", *(() if one_group else ("groups",)), "predicted", "how", "rule", "pairs"):
        t.add_column(col)
    for a in lines:
        shown = [f"{s}->{d}" for s, d in a.pairs[:3]]
        pairs = f"{len(a.pairs)} ({', '.join(shown)}{', …' if len(a.pairs) > 3 else ''})"
        t.add_row(
            Text(str(a.rail)), Text(f"{a.src_gpu}->{a.dst_gpu} of the next host"),
            *(() if one_group else (Text(f"{a.src}->{a.dst}"),)),
            Text(a.decision.transport, style=_STYLE.get(a.decision.transport, "")), Text(a.decision.detail),
            Text(a.decision.rule), Text(pairs),
        )  # fmt: skip
    return t


def _why(entries: list[tuple[str, Entry | Across]]) -> list[Text]:
    """Why each prediction is what it is, as `topomap nccl` says it for one host (:func:`why_lines`)."""
    rules: Reasons = {}
    for label, x in entries:
        d = x.decision
        said = rules.setdefault((d.transport, d.rule, d.env), {}).setdefault("; ".join(d.reasons), [])
        if label not in said:
            said.append(label)
    return why_lines(rules)


def nccl_cluster_view(p: ClusterPrediction) -> list[Table | Text]:
    """The cluster's prediction by group; a screen for any number of alike hosts."""
    g = p.grouping
    main = p.parts[g.main.label]
    out: list[Table | Text] = [Text(f"NCCL transports ({p.source}); rules of {rules_used(p.version)}")]
    if p.env.values:
        out.append(Text("environment: " + " ".join(p.env.set_vars())))
    out.append(Text(opening(g, "one prediction")))
    out.append(Text(f"Inside each host: {summary(main)}"))
    if main.entries:
        out.append(_inside(main))
    across = p.across
    n = sum(len(a.pairs) for a in across)
    if across:
        out.append(Text(f"Across hosts: {n} rank pairs, one line per rail (the same local rank on consecutive hosts)"))
        out.append(_across(p, [a for a in across if a.src == g.main.label and a.dst == g.main.label]))
    out.extend(_features(main))
    whys: list[tuple[str, Entry | Across]] = [(f"{e.src_rank}->{e.dst_rank}", e) for e in main.entries]
    whys += [(f"rail {a.rail}", a) for a in across if a.src == g.main.label]
    out.extend(_why(whys))
    text = ["", *differing(g, lambda group: _changes(p, group)), closing("nccl", g)]
    out.append(Text("\n".join(text)))
    out.extend(Text(f"note: {note}") for note in p.notes())
    return out


def _changes(p: ClusterPrediction, group: HostGroup) -> list[str]:
    """What a group's prediction says that group A's does not: pairs inside the host, NICs, PXN/NVLS/
    multi-node NVLink, and the rails from or to its hosts."""
    main, mine = p.parts[p.grouping.main.label], p.parts[group.label]
    out: list[str] = []
    theirs = {(e.src_rank, e.dst_rank): e.decision for e in main.entries}
    moved: dict[tuple[str, str], list[str]] = {}
    for e in mine.entries:
        d = e.decision
        if theirs.get((e.src_rank, e.dst_rank)) != d:
            moved.setdefault((d.transport, d.detail), []).append(f"{e.src_rank}->{e.dst_rank}")
    for (transport, detail), pairs in moved.items():
        out.append(f"inside the host, {pairs_text(pairs)}: {transport} {detail}")
    usual = {n.gpu: n for n in main.nics}
    for n in mine.nics:
        if usual.get(n.gpu) != n:
            out.append(f"{n.gpu}: NIC {n.nic or 'none'} {n.path or '?'}, GPUDirect RDMA {n.gdr} ({n.why})")
    feats = {f.gpu: f for f in main.features}
    for name, attr in (("PXN", "pxn"), ("NVLS", "nvls"), ("multi-node NVLink", "mnnvl")):
        changed: dict[tuple[str, str], list[str]] = {}
        for f in mine.features:
            a, b = getattr(f, attr), getattr(feats[f.gpu], attr) if f.gpu in feats else None
            if a != b:
                changed.setdefault((a.can, a.why), []).append(f.gpu)
        out += [f"{name} for {compress(gpus)}: {can}: {why}" for (can, why), gpus in changed.items()]
    ours = {(a.rail, a.decision) for a in p.across if a.src == p.grouping.main.label}
    for a in p.across:
        if group.label in (a.src, a.dst) and (a.rail, a.decision) not in ours:
            shown = ", ".join(f"{s}->{d}" for s, d in a.pairs[:4]) + (", …" if len(a.pairs) > 4 else "")
            d = a.decision
            out.append(f"rail {a.rail} ({a.src_gpu}, group {a.src} to {a.dst}): {d.transport} {d.detail} ({shown})")
    gpus = compress([f.gpu for f in mine.features])
    return [f"      its prediction: {line}" for line in out] or [f"      its prediction: the same (GPUs {gpus})"]
