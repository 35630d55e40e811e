"""When an UNKNOWN names a command, topomap reads that command's output (issue 19 item 2).

Every command a settle text or hint in topomap/ names (``SETTLE_BY``, ``facts.SETTLE``, the plan's
memory hint, and every backquoted `nvidia-smi …` / `ibstat` in a message) has a reader: a real output
of it, imported, is sniffed as a paste and records its format. Then the readers this round added:
`nvidia-smi -q`'s Fabric section and its ``Attached GPUs`` count (``-q -i 0`` is one GPU of a node),
and `ibstat` appended to a `topo -m` paste.

Data (tests/data/real-topologies, origins in its README): the `nvidia-smi -q` of an 8x H100 SXM HGX
(driver 565.57.01; thamada/nvidia-smi gls/H100SXMx8_smi.py), the DGX-1 `topo -m` (NIC names as
headers) and the H200 node's (NIC Legend mlx5_0-9), and public `ibstat` / `ibv_devinfo` outputs
(tests/data/real-ibstat). The Fabric sections spliced in below are real too, each quoted with its origin.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topomap.check import Lot, check, parse_requirements
from topomap.cli import app
from topomap.files.kind import looks_like_ibstat, sniff
from topomap.graph import build
from topomap.importers import ImportFailure, import_text
from topomap.importers.ibstat import parse_ibstat
from topomap.importers.query_gpu import READ
from topomap.model import facts as model_facts
from topomap.model.facts import fabric_clique, fabric_ready
from topomap.model.snapshot import Snapshot
from topomap.model.source_facts import Fact, settle, settle_command, source_facts
from topomap.plan import costs

runner = CliRunner()
PKG = Path(__file__).resolve().parents[2] / "topomap"
H100_Q = "h100-sxm-8gpu-q-fabric-thamada.txt"
DGX1 = "dgx1-v100-pytorch-ddp-bench.txt"
H200 = "hgx-h200-8gpu-10nic-nchc-nano4.txt"
MOONCAKE = "cx7-cx6dx-mixed-roce-mooncake1999.txt"  # mlx5_0/1 RoCE 200 Active, mlx5_10 Down (cut)
L2FWD = "cx6dx-2port-roce-100g-l2fwd-nv6.txt"  # mlx5_0/1 ConnectX-6 Dx RoCE 100 Active
GPUD = "ib-200g-partial-ibpanic-gpud752.txt"  # mlx5_7 InfiniBand 200 Active, redacted, then `ibpanic:`
DEVINFO_DOWN = "ibv-devinfo-cx7-ib-down-deepep38.txt"  # ibv_devinfo: mlx5_0 InfiniBand PORT_DOWN, mlx5_1 cut
DEVINFO_ROCE = "ibv-devinfo-cx7-roce-partial-deepep38.txt"  # ibv_devinfo: a cut block, mlx5_2 RoCE PORT_ACTIVE


def smi(real: Path, name: str) -> str:
    return (real / "nvidia-smi" / name).read_text()


def ibstat(real: Path, name: str) -> str:
    return (real.parent / "real-ibstat" / name).read_text()


def q_blocks(real: Path, keep: list[int]) -> str:
    """The H100 `-q` with only the GPU blocks ``keep`` (0-based), its header (``Attached GPUs : 8``)
    kept: what `nvidia-smi -q -i 0` prints is the header and GPU 0's block."""
    lines = smi(real, H100_Q).splitlines()
    starts = [i for i, x in enumerate(lines) if x.startswith("GPU 0000")]
    blocks = [lines[a:b] for a, b in zip(starts, [*starts[1:], len(lines)])]
    return "\n".join(lines[: starts[0]] + [x for k in keep for x in blocks[k]]) + "\n"


def fabric_only(real: Path) -> str:
    """What `nvidia-smi -q -d FABRIC` prints of the H100 box: the header, each GPU line, its Fabric section."""
    out: list[str] = []
    inside = False
    for line in smi(real, H100_Q).splitlines():
        if line.startswith(("GPU 0000", "Attached GPUs", "Driver Version", "CUDA Version", "==")):
            out.append(line)
        elif line.startswith("    Fabric"):
            inside = True
            out.append(line)
        elif inside and line.startswith("        "):
            out.append(line)
        else:
            inside = False
    return "\n".join(out) + "\n"


def with_fabric(real: Path, section: str) -> str:
    """The H100 `-q` with GPU 0's Fabric section replaced by ``section`` (a real one from elsewhere)."""
    text = smi(real, H100_Q)
    start = text.index("    Fabric\n")
    end = text.index("    Processes", start)
    return text[:start] + section + text[end:]


def verdicts(rules: str, snap: Snapshot) -> dict[str, tuple[str, list[str], list[str]]]:
    reqs, _ = parse_requirements("requirements:\n" + rules, "r.yaml")
    res = check(reqs, [Lot("lot", build(snap))], None).results
    return {r.rule: (r.status, r.evidence, r.settle) for r in res}


# --- every command named has a reader -------------------------------------------------------------

#: Each command topomap names, by its start, and a real output of it: (text builder, format recorded).
READERS: dict[str, tuple[str, str]] = {
    "nvidia-smi topo -m": ("topo_m", "topo-m"),
    "nvidia-smi topo -p2p": ("topo_p2p", "topo-p2p"),
    "nvidia-smi nvlink -s": ("nvlink_s", "nvlink-status"),
    "nvidia-smi nvlink -R": ("nvlink_r", "nvlink-remote"),
    "nvidia-smi -L": ("gpu_list", "gpu-list"),
    "nvidia-smi -q -d FABRIC": ("q_fabric", "nvidia-smi-q"),
    "nvidia-smi -q": ("q", "nvidia-smi-q"),
    "nvidia-smi --query-gpu": ("query_gpu", "query-gpu-csv"),
    "ibstat": ("ibstat", "ibstat"),
    "ibv_devinfo": ("ibv_devinfo", "ibstat"),
}
#: Commands named for something else than settling a snapshot fact, each with why.
NOT_SETTLE = {
    "nvidia-smi": "names the tool itself (is the driver there?), not an output to paste",
    "nvidia-smi --query-compute-apps=gpu_bus_id,pid,used_memory --format=csv": "a live check before a run: "
    "processes on a GPU are no snapshot fact",
}


def sample(real: Path, kind: str) -> str:
    hpe = "hpe-dl380a-gen11-2x-h100-pcie-nvlink-{}.txt"
    rtx = smi(real, "rtx5090-2gpu-phb-topo-and-p2p-rw-club3090-1229.txt").splitlines()
    l40s = smi(real, "l40s-8gpu-1nic-topo-query-gpu-p2p-record.txt").splitlines()
    csv = next(i for i, x in enumerate(l40s) if x.startswith("index, name"))
    return {
        "topo_m": lambda: smi(real, DGX1),
        "topo_p2p": lambda: "\n".join(rtx[next(i for i, x in enumerate(rtx) if "GNS" in x) - 1 :]) + "\n",
        "nvlink_s": lambda: smi(real, hpe.format("s")),
        "nvlink_r": lambda: smi(real, hpe.format("R")),
        "gpu_list": lambda: "\n".join(x for x in smi(real, hpe.format("s")).splitlines() if x.startswith("GPU ")),
        "q_fabric": lambda: fabric_only(real),
        "q": lambda: smi(real, H100_Q),
        "query_gpu": lambda: "\n".join(l40s[csv : csv + 9]) + "\n",
        "ibstat": lambda: smi(real, DGX1) + ibstat(real, MOONCAKE),
        "ibv_devinfo": lambda: smi(real, DGX1) + ibstat(real, DEVINFO_DOWN),
    }[kind]()


_CMD = re.compile(r"`((?:nvidia-smi|ibstat|ethtool|ibv_devinfo|cat /|ip link|lspci)[^`]*)`")


def named_commands() -> dict[str, str]:
    """Every backquoted command in a settle text or a message of topomap/ (docstrings aside) → where."""
    found: dict[str, str] = {}
    texts = {f"SETTLE_BY[{f.name}]": settle(f) for f in Fact}
    texts |= {f"facts.SETTLE[{k}]": v for k, v in model_facts.SETTLE.items()}
    texts["plan.costs.SETTLE_MEMORY"] = f"`{costs.SETTLE_MEMORY}`"
    for where, text in texts.items():
        for m in _CMD.finditer(text):
            found.setdefault(m.group(1), where)
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docs = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and n.body
            and isinstance(n.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                for m in _CMD.finditer(node.value):
                    found.setdefault(m.group(1), f"{path.relative_to(PKG.parent)}:{node.lineno}")
    return found


def reader_of(command: str) -> tuple[str, str] | None:
    return next((READERS[k] for k in sorted(READERS, key=len, reverse=True) if command.startswith(k)), None)


def test_every_named_command_has_a_reader(real: Path) -> None:
    named = named_commands()
    # the ones this issue was about are among them, and no longer name what topomap cannot read
    assert "ibstat" in named and "nvidia-smi -q" in named
    assert not [c for c in named if c.startswith(("ethtool", "cat /", "ip link"))], named
    unread = {c: w for c, w in named.items() if c not in NOT_SETTLE and reader_of(c) is None}
    assert not unread, f"named but not read: {unread}"
    for command in named:
        if command in NOT_SETTLE:
            continue
        kind, fmt = reader_of(command) or ("", "")
        text = sample(real, kind)
        assert sniff(text) == "nvidia-smi", command
        snap = import_text(text, f"{kind}.txt")
        assert fmt in snap.source.formats, (command, snap.source.formats)
        if command.startswith("nvidia-smi --query-gpu="):  # each column it asks for is one the CSV reader reads
            columns = command.split("=", 1)[1].split(" ")[0].split(",")
            assert set(columns) <= set(READ), command


def test_each_fact_is_carried_by_the_output_its_settle_text_names(real: Path) -> None:
    """For every fact, a real output of the first command :func:`settle` names carries that fact."""
    instead = {  # where the generic sample of that command lacks the columns this fact needs
        Fact.NUMA: smi(real, H200),  # a recent driver's topo -m: its NUMA Affinity column (the DGX-1's has none)
        Fact.PCIE_LINK: smi(real, "l40s-8gpu-query-gpu-pcie-mlperf-v4.txt"),
    }
    for fact in Fact:
        command = settle_command(fact)
        kind, _ = reader_of(command) or ("", "")
        assert kind, (fact, command)
        snap = import_text(instead.get(fact) or sample(real, kind), "t.txt")
        if fact in (Fact.NIC_SPEED, Fact.NIC_KIND):  # no public ibstat of a machine whose topo -m is here too:
            named = {n.name: n for n in snap.nics if n.name in ("mlx5_0", "mlx5_1")}  # the NICs it names
            assert all(n.speed_gbit_s == 200.0 and n.kind == "roce" for n in named.values()) and len(named) == 2
            continue
        assert source_facts(snap).knows(fact), (fact, command)
    # memory: the plan's hint and facts.SETTLE are the one text
    assert settle_command(Fact.GPU_MEMORY) == costs.SETTLE_MEMORY
    assert settle(Fact.GPU_MEMORY) == model_facts.SETTLE["gpu_memory"]
    assert model_facts.SETTLE["numa"] == settle(Fact.NUMA) and "numa_node" not in settle(Fact.NUMA)


# --- nvidia-smi -q: Fabric, and one GPU of a node ---------------------------------------------------


def test_q_fabric_section_is_read_from_a_real_h100_q(real: Path) -> None:
    snap = import_text(smi(real, H100_Q), "q.txt")
    assert len(snap.gpus) == 8 and snap.gpus[7].pci_bus_id == "0000:db:00.0"
    f = snap.gpus[0].fabric
    assert f is not None and (f.state, f.status, f.clique_id) == ("completed", "success", 0)
    assert f.cluster_uuid == "00000000-0000-0000-0000-000000000000"
    assert "gpus.fabric" not in snap.source.unknown_fields and source_facts(snap).knows(Fact.FABRIC)
    # decided from what the paste says, no longer "not recorded": a healthy HGX board registers with an
    # all-zero cluster UUID and clique 0 (its NVSwitches serve this host alone), so its fabric is ready
    ans = fabric_ready(snap, snap.gpus[0])
    assert ans.value == "yes" and "NVLink domain of this host only" in ans.why()
    status, evidence, settle_by = verdicts("  - fabric_ready: {}\n", snap)["fabric_ready"]
    assert status == "pass" and not settle_by and not any("not recorded" in e for e in evidence)
    assert fabric_clique(snap, snap.gpus[0]) is None  # and it is in no multi-node NVLink domain


def test_a_topo_m_alone_names_q_for_the_fabric(real: Path) -> None:
    snap = import_text(smi(real, H200), "h200.txt")
    status, evidence, settle_by = verdicts("  - fabric_ready: {}\n", snap)["fabric_ready"]
    assert status == "unknown" and settle_by and settle_by[0].startswith("`nvidia-smi -q` (section Fabric)")
    assert any("not recorded by this source" in e for e in evidence)


@pytest.mark.parametrize(
    ("section", "state", "ready", "note"),
    [
        # kubernetes-sigs/dra-driver-nvidia-gpu#626 (`nvidia-smi -q | grep -C3 ClusterUUID` on a GB200 node)
        (
            "    Fabric\n        State                             : Completed\n"
            "        Status                            : Success\n"
            "        CliqueId                          : 2\n"
            "        ClusterUUID                       : dc6e40c4-d722-4357-9ba6-5291dd461278\n"
            "        Health\n            Summary                       : Unhealthy\n"
            "            Bandwidth                     : Full\n",
            "completed",
            "yes",
            "gpu0: `nvidia-smi -q` reports NVLink fabric health Unhealthy",
        ),
        # Azure/azhpc-images#506 (a node returned to production with this fabric)
        (
            "    Fabric\n    State                             : Completed\n"
            "    Status                            : Insufficient Resources\n"
            "    CliqueId                          : 0\n"
            "    ClusterUUID                       : 00000000-0000-0000-0000-000000000000\n".replace(
                "\n    S", "\n        S"
            ).replace("\n    C", "\n        C"),
            "completed",
            "no",
            None,
        ),
        # NVIDIA/gpu-operator#2511 (driver 580.159.04, fabric manager not done)
        (
            "    Fabric\n        State                                          : In Progress\n"
            "        Status                                         : N/A\n"
            "        CliqueId                                       : N/A\n"
            "        ClusterUUID                                    : N/A\n"
            "        Health\n            Summary                                    : N/A\n",
            "in-progress",
            "no",
            None,
        ),
    ],
)
def test_real_fabric_sections_decide_fabric_ready(
    real: Path, section: str, state: str, ready: str, note: str | None
) -> None:
    snap = import_text(with_fabric(real, section), "q.txt")
    f = snap.gpus[0].fabric
    assert f is not None and f.state == state
    assert fabric_ready(snap, snap.gpus[0]).value == ready
    if note:
        assert note in snap.source.notes
    if "Insufficient" in section:
        assert (
            f.status == "insufficient resources" and "insufficient resources" in fabric_ready(snap, snap.gpus[0]).why()
        )


def test_q_d_fabric_carries_the_fabric_and_not_the_memory(real: Path) -> None:
    snap = import_text(fabric_only(real), "fab.txt")
    facts = source_facts(snap)
    assert facts.knows(Fact.FABRIC) and facts.knows(Fact.GPU_COUNT)
    assert not facts.knows(Fact.GPU_MEMORY) and not facts.knows(Fact.PCIE_LINK)
    assert all(g.fabric is not None and g.fabric.state == "completed" for g in snap.gpus)


def test_q_of_one_gpu_is_not_a_one_gpu_machine(real: Path) -> None:
    one = import_text(q_blocks(real, [0]), "q-i0.txt")
    assert [g.index for g in one.gpus] == [0] and "gpus.count" in one.source.unknown_fields
    assert any("shows 1 of the host's 8 GPUs" in n for n in one.source.notes)
    status, evidence, settle_by = verdicts("  - gpus: {min_count: 2}\n", one)["gpus"]
    assert status == "unknown" and settle_by == [settle(Fact.GPU_COUNT)]
    assert "does not record every GPU of the host" in evidence[0]
    # the whole -q lists all eight: eight pass, sixteen fail
    full = import_text(smi(real, H100_Q), "q.txt")
    assert "gpus.count" not in full.source.unknown_fields
    assert verdicts("  - gpus: {min_count: 8}\n", full)["gpus"][0] == "pass"
    assert verdicts("  - gpus: {min_count: 16}\n", full)["gpus"][0] == "fail"


def test_q_of_one_gpu_joins_its_gpu_by_uuid(real: Path) -> None:
    """`-q -i 1` after the same machine's `-L` (written from the -q's own names and UUIDs): the block
    joins GPU 1 by its UUID, not GPU 0 by order."""
    full = import_text(smi(real, H100_Q), "q.txt")
    listing = "".join(f"GPU {g.index}: {g.name} (UUID: {g.uuid})\n" for g in full.gpus)
    snap = import_text(listing + q_blocks(real, [1]), "l.txt")
    assert len(snap.gpus) == 8
    assert snap.gpus[1].pci_bus_id == "0000:2a:00.0" and snap.gpus[1].memory_total_bytes == 81559 * 2**20
    assert snap.gpus[0].pci_bus_id is None


def test_q_of_one_gpu_with_its_command_line_is_that_gpu(real: Path) -> None:
    """`nvidia-smi -q -i 3` pasted with its command line: the block is GPU 3, not GPU 0 by order."""
    snap = import_text("$ nvidia-smi -q -i 3\n" + q_blocks(real, [3]), "q3.txt")
    assert [g.index for g in snap.gpus] == [3] and snap.gpus[0].pci_bus_id == "0000:5d:00.0"
    assert "gpus.count" in snap.source.unknown_fields
    unnamed = import_text(q_blocks(real, [3]), "q.txt")  # without it nothing says which: nvidia-smi's order
    assert [g.index for g in unnamed.gpus] == [0] and any("taken as GPU 0… in order" in n for n in unnamed.source.notes)


# --- ibstat -----------------------------------------------------------------------------------------


def test_ibstat_is_sniffed_and_parsed(real: Path) -> None:
    cas = parse_ibstat(ibstat(real, MOONCAKE).splitlines(), "m.txt")
    assert [c.name for c in cas] == ["mlx5_0", "mlx5_1", "mlx5_10"]
    assert cas[0].ca_type == "MT4129" and cas[2].ca_type == "MT4125"
    port = cas[0].port
    assert port is not None and (port.state, port.rate, port.kind) == ("active", 200.0, "roce")
    down = cas[2].port
    assert down is not None and down.state == "down" and down.rate is None  # the paste is cut before its Rate
    ib = parse_ibstat(ibstat(real, GPUD).splitlines(), "g.txt")  # redacted with "...", then an ibpanic line
    assert [(c.name, c.port.state, c.port.rate, c.port.kind) for c in ib if c.port] == [
        ("mlx5_7", "active", 200.0, "infiniband")
    ]
    assert all(looks_like_ibstat(ibstat(real, n)) for n in (MOONCAKE, L2FWD, GPUD))
    assert not looks_like_ibstat(smi(real, DGX1))


def test_ibstat_appended_to_topo_m_sets_nic_speed_state_and_kind(real: Path) -> None:
    bare = import_text(smi(real, DGX1), "d.txt")
    status, evidence, settle_by = verdicts("  - gdr_nic: {max_path: PIX, min_gbit_s: 100}\n", bare)["gdr_nic"]
    assert status == "unknown" and "gpu0: NIC mlx5_0 (PIX) speed not recorded" in evidence
    assert settle_by[0].startswith("`ibstat` appended to the `nvidia-smi topo -m` paste")

    snap = import_text(smi(real, DGX1) + ibstat(real, MOONCAKE), "d.txt")
    nics = {n.name: n for n in snap.nics}
    assert (nics["mlx5_0"].speed_gbit_s, nics["mlx5_0"].state, nics["mlx5_0"].kind) == (200.0, "active", "roce")
    assert nics["mlx5_2"].speed_gbit_s is None and nics["mlx5_2"].kind == "unknown"
    assert "ibstat" in snap.source.formats
    assert "`ibstat` does not list mlx5_2, mlx5_3: their speed and kind stay unknown" in snap.source.notes
    assert "`ibstat` lists mlx5_10, which no matrix in the file shows" in snap.source.notes
    v = verdicts("  - gdr_nic: {max_path: PIX, min_gbit_s: 100}\n", snap)["gdr_nic"]
    assert "gpu0: mlx5_0 PIX" in v[1] and "gpu4: NIC mlx5_2 (PIX) speed not recorded" in v[1]
    fast = verdicts("  - gdr_nic: {max_path: PIX, min_gbit_s: 400}\n", snap)["gdr_nic"]
    assert fast[0] == "fail" and "gpu0: NIC mlx5_0 (PIX) runs at 200 Gb/s" in fast[1]


def test_ibstat_joins_an_h200_nic_legend_by_name(real: Path) -> None:
    snap = import_text(smi(real, H200) + "\n" + ibstat(real, GPUD), "h.txt")
    nics = {n.name: n for n in snap.nics}
    assert (nics["mlx5_7"].kind, nics["mlx5_7"].speed_gbit_s, nics["mlx5_7"].state) == ("infiniband", 200.0, "active")
    assert nics["mlx5_6"].speed_gbit_s is None
    assert not source_facts(snap).knows(Fact.NIC_SPEED)  # one of ten: the source does not carry them all


def test_ibstat_alone_or_beside_unnamed_nics_places_nothing(real: Path, tmp_path: Path) -> None:
    path = tmp_path / "ib.txt"
    path.write_text(ibstat(real, L2FWD))
    res = runner.invoke(app, ["import", str(path), "-o", str(tmp_path / "s.json")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "an `ibstat` output is read appended to one of these" in res.output
    assert not (tmp_path / "s.json").exists()
    # beside `-q` (no NIC in the file) or a topo -m whose NICs are NIC0… without a legend: a note, no guess
    q = import_text(smi(real, H100_Q) + ibstat(real, L2FWD), "q.txt")
    assert not q.nics and any("no output in this file places them" in n for n in q.source.notes)
    h100 = import_text(smi(real, "h100-4gpu-nv6-4nic-nccl1617.txt") + ibstat(real, L2FWD), "h.txt")
    assert all(n.speed_gbit_s is None for n in h100.nics)
    assert any("not joined" in n for n in h100.source.notes)


def test_ibv_devinfo_settles_state_and_link_layer_not_speed(real: Path) -> None:
    snap = import_text(smi(real, DGX1) + ibstat(real, DEVINFO_DOWN) + ibstat(real, DEVINFO_ROCE), "d.txt")
    nics = {n.name: n for n in snap.nics}
    assert (nics["mlx5_0"].kind, nics["mlx5_0"].state, nics["mlx5_0"].speed_gbit_s) == ("infiniband", "down", None)
    assert (nics["mlx5_2"].kind, nics["mlx5_2"].state, nics["mlx5_2"].speed_gbit_s) == ("roce", "active", None)
    assert nics["mlx5_1"].kind == "unknown" and nics["mlx5_1"].state is None  # its block is cut before its port
    assert "nics.speed_gbit_s" in snap.source.unknown_fields and "ibstat" in snap.source.formats
    assert "`ibv_devinfo`: the port of mlx5_0 is down: no trained rate" in snap.source.notes
    # mlx5_0, PIX to gpu0 and gpu1, is down: their nearest usable NIC is mlx5_1, PHB
    status, evidence, _ = verdicts("  - gdr_nic: {max_path: PIX}\n", snap)["gdr_nic"]
    assert status == "fail" and "gpu0: nearest usable NIC mlx5_1 is PHB" in evidence and "gpu2: mlx5_1 PIX" in evidence


def test_ibstat_of_two_machines_in_one_file_is_refused(real: Path) -> None:
    with pytest.raises(ImportFailure) as exc:
        import_text(smi(real, DGX1) + ibstat(real, L2FWD) + ibstat(real, MOONCAKE), "two.txt")
    assert "two.txt:" in str(exc.value) and "CA 'mlx5_0' twice" in str(exc.value)


def test_show_says_what_the_importer_said_of_an_ibstat_from_elsewhere(real: Path, tmp_path: Path) -> None:
    """An `ibstat` appended from another machine (the Mooncake output has mlx5_10, the H200 paste's legend
    does not): `show` prints the importer's notes, not only the graph's (found by the newcomer trial)."""
    from typer.testing import CliRunner

    from topomap.cli import app

    ib = Path(__file__).parents[1] / "data" / "real-ibstat" / "cx7-cx6dx-mixed-roce-mooncake1999.txt"
    paste = tmp_path / "h200-ibstat.txt"
    paste.write_text(smi(real, H200) + "\n" + ib.read_text())
    out = CliRunner().invoke(app, ["show", str(paste)]).stdout
    assert "note: `ibstat` lists mlx5_10, which no matrix in the file shows" in out
    assert "note: `ibstat` does not list mlx5_2" in out
