"""NVLink bookkeeping shared by the probe and the importers: who a link reaches, how many
links join two GPUs (counted the way `nvidia-smi topo -m` does), which NVSwitches exist, and the
part a GPU is for its NVLink (:func:`nvlink_part`, from the parts table in :mod:`topomap.base.parts`)."""

from __future__ import annotations

from topomap.base.part_names import model_of
from topomap.base.parts import GpuPart
from topomap.base.pciaddr import parse_bus_id
from topomap.model.snapshot import Gpu, NvLink, NvSwitch


def link_peer(link: NvLink, gpu_buses: dict[tuple[int, int, int, int], str]) -> str | None:
    """What an active link reaches: a GPU id, "switch", or None for a CPU (IBM NPU) link.

    On NVSwitch systems the remote bus id is the switch, not the peer GPU (HAMi#2103), so the
    remote device type decides; without it, a bus id that is no GPU is taken as a switch (NCCL).
    """
    rb = parse_bus_id(link.remote_pci_bus_id) if link.remote_pci_bus_id else None
    if link.remote_type == "cpu":
        return None
    if link.remote_type == "gpu" or (link.remote_type in (None, "unknown") and rb in gpu_buses):
        # a GPU's bus is that GPU, whatever the type says; the GPU's own bus is a bridge partner
        # the source cannot name (an Azure NCCL file): the caller sees the GPU itself
        return gpu_buses.get(rb) if rb is not None else None
    return "switch"


def gpu_buses(gpus: list[Gpu]) -> dict[tuple[int, int, int, int], str]:
    out: dict[tuple[int, int, int, int], str] = {}
    for g in gpus:
        parts = parse_bus_id(g.pci_bus_id) if g.pci_bus_id else None
        if parts is not None:
            out[parts] = f"gpu{g.index}"
    return out


def nvlink_count(a: Gpu, b: Gpu, gpu_buses: dict[tuple[int, int, int, int], str]) -> int:
    """Links joining two GPUs as `nvidia-smi topo -m` counts them: direct links, plus switch
    links (the smaller side's count)."""
    ida, idb = f"gpu{a.index}", f"gpu{b.index}"
    peers_a = [link_peer(x, gpu_buses) for x in a.nvlinks if x.active]
    peers_b = [link_peer(x, gpu_buses) for x in b.nvlinks if x.active]
    direct = peers_a.count(idb) or peers_b.count(ida)
    return direct + min(peers_a.count("switch"), peers_b.count("switch"))


def nvswitches_from_links(gpus: list[Gpu]) -> list[NvSwitch]:
    """NVSwitches seen from the GPUs' links; switches with no visible bus id become one group."""
    buses = gpu_buses(gpus)
    groups: dict[str, dict[str, int]] = {}
    for g in gpus:
        for link in g.nvlinks:
            if not link.active or link_peer(link, buses) != "switch":
                continue
            key = link.remote_pci_bus_id or "nvswitch-fabric"
            per_gpu = groups.setdefault(key, {})
            per_gpu[f"gpu{g.index}"] = per_gpu.get(f"gpu{g.index}", 0) + 1
    return [
        NvSwitch(id=k, pci_bus_id=k if k != "nvswitch-fabric" else None, links=dict(sorted(v.items())))
        for k, v in sorted(groups.items())
    ]


def nvlink_part(gpu: Gpu) -> GpuPart | None:
    """The part a GPU is (:func:`topomap.base.part_names.model_of`: its name, else its PCI device id),
    when that part has NVLink; None otherwise."""
    part = model_of(gpu.name, gpu.pci_device_id)
    return part if part is not None and part.has_nvlink else None
