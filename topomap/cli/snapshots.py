"""Commands on one snapshot: probe, import, show, matrix, merge, schema.

Each command imports what it uses inside its function, for start-up: `topomap --help` loads every
command module, and a command should not pay for its neighbours' libraries — msgspec and the
snapshot model, the NVML and CUDA bindings (probe), networkx and rich (the terminal view of show).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from topomap.base.errors import TopomapError
from topomap.cli.output import say, write_text, wrote
from topomap.cli.wiring import (
    AllOpt,
    HostOpt,
    JsonOpt,
    LotTypeOpt,
    _console,
    _err,
    _guard,
    _load,
    _print_json,
    _write,
    app,
    bounded,
)

if TYPE_CHECKING:
    from topomap.model.snapshot import Snapshot


@dataclass(frozen=True)
class Imported:
    """`import -o FILE --json`: what was written."""

    output: str
    gpus: int
    nics: int


@dataclass(frozen=True)
class Merged:
    """`merge -o FILE --json`: what was written, and where the hosts differ."""

    output: str
    hosts: int
    consistency: list[str]


@app.command()
@_guard
def probe(
    output: Annotated[str | None, typer.Option("-o", "--output", help="Write the snapshot here.")] = None,
    sysfs_root: Annotated[str, typer.Option("--root", help="Read sysfs/procfs under this root.")] = "/",
    call_timeout: Annotated[
        float | None,
        typer.Option(
            "--call-timeout",
            help="Seconds one NVML/CUDA call may take before it is cut [default: 15].",
            callback=bounded(0, 3600, "s", above=True),
        ),
    ] = None,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            help="Seconds all NVML/CUDA calls together may take [default: 180].",
            callback=bounded(0, 86400, "s", above=True),
        ),
    ] = None,
    measure: Annotated[
        bool, typer.Option("--measure", help="Also measure verified copy bandwidth (topomap measure --quick).")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Probe this machine (NVML + CUDA + sysfs) and write a snapshot.

    Exit 0 with problems recorded; exit 3 when no NVIDIA driver/GPU answered (a host-only
    snapshot is still written), or when the NVIDIA bindings are not installed (the `probe` extra:
    nothing is written). With --measure, the snapshot also carries measured figures.
    """
    from topomap.model.codec import encode_checked  # start-up: see the module docstring
    from topomap.probe import probe as run_probe
    from topomap.probe.bindings import PROBE_HINT, missing_bindings, missing_sentence
    from topomap.probe.guarded import CALL_TIMEOUT_S, TOTAL_BUDGET_S

    limits = {"--call-timeout": call_timeout, "--budget": budget}
    defaults = {"--call-timeout": CALL_TIMEOUT_S, "--budget": TOTAL_BUDGET_S}
    for name, value in limits.items():
        if value is not None and not value > 0:
            raise TopomapError(f"{name} {value:g}: seconds must be above 0", hint=f"e.g. {name} {defaults[name]:g}")
    missing = missing_bindings()
    if len(missing) == 2:  # the `probe` extra is not installed (one of them alone: a problem recorded)
        _err(missing_sentence(missing, "probe", "nothing can be probed"), 3, PROBE_HINT)
    out = run_probe(
        sysfs_root=sysfs_root,
        call_timeout_s=call_timeout or CALL_TIMEOUT_S,
        budget_s=budget or TOTAL_BUDGET_S,
    )
    found_gpus = out.found_driver and out.gpu_count > 0  # else exit 3, after the host-only snapshot
    if measure and found_gpus:
        out.snapshot = _measured(out.snapshot)
    data = encode_checked(out.snapshot, output or "stdout")
    if output:
        _write(output, data)  # "-": stdout, for `srun … topomap probe -o - > $(hostname).json` pipelines
    if (json_out or not output) and output != "-":
        _write("-", data)
    elif output:
        s = out.snapshot
        wrote(output, f"{len(s.gpus)} GPU(s), {len(s.nics)} NIC(s), {len(s.problems)} problem(s)", "probe")
    if not found_gpus:
        print(
            "topomap: no NVIDIA driver/GPU found: NVML and CUDA did not answer "
            "(check `nvidia-smi`, and in a container `--gpus all` / NVIDIA_VISIBLE_DEVICES); "
            "wrote a host-only snapshot",
            file=sys.stderr,
        )
        raise typer.Exit(3)


def _measured(snap: Snapshot) -> Snapshot:
    """The probe's snapshot with `topomap measure --quick` figures; a GPU CUDA cannot use is a finding."""
    import msgspec  # start-up: see the module docstring

    from topomap.measure.run import MeasureOptions, NoGpuError
    from topomap.measure.run import measure as run_measure
    from topomap.model.snapshot import Finding

    try:
        return run_measure(snap, MeasureOptions.quick()).snapshot
    except NoGpuError as err:
        skipped = Finding(kind="measure-skipped", subject="host", severity="info", text=str(err), source="measure")
        return msgspec.structs.replace(snap, findings=[*snap.findings, skipped])


@app.command("import")
@_guard
def import_(
    file: Annotated[
        str, typer.Argument(help="nvidia-smi text, NCCL topology XML, hwloc XML, lstopo text or an NCCL log's dump.")
    ],
    output: Annotated[str | None, typer.Option("-o", "--output", help="Write the snapshot here.")] = None,
    fmt: Annotated[
        str, typer.Option("--format", help="auto | nvidia-smi | nccl-xml | hwloc-xml | lstopo | nccl-log")
    ] = "auto",
    json_out: JsonOpt = False,
) -> None:
    """Turn a pasted topology into a snapshot.

    Reads `nvidia-smi topo -m` (and -p2p, nvlink -s/-R, -q, --query-gpu CSV) text, an NCCL topology
    XML, an hwloc XML or fragment, `lstopo` text, or an NCCL log with its topology dump."""
    from topomap.cli.given import name_what_it_is  # start-up: see the module docstring
    from topomap.importers import import_file
    from topomap.model.codec import encode_checked

    try:
        snap = import_file(file, fmt)
    except TopomapError as err:
        name_what_it_is(err, file, "import")
        raise
    data = encode_checked(snap, output if output and output != "-" else "stdout")
    if output and output != "-":
        _write(output, data)
        say(f"wrote {output}: {len(snap.gpus)} GPU(s), {len(snap.nics)} NIC(s)")
        if json_out:
            _print_json(Imported(output, len(snap.gpus), len(snap.nics)))
    else:
        _write("-", data)  # the snapshot JSON is the output


@app.command()
@_guard
def show(
    snapshot: Annotated[str, typer.Argument(help="Snapshot JSON, or a raw nvidia-smi/NCCL/hwloc file.")],
    json_out: JsonOpt = False,
    lot_type: LotTypeOpt = None,
    all_hosts: AllOpt = False,
    host: HostOpt = None,
) -> None:
    """Show a machine: its GPUs, NICs, NUMA nodes, tree and problems.

    Devices, NICs, the NVML ↔ CUDA ↔ UUID ↔ bus id table, NUMA nodes, the machine tree, problems.
    A merged cluster: its alike hosts described once, then the hosts that differ and how (--all:
    every host; --host NAME: one). A run record (topomap record): per-card peaks, the timeline, the
    busiest resource."""
    from topomap.files.kind import is_run_file  # start-up: see the module docstring

    if is_run_file(snapshot):  # a run record (topomap record): per-card peaks, timeline, busiest resource
        from topomap.cli.record import show_run

        return show_run(snapshot, json_out)
    snap = _load(snapshot)
    if host is not None:
        from topomap.cluster.groups import one_host

        snap = one_host(snap, host)
    if json_out:
        from topomap.cli.cluster_views import show_json

        _write("-", show_json(snap))  # the snapshot as topomap writes it (a cluster: its groups too)
        return
    if snap.source.kind == "merge" and not all_hosts:
        from topomap.cli.cluster_views import show_cluster

        return show_cluster(snap)
    from topomap.graph import Shapes
    from topomap.model.snapshot import hosts_of
    from topomap.render.terminal import cluster_header
    from topomap.render.terminal import show as show_view

    console = _console()  # 80 columns when piped; values are never split or cut, a line too long is not cropped
    if snap.source.kind == "merge":
        console.print(cluster_header(snap), crop=False)
    shapes = Shapes()  # alike hosts share one graph (topomap.model.alike)
    for one in hosts_of(snap):
        console.print(show_view(one, shapes.build(one)), crop=False)


@app.command()
@_guard
def matrix(
    snapshot: Annotated[str, typer.Argument(help="Snapshot JSON, or a raw nvidia-smi/NCCL/hwloc file.")],
    p2p: Annotated[str | None, typer.Option("--p2p", help="Print `topo -p2p` for r, w, n or a instead.")] = None,
    json_out: JsonOpt = False,
    lot_type: LotTypeOpt = None,
    bandwidth: Annotated[bool, typer.Option("--bandwidth", help="Measured GB/s beside nominal instead.")] = False,
    all_hosts: AllOpt = False,
    host: HostOpt = None,
) -> None:
    """Print the GPU/NIC matrix as `nvidia-smi topo -m` prints it.

    The matrix exactly as nvidia-smi lays it out, legends included; --p2p for `topo -p2p`,
    --bandwidth for measured GB/s beside nominal. A merged cluster: the alike hosts' matrix once,
    then the hosts that differ (--all: every host's; --host NAME: one host's). AMD GPUs: then
    `rocm-smi --showtopo`'s tables."""
    if bandwidth:
        from topomap.render.bandwidth_matrix import bandwidth_json, render_bandwidth_matrix  # start-up: see above

        snap = _load(snapshot)
        if host is not None:
            from topomap.cluster.groups import one_host

            snap = one_host(snap, host)
        if json_out:
            _print_json(bandwidth_json(snap))
        else:
            write_text(render_bandwidth_matrix(snap))
        return
    from topomap.model.snapshot import hosts_of
    from topomap.render.matrix import render_matrix, render_p2p_matrix
    from topomap.render.matrix_json import matrix_json
    from topomap.render.text import visible

    merged = _load(snapshot)
    if host is not None:
        from topomap.cluster.groups import one_host

        merged = one_host(merged, host)
    hosts = hosts_of(merged)
    if len(hosts) > 1 and p2p is not None:
        raise TopomapError(
            f"{snapshot}: a merged snapshot; --p2p takes one host",
            hint=f"topomap matrix {snapshot} --host NAME --p2p r",
        )
    if len(hosts) > 1 and (json_out or not all_hosts):
        from topomap.cli.cluster_views import matrix_cluster

        return matrix_cluster(merged, json_out)
    if len(hosts) > 1:
        for h in hosts:
            write_text(f"# {visible(h.host.hostname or 'unknown host')}\n{render_matrix(h)}\n")
        return
    snap = hosts[0]
    if json_out:
        _print_json(matrix_json(snap))
        return
    if p2p is not None:
        if p2p not in ("r", "w", "n", "a"):
            raise TopomapError(
                f"--p2p {p2p!r}: expected one of r, w, n, a", hint="r read, w write, n NVLink, a atomics"
            )
        text = render_p2p_matrix(snap, p2p)
        if text is None:
            raise TopomapError(f"{snapshot}: this snapshot records no P2P status", hint="probe the machine")
        write_text(text)
        return
    write_text(render_matrix(snap))
    if snap.gpus and all(g.vendor == "amd" for g in snap.gpus):  # issue 35: then rocm-smi's own shape
        from topomap.render.amd_matrix import render_rocm_smi_topo  # start-up: see above

        write_text("\nAs `rocm-smi --showtopo` prints it:\n\n" + render_rocm_smi_topo(snap))


@app.command()
@_guard
def merge(
    snapshots: Annotated[
        list[str], typer.Argument(help="Per-host snapshots; NAME=FILE names a host (imports have none).")
    ],
    output: Annotated[str, typer.Option("-o", "--output", help="Write the cluster snapshot here (- for stdout).")],
    json_out: JsonOpt = False,
) -> None:
    """Join per-host snapshots into one cluster snapshot.

    Reports where the hosts differ: driver, GPUs, GPU↔NIC rails, NIC rates and states, NVLink
    fabric cliques."""
    import msgspec  # start-up: see the module docstring

    from topomap.model.codec import encode_checked
    from topomap.model.merge import merge_reported

    pairs = []
    for arg in snapshots:
        name, path = _name_and_file(arg)
        snap = _load(path)
        if name:
            snap = msgspec.structs.replace(snap, host=msgspec.structs.replace(snap.host, hostname=name))
        pairs.append((path, snap))
    merged, notes = merge_reported(pairs)
    _write(output, encode_checked(merged, output))
    for line in notes:
        say(f"topomap: merge: {line}")  # host names are data: no raw ESC
    wrote(output, f"{len(merged.members)} hosts, {len(notes)} consistency note(s)", "merge")
    if json_out and output != "-":
        _print_json(Merged(output, len(merged.members), notes))


def _name_and_file(arg: str) -> tuple[str, str]:
    """A merge argument: ``NAME=FILE`` or ``FILE`` ("" for no name); an existing file named with ``=`` is a file."""
    name, sep, path = arg.partition("=")
    if not sep or _is_file(arg):
        return "", arg
    if not name:
        raise TopomapError(
            f"{arg}: empty NAME before `=`",
            hint="write NAME=FILE with the host's name, or FILE alone when the snapshot names its host",
        )
    return name, path


def _is_file(arg: str) -> bool:
    """True when ``arg`` names something on disk; any OS error (a name over NAME_MAX, say) means no."""
    try:
        os.stat(arg)
    except (OSError, ValueError):
        return False
    return True


@app.command()
@_guard
def schema(
    which: Annotated[str, typer.Argument(help="snapshot, flow, requirements, run or lot")] = "snapshot",
    json_out: JsonOpt = False,
) -> None:
    """Print the JSON Schema of a topomap file format.

    The schema is JSON already: --json changes nothing."""
    from topomap.render.schemas import SCHEMAS, schema_text  # start-up: see the module docstring

    del json_out  # the schema is JSON already; the flag is accepted like on every command

    if which not in SCHEMAS:
        raise TopomapError(f"unknown schema {which!r}", hint=f"one of: {', '.join(SCHEMAS)}")
    write_text(schema_text(which))
