"""Synthetic clusters for the benchmarks: N hosts × 8 GPUs, as per-host snapshot files.

Every host is a copy of one real 8-GPU sample (samples/snapshots/, an IBM Cloud gx3d H100 VM
by default) under its own name and with a driver version (550.54.15), with a little variety so the
consistency checks and diffs have something to find: every 97th host runs an older driver
(535.104.05), every 89th has one NIC down.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import msgspec

from topomap.model.codec import encode_snapshot, load_snapshot
from topomap.model.snapshot import Snapshot

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "samples" / "snapshots" / "ibm-gx3d-h100-8gpu.json"
H200 = ROOT / "samples" / "snapshots" / "hgx-h200-8gpu-10nic.json"


def host_name(i: int) -> str:
    return f"n{i:04d}"


def h200_name(i: int) -> str:
    return f"h{i:05d}"


def h200_base() -> Snapshot:
    """The 8 × H200 node of samples/snapshots/hgx-h200-8gpu-10nic.json (its `topo -m`: NV18 between
    every GPU pair, ten RDMA NICs, a NIC PIX to each GPU) as if two more outputs had been appended to
    the paste, as the README shows: `nvidia-smi --query-gpu=index,name,pcie.link.gen.current,
    pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,driver_version --format=csv` (the
    model, each GPU's PCIe link at Gen5 x16, a driver version) and `ibstat` (each NIC an active
    InfiniBand port at 400 Gb/s). What those carry is taken off the source's unknown list."""
    from topomap.model.snapshot import PcieLink

    rep = msgspec.structs.replace
    base = load_snapshot(H200)
    link = PcieLink(gen_current=5, width_current=16, gen_max=5, width_max=16)
    known = {"gpus.name", "gpus.pcie", "software", "nics.speed_gbit_s", "nics.kind"}
    source = rep(
        base.source,
        unknown_fields=[f for f in base.source.unknown_fields if f not in known],
        formats=[*base.source.formats, "query-gpu-csv", "ibstat"],
    )
    return rep(
        base,
        source=source,
        software=rep(base.software, driver_version="550.54.15"),
        gpus=[rep(g, name="NVIDIA H200", pcie=link) for g in base.gpus],
        nics=[rep(n, state="active", speed_gbit_s=400.0, kind="infiniband") for n in base.nics],
    )


#: How the odd hosts of :func:`h200_cluster` differ, in turn.
ODD = ("lost GPU", "NIC down", "older driver", "PCIe x8", "NV12 pair")


def h200_host(base: Snapshot, i: int, odd: str | None) -> Snapshot:
    """Host ``i`` of an H200 cluster: the base under its own name, or with one difference ``odd``."""
    rep = msgspec.structs.replace
    s = rep(base, host=rep(base.host, hostname=h200_name(i)))
    if odd == "lost GPU":
        s = rep(s, gpus=[rep(g, lost=True) if g.index == 3 else g for g in s.gpus])
    elif odd == "NIC down":
        s = rep(s, nics=[rep(n, state="down") if n.index == 0 else n for n in s.nics])
    elif odd == "older driver":
        s = rep(s, software=rep(s.software, driver_version="535.104.05"))
    elif odd == "PCIe x8":
        assert s.gpus[5].pcie is not None
        narrow = rep(s.gpus[5].pcie, width_current=8)
        s = rep(s, gpus=[rep(g, pcie=narrow) if g.index == 5 else g for g in s.gpus])
    elif odd == "NV12 pair":
        s = rep(s, pairs=[rep(p, path="NV12", nvlinks=12) if (p.a, p.b) == ("gpu0", "gpu1") else p for p in s.pairs])
    return s


def h200_cluster(n: int, odd: int = 0, shift: int = 0) -> Snapshot:
    """A merged cluster of ``n`` H200 hosts (:func:`h200_base`), ``odd`` of them (spread evenly, moved
    by ``shift`` places: the B side of a diff) each with one of the differences :data:`ODD` in turn.
    Hosts share their lists, as hosts read from files of one build do."""
    from topomap.model.merge import merge

    base = h200_base()
    step = n // odd if odd else 0
    which = {(k * step + step // 2 + shift) % n: ODD[k % len(ODD)] for k in range(odd)}
    hosts = [h200_host(base, i, which.get(i)) for i in range(n)]
    return merge([(f"{h200_name(i)}.json", h) for i, h in enumerate(hosts)])


def host(base: Snapshot, i: int) -> Snapshot:
    """Host ``i`` of the synthetic cluster."""
    driver = "535.104.05" if i % 97 == 96 else "550.54.15"
    s = msgspec.structs.replace(
        base,
        host=msgspec.structs.replace(base.host, hostname=host_name(i)),
        software=msgspec.structs.replace(base.software, driver_version=driver),
    )
    if i % 89 == 88 and s.nics:
        nics = [msgspec.structs.replace(n, state="down") if n.index == 0 else n for n in s.nics]
        s = msgspec.structs.replace(s, nics=nics)
    return s


def write_hosts(n: int, folder: Path, base_path: Path = BASE) -> list[Path]:
    """Write ``n`` host snapshots into ``folder``; their paths."""
    base = load_snapshot(base_path)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        p = folder / f"{host_name(i)}.json"
        p.write_bytes(encode_snapshot(host(base, i)))
        paths.append(p)
    return paths


STAGES = "abcd"  # steps per host, each on all of its GPUs


def flow_text(
    hosts: int, arrows: int, gpus: int = 8, stages: str = STAGES, name: Callable[[int], str] = host_name
) -> str:
    """A flow over every GPU of every host whose all-to-all arrows expand to about ``arrows``
    GPU-to-GPU arrows (``gpus``² per flow arrow): first between hosts (each pair of hosts once,
    nearest first), then inside each host (step a → b → c → d). Acyclic, as flows must be.
    ``stages``: the steps per host (one, "a", keeps 10,000 hosts under the flow reader's cap of
    200,000 YAML values)."""
    lines = ["flow: bench", "hosts:"]
    lines += [f"  {name(h)}: null" for h in range(hosts)]
    lines.append("steps:")
    lines += [f"  {x}{h}: {{kind: compute, on: {name(h)}:gpus}}" for h in range(hosts) for x in stages]
    wanted = -(-arrows // (gpus * gpus))
    pairs = itertools.islice(((h, h + gap) for gap in range(1, hosts) for h in range(hosts - gap)), wanted)
    inside = [(f"{x}{h}", f"{y}{h}") for x, y in itertools.pairwise(stages) for h in range(hosts)]
    chosen = [(f"{stages[-1]}{a}", f"{stages[0]}{b}") for a, b in pairs]
    chosen += inside[: max(0, wanted - len(chosen))]
    lines.append("arrows:")
    lines += [f"  - {{from: {a}, to: {b}, pattern: all-to-all, volume: 64 MiB}}" for a, b in chosen]
    return "\n".join(lines) + "\n"
