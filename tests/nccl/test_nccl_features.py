"""PXN, NVLS and multi-node NVLink per GPU (`topomap nccl SNAP`), on probed fake machines and on real
samples."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from typer.testing import CliRunner

from tests.conftest import run_probe
from tests.fakes import machines
from tests.fakes.machine import FakeFabric
from topomap.cli import app
from topomap.graph import build
from topomap.importers import load_any
from topomap.model.codec import save_snapshot
from topomap.nccl.features import features
from topomap.transport.rules import NcclEnv, parse_env

SAMPLES = Path(__file__).parents[2] / "samples" / "snapshots"


def _features(snap, env: NcclEnv | None = None):  # type: ignore[no-untyped-def]
    gpus = sorted(snap.gpus, key=lambda g: g.index)
    return {f.gpu: f for f in features(build(snap), gpus, env or NcclEnv())}


def test_gb200_tray_is_one_multinode_nvlink_clique_with_nvls_possible(tmp_path: Path) -> None:
    f = _features(run_probe(machines.gb200_tray(), tmp_path).snapshot)
    assert {x.mnnvl.can for x in f.values()} == {"yes"}
    assert "clique 7" in f["gpu0"].mnnvl.why
    assert f["gpu0"].nvls.can == "possible" and "MULTICAST" in f["gpu0"].nvls.why


def test_hgx_h100_nvlink_domain_of_one_host_is_not_multinode(tmp_path: Path) -> None:
    m = machines.hgx_h100()
    m = dataclasses.replace(
        m, gpus=[dataclasses.replace(g, fabric=FakeFabric(cluster_uuid=bytes(16), clique_id=32766)) for g in m.gpus]
    )
    f = _features(run_probe(m, tmp_path).snapshot)
    assert f["gpu3"].mnnvl.can == "no" and "no cluster UUID" in f["gpu3"].mnnvl.why
    assert f["gpu3"].nvls.can == "possible"
    off = _features(run_probe(m, tmp_path / "b").snapshot, parse_env(["NCCL_NVLS_ENABLE=0"]))
    assert off["gpu3"].nvls.can == "no" and off["gpu3"].nvls.why == "NCCL_NVLS_ENABLE=0"


def test_pxn_through_an_nvlink_peer_next_to_the_only_nics(tmp_path: Path) -> None:
    """HGX H100 with only the two NICs under gpu0/gpu1's switch: gpu4 (other socket, SYS to them)
    sends through an NVSwitch peer that is PIX to a NIC; gpu0 uses its own."""
    m = machines.hgx_h100()
    m = dataclasses.replace(m, nics=m.nics[:2])
    snap = run_probe(m, tmp_path).snapshot
    f = _features(snap)
    assert f["gpu0"].pxn.can == "no" and "PIX" in f["gpu0"].pxn.why
    assert f["gpu4"].pxn.can == "yes" and "through gpu" in f["gpu4"].pxn.why and "mlx5_0" in f["gpu4"].pxn.why
    assert _features(snap, parse_env(["NCCL_PXN_DISABLE=1"]))["gpu4"].pxn.can == "no"


def test_real_samples_volta_has_no_nvls_and_pastes_say_what_is_missing() -> None:
    v100 = _features(load_any(str(SAMPLES / "dgx2h-16gpu.json")))
    assert v100["gpu0"].nvls.can == "no" and "volta" in v100["gpu0"].nvls.why
    h200 = _features(load_any(str(SAMPLES / "hgx-h200-8gpu-10nic.json")))
    assert h200["gpu0"].nvls.can == "unknown" and "CUDA driver version" in h200["gpu0"].nvls.why
    assert h200["gpu0"].pxn.can == "no"  # every GPU has a PIX NIC
    rtx = _features(load_any(str(SAMPLES / "rtx4090-8gpu-all-sys.json")))
    assert rtx["gpu0"].nvls.can == "no" and rtx["gpu0"].pxn.can == "no"


def test_cli_json_has_features_and_text_groups_them(tmp_path: Path) -> None:
    snap = run_probe(machines.gb200_tray(), tmp_path).snapshot
    path = tmp_path / "gb200.json"
    save_snapshot(snap, str(path))
    r = CliRunner().invoke(app, ["nccl", str(path), "--json"])
    assert r.exit_code == 0, r.stdout
    data = json.loads(r.stdout)
    assert data["features"][0]["mnnvl"]["can"] == "yes" and data["features"][0]["nvls"]["env"] == "NCCL_NVLS_ENABLE"
    text = CliRunner().invoke(app, ["nccl", str(path)]).stdout
    assert "multi-node NVLink: yes for gpu0–3" in text
