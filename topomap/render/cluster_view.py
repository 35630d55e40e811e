"""`topomap cluster` in the terminal: the shapes, where hosts differ, the rails, the NVLink cliques and
the outliers. Plain lines, never cut or wrapped by the program: a host name is always whole, so
`grep` finds it in piped output (a terminal wraps long lines itself)."""

from __future__ import annotations

from topomap.cluster import ClusterReport
from topomap.cluster.report import FactReport
from topomap.render.text import visible

#: Host names listed in a line about many hosts before "… and N more" (--json lists all).
SHOWN = 8


def hosts_text(hosts: list[str], limit: int | None = SHOWN) -> str:
    shown = hosts if limit is None else hosts[:limit]
    text = ", ".join(visible(h) for h in shown)
    if len(shown) < len(hosts):
        text += f" and {len(hosts) - len(shown)} more (--json lists all)"
    return text


def cluster_view(r: ClusterReport) -> list[str]:
    """The page as lines (no trailing newlines)."""
    out = [
        f"Cluster: {r.hosts} hosts, {len(r.shapes)} shape(s), {len(r.outliers)} outlier(s) ({visible(r.origin)})",
        "",
        "Shapes (GPU models and memory, NVLink matrix, GPU↔NIC rails, PCIe tree):",
    ]
    for s in r.shapes:
        out.append(f"  {s.label}: {len(s.hosts)} host(s) [shape {s.id}]: {hosts_text(s.hosts)}")
        out += [
            f"     GPUs: {visible(s.gpus)}",
            f"     NVLink: {visible(s.nvlink)}",
            f"     rails: {visible(s.rails)}",
            f"     PCIe tree: {visible(s.pcie_tree)}",
        ]
    out += ["", *_facts(r.facts), "", *_rails(r), "", *_fabric(r), "", *_outliers(r)]
    return out


def _facts(facts: list[FactReport]) -> list[str]:
    differ = [f for f in facts if f.others]
    same = [f for f in facts if not f.others and f.common is not None]
    out = ["Where hosts differ:" if differ else "Where hosts differ: nowhere"]
    for f in differ:
        if f.common is None:  # no value held by most hosts: each value with its hosts, no outlier
            out.append(f"  {f.name}: no value held by most of the {f.known_hosts} hosts")
        else:
            out.append(f"  {f.name}: {f.common_hosts} of {f.known_hosts} hosts {visible(f.common)}")
        for o in f.others:
            out.append(f"    {len(o.hosts)} host(s) {visible(o.differs or o.value)}: {hosts_text(o.hosts, None)}")
    if same:
        out.append("Same on every host that knows it: " + ", ".join(f.name for f in same))
        out += [f"  {f.name}: {visible(f.common or '')}" for f in same if not f.part_of_shape]
    for f in facts:
        if f.unknown:
            out.append(f"Unknown: {f.name} on {len(f.unknown)} host(s) (not in their source): {hosts_text(f.unknown)}")
    return out


def _rails(r: ClusterReport) -> list[str]:
    rails = r.rails
    verdict = {True: "consistent", False: "NOT consistent", None: "cannot be told"}[rails.consistent]
    out = [f"Rails (rail i: GPU i's nearest RDMA NIC): {verdict}"]
    if rails.unknown:
        out.append(f"  unknown on {len(rails.unknown)} host(s): {hosts_text(rails.unknown)}")
    for rail in rails.rails:
        if rail.same_on_every_host:
            out.append(f"  {rail.gpu}: {visible(rail.positions[0].value)} on every host")
            continue
        out.append(f"  {rail.gpu}: differs:")
        out += [f"    {visible(p.value)}: {len(p.hosts)} host(s): {hosts_text(p.hosts)}" for p in rail.positions]
    return out


def _fabric(r: ClusterReport) -> list[str]:
    f = r.fabric
    verdict = {True: "one clique", False: "not one clique", None: "cannot be told"}[f.one_clique]
    out = [f"NVLink fabric: {verdict} ({visible(f.why)})"]
    for c in f.cliques:
        out.append(f"  clique {visible(c.cluster_uuid)}/{c.clique_id}: {len(c.hosts)} host(s): {hosts_text(c.hosts)}")
    if f.not_ready:
        out.append(f"  not ready or not supported on: {hosts_text(f.not_ready, None)}")
    return out


def _outliers(r: ClusterReport) -> list[str]:
    """Outliers grouped by reason, every host named (they are what the page is for)."""
    if not r.outliers:
        return ["Outliers: none (every host matches the most common value of every fact it knows)"]
    by: dict[str, list[str]] = {}
    for o in r.outliers:
        for reason in o.reasons:
            by.setdefault(reason, []).append(o.host)
    out = [f"Outliers: {len(r.outliers)} host(s), by reason:"]
    for reason, hosts in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        out.append(f"  {visible(reason)}: {hosts_text(hosts, None)}")
    return out
