"""The views of a merged cluster, grouped (issue 34): `show` and `matrix` say what the alike hosts
share once, then the hosts that differ and how, then where the per-host listing is (``--all``,
``--host NAME``). The grouping is topomap.cluster.groups's, asked once per command; the one host
of each group the view describes stands for all of its hosts (alike hosts get the same answer).
Imported by the commands when they run (start-up)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from topomap.base.errors import TopomapError
from topomap.cli.wiring import _console, _print_json
from topomap.cluster.groups import Grouping, HostGroup, group_hosts
from topomap.model.snapshot import Snapshot
from topomap.render.cluster_groups import closing, differing, opening
from topomap.render.text import visible

if TYPE_CHECKING:
    from topomap.check import CheckResult
    from topomap.diff import Match
    from topomap.transport.rules import NcclEnv


def show_cluster(snap: Snapshot) -> None:
    """`topomap show CLUSTER`: the alike hosts once (the first one's `show` but its NUMA table and
    machine tree: a screen), then the others by how they differ; a host in full is `--host NAME`."""
    from rich.text import Text

    from topomap.graph import build
    from topomap.render.terminal import show as show_view

    g = group_hosts(snap)
    console = _console()
    first = g.main.first
    console.print(Text(f"{head(g)}: {opening(g, 'one description')}"), crop=False)
    console.print(show_view(first, build(first), brief=True), crop=False)
    full = "with its NUMA nodes, machine tree and the commands that record what its source cannot know"
    tail = ["", *differing(g), closing("show", g, full)]
    console.print(Text("\n".join(tail)), crop=False)


def head(g: Grouping) -> str:
    """``Cluster (merge of 600 hosts), 6 groups of alike hosts``; one group: ``Cluster (…)``."""
    groups = len(g.groups)
    return f"Cluster ({visible(g.origin)})" + (f", {groups} groups of alike hosts" if groups > 1 else "")


def show_json(snap: Snapshot) -> bytes:
    """`show --json`: the snapshot as topomap writes it. A packed cluster file (256 hosts or more,
    topomap.model.pack) also names its groups of alike hosts in its first line (``groups``)."""
    from topomap.model.codec import encode_snapshot
    from topomap.model.pack import PACK_MIN_HOSTS, encode_pack

    if snap.source.kind == "merge" and len(snap.members) >= PACK_MIN_HOSTS:
        return encode_pack(snap, group_hosts(snap).to_json()["groups"])
    return encode_snapshot(snap)


def matrix_cluster(snap: Snapshot, json_out: bool) -> None:
    """`topomap matrix CLUSTER`: the alike hosts' matrix once; each other group's where it differs."""
    from topomap.render.matrix import render_matrix
    from topomap.render.matrix_json import matrix_json

    g = group_hosts(snap)
    if json_out:
        groups = []
        for group in g.groups:
            groups.append({**group.to_json(), "matrix": matrix_json(group.first)})
        _print_json({"hosts": len(g.names), "groups": groups})
        return
    main = render_matrix(g.main.first)

    def own(group: HostGroup) -> list[str]:
        mine = render_matrix(group.first)
        if mine == main:
            return ["      its matrix: the same"]
        return ["      its matrix where it differs (--host NAME prints it whole):", *_rows_apart(mine, main)]

    out = [
        f"{head(g)}: {opening(g, 'one matrix')}",
        "",
        main.rstrip("\n"),
        "",
        *differing(g, own),
        closing("matrix", g),
    ]
    sys.stdout.write("\n".join(out) + "\n")


def _rows_apart(mine: str, main: str) -> list[str]:
    """The matrix's head row and the rows (and legend lines) of ``mine`` that ``main`` lacks, indented."""
    theirs = set(main.split("\n"))
    lines = mine.rstrip("\n").split("\n")
    return [f"      {line}" for k, line in enumerate(lines) if k == 0 or line not in theirs]


def nccl_cluster(
    snap: Snapshot, env: NcclEnv, ranks: str | None, version: str | None, json_out: bool, host: str | None
) -> None:
    """`topomap nccl CLUSTER`: predicted once per group of alike hosts; ``host``: that host's pairs and
    its cross-host pairs, as `topomap nccl` gives them. --json: every host's pairs, and the groups."""
    from topomap.model.origins import filled_summary
    from topomap.nccl.cluster import predict_groups
    from topomap.render.nccl_cluster_view import nccl_cluster_view
    from topomap.render.nccl_view import nccl_view

    p = predict_groups(snap, env, ranks, version)
    said = filled_summary(snap)  # facts a declared lot or --lot-type gave, not read (topomap.model.origins)
    if said is not None:
        p.extra_notes.append(said)
    if host is not None:
        one = p.host_report(host)
        parts = nccl_view(one)
        if json_out:
            return _print_json({**one.to_json(), **p.grouping_json(host)})
    elif json_out:
        head, lists = p.json_parts()
        return print_json_fast({**head, **p.grouping_json()}, lists)
    else:
        parts = nccl_cluster_view(p)
    _console().print(*parts)


def check_cluster(result: CheckResult, json_out: bool, host: str | None, machines: list[tuple[str, Snapshot]]) -> int:
    """`topomap check REQS CLUSTER`: each rule's result once per group of alike hosts; ``host``: that
    host's results alone (and the cluster-wide rules). ``machines``: the lots checked, for the
    paste-against-catalogue disagreements said after the rules. Returns the exit status."""
    from dataclasses import replace

    from topomap.render.check_cluster_view import check_cluster_view
    from topomap.render.lot_view import disagreement_rows, disagreements
    from topomap.render.verdict_view import check_view

    if host is not None:
        lots = {x.lot for x in result.results}
        if host not in lots:
            import difflib  # start-up: only the error path needs it

            near = difflib.get_close_matches(host, sorted(lots), n=3)
            raise TopomapError(
                f"--host {host!r}: no lot of that name", hint=f"did you mean {', '.join(near)}?" if near else None
            )
        keep = [x for x in result.results if x.lot in (host, "cluster")]
        result = replace(result, results=keep, groups=[g for g in result.groups if host in g.hosts])
    if json_out:
        doc = result.to_json()
        rows = disagreement_rows(machines)
        if rows:  # a paste and its --lot-type catalogue entry disagree (topomap.model.lots.fill)
            doc["catalogue_disagrees"] = rows
        _print_json(doc)
        return result.exit_status
    console = _console()
    if host is not None:
        console.print(check_view(result))
    else:
        g = Grouping("", tuple(result.groups), (), {})
        console.print(check_cluster_view(result, differing(g), closing("check", g)))
    said = disagreements(machines)
    if said is not None:
        console.print(said)
    return result.exit_status


def diff_cluster(
    a: Snapshot, b: Snapshot, how: Match, json_out: bool, which: tuple[bool, str | None]
) -> tuple[Snapshot, Snapshot]:
    """`topomap diff CLUSTER_A CLUSTER_B`: each comparison once per pair of groups of alike hosts, then
    exit with the verdict's status; --all every host that differs (as before); --json every host and
    the groups. ``which`` (--all, --host NAME): with a host, that host of each side (a side that is
    one host: itself), for the caller to compare as two lots."""
    import typer

    from topomap.cluster.groups import one_host
    from topomap.diff import diff_clusters
    from topomap.render.diff_cluster_view import cluster_diff_grouped_view
    from topomap.render.verdict_view import cluster_diff_view

    all_hosts, name = which
    if name is not None:
        return (
            one_host(a, name) if a.source.kind == "merge" else a,
            one_host(b, name) if b.source.kind == "merge" else b,
        )
    d = diff_clusters(a, b, how)
    if json_out:
        _print_json(d.to_json())
    elif all_hosts:
        _console().print(cluster_diff_view(d))
    else:
        first = d.groups[0].hosts[0] if d.groups else "NAME"
        closing = f"(topomap diff … --host {visible(first)} compares one host in full; --all every host that differs)"
        _console().print(cluster_diff_grouped_view(d, closing))
    raise typer.Exit(d.exit_status)


def place_cluster(snap: Snapshot, ask: tuple[int, str, bool, set[str]], json_out: bool, all_hosts: bool) -> None:
    """`topomap place CLUSTER --gpus K`: placed once per group of alike hosts (alike hosts place
    alike), on its first host; --json every group's placement and hosts; --all every host's."""
    from topomap.graph import build
    from topomap.place import PlaceError, PlaceResult, place_gpus
    from topomap.render.place_cluster_view import place_cluster_view
    from topomap.render.place_view import place_view

    k, pattern, nics, excluded = ask
    g = group_hosts(snap)
    placed: dict[str, PlaceResult | PlaceError] = {}
    for group in g.groups:
        try:
            placed[group.label] = place_gpus(build(group.first), k, pattern, nics, excluded)
        except PlaceError as err:
            if group is g.main:
                raise  # the alike hosts cannot be placed on: the one-line error, exit 2
            placed[group.label] = err
    if json_out:
        groups = []
        for group in g.groups:
            mine = placed[group.label]
            answer = mine.to_json() if isinstance(mine, PlaceResult) else {"error": str(mine), "hint": mine.hint}
            groups.append({**group.to_json(), "placement": answer})
        _print_json({"hosts": len(g.names), "groups": groups})
        return
    if all_hosts:
        from rich.console import Group
        from rich.text import Text

        parts: list[object] = []
        for name in sorted(g.names):
            mine = placed[g.label_of[name]]
            parts.append(Text(f"\n# {visible(name)} (group {g.label_of[name]})", style="bold"))
            parts.append(place_view(mine) if isinstance(mine, PlaceResult) else Text(f"cannot place: {mine}"))
        _shown(Group(*parts))  # type: ignore[arg-type]
        return
    _shown(place_cluster_view(g, placed))


def _shown(view: object) -> None:
    """On a terminal as rich lays it out; piped, every line whole (never wrapped or cut)."""
    _console().print(view)


def print_json_fast(value: dict[str, object], lists: dict[str, Iterator[list[dict[str, object]]]]) -> None:
    """:func:`topomap.cli.wiring._print_json`'s layout (indent 2, non-ASCII escaped) for a document of
    a million values (every pair of a 10,000-host cluster): ``value`` (a dict) with each of ``lists``
    (keys of it, empty there) filled with its items, written chunk by chunk as each chunk is made,
    encoded and laid out by msgspec, non-ASCII as JSON escapes. Python's own JSON encoder lays out
    an indented document in Python: 20 s and 4 GiB for that one. For values without floats (which
    the two encoders write apart: 1e+16 and 1e16)."""
    import codecs

    import msgspec

    codecs.register_error("topomap-json-escape", _json_escape)
    enc = msgspec.json.Encoder()
    marks = {key: f"\x00topomap-list-{key}\x00" for key in lists}
    head = msgspec.json.format(enc.encode({k: marks.get(k, v) for k, v in value.items()}), indent=2)
    out = sys.stdout.buffer

    def write(part: bytes) -> None:
        out.write(part if part.isascii() else part.decode().encode("ascii", "topomap-json-escape"))

    for key, chunks in lists.items():
        at = head.index(enc.encode(marks[key]))  # the mark as JSON writes it: "\u0000topomap-list-…"
        write(head[:at])
        head = head[at + len(enc.encode(marks[key])) :]
        first = True
        for chunk in chunks:
            if not chunk:
                continue
            # the chunk's items as a list at the top level ("[\n  {…},\n  {…}\n]"), moved one level
            # in: the document's lists sit at its second level (their items 4 spaces in)
            body = msgspec.json.format(enc.encode(chunk), indent=2)[2:-2].replace(b"\n", b"\n  ")
            write((b"[\n  " if first else b",\n  ") + body)
            first = False
        write(b"[]" if first else b"\n  ]")
    write(head + b"\n")
    out.flush()


def _json_escape(err: UnicodeError) -> tuple[str, int]:
    """Non-ASCII characters as JSON writes them escaped: ``\\u00e9``, a surrogate pair above U+FFFF."""
    assert isinstance(err, UnicodeEncodeError)
    out = []
    for ch in err.object[err.start : err.end]:
        c = ord(ch)
        if c > 0xFFFF:
            c -= 0x10000
            out.append(f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}")
        else:
            out.append(f"\\u{c:04x}")
    return "".join(out), err.end
