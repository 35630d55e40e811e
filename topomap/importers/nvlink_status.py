"""`nvidia-smi nvlink -s` when no link of a GPU is up (issue 30 item 4): under the GPU's line it prints
one sentence instead of its ``Link N: … GB/s`` lines. That is a status, not an `nvidia-smi -L`: it says
no NVLink is active on that GPU, so no GPU pair through it travels over NVLink, and a bridge that should
be there is not up. And `nvlink -R` on a bridged pair, which names each link's remote bus only."""

from __future__ import annotations

import re

import msgspec

from topomap.model.snapshot import Finding, Gpu

#: Every link inactive (NVML finds the links, none trained: a PCIe card without a bridge, or a bridge that
#: is not up), or a GPU without NVLink. Seen as "NVLink" and as "Nvlink": github.com/HPE-Japan-Presales/
#: e-learning gpu/a100/mgmt_on_ubuntu22.04.4lts.md @366987b (2x A100 PCIe, driver 555.42.02).
_NO_LINK_UP = re.compile(
    r"^\s*(?:NVML: )?(?P<words>Unable to retrieve NVLink information as all links are inActive"
    r"|Device does not have or support NVLink)\s*$",
    re.IGNORECASE,
)


def no_link_up(line: str) -> str | None:
    """The sentence `nvlink -s` prints for a GPU with no link up (as printed), or None."""
    m = _NO_LINK_UP.match(line)
    return m.group("words") if m else None


def no_link_findings(said: dict[int, str | None]) -> list[Finding]:
    """One finding per GPU whose `nvlink -s` block says no link is up: what it means and what settles a
    bridge that should be there."""
    out: list[Finding] = []
    for index, words in sorted(said.items()):
        if words is None:
            continue
        bridge = (
            ""
            if "does not have" in words.lower()
            else (
                "; if an NVLink bridge is fitted it is not up: reseat it, then `nvidia-smi nvlink -s` and "
                "`nvidia-smi topo -m` again (NV# between the pair), and `dmesg | grep -i nvlink` for training errors"
            )
        )
        out.append(
            Finding(
                kind="nvlink-inactive",
                subject=f"gpu{index}",
                severity="info",
                text=f"no NVLink active on gpu{index}: its pairs do not travel over NVLink{bridge}",
                evidence=[f"nvidia-smi nvlink -s: {words}"],
                source="nvidia-smi",
            )
        )
    return out


def buses_from_bridge(gpus: list[Gpu], notes: list[str]) -> list[Gpu]:
    """`nvidia-smi nvlink -R` names each link's remote bus but not the GPU's own. Two GPUs whose
    active links each reach one bus, the two buses different, are bridged to each other: each GPU's
    bus is the one the other reaches (derived). Anything else is left unknown."""
    if len(gpus) != 2 or any(g.pci_bus_id for g in gpus):
        return gpus
    reached = [{x.remote_pci_bus_id for x in g.nvlinks if x.active} for g in gpus]
    if any(len(r) != 1 or None in r for r in reached) or reached[0] == reached[1]:
        return gpus
    a, b = gpus
    bus_a, bus_b = next(iter(reached[1])), next(iter(reached[0]))
    notes.append(
        f"GPU bus ids derived from `nvlink -R`: gpu{a.index}'s links reach {bus_b} and gpu{b.index}'s reach "
        f"{bus_a}, so the two are bridged and each is at the bus the other reaches"
    )
    return [
        msgspec.structs.replace(g, pci_bus_id=bus, derived=[*g.derived, "pci_bus_id"])
        for g, bus in ((a, bus_a), (b, bus_b))
    ]
