"""The lot an nccl-tests output implies when no snapshot is given: its rank table's hosts, each with the GPUs
the run used (model, CUDA device, bus id). What results cannot say — links, NICs, PCIe — stays unknown, but
for what the model implies for certain: five or more SXM GPUs of Ampere or later on one host sit on an
NVSwitch board (every 8-GPU HGX of A100, H100, H200, B200 is one), each GPU's links all to the switches
(derived, and labelled so). A V100 SXM2 board of eight (a DGX-1) is a direct mesh, so no rule for Volta."""

from __future__ import annotations

import re

from topomap import __version__
from topomap.base.part_names import model_from_name
from topomap.importers.nccl_tests import RankEntry, Run
from topomap.model.snapshot import Gpu, Host, NvLink, Snapshot, Software, Source

_BUS = re.compile(r"^(?P<dom>[0-9a-fA-F]{4}):(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})$")
#: what an nccl-tests rank table cannot tell, for the lot's ``unknown_fields``
_UNKNOWN = [
    "pairs.nvlink",
    "pairs.path",
    "pairs.p2p",
    "nics",
    "gpus.pcie",
    "gpus.count",
    "gpus.memory_total_bytes",
    "gpus.numa_node",
    "gpus.fabric",
    "software.cuda_driver_version",
    "software.driver_version",
]


def _bus_id(text: str) -> str | None:
    """nccl-tests prints ``0000:0f:00`` (domain, bus, device) or, before 2.x, ``0x0f`` (the bus alone):
    the first is the GPU's function 0; the second leaves the domain unknown."""
    m = _BUS.match(text.strip())
    return f"{m['dom']}:{m['bus']}:{m['dev']}.0".lower() if m else None


def _nvswitch_board(ranks: list[RankEntry]) -> tuple[int, int] | None:
    """(links per GPU, NVLink generation) when these GPUs of one host are on an NVSwitch board for certain."""
    names = {r.name for r in ranks}
    if len(names) != 1:
        return None
    model = model_from_name(names.pop())
    if model is None or model.form not in ("sxm", "superchip") or model.architecture == "volta":
        return None
    if not model.has_nvlink or model.nvlink_generation is None or len(model.links) != 1:
        return None  # no NVLink, or a link count the part shows more than one way (the H800's NV8 and NV18)
    seen = max((r.device for r in ranks), default=-1) + 1
    if max(seen, len({r.device for r in ranks})) < 5:
        return None
    return model.links[0], model.nvlink_generation


def lot_from_results(run: Run, origin: str) -> Snapshot | None:
    """The lot the rank table shows: one host's snapshot, or a merged one of every host; None without a
    rank table."""
    hosts: dict[str, list[RankEntry]] = {}
    for r in run.ranks:
        hosts.setdefault(r.host, []).append(r)
    if not hosts:
        return None
    cuda = _driver_floor(run.nccl_cuda)
    members = [_host(name, ranks, origin, cuda) for name, ranks in hosts.items()]
    if len(members) == 1:
        return members[0]
    source = Source(
        kind="merge",
        origin=origin,
        tool=f"topomap {__version__}",
        notes=[f"the {len(members)} hosts of {origin}'s rank table"],
    )
    return Snapshot(source=source, members=members)


def _driver_floor(nccl_cuda: str | None) -> str | None:
    """The CUDA driver version an NCCL build implies: one built for CUDA 13.x runs only on a 13.0 driver or
    later (CUDA's minor-version compatibility stays within a major version); a 12.x build says nothing past
    12.0, so None."""
    if not nccl_cuda or not nccl_cuda.split(".")[0].isdigit():
        return None
    major = int(nccl_cuda.split(".")[0])
    return f"{major}.0" if major >= 13 else None


def _host(name: str, ranks: list[RankEntry], origin: str, cuda: str | None = None) -> Snapshot:
    board = _nvswitch_board(ranks)
    gpus: dict[int, Gpu] = {}
    for r in ranks:
        if r.device in gpus:
            continue
        links: list[NvLink] = []
        derived = ["cuda_ordinal"]
        if board is not None:
            count, gen = board
            links = [NvLink(link=i, active=True, generation=gen, remote_type="switch") for i in range(count)]
            derived.append("nvlinks")
        gpus[r.device] = Gpu(
            index=r.device,
            cuda_ordinal=r.device,
            name=r.name or None,
            pci_bus_id=_bus_id(r.bus),
            nvlinks=links,
            derived=derived,
        )
    notes = [f"from the rank table of {origin}: the {len(gpus)} GPU(s) the run used on {name}"]
    unknown = list(_UNKNOWN)
    if board is not None:
        unknown.remove("pairs.nvlink")
        notes.append(
            f"NVLink derived from the model: {len(gpus)} of these SXM GPUs on one host sit on an NVSwitch board, "
            f"{board[0]} links each to the switches"
        )
    if cuda is not None:
        unknown.remove("software.cuda_driver_version")
        notes.append(
            f"CUDA driver {cuda} or later: derived from the NCCL build's CUDA version (results' 'NCCL version' line)"
        )
    source = Source(
        kind="nccl-tests",
        origin=origin,
        tool=f"topomap {__version__}",
        formats=["nccl-tests"],
        unknown_fields=unknown,
        notes=notes,
    )
    software = Software(cuda_driver_version=cuda)
    return Snapshot(source=source, host=Host(hostname=name), software=software, gpus=[gpus[d] for d in sorted(gpus)])
