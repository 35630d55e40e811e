"""Placement: which K GPUs (NICs, cores) of a host to give a job for a pattern, and the lines that
pin it there. ``place_gpus(topo, k, pattern, nics, exclude)`` → :class:`PlaceResult`; for a flow,
``place_flow``. Modules: candidates (usable GPUs, pair links ranked), search (objective, exact
search by classes), lines (CUDA ordinals, NCCL, numactl, taskset, Docker, Slurm), answer, flowsteps.
"""

from __future__ import annotations

from topomap.place.answer import ChosenGpu, PlaceError, PlaceResult, place_gpus
from topomap.place.candidates import PairLink, Skip, parse_exclude
from topomap.place.flowsteps import FlowPlacement, all_gpu_steps, place_flow
from topomap.place.search import PATTERNS

__all__ = [
    "PATTERNS",
    "ChosenGpu",
    "FlowPlacement",
    "PairLink",
    "PlaceError",
    "PlaceResult",
    "Skip",
    "all_gpu_steps",
    "parse_exclude",
    "place_flow",
    "place_gpus",
]
