"""What decides where a command's work lands: the environment it ran with, and versions.

Placement variables (which cards the command may use, how many ranks) describe the
*arrangement* two runs are meant to differ in; every other recorded variable (NCCL_*, thread
counts, allocator settings) is a *setting* that should be equal for a fair comparison.
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata

from topomap import __version__
from topomap.model.snapshot import Snapshot
from topomap.record.model import GpuSeries

PLACEMENT_KEYS = (
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "GPU_DEVICE_ORDINAL",
    "SLURM_JOB_GPUS",
    "SLURM_STEP_GPUS",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
)
SETTING_PREFIXES = ("NCCL_", "CUDA_", "NVIDIA_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "UCX_", "OMPI_MCA_")
SETTING_KEYS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTORCH_CUDA_ALLOC_CONF", "XLA_FLAGS", "TF_GPU_ALLOCATOR")
# Packages whose version changes what a GPU run does; recorded when installed in topomap's environment.
PACKAGES = ("torch", "jax", "jaxlib", "tensorflow", "cupy", "numpy", "nvidia-nccl-cu12", "nvidia-nccl-cu13")


def is_placement(key: str) -> bool:
    return key in PLACEMENT_KEYS


def placement_environment(env: dict[str, str]) -> dict[str, str]:
    """The variables of ``env`` that decide placement or communication (the rest is not recorded)."""
    return {
        k: v
        for k, v in sorted(env.items())
        if k in PLACEMENT_KEYS or k in SETTING_KEYS or k.startswith(SETTING_PREFIXES)
    }


def versions(snapshot: Snapshot | None) -> dict[str, str]:
    """topomap, Python, OS, driver/CUDA/NVML (from the snapshot) and the GPU packages installed."""
    out = {
        "topomap": __version__,
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
    }
    if snapshot is not None:
        sw = snapshot.software
        for key, value in (("driver", sw.driver_version), ("cuda", sw.cuda_driver_version), ("nvml", sw.nvml_version)):
            if value:
                out[key] = value
    found = False
    for pkg in PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
            found = True
        except metadata.PackageNotFoundError:
            continue
    if found:  # the command may run another interpreter: say whose packages these are
        out["packages_of"] = sys.executable
    if sys.implementation.name != "cpython":
        out["python_implementation"] = sys.implementation.name
    return out


def mark_visibility(series: list[GpuSeries], env: dict[str, str], snapshot: Snapshot | None) -> None:
    """Set ``visible_to_command`` on each card from CUDA_VISIBLE_DEVICES.

    Tokens are UUIDs (``GPU-…`` / ``MIG-…``, prefixes allowed as CUDA allows) or CUDA ordinals;
    an ordinal is matched through the snapshot's CUDA ordinals when the probe saw exactly as many
    CUDA devices as the variable names (it ran under the same variable, so a GPU with an ordinal is
    one the command sees); otherwise the ordinal is assumed equal to the NVML index, and said so.
    """
    raw = env.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        for s in series:
            s.visible_to_command, s.visibility_note = True, "CUDA_VISIBLE_DEVICES not set: every GPU is visible"
        return
    tokens = [t.strip() for t in raw.split(",") if t.strip()]
    ordinal_of: dict[int, int] = {}
    if snapshot is not None:
        ordinal_of = {g.index: g.cuda_ordinal for g in snapshot.gpus if g.cuda_ordinal is not None}
        if len(ordinal_of) != len(tokens):
            ordinal_of = {}
    for s in series:
        uuid = s.uuid or ""
        by_uuid = any(t.startswith(("GPU-", "MIG-")) and uuid.startswith(t) for t in tokens)
        if by_uuid:
            s.visible_to_command, s.visibility_note = True, f"CUDA_VISIBLE_DEVICES={raw} names its UUID"
            continue
        if "/mig" in s.id:
            s.visible_to_command, s.visibility_note = None, f"CUDA_VISIBLE_DEVICES={raw}: MIG devices need a UUID"
            continue
        if ordinal_of:
            s.visible_to_command = s.index in ordinal_of
            s.visibility_note = f"CUDA_VISIBLE_DEVICES={raw}, CUDA ordinals from the snapshot"
        else:
            ints = {int(t) for t in tokens if t.isdigit()}
            s.visible_to_command = s.index in ints
            s.visibility_note = f"CUDA_VISIBLE_DEVICES={raw}, ordinal assumed equal to the NVML index"
