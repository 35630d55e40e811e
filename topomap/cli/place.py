"""Command that places a job: place."""

from __future__ import annotations

import copy
from typing import Annotated

import typer

from topomap.base.errors import TopomapError
from topomap.cli.given import USAGE, sort_files
from topomap.cli.wiring import (
    AllOpt,
    FlowOpt,
    HostOpt,
    JsonOpt,
    LotTypeOpt,
    ProbeOpt,
    _console,
    _guard,
    _load,
    _print_json,
    app,
    bounded,
)


@app.command()
@_guard
def place(
    gpus: Annotated[int, typer.Option("--gpus", help="How many GPUs to place (K).", callback=bounded(1, 4096))],
    files: Annotated[
        list[str] | None,
        typer.Argument(
            help="A snapshot (or raw nvidia-smi/NCCL/hwloc file); or a flow file, then snapshots for its hosts "
            "(NAME=FILE per host). Told apart by their content.",
            show_default=False,
        ),
    ] = None,
    nics: Annotated[bool, typer.Option("--nics", help="Also a NIC per GPU (GPUDirect, distinct NICs).")] = False,
    pattern: Annotated[str, typer.Option("--pattern", help="tp (default), ring or independent.")] = "tp",
    exclude: Annotated[str | None, typer.Option("--exclude", help="GPUs not to use, e.g. 3,5 or gpu3.")] = None,
    probe: ProbeOpt = None,
    flow_opt: FlowOpt = None,
    json_out: JsonOpt = False,
    lot_type: LotTypeOpt = None,
    all_hosts: AllOpt = False,
    host: HostOpt = None,
) -> None:
    """Pick the best K GPUs (and NICs, cores) for a job, with the reasons.

    The best K GPUs for a pattern, with the reasons, and the lines that pin a
    job there (CUDA_VISIBLE_DEVICES, NCCL_IB_HCA, numactl, taskset, docker, srun). A flow file:
    its steps on HOST:gpus get the best K GPUs of the host, arrows shown before and after
    (`topomap place FLOW [SNAP | NAME=SNAP …] --gpus K`). A merged cluster: the placement once per
    group of alike hosts (--host NAME: one host's; --all: every host's)."""
    # imports inside the command keep start-up fast: `topomap --help` must not load networkx
    from topomap.place import parse_exclude

    try:
        excluded = parse_exclude(exclude)
    except ValueError as err:
        raise TopomapError(f"--exclude {exclude!r}: {err} is not a GPU", hint="e.g. --exclude 3,5 or gpu3") from None
    given = sort_files(files or [], "place")
    given.refuse("requirements", "run", "measurements")
    flow_file = given.flow(flow_opt)
    if flow_file is not None:
        return _place_flow(flow_file, given.machines, gpus, nics, pattern, excluded, probe or [], json_out)
    if probe:
        raise TopomapError("--probe binds a flow's hosts; place SNAP takes the snapshot itself", hint="drop --probe")
    if not given.machines:
        raise TopomapError("place needs a snapshot or a flow file", hint=USAGE["place"])
    if len(given.machines) != 1:
        raise TopomapError(
            f"place takes one snapshot without a flow; {len(given.machines)} given ({', '.join(given.machines)})",
            hint=USAGE["place"],
        )
    target = given.machines[0]
    from topomap.graph import build  # start-up: networkx loads only when a command needs it
    from topomap.place import place_gpus
    from topomap.render.place_view import place_view

    snap = _load(target)
    if snap.source.kind == "merge" and host is None:
        from topomap.cli.cluster_views import place_cluster  # once per group of alike hosts (issue 34)

        return place_cluster(snap, (gpus, pattern, nics, excluded), json_out, all_hosts)
    if host is not None:
        from topomap.cluster.groups import one_host

        snap = one_host(snap, host)
    result = place_gpus(build(snap), gpus, pattern, nics, excluded)
    if json_out:
        _print_json(result.to_json())
    else:
        _show(place_view(result))


def _place_flow(
    path: str,
    machines: list[str],
    k: int,
    nics: bool,
    pattern: str,
    exclude: set[str],
    probe: list[str],
    json_out: bool,
) -> None:
    # imports inside the command keep start-up fast (see place)
    from topomap.cli.bind import bind_probes, read_flow_file
    from topomap.place import all_gpu_steps, place_flow
    from topomap.render.place_view import flow_place_view

    flow = read_flow_file(path, "place")
    after = copy.deepcopy(flow)  # unbound: binding expands placements in place, the copy is rebound placed
    targets = all_gpu_steps(flow)
    fp = place_flow(flow, after, bind_probes(flow, probe, machines), targets, k, pattern, nics, exclude)
    if json_out:
        _print_json(fp.to_json())
    else:
        _show(flow_place_view(fp))


def _show(view: object) -> None:
    """On a terminal as rich lays it out; piped, every line whole (never wrapped or cut)."""
    _console().print(view)
