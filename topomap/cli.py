"""The topomap command line: parse, call, print, exit codes — nothing else.

Exit codes: 0 ok; 1 a verdict of "different"/"fail"; 2 bad input (one line on stderr);
3 nothing could be probed; 4 an internal error (traceback with --debug).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from topomap import __version__
from topomap.errors import TopomapError

if TYPE_CHECKING:
    from topomap.model import Snapshot

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Show what your data travels over on a GPU server: host memory, GPU link or network.",
)

_state = {"debug": False}
F = TypeVar("F", bound=Callable[..., Any])

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _err(message: str, code: int = 2, hint: str | None = None) -> NoReturn:
    line = f"topomap: error: {message}"
    if hint:
        line += f" (hint: {hint})"
    print(line, file=sys.stderr)
    raise typer.Exit(code)


def _guard(fn: F) -> F:
    """Turn TopomapError into one line and exit 2; anything else into one line and exit 4."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except TopomapError as err:
            if _state["debug"]:
                raise
            _err(str(err), 2, err.hint)
        except KeyboardInterrupt:
            _err("interrupted", 130)
        except Exception as err:
            if _state["debug"]:
                raise
            _err(f"internal error: {type(err).__name__}: {err}", 4, "rerun with --debug for the traceback")

    return wrapper  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        print(f"topomap {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    _state["debug"] = debug


def _console() -> Any:
    from rich.console import Console

    return Console(soft_wrap=False, highlight=False)


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def _load(path: str) -> Snapshot:
    from topomap.importers import load_any

    return load_any(path)


def _write(path: str, data: bytes) -> None:
    from topomap.model import atomic_write

    p = Path(path)
    if p.parent and not p.parent.exists():
        raise TopomapError(f"{path}: folder {p.parent} does not exist")
    try:
        atomic_write(p, data)
    except OSError as err:
        raise TopomapError(f"{path}: cannot write ({err.strerror or err})") from err


@app.command()
@_guard
def probe(
    output: Annotated[str | None, typer.Option("-o", "--output", help="Write the snapshot here.")] = None,
    sysfs_root: Annotated[str, typer.Option("--root", help="Read sysfs/procfs under this root.")] = "/",
    json_out: JsonOpt = False,
) -> None:
    """Probe this machine (NVML + CUDA + sysfs) and write a snapshot.

    Exit 0 with problems recorded; exit 3 when no NVIDIA driver/GPU answered (a host-only
    snapshot is still written).
    """
    from topomap.model import encode_snapshot
    from topomap.probe import probe as run_probe

    out = run_probe(sysfs_root=sysfs_root)
    data = encode_snapshot(out.snapshot)
    if output:
        _write(output, data)
    if json_out or not output:
        sys.stdout.write(data.decode())
    else:
        s = out.snapshot
        print(
            f"wrote {output}: {len(s.gpus)} GPU(s), {len(s.nics)} NIC(s), {len(s.problems)} problem(s)",
            file=sys.stderr,
        )
    if not out.found_driver or out.gpu_count == 0:
        print(
            "topomap: no NVIDIA driver/GPU found: NVML and CUDA did not answer "
            "(check `nvidia-smi`, and in a container `--gpus all` / NVIDIA_VISIBLE_DEVICES); "
            "wrote a host-only snapshot",
            file=sys.stderr,
        )
        raise typer.Exit(3)


@app.command("import")
@_guard
def import_(
    file: Annotated[str, typer.Argument(help="nvidia-smi text, NCCL topology XML or hwloc XML.")],
    output: Annotated[str | None, typer.Option("-o", "--output", help="Write the snapshot here.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="auto | nvidia-smi | nccl-xml | hwloc-xml")] = "auto",
) -> None:
    """Turn nvidia-smi text, an NCCL topology XML or an hwloc XML into a snapshot."""
    from topomap.importers import import_file
    from topomap.model import encode_snapshot

    snap = import_file(file, fmt)
    data = encode_snapshot(snap)
    if output:
        _write(output, data)
        print(f"wrote {output}: {len(snap.gpus)} GPU(s), {len(snap.nics)} NIC(s)", file=sys.stderr)
    else:
        sys.stdout.write(data.decode())


@app.command()
@_guard
def show(
    snapshot: Annotated[str, typer.Argument(help="Snapshot JSON, or a raw nvidia-smi/NCCL/hwloc file.")],
    json_out: JsonOpt = False,
) -> None:
    """Devices, NICs, the NVML ↔ CUDA ↔ UUID ↔ bus id table, NUMA nodes, the machine tree, problems."""
    snap = _load(snapshot)
    if json_out:
        from topomap.model import to_builtins

        _print_json(to_builtins(snap))
        return
    from topomap.graph import build
    from topomap.model import hosts_of
    from topomap.render.terminal import cluster_header
    from topomap.render.terminal import show as show_view

    console = _console()
    if snap.source.kind == "merge":
        console.print(cluster_header(snap))
    for host in hosts_of(snap):
        console.print(show_view(host, build(host)))


@app.command()
@_guard
def matrix(
    snapshot: Annotated[str, typer.Argument(help="Snapshot JSON, or a raw nvidia-smi/NCCL/hwloc file.")],
    p2p: Annotated[str | None, typer.Option("--p2p", help="Print `topo -p2p` for r, w, n or a instead.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """The GPU/NIC matrix exactly as `nvidia-smi topo -m` prints it, legends included."""
    from topomap.model import hosts_of
    from topomap.render.matrix import matrix_ids, pair_lookup, render_matrix, render_p2p_matrix

    merged = _load(snapshot)
    hosts = hosts_of(merged)
    if len(hosts) > 1 and (json_out or p2p is not None):
        raise TopomapError(
            f"{snapshot}: a merged snapshot; --json and --p2p take one host", hint="topomap matrix HOST.json"
        )
    if len(hosts) > 1:
        for h in hosts:
            sys.stdout.write(f"# {h.host.hostname}\n{render_matrix(h)}\n")
        return
    snap = hosts[0]
    if json_out:
        ids = matrix_ids(snap)
        look = pair_lookup(snap)
        _print_json(
            {
                "ids": ids,
                "cells": [[None if r == c else look.get(frozenset((r, c))) for c in ids] for r in ids],
                "gpus": [
                    {
                        "id": f"gpu{g.index}",
                        "cpu_affinity": g.cpu_affinity,
                        "numa_affinity": g.numa_node,
                        "gpu_numa_id": g.gpu_numa_node,
                    }
                    for g in snap.gpus
                ],
                "nic_legend": {f"nic{n.index}": n.name for n in snap.nics if n.rdma},
            }
        )
        return
    if p2p is not None:
        if p2p not in ("r", "w", "n", "a"):
            raise TopomapError(f"--p2p {p2p!r}: expected one of r, w, n, a")
        text = render_p2p_matrix(snap, p2p)
        if text is None:
            raise TopomapError(f"{snapshot}: this snapshot records no P2P status", hint="probe the machine")
        sys.stdout.write(text)
        return
    sys.stdout.write(render_matrix(snap))


ProbeOpt = Annotated[
    list[str] | None,
    typer.Option("--probe", help="Bind a flow host to a snapshot: NAME=FILE (repeatable; FILE alone for one host)."),
]


@app.command("map")
@_guard
def map_(
    flow_file: Annotated[str, typer.Argument(help="Flow file (YAML).")],
    probe: ProbeOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Every arrow of a flow: medium (gpu-link / host-memory / network / local), route, class, bandwidth."""
    from topomap.flow import read_flow
    from topomap.mapping import bind_hosts, map_flow

    flow = read_flow(flow_file)
    fmap = map_flow(flow, bind_hosts(flow, probe or []))
    if json_out:
        _print_json({"flow": flow.name, "arrows": [a.to_json() for a in fmap.arrows], "summary": fmap.summary()})
        return
    from topomap.render.terminal import arrows_view

    _console().print(arrows_view(fmap))


@app.command()
@_guard
def diff(
    a: Annotated[str, typer.Argument(help="Lot A: snapshot or raw nvidia-smi/NCCL/hwloc file.")],
    b: Annotated[str, typer.Argument(help="Lot B.")],
    flow_file: Annotated[str | None, typer.Option("--flow", help="Compare this flow's arrows on A and on B.")] = None,
    match: Annotated[str, typer.Option("--match", help="index (default) or structure")] = "index",
    json_out: JsonOpt = False,
) -> None:
    """Semantic differences between two lots. Exit 0 equivalent, 1 different, 2 error."""
    from topomap.diff import diff_flow, diff_snapshots

    if match not in ("index", "structure"):
        raise TopomapError(f"--match {match!r}: expected index or structure")
    sa, sb = _load(a), _load(b)
    if sa.source.kind == "merge" or sb.source.kind == "merge":
        from topomap.diff import diff_clusters

        cluster = diff_clusters(sa, sb, match)  # type: ignore[arg-type]
        if json_out:
            _print_json(cluster)
        else:
            from topomap.render.terminal import cluster_diff_view

            _console().print(cluster_diff_view(cluster))
        raise typer.Exit(0 if cluster["same"] else 1)
    names = (Path(a).stem, Path(b).stem)
    if names[0] == names[1]:
        names = (f"A ({names[0]})", f"B ({names[1]})")
    result = diff_snapshots(sa, sb, match, names)  # type: ignore[arg-type]
    if flow_file:
        diff_flow(result, flow_file, sa, sb)
    if json_out:
        _print_json(
            {
                "same": result.same,
                "summary": result.summary(),
                "match": result.match,
                "mapping": result.mapping,
                "changes": [
                    {"kind": c.kind, "subject": c.subject, "field": c.field, "a": c.a, "b": c.b, "text": c.text}
                    for c in result.changes
                ],
                "not_compared": result.not_compared,
                "notes": result.notes,
                "arrows": [
                    {
                        "from": r.src,
                        "to": r.dst,
                        "a": r.a,
                        "b": r.b,
                        "medium_changed": r.medium_changed,
                        "slower": r.slower,
                    }
                    for r in result.arrows
                ],
            }
        )
    else:
        from topomap.render.terminal import diff_view

        _console().print(diff_view(result))
    raise typer.Exit(0 if result.same else 1)


@app.command()
@_guard
def check(
    reqs: Annotated[str, typer.Argument(help="Requirements file (or a flow file with `requirements:`).")],
    probe: ProbeOpt = None,
    flow_file: Annotated[str | None, typer.Option("--flow", help="The flow the rules speak of.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Requirements verdict per rule, with evidence. Exit 0 pass, 1 fail, 2 error."""
    from topomap.check import Lot, read_requirements
    from topomap.check import check as run_check
    from topomap.graph import build

    rules, is_flow = read_requirements(reqs)
    if flow_file is None and is_flow:
        flow_file = reqs
    fmap = None
    lots: list[Lot] = []
    if flow_file is not None:
        from topomap.flow import read_flow
        from topomap.mapping import bind_hosts, map_flow

        flow = read_flow(flow_file)
        topos = bind_hosts(flow, probe or [])
        fmap = map_flow(flow, topos)
        for host, topo in topos.items():
            if topo is None:
                continue
            steps: dict[str, list[str]] = {}
            for st in flow.steps.values():
                ids = [p.gpu for p in st.placements if p.host == host and p.kind == "gpu" and p.gpu]
                if ids:
                    steps[st.name] = ids
            lots.append(Lot(name=host, topo=topo, step_gpus=steps))
    else:
        if not probe:
            raise TopomapError("check needs --probe SNAP (or --flow FLOW)")
        for arg in probe:
            name, sep, path = arg.partition("=")
            if not sep:
                name, path = Path(arg).stem, arg
            from topomap.model import hosts_of

            hosts = hosts_of(_load(path))
            for h in hosts:
                lots.append(Lot(name=(h.host.hostname or name) if len(hosts) > 1 else name, topo=build(h)))
    result = run_check(rules, lots, fmap)
    if json_out:
        _print_json(
            {
                "verdict": "pass" if result.passed else "fail",
                "summary": result.verdict(),
                "rules": [r.to_json() for r in result.results],
            }
        )
    else:
        from topomap.render.terminal import check_view

        _console().print(check_view(result))
    raise typer.Exit(0 if result.passed else 1)


@app.command()
@_guard
def merge(
    snapshots: Annotated[
        list[str], typer.Argument(help="Per-host snapshots; NAME=FILE names a host (imports have none).")
    ],
    output: Annotated[str, typer.Option("-o", "--output", help="Write the cluster snapshot here.")],
) -> None:
    """Join per-host snapshots into one cluster snapshot."""
    import msgspec

    from topomap.merge import merge as run_merge
    from topomap.model import encode_snapshot

    pairs = []
    for arg in snapshots:
        name, sep, path = arg.partition("=")
        if not sep or Path(arg).exists():
            name, path = "", arg
        snap = _load(path)
        if name:
            snap = msgspec.structs.replace(snap, host=msgspec.structs.replace(snap.host, hostname=name))
        pairs.append((path, snap))
    merged = run_merge(pairs)
    _write(output, encode_snapshot(merged))
    print(f"wrote {output}: {len(merged.members)} hosts", file=sys.stderr)


RENDER_FORMATS = ("svg", "png", "pdf", "dot", "graphml", "json")


@app.command()
@_guard
def render(
    snapshots: Annotated[
        list[str] | None,
        typer.Argument(help="Snapshots or raw files; with --flow, NAME=FILE bindings for the flow's hosts."),
    ] = None,
    output: Annotated[str, typer.Option("-o", "--output", help="OUT.svg, .png, .pdf, .dot, .graphml or .json")] = "",
    flow_file: Annotated[str | None, typer.Option("--flow", help="Draw this flow's arrows on the machine.")] = None,
    probe: ProbeOpt = None,
    view: Annotated[str, typer.Option("--view", help="machine (default) or pipeline (flow logic only)")] = "machine",
) -> None:
    """Diagram of the topology: hosts, NUMA nodes, PCIe switches, GPUs, NICs, NVLink fabric; with
    --flow, the flow's steps on their hardware and its arrows coloured by medium."""
    from topomap.graph import build
    from topomap.render import dot as dotr
    from topomap.render.export import graphml, node_link_json

    if not output:
        raise TopomapError("render needs -o OUT.svg (or .png, .pdf, .dot, .graphml, .json)")
    fmt = Path(output).suffix.lower().lstrip(".")
    if fmt not in RENDER_FORMATS:
        raise TopomapError(f"-o {output}: unknown format {fmt!r}; expected .{', .'.join(RENDER_FORMATS)}")
    if view not in ("machine", "pipeline"):
        raise TopomapError(f"--view {view!r}: expected machine or pipeline")
    if flow_file is None:
        if not snapshots:
            raise TopomapError("render needs at least one snapshot (or --flow FLOW)")
        from topomap.model import hosts_of

        topos = [build(h) for s in snapshots for h in hosts_of(_load(s))]
        if fmt == "graphml":
            return _write(output, graphml(topos))
        if fmt == "json":
            return _write(output, node_link_json(topos))
        drawn, names = dotr.group_identical(topos)
        text = dotr.topology_dot(drawn, names=names)
    else:
        from topomap.flow import read_flow
        from topomap.mapping import bind_hosts, map_flow
        from topomap.render.flowdot import flow_on_machine_dot, flow_pipeline_dot

        if fmt in ("graphml", "json"):
            raise TopomapError(f"-o {output}: a flow diagram is drawn as svg, png, pdf or dot")
        flow = read_flow(flow_file)
        bound = bind_hosts(flow, [*(snapshots or []), *(probe or [])])
        fmap = map_flow(flow, bound)
        text = flow_pipeline_dot(fmap) if view == "pipeline" else flow_on_machine_dot(fmap, bound)
    if fmt == "dot":
        return _write(output, text.encode())
    try:
        data = dotr.pipe(text, fmt)
    except dotr.DotMissing as err:
        dot_path = str(Path(output).with_suffix(".dot"))
        _write(dot_path, text.encode())
        raise TopomapError(
            f"Graphviz `dot` not found: wrote {dot_path} instead of {output}",
            hint="install Graphviz (apt-get install graphviz / brew install graphviz / conda install graphviz)",
        ) from err
    _write(output, data)
    print(f"wrote {output}", file=sys.stderr)


@app.command()
@_guard
def schema(
    which: Annotated[str, typer.Argument(help="snapshot, flow or requirements")] = "snapshot",
) -> None:
    """Print the JSON Schema of a topomap file format."""
    from topomap.schemas import SCHEMAS, schema_text

    if which not in SCHEMAS:
        raise TopomapError(f"unknown schema {which!r}; expected one of: {', '.join(SCHEMAS)}")
    sys.stdout.write(schema_text(which))


def _click_errors(name: str) -> tuple[type[BaseException], ...]:
    """An exception class from click, and from the copy of click newer typer versions vendor."""
    import importlib

    found: list[type[BaseException]] = []
    for mod in ("typer._click.exceptions", "click.exceptions"):
        try:
            cls = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            continue
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def main() -> None:
    """Entry point: usage mistakes are one line too (typer would draw a box)."""
    no_args, usage = _click_errors("NoArgsIsHelpError"), _click_errors("UsageError")
    exits: tuple[type[BaseException], ...] = (typer.Exit, *_click_errors("Exit"))
    aborts: tuple[type[BaseException], ...] = (typer.Abort, *_click_errors("Abort"))
    try:
        rc = app(standalone_mode=False)
    except no_args as err:
        print(err.format_message())  # type: ignore[attr-defined]
        sys.exit(0)
    except usage as err:
        ctx = getattr(err, "ctx", None)
        cmd = ctx.command_path if ctx is not None else "topomap"
        print(f"topomap: error: {err.format_message()} (hint: {cmd} --help)", file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(2)
    except exits as err:
        sys.exit(getattr(err, "exit_code", 0))
    except aborts:
        sys.exit(130)
    sys.exit(rc if isinstance(rc, int) else 0)
