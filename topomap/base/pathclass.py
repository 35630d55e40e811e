"""PCIe path class of two devices from their chains in the PCI tree, the way nvidia-smi labels it.

A chain lists a device's ancestors from the host bridge down, ending with the device itself:
``["pci0000:17", "0000:17:00.0", "0000:18:00.0", "0000:19:08.0", "0000:1b:00.0"]``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from topomap.base.links import PathClass


def classify_chains(
    chain_a: Sequence[str],
    chain_b: Sequence[str],
    locality_a: Hashable | None,
    locality_b: Hashable | None,
) -> PathClass:
    """PIX / PXB / PHB / NODE / SYS for two devices.

    ``locality`` is the NUMA node of each device (or, where the kernel says -1, any other key
    for "the same CPU side", such as the local CPU list). Rules (nvidia-smi legend):
    different host bridges → NODE when on one NUMA node, else SYS; same host bridge but no
    common bridge → PHB; a common bridge with at most one more bridge on each side (the two
    downstream ports of one switch) → PIX; deeper → PXB.
    """
    if not chain_a or not chain_b:
        raise ValueError("empty PCI chain")
    if chain_a[0] != chain_b[0]:
        if locality_a is not None and locality_b is not None and locality_a != locality_b:
            return "SYS"
        return "NODE"
    k = 0
    for x, y in zip(chain_a, chain_b):
        if x != y:
            break
        k += 1
    if k <= 1:
        return "PHB"
    rest_a = len(chain_a) - 1 - k  # bridges below the common one, excluding the device itself
    rest_b = len(chain_b) - 1 - k
    if rest_a <= 1 and rest_b <= 1:
        return "PIX"
    return "PXB"
