"""RCCL's transport rules by release (issue 35): RCCL is NCCL's fork for AMD GPUs, with its own defaults.

Read from ROCm/rccl at its tags rocm-5.0.0 (RCCL 2.10.3), rocm-5.4.0 (2.13.4), rocm-5.7.0 (2.17.1),
rocm-6.0.0 (2.18.3), rocm-6.1.0 (2.18.6), rocm-6.2.0 (2.20.5) and the newest source held, @0cbce2a
(2.21.5; ``makefiles/version.mk``). Newer releases (2.26-2.30 in the real logs kept) are read with the
newest rules, and the report says so.

- ``src/graph/paths.cc`` ``ncclTopoCheckP2p``: "In general, use P2P whenever we can": the P2P level is
  PATH_SYS, PXB on an x86 Intel CPU, an ARM CPU or a Zhaoxin one; ``NCCL_P2P_LEVEL`` /
  ``NCCL_P2P_DISABLE`` override it (every tag from 2.10.3 to 2.21.5). XGMI is RCCL's LINK_NVL/PATH_NVL
  (``topoPathTypeStr``: "XGMI"), inside every level but LOC. On AMD the NVML P2P check is compiled out
  (``#if defined(__HIP_PLATFORM_AMD__)``): RCCL does not ask amd-smi's ACCESS table.
- ``src/transport/p2p.cc`` ``p2pCanConnect``: both GPUs must support fine-grained memory
  (``hasFineGrain``) and ``hipDeviceCanAccessPeer`` must answer 1; ``P2P/direct pointer`` within one
  process, ``P2P/IPC`` across processes (``P2P/CUMEM`` only with NCCL_CUMEM_ENABLE=1: cuMem support is
  not detected on ROCm, ``ncclIsCuMemSupported``; the 2.27.7 log kept shows ``P2P/IPC``); RCCL reads
  (``/read``) only where ``ncclTopoCheckP2p`` allows it: NVLink between two compute-capability-8.0 GPUs,
  never on AMD, unless NCCL_P2P_READ_ENABLE=1.
- ``ncclTopoCheckNet``: ``NCCL_NET_DISABLE_INTRA`` defaults to 1 in RCCL (0 in NCCL): two GPUs of one
  host never use the network unless it is set to 0 (2.17.1 and later; 2.13.4 and older have no such check).
- ``src/transport/shm.cc``: SHM between processes of one host and one /dev/shm unless NCCL_SHM_DISABLE=1.
- ``ncclTopoCheckGdr``: GPUDirect RDMA up to PXB (``NCCL_NET_GDR_LEVEL``); on an AMD Rome CPU, PHB when
  the GPU and NIC hang off one CPU root; no pre-Ampere read restriction on AMD (compiled out).
"""

from __future__ import annotations

from typing import Final

from topomap.transport.rules import version_tuple

RCCL_SOURCE: Final = "RCCL 2.21.5 (github.com/ROCm/rccl @0cbce2a)"
#: RCCL releases whose source was read, by ROCm tag.
RCCL_TAGS: Final = {
    "2.10.3": "rocm-5.0.0",
    "2.13.4": "rocm-5.4.0",
    "2.17.1": "rocm-5.7.0",
    "2.18.3": "rocm-6.0.0",
    "2.18.6": "rocm-6.1.0",
    "2.20.5": "rocm-6.2.0",
    "2.21.5": "@0cbce2a",
}

#: RCCL's rules in words, by id (the ids the NCCL view shows beside each pair).
RCCL_RULES: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    "rccl-p2p-level": (
        'RCCL\'s P2P level is SYS ("use P2P whenever we can"), PXB on an Intel, ARM or Zhaoxin CPU '
        "(paths.cc, RCCL 2.10-2.21)",
        ("NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE"),
    ),
    "rccl-xgmi": (
        "XGMI is RCCL's NVL path: inside every P2P level but LOC (paths.cc, topo.cc)",
        ("NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE"),
    ),
    "rccl-p2p-disabled-env": ("NCCL_P2P_DISABLE=1 turns P2P off for every pair, XGMI included", ("NCCL_P2P_DISABLE",)),
    "rccl-shm": (
        "GPUs of one host without P2P exchange through host shared memory (shm.cc)",
        ("NCCL_SHM_DISABLE", "NCCL_P2P_LEVEL"),
    ),
    "rccl-net-intra": (
        "RCCL never uses the network between GPUs of one host unless NCCL_NET_DISABLE_INTRA=0 (its default 1, "
        "paths.cc ncclTopoCheckNet, RCCL 2.17 and later)",
        ("NCCL_NET_DISABLE_INTRA",),
    ),
    "rccl-other-host": (
        "different hosts use the network (paths.cc, shm.cc)",
        ("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_NET"),
    ),
    "rccl-unknown": ("the topology does not say enough to apply RCCL's rules", ()),
}


def rccl_rules_used(version: str | None) -> str:
    """Which RCCL rules a prediction follows, in words."""
    if version is None:
        return f"{RCCL_SOURCE}, the newest RCCL source read"
    v = version_tuple(version)
    if v is not None and v > (2, 21, 5):
        return f"RCCL {version}: newer than the newest RCCL source read ({RCCL_SOURCE}); its rules are assumed"
    return f"RCCL {version}'s release family (ROCm/rccl at its ROCm tags)"


def rccl_p2p_level(cpu: str | None) -> str | None:
    """RCCL's default P2P level for a CPU kind (``transport.rules.CPU_KINDS``); None when not recorded."""
    if cpu is None:
        return None
    return "PXB" if cpu in ("intel", "intel-bdw", "arm", "zhaoxin") else "SYS"


def net_intra_default_off(version: str | None) -> bool:
    """RCCL 2.17 and later never use the network inside a host by default (NCCL_NET_DISABLE_INTRA=1)."""
    v = version_tuple(version)
    return v is None or v >= (2, 17, 0)
