"""NVLS (NVLink SHARP: collectives reduced in the NVSwitch) for one GPU: the one function that decides it.

It sits below the flow, the plan, ``check``, ``diff`` and ``nccl`` so that all of them (the expected
collective bandwidth, ``topomap nccl``'s per-GPU features) ask the same answer; ``topomap.nccl.features``
re-exports it. Rules as NCCL 2.30.7 writes them (``src/transport/nvls.cc``, ``ncclNvlsInit``):
``NCCL_NVLS_ENABLE`` (default 2, on where supported); needs CUDA 12.1+, compute capability 9.0+, the GPUs
on NVSwitches, and the driver reporting multicast support (``CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED``,
which a snapshot does not record: where every recorded condition holds the answer is "possible").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from topomap.base.devices import cc_major
from topomap.base.part_names import model_of
from topomap.graph import Topology, gpu_node
from topomap.graph.evidence import nvlink
from topomap.model.snapshot import Gpu
from topomap.transport.rules import NcclEnv, version_tuple

Can = Literal["yes", "no", "possible", "unknown"]


@dataclass(frozen=True)
class Feature:
    """One feature of one GPU: yes / no / possible / unknown, why, and the variable that changes it."""

    can: Can
    why: str
    env: str


def on_nvswitch(topo: Topology, g: Gpu) -> bool | None:
    """True when the GPU's NVLinks go to NVSwitches (probed, or inferred from an all-to-all NV#
    matrix no direct wiring could give), False when they go to GPUs only or it has none recorded
    in a source that records NVLink, None when the source cannot tell."""
    gid = gpu_node(g)
    graph = topo.graph
    nv = [n for n in graph.neighbors(gid) if graph.edges[gid, n].get("kind") == "nvlink"] if gid in graph else []
    if any(graph.nodes[n].get("kind") == "nvswitch" for n in nv):
        return True
    if nv:
        return False
    others = [x for x in topo.snapshot.gpus if x.index != g.index]
    known = [nvlink(topo, gid, gpu_node(x)).usable for x in others]
    return False if known and all(k.no for k in known) else None


def hopper_or_later(g: Gpu) -> tuple[bool | None, str]:
    """Compute capability 9.0+ from the probe, else from the model's architecture."""
    major = cc_major(g.compute_capability)
    if major is not None:
        return major >= 9, f"compute capability {g.compute_capability}"
    model = model_of(g.name, g.pci_device_id)
    if model is not None:
        return model.architecture in ("hopper", "blackwell"), f"{model.name} ({model.architecture})"
    return None, ""


def nvls(topo: Topology, g: Gpu, env: NcclEnv) -> Feature:
    """Can NCCL's collectives use NVLink SHARP on this GPU's NVSwitches?"""
    var = "NCCL_NVLS_ENABLE"
    if env.get(var) is not None and env.get(var) == "0":
        return Feature("no", f"{var}=0", var)
    later, what = hopper_or_later(g)
    if later is False:
        return Feature("no", f"{what}: NVLS needs Hopper (compute capability 9.0) or later", var)
    switch = on_nvswitch(topo, g)
    if switch is False:
        return Feature("no", "its NVLinks do not go to NVSwitches (direct links, bridges, or none)", var)
    cuda = version_tuple(topo.snapshot.software.cuda_driver_version)
    if cuda is not None and cuda < (12, 1, 0):
        return Feature("no", f"CUDA driver {topo.snapshot.software.cuda_driver_version}: NVLS needs 12.1 or later", var)
    missing = [
        item
        for item, known in (
            (
                "compute capability or GPU model (nvidia-smi --query-gpu=name,compute_cap --format=csv)",
                later is not None,
            ),
            ("CUDA driver version (`nvidia-smi -q`, or topomap probe)", cuda is not None),
            ("whether the NVLinks go to NVSwitches (nvidia-smi nvlink -R, or topomap probe)", switch is not None),
        )
        if not known
    ]
    if missing:
        return Feature("unknown", "not recorded: " + "; ".join(missing), var)
    return Feature(
        "possible",
        "Hopper or later on NVSwitches with CUDA 12.1+; the driver's multicast support "
        "(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED) is not recorded",
        var,
    )
