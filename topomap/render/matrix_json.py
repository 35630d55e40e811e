"""`topomap matrix --json`: the `nvidia-smi topo -m` matrix of one host as a typed value, for the
CLI's JSON printer (the text of the same matrix is :func:`topomap.render.matrix.render_matrix`)."""

from __future__ import annotations

import msgspec

from topomap.model.snapshot import Snapshot
from topomap.model.source_facts import source_knows
from topomap.render.matrix import matrix_ids, pair_lookup


class MatrixGpu(msgspec.Struct, frozen=True):
    """A GPU's trailing columns: CPU Affinity, NUMA Affinity, GPU NUMA ID (None where unknown)."""

    id: str
    cpu_affinity: str | None
    numa_affinity: int | None
    gpu_numa_id: int | None


class MatrixJson(msgspec.Struct, frozen=True):
    """Rows and columns in nvidia-smi order (GPUs, then RDMA NICs); ``cells[r][c]`` is the path code
    (`NV18`, `PIX`, …), None on the diagonal and where the snapshot has no pair."""

    ids: list[str]
    cells: list[list[str | None]]
    gpus: list[MatrixGpu]
    nic_legend: dict[str, str]  # nicN → device name, as the legend under the matrix
    # false: GPU-GPU cells are PCIe paths; NVLink, where it joins a pair, is not in them
    nvlink_recorded: bool


def matrix_json(snap: Snapshot) -> MatrixJson:
    """The matrix of a one-host snapshot."""
    ids = matrix_ids(snap)
    look = pair_lookup(snap)
    return MatrixJson(
        ids=ids,
        cells=[[None if r == c else look.get(frozenset((r, c))) for c in ids] for r in ids],
        gpus=[
            MatrixGpu(
                id=f"gpu{g.index}",
                cpu_affinity=g.cpu_affinity,
                numa_affinity=g.numa_node,
                gpu_numa_id=g.gpu_numa_node,
            )
            for g in snap.gpus
        ],
        nic_legend={f"nic{n.index}": n.name for n in snap.nics if n.rdma},
        nvlink_recorded=source_knows(snap, "nvlink"),
    )
