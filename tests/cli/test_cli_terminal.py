"""Terminal text of `show` and `matrix`: names from files never send control characters or markup to
the terminal, and at 80 columns (or piped) no value — bus id, CPU list, UUID, NIC name — is split or cut."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from tests.conftest import REAL, SAMPLES
from topomap.cli import app
from topomap.importers import load_any
from topomap.model.codec import save_snapshot
from topomap.model.snapshot import hosts_of

runner = CliRunner()
SNAPS = SAMPLES / "snapshots"
HOSTILE = "e\x1b[31m\nx[bold]y[/]\t\x07"
SHOWN = "e\\x1b[31m\\x0ax[bold]y[/]\\x09\\x07"


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A snapshot whose host name, NIC names, CPU list, finding and problem carry escapes and markup."""
    s = load_any(SNAPS / "ibm-gx3d-h100-8gpu.json")
    g0 = msgspec.structs.replace(s.gpus[0], cpu_affinity="0-3" + HOSTILE)
    s = msgspec.structs.replace(
        s,
        host=msgspec.structs.replace(s.host, hostname="h" + HOSTILE, cpu_model="c" + HOSTILE),
        nics=[msgspec.structs.replace(n, name=f"n{n.index}" + HOSTILE) for n in s.nics],
        gpus=[g0, *s.gpus[1:]],
    )
    path = tmp_path / "hostile.json"
    save_snapshot(s, path)
    return path


def _clean(out: str) -> None:
    assert "\x1b" not in out and "\x07" not in out


def test_show_writes_control_characters_visibly(hostile: Path) -> None:
    r = runner.invoke(app, ["show", str(hostile)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    _clean(r.stdout)
    assert "h" + SHOWN in r.stdout and "n0" + SHOWN in r.stdout and "c" + SHOWN in r.stdout
    assert "0-3" + SHOWN in r.stdout  # the CPU list, whole, as data: never rich markup


def test_matrix_writes_control_characters_visibly(hostile: Path) -> None:
    r = runner.invoke(app, ["matrix", str(hostile)])
    assert r.exit_code == 0, r.output
    _clean(r.stdout)
    assert "  NIC0: n0" + SHOWN + "\n" in r.stdout
    gpu0, gpu1 = r.stdout.splitlines()[1:3]
    assert gpu0.split("\t")[-4] == "0-3" + SHOWN  # no tab from the name shifts the columns
    assert gpu0.count("\t") == gpu1.count("\t")


def test_merged_host_name_with_escape_in_show_matrix_and_merge(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    name = "e\x1b[31m\nx"
    dgx1, azure = SNAPS / "dgx1-v100.json", SNAPS / "azure-ndv4.json"
    r = runner.invoke(app, ["merge", f"a={dgx1}", f"b={dgx1}", f"{name}={azure}", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.stderr and "e\\x1b[31m\\x0ax differs" in r.stderr  # a consistency note names the host
    for args in (["show", str(out)], ["matrix", str(out)]):
        r = runner.invoke(app, args, env={"COLUMNS": "200"})
        assert r.exit_code == 0 and "\x1b" not in r.stdout and "e\\x1b[31m\\x0ax" in r.stdout, args


def _values(path: Path) -> list[str]:
    """Every value `show` must print whole: GPU and NIC bus ids, CPU lists, UUIDs, NIC names."""
    out: list[str] = []
    for h in hosts_of(load_any(path)):
        out += [v for g in h.gpus for v in (g.pci_bus_id, g.cpu_affinity, g.uuid) if v]
        out += [v for n in h.nics for v in (n.pci_bus_id, n.name) if v]
        out += [n.cpus for n in h.host.numa_nodes if n.cpus]
    return out


@pytest.mark.parametrize("columns", [80, 60, 40])
@pytest.mark.parametrize(
    "sample", ["ibm-gx3d-h100-8gpu.json", "hgx-h200-8gpu-10nic.json", "azure-ndv4.json", "aws-p4d-24xlarge.json"]
)
def test_show_never_splits_or_cuts_a_value(sample: str, columns: int) -> None:
    r = runner.invoke(app, ["show", str(SNAPS / sample)], env=_terminal(columns))
    assert r.exit_code == 0, r.output
    assert "…" not in r.stdout
    values = _values(SNAPS / sample)
    assert values
    for v in values:
        assert re.search(rf"(?<![\w:.,-]){re.escape(v)}(?![\w:.,-])", r.stdout), (v, columns)


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _terminal(columns: int) -> dict[str, str]:
    """A terminal of ``columns`` (rich's TTY_COMPATIBLE; no colour): piped output has no width at all."""
    return {"COLUMNS": str(columns), "TTY_COMPATIBLE": "1", "TERM": "xterm", "NO_COLOR": "1"}


def test_show_piped_ignores_the_width() -> None:
    """Piped, nothing is wrapped or laid out for a width: COLUMNS=40 and COLUMNS=200 print the same."""
    path = str(SNAPS / "ibm-gx3d-h100-8gpu.json")
    narrow = runner.invoke(app, ["show", path], env={"COLUMNS": "40"}).stdout
    assert narrow == runner.invoke(app, ["show", path], env={"COLUMNS": "200"}).stdout
    assert re.search(r"^  nic0 +mlx5_0 +RoCE \(CX\) +0000:e9:00\.0 +1 +200 Gb/s", narrow, re.M)


def test_show_at_80_columns_keeps_a_table_when_it_fits() -> None:
    """The gx3d NIC table fits 80 columns with every bus id whole; at 50, each NIC is a block."""
    path = str(SNAPS / "ibm-gx3d-h100-8gpu.json")
    wide = _ANSI.sub("", runner.invoke(app, ["show", path], env=_terminal(80)).stdout)
    assert re.search(r"^  nic0 +mlx5_0 +RoCE \(CX\) +0000:e9:00\.0 +1 +200 Gb/s", wide, re.M)
    narrow = _ANSI.sub("", runner.invoke(app, ["show", path], env=_terminal(50)).stdout)
    assert "id nic0\n  name: mlx5_0\n  family: RoCE (CX)\n  bus id: 0000:e9:00.0\n" in narrow
    assert max(len(line.rstrip()) for line in narrow.splitlines()) <= 50


def test_show_json_unchanged_by_width(hostile: Path) -> None:
    r = runner.invoke(app, ["show", "--json", str(hostile)], env={"COLUMNS": "40"})
    assert json.loads(r.stdout)["host"]["hostname"] == "h" + HOSTILE  # JSON carries the data as it is


def test_measured_figures_origin_is_escaped_in_matrix_show_and_table(tmp_path: Path) -> None:
    from rich.console import Console

    from topomap.render.bandwidth_matrix import measurements_table

    p2p = REAL / "bandwidth" / "a100-sxm4-80gb-8gpu-p2pBandwidthLatencyTest-distserve3.txt"
    measured = tmp_path / "measured.json"
    r = runner.invoke(app, ["attach", str(SNAPS / "hgx-a100-8gpu-8nic.json"), str(p2p), "-o", str(measured)])
    assert r.exit_code == 0, r.output
    doc = json.loads(measured.read_text())
    for m in doc["measurements"]:
        m["origin"] = "o" + HOSTILE
    measured.write_text(json.dumps(doc))
    for args in (["matrix", "--bandwidth", str(measured)], ["show", str(measured)]):
        r = runner.invoke(app, args, env={"COLUMNS": "200"})
        assert r.exit_code == 0, r.output
        _clean(r.stdout)
        assert "o" + SHOWN in r.stdout, args
    console = Console(width=400, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(measurements_table(load_any(measured)))
    text = console.export_text()
    assert "o" + SHOWN in text and "\x1b" not in text  # [bold] stays text, not markup


def test_help_reflows_the_docstrings_paragraphs() -> None:
    """Issue 33 item 4: --help kept the docstrings' hard line breaks ("…NET+GDR), the rule that" / "decides
    it…") and wrapped raggedly at 80 columns. Each paragraph's lines are joined; paragraphs and list items stay."""
    from topomap.cli.wiring import reflow

    assert reflow("Head line.\n\n    One\n    paragraph.\n    - an item\n      its rest\n    - two") == (
        "Head line.\n\nOne paragraph.\n- an item its rest\n- two"
    )
    r = runner.invoke(app, ["nccl", "--help"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert r.exit_code == 0
    text = " ".join(line.strip(" │") for line in r.stdout.splitlines())
    assert "NET+GDR), the rule that decides it" in text
    assert not [line for line in r.stdout.splitlines() if line.rstrip().endswith("the rule that")]
