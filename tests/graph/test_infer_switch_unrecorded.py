"""An NVSwitch is inferred from a matrix whose pairs are all NV# but one pair the source does not record
(the trial of issue 33): 27 NV18 pairs and a null path drew 27 direct links of 18 each — 126 links on
one GPU that has 18 — and NVLS then read "no: its NVLinks do not go to NVSwitches"."""

from __future__ import annotations

import msgspec

from tests.conftest import SAMPLES
from topomap.graph import build
from topomap.graph.nodeid import FABRIC
from topomap.importers import load_any
from topomap.model.snapshot import Snapshot

H200 = SAMPLES / "snapshots" / "hgx-h200-8gpu-10nic.json"


def _with_path(i: int, path: str | None) -> Snapshot:
    snap = load_any(H200)
    gpu_pairs = [k for k, p in enumerate(snap.pairs) if p.a.startswith("gpu") and p.b.startswith("gpu")]
    pairs = list(snap.pairs)
    k = gpu_pairs[i]
    pairs[k] = msgspec.structs.replace(pairs[k], path=path, nvlinks=0)
    return msgspec.structs.replace(snap, pairs=pairs)


def test_one_unrecorded_pair_still_sits_on_the_inferred_fabric() -> None:
    topo = build(_with_path(3, None))
    assert FABRIC in topo.light
    gpus = [n for n in topo.light if n.startswith("gpu")]
    assert all(topo.light.has_edge(g, FABRIC) for g in gpus) and len(gpus) == 8
    assert not any(topo.light.has_edge(a, b) for a in gpus for b in gpus if a != b)  # no direct NV18 edges
    note = next(n for n in topo.notes if "NVSwitch fabric (inferred)" in n)
    assert "8 GPUs NV18 on every pair recorded: at least 6 peers × 18 links" in note
    assert note.endswith("(1 pair(s) not recorded)")


def test_a_pair_recorded_as_pcie_is_no_fabric() -> None:
    """A pair the matrix records as SYS: not all-to-all NVLink; drawn as recorded."""
    topo = build(_with_path(3, "SYS"))
    assert FABRIC not in topo.light
