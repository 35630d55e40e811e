"""Shared by the XML importers: hardened parsing, and pairs derived from a PCI tree."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from topomap.base.errors import ImportFailure
from topomap.base.links import nvlink_path
from topomap.base.part_names import model_from_device_id
from topomap.base.pathclass import classify_chains
from topomap.model.nic_ids import layer_of_name
from topomap.model.nvlinks import gpu_buses, nvlink_count
from topomap.model.snapshot import Gpu, Nic, NicKind, NvLink, Pair

MAX_LINKS_PER_PAIR = 64  # NVLinkBandwidth / per-link rate: no GPU pair has more than 18
MAX_DEVICES = 512  # GPUs + RDMA NICs of one host; every pair of them is listed (real hosts: under 32)
_DECLARED_ENCODING = re.compile(r"""^(\s*<\?xml[^>]*?)\s+encoding\s*=\s*["'][^"']*["']""")


def parse_xml(text: str, origin: str) -> ET.Element:
    """Parse with defusedxml: entity expansion and external entities are refused.

    ``text`` is already decoded (topomap.files.inputs), so the declaration's ``encoding`` is dropped:
    a UTF-16 file that says so, or a made-up encoding name, must not be decoded a second time."""
    text = _DECLARED_ENCODING.sub(r"\1", text.lstrip("\ufeff"), count=1)
    try:
        root: ET.Element = fromstring(text.encode("utf-8", errors="replace"), forbid_dtd=False)
    except DefusedXmlException as err:
        raise ImportFailure(
            f"{origin}: refused unsafe XML ({type(err).__name__}: entity or external reference)",
            hint="topology files never need entities; regenerate the file",
        ) from err
    except ET.ParseError as err:
        line, col = getattr(err, "position", (0, 0))
        raise ImportFailure(f"{origin}:{line}: XML is malformed or truncated (column {col}: {err.msg})") from err
    return root


@dataclass
class Placed:
    """A device's chain in the tree (root first, device last) and its NUMA locality."""

    chain: list[str]
    numa: int | None


def nic_kind(cls: str, rdma: list[str], net: list[str], layers: set[str]) -> NicKind:
    """The link layer where the source says it: PCI class 0207 (InfiniBand controller), hwloc's
    ``PortNLinkLayer`` info (``layers``, lower case), or the netdev beside an RDMA device (``ib*`` is
    IPoIB: InfiniBand; another netdev means the port is Ethernet: RoCE). An RDMA name alone: unknown."""
    if cls in ("0207", "0c06"):  # 0c06: InfiniBand as a serial-bus class (ConnectX-2 and older)
        return "infiniband"
    if "infiniband" in layers:
        return "infiniband"
    if "ethernet" in layers:
        return "roce"
    named = {layer_of_name(n) for n in rdma} - {None}
    if len(named) == 1:  # EFA's names, rdma-core's ibp…/rocep… (model/nic_ids, the one table)
        return named.pop()  # type: ignore[return-value]
    if rdma:
        if net and all(n.startswith("ib") for n in net):
            return "infiniband"
        return "roce" if net else "unknown"
    return "ethernet" if net else "unknown"


def tree_pairs(
    gpus: list[Gpu], nics: list[Nic], placed: dict[str, Placed], origin: str = "<input>", numa_known: bool = True
) -> list[Pair]:
    """Every GPU/NIC pair: NV# from the GPUs' links, else the class of their PCI chains.

    ``numa_known=False`` (a source that may omit NUMA nodes: lstopo text, an hwloc fragment): two
    devices under different host bridges whose NUMA node is not known are neither NODE nor SYS but
    unknown."""
    ends = [f"gpu{g.index}" for g in gpus] + [f"nic{n.index}" for n in nics if n.rdma]
    if len(ends) > MAX_DEVICES:
        raise ImportFailure(
            f"{origin}: {len(gpus)} GPUs and {len(ends) - len(gpus)} RDMA NICs in one host "
            f"(at most {MAX_DEVICES} together)"
        )
    by_id = {f"gpu{g.index}": g for g in gpus}
    buses = gpu_buses(gpus)
    out: list[Pair] = []
    for x, a in enumerate(ends):
        for b in ends[x + 1 :]:
            pa, pb = placed.get(a), placed.get(b)
            pcie = classify_chains(pa.chain, pb.chain, pa.numa, pb.numa) if pa and pb else None
            if pa and pb and not numa_known and pa.chain[0] != pb.chain[0] and None in (pa.numa, pb.numa):
                pcie = None
            nv = 0
            if a in by_id and b in by_id:
                nv = nvlink_count(by_id[a], by_id[b], buses)
            out.append(Pair(a=a, b=b, path=nvlink_path(nv) if nv else pcie, nvlinks=nv, pcie_path=pcie))
    return out


def nvlinks_from_bandwidth(gpus: list[Gpu], ends: list[tuple[str, str] | None], vals: list[int], origin: str) -> None:
    """hwloc's ``NVLinkBandwidth`` matrix (MB/s, row → column) → NVLink entries on each GPU: hwloc fills
    20000 per NVLink 1 link (P100) and 25000 per later link (formats-and-pitfalls.md §3). ``ends``: one
    per row, ``("gpu", index)``, ``("switch", bus id)`` or None (another object)."""
    n = len(ends)
    for r, a in enumerate(ends):
        if a is None or a[0] != "gpu":
            continue
        g = gpus[int(a[1])]
        per_link = 20000 if "P100" in (g.name or "") else 25000
        gen = 1 if per_link == 20000 else None
        for c, b in enumerate(ends):
            bw = vals[r * n + c]
            if r == c or bw <= 0 or b is None:
                continue
            remote = b[1] if b[0] == "switch" else gpus[int(b[1])].pci_bus_id or ""
            count = max(1, round(bw / per_link))
            if count > MAX_LINKS_PER_PAIR:
                raise ImportFailure(
                    f"{origin}: NVLinkBandwidth {bw} MB/s between objects {r} and {c} is {count} links "
                    f"(at most {MAX_LINKS_PER_PAIR})"
                )
            g.nvlinks += [
                NvLink(
                    link=len(g.nvlinks) + k,
                    active=True,
                    generation=gen,
                    remote_type="switch" if b[0] == "switch" else "gpu",
                    remote_pci_bus_id=remote,
                    speed_gbps=per_link / 1000.0,
                )
                for k in range(count)
            ]


def gpu_identity(model: str | None, device_id: str | None) -> tuple[str | None, str | None, list[str]]:
    """A GPU's name and architecture as a topology file gives them: the name it prints, else the
    device table's product for its PCI device id (then name and architecture are ``derived``)."""
    known = model_from_device_id(device_id) if device_id else None
    if model or known is None:
        return model, None, []
    return known.name, known.architecture, ["name", "architecture"]
