"""`topomap nccl` as a new user reads it (text view and CLI), on real logs (tests/data/real-nccl-logs,
origins in its README) and the samples: the text says what --json says, once."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from topomap.cli import app

LOGS = Path(__file__).parents[1] / "data" / "real-nccl-logs"
ROOT = Path(__file__).parents[2]
SAMPLES = Path(__file__).parents[2] / "samples" / "snapshots"


def _nccl(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, ["nccl", *args])
    return r.exit_code, r.stdout, r.stderr


def test_text_gives_each_decisions_reasons_as_json_does() -> None:
    """--json has per pair `reasons` (the facts that decided it); the text view says each once, with
    the pairs it holds for, the rule in words and every variable — here the assumption that NVML's
    P2P status is OK, the crux of the README's worked example."""
    log = str(LOGS / "rtx4090-8gpu-shm-nccltests307.log")
    code, text, _ = _nccl("--log", log, "--env", "NCCL_P2P_LEVEL=SYS")
    assert code == 0
    _, raw, _ = _nccl("--log", log, "--env", "NCCL_P2P_LEVEL=SYS", "--json")
    for pair in json.loads(raw)["pairs"]:
        for reason in pair["reasons"]:
            assert reason in text
    lines = text.splitlines()
    head = lines.index(
        "why P2P — rule p2p-level: P2P only where the path is no longer than the P2P level: PXB by default "
        "(paths.cc) (changed by NCCL_P2P_LEVEL, NCCL_P2P_DISABLE)"
    )
    assert lines[head + 2] == (
        "  3->4, 7->0: path SYS within the P2P level (NCCL_P2P_LEVEL=SYS) (NVML P2P status not recorded: assumed OK)"
    )


def test_the_rule_is_said_once_for_pairs_with_different_facts(tmp_path: Path) -> None:
    """A merged snapshot: eight NET+GDR hops, each through its own NIC, under one rule line that lists
    every variable --json lists (the table's column shows three)."""
    h200 = str(SAMPLES / "hgx-h200-8gpu-10nic.json")
    a100 = str(SAMPLES / "hgx-a100-8gpu-8nic.json")
    cluster = str(tmp_path / "cluster.json")
    assert CliRunner().invoke(app, ["merge", f"a={h200}", f"b={a100}", "-o", cluster]).exit_code == 0
    code, text, _ = _nccl(cluster, "--all")  # every pair (without --all: the hosts by group, issue 34)
    _, raw, _ = _nccl(cluster, "--json")
    assert code == 0
    env = next(p["env"] for p in json.loads(raw)["pairs"] if p["predicted"] == "NET+GDR")
    rule = (
        "why NET+GDR — rule other-host: different hosts never use P2P or SHM; they use the network "
        f"(paths.cc, shm.cc) (changed by {', '.join(env)})"
    )
    assert text.count(rule) == 1 and len(env) > 3
    assert "  0->8: the ranks are on different hosts; NIC mlx5_0 is PIX from the GPU, within the GDR level PXB" in text
    assert text.count("rule other-host:") == 1


def test_a_why_different_shared_by_pairs_is_said_once() -> None:
    """The eight SHM-instead-of-P2P rows carry a mark; the long reason follows the table once."""
    code, text, _ = _nccl("--log", str(LOGS / "rtx4090-8gpu-shm-nccltests307.log"), "--env", "NCCL_P2P_LEVEL=SYS")
    assert code == 0
    assert text.count("NCCL refused P2P") == 1
    assert "[1] why different for 8 pairs (0->1, 1->2, 2->3, …): NCCL refused P2P" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("  ") and "->" in ln and "SHM/direct/direct" in ln]
    assert len(rows) == 1 and rows[0].startswith("  8 ") and rows[0].rstrip().endswith("[1]")  # alike: one row
    _, every, _ = _nccl(
        "--log", str(LOGS / "rtx4090-8gpu-shm-nccltests307.log"), "--env", "NCCL_P2P_LEVEL=SYS", "--all"
    )
    rows = [ln for ln in every.splitlines() if ln.startswith("  ") and "->" in ln and "SHM/direct/direct" in ln]
    assert len(rows) == 8 and all(ln.rstrip().endswith("[1]") for ln in rows)


def test_alike_pairs_share_a_row_and_hosts_get_short_ids() -> None:
    """Issue 33 item 4: `topomap nccl SNAP` printed 56 identical rows under "56 P2P"; a two-host log's
    host names made the --log table about 230 columns wide."""
    code, text, _ = _nccl(str(ROOT / "samples" / "lots" / "one-host-nvswitch.yaml"))
    assert code == 0
    assert re.search(r"^  56 +0->1, 0->2, 0->3, … +gpu0–7 +P2P ", text, re.M)
    assert "1 row for 56 pairs: a row holds the pairs alike but for their ranks (--all: a row each)" in text
    _, every, _ = _nccl(str(ROOT / "samples" / "lots" / "one-host-nvswitch.yaml"), "--all")
    assert len([ln for ln in every.splitlines() if re.match(r"^  \d+->\d+ ", ln)]) == 56
    _, log, _ = _nccl("--log", str(LOGS / "h20-2pods-same-node-socket-nccl1781.log"))
    # the log names GPUs by bus only: the column says so once, each cell is the host's id and the bus
    assert re.search(r"^  pairs +ranks +GPU buses +predicted ", log, re.M)
    assert re.search(r"^  2 +0->1, 1->0 +h1:8000, h2:a2000 +NET ", log, re.M)
    assert "hosts: h1 nccl-tests-gdr-2-worker-0, h2 nccl-tests-gdr-2-worker-1" in log
    table = log.split("\n\n")[1].splitlines()
    assert max(len(line) for line in table) <= 140, table


def test_a_long_why_different_is_a_footnote_even_for_one_pair() -> None:
    """Issue 33 item 4: a sentence in the "why different" cell made the --log table as wide as the sentence
    (167 columns for ault43's two pairs); it is a numbered footnote after the table."""
    _, log, _ = _nccl("--log", str(LOGS / "ault43-p2p-off-shm-nccl1516.log"))
    table = log.split("\n\n")[1].splitlines()
    assert re.search(r"^  1->0 +81000->41000 +unknown +unknown +SHM/direct/direct +\[1\]$", table[2]), table
    assert "[1] why different for 1->0: prediction unknown (P2P cannot be decided" in log
    assert max(len(line) for line in table) <= 100, table


def test_rccl_channel_lines_keep_the_transport_not_the_communicator() -> None:
    """RCCL ends each channel line with "comm 0x588ff82696e0 nRanks 04": not the transport, and different on
    every rank, so alike pairs did not share a row and the observed column was 50 wide."""
    from topomap.nccl.logread import read_log

    path = LOGS / "radeon-pro-vega2-4gpu-xgmi-macpro-rccl2304.log"
    log = read_log(path.read_text(), str(path))
    assert {h.via for h in log.hops} == {"P2P/direct pointer"}
    _, text, _ = _nccl("--log", str(LOGS / "radeon-pro-vega2-4gpu-xgmi-macpro-rccl2304.log"))
    assert re.search(r"^  8 +0->1, 0->3, 1->0, … +b000, e000, 1b000, 1e000 +P2P ", text, re.M)


def test_agreement_counts_the_pairs_predicted_unknown() -> None:
    """A log with no topology: 0 of 8 agree because all 8 were unknown, not wrong — the line says so."""
    code, text, _ = _nccl("--log", str(LOGS / "deepspeed4715-ipc-read-ibext-nogdr.log"))
    assert code == 0
    assert "agreement: 0/8 (rank pair, transport) entries as predicted (8 predicted unknown:" in text


def test_one_gpu_says_why_there_are_no_pairs() -> None:
    """fastvideo#256: the dump is cut after its first GPU: no empty table, a line that says why."""
    code, text, _ = _nccl("--log", str(LOGS / "a100-interleaved-dumps-fastvideo256.log"))
    assert code == 0
    assert "no GPU pairs: the source holds one GPU" in text
    assert "ranks   GPUs" not in text


def test_log_with_a_snapshot_names_it_and_says_ranks_is_not_used() -> None:
    """With --log the ranks come from the log: a --ranks given anyway is named as not used, and the
    snapshot the facts come from is named."""
    base = LOGS / "a100sxm4-4gpu-nv-pairs-shm-cumem-read"
    code, text, _ = _nccl(f"{base}.topo.txt", "--log", f"{base}.log", "--ranks", "containers")
    assert code == 0
    assert f"note: facts from the snapshot: {base}.topo.txt" in text
    assert "note: --ranks containers not used: with --log, the log says which ranks share a host" in text
    assert "agreement: 4/4" in text  # still per the log: P2P on the NVLink pairs, SHM across


def test_nccl_version_outside_2x_is_a_one_line_error() -> None:
    """There is no NCCL 3, and 1.x had none of these transports: exit 2, one line, no traceback."""
    snap = str(SAMPLES / "hgx-h200-8gpu-10nic.json")
    for bad in ("3", "1.9.0", "3.0.1"):
        code, out, err = _nccl(snap, "--nccl-version", bad)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "not an NCCL 2.x release" in err and "Traceback" not in err
    code, out, _ = _nccl(snap, "--nccl-version", "2.0")
    assert code == 0 and "rules of NCCL 2.0's release family" in out


def test_lscpu_appended_settles_the_readme_unknown(tmp_path: Path) -> None:
    """The README's fifth command: the RTX 4090 paste under NCCL 2.18.3 is unknown (the CPU vendor
    decides that release's P2P level); its `lscpu` line appended, as the README says, decides it: an
    AMD CPU sets level SYS, and every pair is P2P over PCIe."""
    real = (
        Path(__file__).parents[1]
        / "data"
        / "real-topologies"
        / "nvidia-smi"
        / "rtx4090-8gpu-2nic-go-gpuallocator17.txt"
    )
    lot = tmp_path / "lot.txt"
    lot.write_text(real.read_text() + "Model name:                           AMD EPYC 7543 32-Core Processor\n")
    code, out, _ = _nccl(str(SAMPLES / "rtx4090-8gpu-all-sys.json"), "--nccl-version", "2.18.3", "--json")
    assert code == 0 and {p["predicted"] for p in json.loads(out)["pairs"]} == {"unknown"}
    code, out, _ = _nccl(str(lot), "--nccl-version", "2.18.3", "--json")
    pairs = json.loads(out)["pairs"]
    assert code == 0 and len(pairs) == 56 and {p["predicted"] for p in pairs} == {"P2P"}
    assert {p["rule"] for p in pairs} == {"p2p-cpu-level"}


def test_a_log_given_as_the_snapshot_is_read_as_the_log() -> None:
    """nccl-tests#307 given where a snapshot goes: its first topology dump is a cut piece with three of
    the eight GPUs (P2P under one PCIe switch); read as --log it is NCCL's own eight SHM hops, as
    `--log` reads them — the same answer either way. A snapshot saved from the log stays a snapshot."""
    log = str(LOGS / "rtx4090-8gpu-shm-nccltests307.log")
    code, raw, _ = _nccl(log, "--json")
    _, same, _ = _nccl("--log", log, "--json")
    assert code == 0
    got = json.loads(raw)
    assert got["pairs"] == json.loads(same)["pairs"]
    assert got["agreement"] == {"same": 8, "total": 8}
    assert got["notes"][0] == f"{log} is an NCCL log: read as --log {log}"


def test_a_snapshot_saved_from_a_log_is_not_reread_as_a_log(tmp_path: Path) -> None:
    saved = str(tmp_path / "dump.json")
    log = str(LOGS / "h100-plx-dump-nccl1519.log")
    assert CliRunner().invoke(app, ["import", log, "-o", saved]).exit_code == 0
    code, raw, _ = _nccl(saved, "--json")
    assert code == 0 and not any("read as --log" in n for n in json.loads(raw)["notes"])
    assert {p["predicted"] for p in json.loads(raw)["pairs"]} == {"P2P"}  # three GPUs under one switch: PIX


def test_a_summary_line_comes_first() -> None:
    """Before the table, one line: how many pairs get each transport and by which rule, most first (the
    trial's first wish): the H200 paste is 56 P2P over NVLink; the 4-host nccl-tests#311 log is 15 network
    entries with GPUDirect and 8 P2P ones."""
    from topomap.importers import load_any
    from topomap.nccl.nodes import predict
    from topomap.render.nccl_view import summary
    from topomap.transport.rules import NcclEnv

    snap = load_any(str(Path(__file__).parents[2] / "samples" / "snapshots" / "hgx-h200-8gpu-10nic.json"))
    assert summary(predict(snap, NcclEnv())) == "predicted for 56 rank pairs: 56 P2P (p2p-nvlink)"
    logs = Path(__file__).parents[1] / "data" / "real-nccl-logs"
    name = "a100sxm4-amd-4node-collnet-fallback-pxn-gdrdma-nccltests311"
    r = CliRunner().invoke(app, ["nccl", "--log", str(logs / f"{name}.log"), str(logs / f"{name}.topo.txt")])
    lines = r.output.splitlines()
    assert r.exit_code == 0 and lines[2] == (
        "predicted for 23 (rank pair, transport) entries: 15 NET+GDR (other-host), 8 P2P (p2p-nvlink)"
    )


def test_a_log_without_a_dump_where_the_snapshot_goes_is_read_as_log() -> None:
    """The nccl guide says `topomap nccl run.log` is read as `--log run.log`; a log without a topology
    dump was refused there (exit 2) and read only with --log."""
    path = str(LOGS / "deepspeed4715-ipc-read-ibext-nogdr.log")
    code, as_snap, _ = _nccl(path, "--json")
    assert code == 0
    _, as_log, _ = _nccl("--log", path, "--json")
    doc, want = json.loads(as_snap), json.loads(as_log)
    assert doc["pairs"] == want["pairs"] and len(doc["pairs"]) == 8
    assert doc["notes"][0] == f"{path} is an NCCL log: read as --log {path}"
    code, _, err = _nccl(path, "--log", path)  # a log in each place: the first is no machine
    assert code == 2 and "an NCCL log without a topology dump" in err
