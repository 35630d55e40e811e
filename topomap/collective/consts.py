"""The numbers the expected-bandwidth model uses, each with where it comes from.

Two kinds: NCCL's own constants (``src/graph/topo.h`` and ``tuning.cc`` of NVIDIA/nccl, by release
tag), and efficiencies — how much of a link's figure a collective's busbw reaches — taken from what
NCCL's maintainers say to expect in public threads and from the real nccl-tests outputs kept in
``tests/data/real-nccl-tests`` that are marked "tuned on" in its README (the held-out ones were fitted
to nothing). Every efficiency carries a range: the model's uncertainty, not a promise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from topomap.transport.rules import version_tuple


@dataclass(frozen=True)
class Efficiency:
    """A busbw ÷ link-figure ratio with its range and its source."""

    value: float
    low: float
    high: float
    source: str


# --- NCCL's per-link NVLink figures (GB/s per link, one direction, already below line rate) ----------------
# src/graph/topo.h SM*_NVLINK_BW: v2.12-v2.17 SM70/SM80 22.0; v2.18.1 SM70/80/90 20.0; v2.20.3 SM90 20.6;
# v2.25.1 SM100 40.0; v2.27.3 SM100 40.1; SM60 18.0 and SM86 (GA102 bridge) 12.0 throughout.
def nccl_nvlink_bw(sm: int, version: str | None) -> tuple[float, str]:
    """NCCL's figure for one NVLink of a GPU of compute capability ``sm`` (90 for 9.0) under NCCL
    ``version`` (None: the newest), and its citation."""
    v = version_tuple(version) or (99, 0, 0)
    if sm >= 100:
        bw = 40.1 if v >= (2, 27, 0) else 40.0
    elif sm >= 90:
        bw = 20.6 if v >= (2, 20, 0) else 20.0
    elif sm == 86:
        bw = 12.0
    elif sm >= 70:
        bw = 20.0 if v >= (2, 18, 0) else 22.0
    elif sm >= 60:
        bw = 18.0
    else:
        bw = 20.0
    return bw, f"NCCL's {bw:g} GB/s per link for compute capability {sm // 10}.{sm % 10} (src/graph/topo.h)"


#: NCCL's PCIe figure: 12 GB/s for Gen3 x16, doubling per generation (topo.h PCI_BW, every 2.x tag;
#: the snapshot's link gives the generation and width, :func:`topomap.transport.facts.nccl_pci_bw`).
PCI_BW_GEN3_X16: Final = 12.0

#: NVLS efficiency per architecture, tuning.cc ``nvlsEfficiency`` (v2.30.7): Hopper 0.85, Blackwell 0.74.
NVLS_EFFICIENCY: Final[dict[str, float]] = {"hopper": 0.85, "blackwell": 0.74}

#: NVLS all-reduce busbw over the NVLink ring figure on Hopper: ~480 GB/s on 8x H100 where the ring gets
#: ~370 (sjeaugey, nccl-tests#212; 482.12 and "368.76 with NVLS disabled", nccl-tests#309): 1.30. Blackwell
#: is scaled by NCCL's own NVLS efficiency ratio (0.74 / 0.85), which gives 1.13.
NVLS_GAIN: Final[dict[str, float]] = {
    "hopper": 1.30,
    "blackwell": round(1.30 * NVLS_EFFICIENCY["blackwell"] / NVLS_EFFICIENCY["hopper"], 3),
}

# --- efficiencies ---------------------------------------------------------------------------------------------

#: A ring over NVLink reaches NCCL's per-link figure: 8x A100 ~230 of 240 (sjeaugey, nccl-tests#149), 8x H100
#: 368.76 of 370.8 with NVLS off (nccl-tests#309).
RING_NVLINK = Efficiency(0.97, 0.9, 1.03, "A100 ~230 of 240 GB/s (nccl-tests#149); H100 368.76 of 370.8 (#309)")
#: PCIe peer-to-peer: NCCL's PCIe figure is already ~76 % of the line rate (24 of 31.5 GB/s for Gen4 x16).
RING_PCIE = Efficiency(1.0, 0.7, 1.15, "NCCL's own PCIe figure (topo.h PCI_BW), not fitted")
#: Through host memory (SHM): bounded by what the CPU and memory deliver, which no snapshot records;
#: 8x RTX 5090 (Gen5) reach 28 GB/s, 4 of them 35 (nccl#1639): ~0.6 of NCCL's 48 GB/s PCIe figure.
RING_SHM = Efficiency(0.6, 0.25, 0.8, "8x RTX 5090 through host memory: 28-35 of 48 GB/s (nccl#1639)")
#: A tree's (or NVLSTree's) intra-node part on two nodes: NVLSTree's 469 GB/s on 2x8 H100 where one node's
#: NVLS reaches 482 (nccl-tests#309): 0.975 of the node's own figure, for the plain tree too (not fitted
#: otherwise).
TREE_CHAIN = 0.975

#: Per network family: busbw ÷ the NICs' line rate (÷ 8) of a node. InfiniBand: "24 GB/s per 200G NIC"
#: (sjeaugey, nccl-tests#119); 392.69 on 8x 400G with NCCL_ALGO=Ring (#309). RoCE: as InfiniBand when
#: the fabric is tuned (lossless, NCCL_IB_QPS_PER_CONNECTION), less otherwise. EFA (p4d, EFAv1): 29.6-31.8
#: GB/s on 4x 100G over 3-4 nodes (nccl#527). GPUDirect-TCPXO (GCP A3 Mega, 8x 200G): 338.82 on two nodes
#: (a tree: 2(n−1)/n × 200 × 0.9). Slingshot-11 (Cassini, through aws-ofi-nccl's CXI provider): as
#: RoCE, not fitted. Sockets: the kernel's TCP stack, NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD
#: decide it: 4-6 GB/s on 100G (nccl#450) up to most of the line rate with many sockets.
NETWORK: Final[dict[str, Efficiency]] = {
    "infiniband": Efficiency(0.96, 0.85, 1.0, "24 GB/s per 200G NIC (nccl-tests#119); 392.69 of 400 (#309)"),
    "roce": Efficiency(0.92, 0.6, 1.0, "as InfiniBand on a tuned lossless fabric (not fitted)"),
    "rdma": Efficiency(0.94, 0.6, 1.0, "InfiniBand or RoCE: the link layer is not recorded"),
    "efa": Efficiency(0.62, 0.45, 0.9, "4x 100G EFA on p4d: 29.6-31.8 GB/s on 3-4 nodes (nccl#527)"),
    "tcpxo": Efficiency(0.9, 0.75, 1.0, "GCP A3 Mega, 8x 200G GPUDirect-TCPXO: 338.82 GB/s on 2 nodes"),
    "tcpx": Efficiency(0.7, 0.4, 0.9, "GPUDirect-TCPX (A3): not fitted"),
    "slingshot": Efficiency(0.9, 0.6, 1.0, "Slingshot through the CXI provider: as RoCE, not fitted"),
    "socket": Efficiency(0.4, 0.1, 0.9, "TCP sockets: 4-6 GB/s on 100G (nccl#450), more with many sockets"),
}
#: Without GPUDirect RDMA the network data stages through host memory (a copy each way).
NO_GDR = Efficiency(0.75, 0.5, 1.0, "staged through host memory: not fitted")

#: NCCL's latencies in µs (tuning.cc v2.30.7 ``ncclTunerConstantsDefaults``, Simple protocol): the base per
#: algorithm and the per-step figure per link kind. The curve over sizes adds a pipeline fill that grows
#: slowly with the size, :data:`FILL_US` × (size ÷ 1 MiB)^:data:`FILL_POWER`: the two-node H100 curve of
#: nccl-tests#309 (tests/data/real-nccl-tests, tuned on) reaches 84 % of its peak at 256 MiB (the model: 81 %)
#: and a fifth of it at 8 MiB.
BASE_LAT_US: Final[dict[str, float]] = {"ring": 8.4, "tree": 8.4, "NVLS": 0.0, "NVLSTree": 0.0, "PAT": 8.0, "p2p": 8.4}
HW_LAT_US: Final[dict[str, dict[str, float]]] = {
    "nvlink": {"ring": 3.4, "tree": 4.0, "NVLS": 25.0, "NVLSTree": 25.0, "PAT": 4.0, "p2p": 3.4},
    "pci": {"ring": 5.7, "tree": 4.0, "NVLS": 0.0, "NVLSTree": 0.0, "PAT": 4.0, "p2p": 5.7},
    "net": {"ring": 14.0, "tree": 14.0, "NVLS": 18.0, "NVLSTree": 20.9, "PAT": 14.0, "p2p": 14.0},
}
FILL_US: Final = 45.0
FILL_POWER: Final = 0.25

#: The releases that brought an algorithm (NCCL release notes): NVLS 2.17, NVLSTree 2.18, PAT 2.23.
NVLS_SINCE: Final = (2, 17, 0)
NVLS_TREE_SINCE: Final = (2, 18, 0)
PAT_SINCE: Final = (2, 23, 0)
MNNVL_SINCE: Final = (2, 20, 0)

#: The verdict bands (README "Expected bus bandwidth"): below under 0.85 of expected, far-below under 0.7,
#: above over 1.15.
BELOW: Final = 0.85
FAR_BELOW: Final = 0.7
ABOVE: Final = 1.15


def since(version: str | None, release: tuple[int, int, int]) -> bool:
    """Whether NCCL ``version`` (None: the newest) has a feature that came in ``release``."""
    v = version_tuple(version)
    return v is None or v >= release
