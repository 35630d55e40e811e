"""Regenerate samples/snapshots/ from tests/data/real-topologies (run from the repository root).

Each sample records its public origin in source.origin, not a local path.
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from topomap.importers import import_file
from topomap.model.snapshot import Source
from topomap.model.codec import save_snapshot

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real-topologies"

SAMPLES = {
    "hgx-h200-8gpu-10nic.json": (
        "nvidia-smi/hgx-h200-8gpu-10nic-nchc-nano4.txt",
        "nvidia-smi topo -m of an 8x H200 cluster node, a national HPC centre's Slurm user guide",
    ),
    "hgx-a100-8gpu-8nic.json": (
        "nvidia-smi/a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt",
        "nvidia-smi topo -m, github.com/deepseek-ai/DeepEP/issues/13",
    ),
    "gcp-a4-b200-8gpu.json": (
        "nvidia-smi/gcp-gke-a4-b200-8gpu-8nic.txt",
        "nvidia-smi topo -m, github.com/google/dranet site/content/docs/user/gke-rdma.md @9d775b5",
    ),
    "dgx1-v100.json": (
        "nvidia-smi/dgx1-v100-pytorch-ddp-bench.txt",
        "nvidia-smi topo -m, github.com/pytorch/pytorch benchmarks/distributed/ddp/README.md @e125c55",
    ),
    "rtx4090-8gpu-all-sys.json": (
        "nvidia-smi/rtx4090-8gpu-2nic-go-gpuallocator17.txt",
        "nvidia-smi topo -m, github.com/NVIDIA/go-gpuallocator/issues/17",
    ),
    "rtx5090-pair-p2p-gns.json": (
        "nvidia-smi/rtx5090-2gpu-phb-topo-and-p2p-rw-club3090-1229.txt",
        "nvidia-smi topo -m and topo -p2p, github.com/noonghunna/club-3090/issues/1229",
    ),
    "h20-8gpu-vm.json": (
        "nvidia-smi/h20-3e-8gpu-vm-tencent.txt",
        "nvidia-smi topo -m, github.com/NVIDIA/nccl-tests/issues/321",
    ),
    "aws-p4d-24xlarge.json": (
        "nccl-xml/aws-p4d-24xlarge.xml",
        "NCCL topology file, github.com/aws/aws-ofi-nccl topology/p4d-24xl-topo.xml @35d97d2",
    ),
    "azure-ndv4.json": (
        "nccl-xml/azure-ndv4.xml",
        "NCCL topology file, github.com/Azure/azhpc-images topology/ndv4-topo.xml @4a4565a",
    ),
    "mi300x-8gpu-8nic.json": (
        "amd/rccl-xml/topo_8p_940.xml",
        "RCCL topology file of an 8x AMD Instinct MI300X host with 8 ConnectX-7 NICs, "
        "github.com/ROCm/rccl tools/topo_expl/models/topo_8p_940.xml @0cbce2a",
    ),
    "ibm-gx3d-h100-8gpu.json": (
        "nccl-xml/ibm-cloud-gx3d-h100-8gpu-vsi.xml",
        "NCCL topology dump, IBM Cloud documentation 'NVIDIA H100 cluster network profile'",
    ),
    "dgx2h-16gpu.json": (
        "hwloc/nvidia-dgx2h.xml",
        "hwloc XML, github.com/open-mpi/hwloc tests/hwloc/xml/nvidiaDGX2.xml @02139dd",
    ),
}


def main() -> int:
    out = ROOT / "samples" / "snapshots"
    out.mkdir(parents=True, exist_ok=True)
    for name, (rel, origin) in SAMPLES.items():
        snap = import_file(REAL / rel)
        snap = msgspec.structs.replace(snap, source=msgspec.structs.replace(snap.source, origin=origin))
        assert isinstance(snap.source, Source)
        save_snapshot(snap, out / name)
        print(f"{name}: {len(snap.gpus)} GPU(s), {len(snap.nics)} NIC(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
