"""The bus bandwidth each NCCL collective should reach on a lot, and why (issue 32).

A bound model with NCCL's constants (:mod:`.consts`): per host the tiers a collective's data crosses —
the NVLink/NVSwitch fabric (NVLS where it applies), PCIe peer-to-peer, host memory (SHM), the NICs — each
from topomap's evidence and NCCL's transport decision (:mod:`topomap.transport`), and the algorithm NCCL
likely picks for the release decides which bound holds (:mod:`.expect`). It sits below the flow, the plan,
``check``, ``diff`` and ``nccl``, which all ask it; NVLS availability is decided here (:mod:`.nvls`).
"""

from __future__ import annotations
