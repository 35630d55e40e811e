"""Per GPU, what NCCL can use beyond the pairwise transport: PXN (its NIC reached through an NVLink
peer), NVLS (NVLink SHARP: collectives reduced in the NVSwitch) and multi-node NVLink.

Rules as NCCL 2.30.7 writes them:

- PXN, ``src/graph/paths.cc`` (``ncclTopoComputePaths``, "PXN"): unless ``NCCL_PXN_DISABLE=1``, a
  GPU whose path to a NIC is longer than PXB sends through a peer GPU of the same host that it
  reaches over NVLink and that is within PXB of that NIC; GPUDirect RDMA is then the peer's.
- NVLS, ``src/transport/nvls.cc`` (``ncclNvlsInit``), decided by :func:`topomap.collective.nvls.nvls`
  (below the flow and the plan, which ask it too): ``NCCL_NVLS_ENABLE`` (default 2, on where supported);
  needs CUDA 12.1+, compute capability 9.0+, the GPUs on NVSwitches, and the driver reporting multicast
  support (``CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED``, which a snapshot does not record: where every
  recorded condition holds the answer is "possible", not "yes").
- Multi-node NVLink, ``src/transport/nvls.cc`` / ``src/graph/topo.cc`` (``ncclMnnvlCheck``):
  ``NCCL_MNNVL_ENABLE`` (default 2, auto); needs the GPU's fabric registered (state completed,
  status success) with a cluster UUID and clique id: GPUs of two hosts in the same clique talk over
  NVLink, not the network.
"""

from __future__ import annotations

from dataclasses import dataclass

from topomap.collective.nvls import Can, Feature, nvls
from topomap.collective.nvls import on_nvswitch as _on_nvswitch
from topomap.graph import Topology, gpu_node
from topomap.graph.evidence import nearest_nic, nics_at_best_class, nvlink
from topomap.model.facts import fabric_clique, fabric_ready
from topomap.model.snapshot import Gpu
from topomap.transport.rules import NcclEnv, path_rank

__all__ = ["Can", "Feature", "GpuFeatures", "features", "mnnvl", "nvls", "pxn"]


@dataclass(frozen=True)
class GpuFeatures:
    gpu: str
    pxn: Feature
    nvls: Feature
    mnnvl: Feature


def features(topo: Topology, gpus: list[Gpu], env: NcclEnv) -> list[GpuFeatures]:
    """PXN, NVLS and multi-node NVLink for each GPU of a snapshot."""
    return [GpuFeatures(gpu_node(g), pxn(topo, g, gpus, env), nvls(topo, g, env), mnnvl(topo, g, env)) for g in gpus]


def pxn(topo: Topology, g: Gpu, gpus: list[Gpu], env: NcclEnv) -> Feature:
    """Does this GPU's network traffic go through an NVLink peer nearer its NIC?"""
    if env.flag("NCCL_PXN_DISABLE"):
        return Feature("no", "NCCL_PXN_DISABLE=1", "NCCL_PXN_DISABLE")
    gid = gpu_node(g)
    own = nearest_nic(topo, gid)
    if own.nic is None or own.path is None:
        return Feature("unknown", "no usable NIC, or its path to this GPU, is recorded", "NCCL_PXN_DISABLE")
    if path_rank(own.path) <= path_rank("PXB"):
        return Feature("no", f"its own NIC is {own.path}: within PXB, no detour", "NCCL_PXN_DISABLE")
    unknown_link = False
    for peer in gpus:
        pid = gpu_node(peer)
        if pid == gid:
            continue
        link = nvlink(topo, gid, pid).usable
        if link.value == "unknown":
            unknown_link = True
            continue
        if not link.yes:
            continue
        near = nics_at_best_class(topo, pid)
        best = nearest_nic(topo, pid)
        if near and best.path is not None and path_rank(best.path) <= path_rank("PXB"):
            names = ", ".join(n.nic.name for n in near if n.nic is not None)
            return Feature(
                "yes",
                f"its NIC is {own.path}; NVLink peer {pid} is {best.path} to {names}: sends go through {pid}",
                "NCCL_PXN_DISABLE",
            )
    if unknown_link:
        return Feature("unknown", "whether NVLink joins it to a GPU nearer a NIC is not recorded", "NCCL_PXN_DISABLE")
    return Feature("no", f"its NIC is {own.path} and no NVLink peer is within PXB of a NIC", "NCCL_PXN_DISABLE")


def mnnvl(topo: Topology, g: Gpu, env: NcclEnv) -> Feature:
    """Does this GPU reach GPUs of other hosts over multi-node NVLink?"""
    var = "NCCL_MNNVL_ENABLE"
    if env.get(var) == "0":
        return Feature("no", f"{var}=0", var)
    ready = fabric_ready(topo.snapshot, g)
    clique = fabric_clique(topo.snapshot, g)
    if clique is not None:
        uuid, cid = clique
        if not uuid.replace("-", "").strip("0"):
            return Feature("no", "fabric registered with no cluster UUID: an NVLink domain of this host only", var)
        return Feature("yes", f"fabric registered: cluster {uuid}, clique {cid}", var)
    if ready.yes:  # registered, but in no multi-host cluster (the driver reports no cluster UUID)
        return Feature("no", "fabric registered with no cluster UUID: an NVLink domain of this host only", var)
    if ready.value == "unknown":
        if _on_nvswitch(topo, g) is False:  # multi-node NVLink runs through NVSwitches
            return Feature("no", "its NVLinks do not go to NVSwitches (direct links, bridges, or none)", var)
        why = "; ".join(ready.reasons) or "fabric state not recorded"
        return Feature("unknown", f"{why} ({ready.settle} tells it)" if ready.settle else why, var)
    if g.fabric is not None and g.fabric.state == "not-supported":
        return Feature("no", "the GPU has no NVLink fabric (not an NVLink-domain system)", var)
    return Feature("no", "; ".join(ready.reasons) or "fabric not registered", var)
