"""Synthetic clusters for the benchmarks: N hosts × 8 GPUs, as per-host snapshot files.

Every host is a copy of one real 8-GPU sample (samples/snapshots/, an IBM Cloud gx3d H100 VM
by default) under its own name and with a driver version (550.54.15), with a little variety so the
consistency checks and diffs have something to find: every 97th host runs an older driver
(535.104.05), every 89th has one NIC down.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import msgspec

from topomap.model.codec import encode_snapshot, load_snapshot
from topomap.model.snapshot import Snapshot

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "samples" / "snapshots" / "ibm-gx3d-h100-8gpu.json"


def host_name(i: int) -> str:
    return f"n{i:04d}"


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


def flow_text(hosts: int, arrows: int, gpus: int = 8, stages: str = STAGES) -> str:
    """A flow over every GPU of every host whose all-to-all arrows expand to about ``arrows``
    GPU-to-GPU arrows (``gpus``² per flow arrow): first between hosts (each pair of hosts once,
    nearest first), then inside each host (step a → b → c → d). Acyclic, as flows must be.
    ``stages``: the steps per host (one, "a", keeps 10,000 hosts under the flow reader's cap of
    200,000 YAML values)."""
    lines = ["flow: bench", "hosts:"]
    lines += [f"  {host_name(h)}: null" for h in range(hosts)]
    lines.append("steps:")
    lines += [f"  {x}{h}: {{kind: compute, on: {host_name(h)}:gpus}}" for h in range(hosts) for x in stages]
    wanted = -(-arrows // (gpus * gpus))
    pairs = itertools.islice(((h, h + gap) for gap in range(1, hosts) for h in range(hosts - gap)), wanted)
    inside = [(f"{x}{h}", f"{y}{h}") for x, y in itertools.pairwise(stages) for h in range(hosts)]
    chosen = [(f"{stages[-1]}{a}", f"{stages[0]}{b}") for a, b in pairs]
    chosen += inside[: max(0, wanted - len(chosen))]
    lines.append("arrows:")
    lines += [f"  - {{from: {a}, to: {b}, pattern: all-to-all, volume: 64 MiB}}" for a, b in chosen]
    return "\n".join(lines) + "\n"
