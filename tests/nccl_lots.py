"""The lot each real nccl-tests output ran on, as its author describes it (tests/data/real-nccl-tests/lots.json,
origins in that folder's README), built as the snapshot a user would paste for it: `nvidia-smi topo -m` (NVLink,
the GPU–NIC paths), `nvidia-smi -q` (models, PCIe links, CUDA) and `ibstat` (NIC rates, link layers). Only what
the description states goes in; the rest stays unknown (the unit tests of the model use these). The accuracy table
reads each file's *declared* lot instead (``lots/``, issue 31's format, through the CLI): what a renter holds
before renting; ``tests/collective/test_real_nccl_tests.py`` checks that the two descriptions agree."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from topomap.base.part_names import model_from_name
from topomap.model.snapshot import P2P, Fabric, Gpu, Host, Nic, NvLink, Pair, PcieLink, Snapshot, Software, Source

DATA = Path(__file__).resolve().parent / "data" / "real-nccl-tests"
_KINDS = {"infiniband": "infiniband", "roce": "roce", "efa": "efa", "ethernet": "ethernet", "slingshot": "ethernet"}


def descriptions() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads((DATA / "lots.json").read_text())
    return data


def _gpu(i: int, lot: dict[str, Any]) -> Gpu:
    model = model_from_name(lot["gpu"])
    pcie = (
        PcieLink(gen_max=lot["pcie"][0], width_current=lot["pcie"][1], width_max=lot["pcie"][1])
        if "pcie" in lot
        else None
    )
    links: list[NvLink] = []
    if lot["board"] == "nvswitch" and model is not None and model.full_links:
        links = [
            NvLink(link=k, active=True, generation=model.nvlink_generation, remote_type="switch")
            for k in range(model.full_links)
        ]
    fabric = Fabric(
        cluster_uuid="00000000-0000-0000-0000-00000000c001", clique_id=1, state="completed", status="success"
    )
    return Gpu(
        index=i,
        cuda_ordinal=i,
        name=lot["gpu"],
        pci_bus_id=f"0000:{16 * (i + 1):02x}:00.0",
        pcie=pcie,
        nvlinks=links,
        fabric=fabric if lot.get("clique") else None,
    )


def _pairs(lot: dict[str, Any], n: int, nics: list[Nic]) -> list[Pair]:
    pairs: list[Pair] = []
    model = model_from_name(lot["gpu"])
    for a in range(n):
        for b in range(a + 1, n):
            nv = lot["board"] in ("nvswitch", "nvlink-pair") and model is not None and model.full_links
            if nv and model is not None and model.full_links:
                pairs.append(Pair(a=f"gpu{a}", b=f"gpu{b}", path=f"NV{model.full_links}", nvlinks=model.full_links))
            else:
                ok = lot.get("p2p")
                p2p = P2P(read=ok, write=ok) if ok else None
                pairs.append(Pair(a=f"gpu{a}", b=f"gpu{b}", path=lot.get("path"), p2p=p2p))
    for nic in nics:  # each NIC beside its share of the GPUs (PIX), the rest across the host (SYS)
        if len(nics) >= n:
            near = {nic.index * n // len(nics)}
        else:
            per = n // len(nics)
            near = set(range(nic.index * per, (nic.index + 1) * per))
        for g in range(n):
            pairs.append(Pair(a=f"gpu{g}", b=f"nic{nic.index}", path="PIX" if g in near else "SYS"))
    return pairs


def _nics(lot: dict[str, Any]) -> list[Nic]:
    spec = lot.get("nics")
    if not spec:
        return []
    kind = _KINDS[spec["kind"]]
    vendor, device = (
        ("0x1d0f", "0xefa1") if kind == "efa" else ("0x15b3", "0x1021") if kind != "ethernet" else (None, None)
    )
    if spec["kind"] == "slingshot":  # HPE Cassini (Slingshot): PCI vendor 0x17db, no RDMA device of its own
        vendor, device = "0x17db", "0x0501"
    return [
        Nic(
            index=j,
            name=f"rdmap{j}s0" if kind == "efa" else f"mlx5_{j}" if kind != "ethernet" else f"eth{j}",
            kind=kind,  # type: ignore[arg-type]
            rdma=kind != "ethernet",
            speed_gbit_s=float(spec["gbps"]),
            state="active",
            pci_vendor_id=vendor,
            pci_device_id=device,
            gdr=spec.get("gdr"),  # where the description says GPUDirect RDMA (an EFA's id does not tell it)
        )
        for j in range(spec["count"])
    ]


def lot_snapshot(name: str, d: dict[str, Any]) -> Snapshot:
    """One host of the lot ``d`` describes (the results' rank table says how many hosts ran)."""
    lot = d["lot"]
    n = lot["gpus"]
    nics = _nics(lot)
    unknown = [] if "pcie" in lot else ["gpus.pcie"]
    if not lot.get("nics"):
        unknown.append("nics")
    return Snapshot(
        source=Source(
            kind="nvidia-smi",
            origin=f"tests/data/real-nccl-tests/lots.json: {name}",
            tool="tests",
            formats=["topo-m", "nvidia-smi-q", "ibstat"],
            unknown_fields=unknown,
        ),
        host=Host(hostname="host0", cpu_model=lot.get("cpu"), virtualization=lot.get("vm")),
        software=Software(cuda_driver_version=lot.get("cuda")),
        gpus=[_gpu(i, lot) for i in range(n)],
        nics=nics,
        pairs=_pairs(lot, n, nics),
    )


def declared(name: str) -> Path:
    """The declared lot (tests/data/real-nccl-tests/lots/) a results file ran on: the description as a renter
    would write it from the catalogue line (issue 31's format), what ``accuracy`` reads."""
    return DATA / "lots" / (name.rsplit(".", 1)[0] + ".yaml")


@lru_cache(maxsize=1)
def _accuracy() -> tuple[dict[str, Any], ...]:
    rows = []
    for name, d in descriptions().items():
        args = ["nccl", "--tests", str(DATA / name), str(declared(name)), "--json"]
        if d.get("nccl"):
            args += ["--nccl-version", d["nccl"]]
        for e in d.get("env", []):
            args += ["--env", e]
        done = subprocess.run([sys.executable, "-m", "topomap", *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (name, done.stderr)
        r = json.loads(done.stdout)["results"][0]
        e = r["expected"]
        exp = r["expected_busbw_gbps"]
        rows.append(
            {
                "file": name,
                "set": "held out" if d["held_out"] else "tuned on",
                "status": d["status"],
                "measured": r["measured_busbw_text"],
                "expected": None if exp is None else f"{exp:.1f}",
                "ratio": None if exp is None else f"{r['measured_busbw_gbps'] / exp:.2f}",
                "verdict": r["verdict"],
                "algorithm": e["algorithm"] if e is not None else None,
                "settle": list(e["settle"]) if e is not None else [],
            }
        )
    return tuple(rows)


def accuracy() -> list[dict[str, Any]]:
    """Each real output read with ``topomap nccl --tests FILE LOT.yaml --json`` (the CLI, as a user runs it; the
    lot its declared one, ``lots/``): measured peak, expected figure, their ratio and the verdict, beside what
    the file is (healthy, underperforming …)."""
    return [dict(r) for r in _accuracy()]


def table_lines() -> list[str]:
    """The accuracy table as the folder's README prints it (one line per file)."""
    out = []
    for r in accuracy():
        out.append(
            f"| {r['file']} | {r['set']} | {r['status']} | {r['measured']} | {r['expected'] or 'unknown'} | "
            f"{r['ratio'] or '—'} | {r['verdict']} |"
        )
    return out
