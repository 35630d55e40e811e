"""`topomap cluster`: one page for a merged cluster snapshot — hosts by shape, where they differ,
rails, NVLink cliques, outliers."""

from __future__ import annotations

from typing import Annotated

import typer

from topomap.base.errors import TopomapError
from topomap.cli.output import write_text
from topomap.cli.wiring import JsonOpt, _guard, _load, _print_json, app


@app.command()
@_guard
def cluster(
    snapshot: Annotated[str, typer.Argument(help="A merged snapshot (topomap merge … -o CLUSTER.json).")],
    json_out: JsonOpt = False,
) -> None:
    """One page for a merged cluster: shapes, differences and outliers.

    Compares driver, CUDA, GPUs, NVLink and cliques, rails, NICs, trained PCIe widths, fabric and
    health findings across hosts. Exit 0, 2 bad input."""
    # imports inside the command keep start-up fast (the analysis and its view)
    from topomap.cluster import analyse
    from topomap.render.cluster_view import cluster_view

    merged = _load(snapshot)
    if merged.source.kind != "merge":
        raise TopomapError(
            f"{snapshot}: one host's snapshot, not a merged cluster",
            hint="merge the per-host snapshots first: topomap merge a.json b.json -o cluster.json",
        )
    report = analyse(merged)
    if json_out:
        _print_json(report.to_json())
        return
    write_text("".join(line.rstrip() + "\n" for line in cluster_view(report)))
