"""A `topo -m` paste cut inside its NIC Legend (issue 23): the names the legend gives are kept, the
NICs it does not reach keep their column's name, and a finding says where it stops — never a
silent mix of `mlx5_0, mlx5_1, NIC2`. Real pastes (tests/data/real-topologies/nvidia-smi), cut
where a terminal selection or a forum post stops."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REAL
from topomap.base.errors import ImportFailure
from topomap.cli import app
from topomap.importers import import_text
from topomap.model.snapshot import Snapshot

H200 = (REAL / "nvidia-smi" / "hgx-h200-8gpu-10nic-nchc-nano4.txt").read_text()  # NIC0..NIC9: mlx5_0..mlx5_9
A100 = (REAL / "nvidia-smi" / "a100-sxm4-80gb-8gpu-8nic-roce-deepep13.txt").read_text()


def _upto(text: str, marker: str, extra: int = 0) -> str:
    """The paste as far as ``marker`` (plus ``extra`` characters of it)."""
    return text[: text.index(marker) + extra]


def _names(snap: Snapshot) -> list[str]:
    return [n.name for n in sorted(snap.nics, key=lambda n: n.index)]


def _cut_finding(snap: Snapshot) -> str:
    found = [f for f in snap.findings if f.kind == "nic-legend-cut"]
    assert len(found) == 1 and found[0].severity == "warning" and found[0].source == "nvidia-smi"
    return found[0].text


def test_the_whole_legend_names_every_nic_and_says_nothing() -> None:
    snap = import_text(H200, "h200.txt")
    assert _names(snap) == [f"mlx5_{k}" for k in range(10)]
    assert not snap.findings and "nics.name" not in snap.source.unknown_fields


@pytest.mark.parametrize(
    ("cut", "named", "where"),
    [
        (_upto(H200, "  NIC2:"), 2, "cut after NIC1"),  # the selection stops at the end of a line
        (_upto(H200, "  NIC2:", 4), 2, "cut after NIC1"),  # … or inside `  NIC2` (no colon: no entry)
        (_upto(H200, "  NIC2:", len("  NIC2: mlx5")), 2, "cut inside NIC2's line ('mlx5' is the start of a name)"),
        (_upto(H200, "  NIC2:", len("  NIC2: mlx5_")), 2, "cut inside NIC2's line ('mlx5_' is the start of a name)"),
        (_upto(H200, "  NIC0:"), 0, "cut after its title"),
        (_upto(H200, "  NIC7:"), 7, "cut after NIC6"),
    ],
    ids=["end-of-line", "mid-label", "mid-name", "mid-name-underscore", "after-title", "late"],
)
def test_a_cut_legend_keeps_its_names_and_says_where_it_stops(cut: str, named: int, where: str) -> None:
    snap = import_text(cut, "cut.txt")
    assert _names(snap) == [f"mlx5_{k}" for k in range(named)] + [f"NIC{k}" for k in range(named, 10)]
    text = _cut_finding(snap)
    first = f"NIC{named}"
    assert text.startswith(f"NIC Legend {where}: {first}–NIC9 named by their matrix column"), text
    assert "nics.name" in snap.source.unknown_fields  # the names of NIC2.. are not in the paste
    assert "NIC names not shown (no NIC Legend)" not in snap.source.notes  # there is a legend: it is cut


def test_the_matrix_facts_of_a_cut_paste_are_kept() -> None:
    """Cutting the legend costs names, not topology: NIC3 is still PIX to GPU1 (row GPU1 of the paste)."""
    snap = import_text(_upto(H200, "  NIC2:"), "cut.txt")
    pix = {(p.a, p.b) for p in snap.pairs if p.path == "PIX"}
    assert ("gpu1", "nic3") in pix or ("nic3", "gpu1") in pix
    assert ("gpu0", "nic0") in pix or ("nic0", "gpu0") in pix


def test_a_name_that_is_a_shorter_name_of_the_same_shape_is_not_taken_as_cut() -> None:
    """`mlx5_1` after `mlx5_10` is a whole name (the shape mlx5_N), not the start of one."""
    text = _upto(A100, "NIC Legend:") + "NIC Legend:\n\n  NIC0: mlx5_10\n  NIC1: mlx5_1"
    snap = import_text(text, "a100.txt")
    assert _names(snap)[:2] == ["mlx5_10", "mlx5_1"]
    assert _cut_finding(snap).startswith("NIC Legend cut after NIC1: NIC2–NIC7 named by their matrix column")


def test_a_legend_with_a_gap_names_the_gap() -> None:
    legend = "".join(f"  NIC{k}: mlx5_{k}\n" for k in range(8) if k != 3)
    snap = import_text(_upto(A100, "NIC Legend:") + "NIC Legend:\n\n" + legend, "a100.txt")
    assert _names(snap)[2:5] == ["mlx5_2", "NIC3", "mlx5_4"]
    assert _cut_finding(snap).startswith("NIC Legend does not name NIC3: NIC3 named by their matrix column")


def test_no_legend_at_all_keeps_its_note(real: Path) -> None:
    snap = import_text((real / "nvidia-smi" / "h100-4gpu-nv6-4nic-nccl1617.txt").read_text(), "h100.txt")
    assert _names(snap) == ["NIC0", "NIC1", "NIC2", "NIC3"]
    assert "NIC names not shown (no NIC Legend)" in snap.source.notes and not snap.findings


def test_two_names_for_one_nic_are_still_refused() -> None:
    with pytest.raises(ImportFailure, match=r"the NIC Legend names NIC1 twice \(mlx5_1 and mlx5_9\)"):
        import_text(H200 + "\n  NIC1: mlx5_9\n", "two.txt")


def test_show_says_the_legend_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "cut.txt"
    path.write_text(_upto(H200, "  NIC2:", len("  NIC2: mlx5")))
    r = CliRunner().invoke(app, ["show", str(path)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "NIC Legend cut inside NIC2's line" in r.stdout and "NIC2–NIC9 named by their matrix column" in r.stdout
