"""`topomap diff DECLARED.yaml PASTE` end to end, on real pastes (tests/data/real-topologies): the verdict
line and exit status (as promised 0, short of the promise 1, cannot tell 3); what the paste cannot show
(a `topo -m` has no NIC rates, GPU models or memory sizes) is "cannot check" with the command whose output
settles it, and never reported as a difference."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from topomap.cli import app

ROOT = Path(__file__).resolve().parents[2]
SMI = ROOT / "tests" / "data" / "real-topologies" / "nvidia-smi"
GCP_A4 = SMI / "gcp-gke-a4-b200-8gpu-8nic.txt"  # topo -m: 8 B200 at NV18, 8 NICs (PIX to GPU pairs)
A100 = SMI / "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt"  # topo -m: 8 A100 at NV12, 8 NICs
H100_Q = SMI / "h100-sxm-8gpu-q-fabric-thamada.txt"  # nvidia-smi -q: 8 H100 80GB HBM3, 81559 MiB each

IBSTAT = "`ibstat` appended to the `nvidia-smi topo -m` paste (or `topomap probe`)"
QUERY = "`nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id --format=csv` (or `topomap probe`)"


def _diff(tmp_path: Path, lot: str, paste: Path, *options: str) -> tuple[int, str]:
    declared = tmp_path / "declared.yaml"
    declared.write_text(lot)
    env = {"COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"}
    res = CliRunner().invoke(app, ["diff", *options, str(declared), str(paste)], env=env)
    assert res.stderr == "", res.stderr
    return res.exit_code, res.stdout


B200_LOT = """lot: 8x B200 SXM, 8x 400G RoCE
gpus: {model: B200, count: 8, memory: 180 GB}
gpu_links: nvswitch
nics: {count: 8, rate: 400 Gb/s, fabric: roce}
gpudirect: true
"""


def test_a_b200_lot_against_a_real_topo_m_of_its_kind_cannot_tell_only_what_the_paste_does_not_carry(
    tmp_path: Path,
) -> None:
    code, out = _diff(tmp_path, B200_LOT, GCP_A4)
    assert code == 3
    lines = out.splitlines()
    assert "verdict: cannot tell (4 cannot be checked from what was received)" in lines
    assert "SHORT" not in out  # nothing the paste cannot show is a difference
    rate = next(line for line in lines if line.startswith("  cannot check  NIC rate "))
    assert " promised 400 Gb/s each " in rate and rate.endswith(
        "received `nvidia-smi topo -m` does not carry NIC speeds"
    )
    rest = lines.index("what would check the rest (appended to the paste, or `topomap probe` on the machine):")
    assert lines[rest + 1 :] == [f"  - {IBSTAT}", f"  - {QUERY}"]

    code, out = _diff(tmp_path, B200_LOT, GCP_A4, "--json")
    doc = json.loads(out)
    assert code == 3 and doc["verdict"] == "cannot tell"
    status = {x["fact"]: (x["status"], x["settle"]) for x in doc["facts"]}
    assert status == {
        "GPUs": ("as promised", None),
        "GPU model": ("cannot check", QUERY),
        "GPU memory": ("cannot check", QUERY),
        "NVLink": ("as promised", None),
        "NICs": ("as promised", None),
        "NIC rate": ("cannot check", IBSTAT),
        "NIC fabric": ("cannot check", IBSTAT),
        "GPUDirect RDMA": ("as promised", None),
    }
    rate = next(x for x in doc["facts"] if x["fact"] == "NIC rate")
    assert rate["promised"] == "400 Gb/s each" and rate["received"] == "`nvidia-smi topo -m` does not carry NIC speeds"
    assert doc["cannot_check"] == [IBSTAT, QUERY]


def test_an_h100_nvswitch_lot_against_a_real_a100_nv12_topo_m_is_short_on_nvlink_alone(tmp_path: Path) -> None:
    lot = (
        "lot: 8x H100 SXM, NVSwitch, 8x 400G InfiniBand\ngpus: {model: H100 SXM 80GB, count: 8}\n"
        "gpu_links: nvswitch\nnics: {count: 8, rate: 400 Gb/s, fabric: infiniband}\n"
    )
    code, out = _diff(tmp_path, lot, A100)
    assert code == 1
    assert "verdict: short of the promise (1 fact(s) short, 3 cannot be checked from what was received)" in out
    short = [line for line in out.splitlines() if line.startswith("  SHORT")]
    assert len(short) == 1 and short[0].split()[1] == "NVLink" and "gpu0–gpu1 NV12" in short[0]
    assert "(28 in all)" in short[0]
    for fact in ("GPU model", "NIC rate", "NIC fabric"):  # the paste cannot show them: unchecked, not short
        assert any(line.startswith(f"  cannot check  {fact} ") for line in out.splitlines()), fact


def test_an_h100_lot_against_a_real_nvidia_smi_q_of_the_same_cards_is_as_promised(tmp_path: Path) -> None:
    lot = "lot: 8x H100 SXM 80GB\ngpus: {model: H100 SXM 80GB, count: 8, memory: 80 GB}\n"
    code, out = _diff(tmp_path, lot, H100_Q)
    assert code == 0
    assert out.splitlines()[-1] == "verdict: as promised (every promised fact checked)"
    assert "  as promised   GPU memory  promised 80 GB per GPU          received 85.5 GB on the smallest GPU" in out
    code, out = _diff(tmp_path, lot.replace("80 GB}", "80 GiB}"), H100_Q)  # 81559 MiB is 80 GB's class, and 80 GiB's
    assert code == 0
