"""The placement search answers within seconds whatever the input (issue 36 item 2: `place --gpus 8`
on a 64-GPU `topo -m` of mixed links, NV1–NV18 and PIX…SYS, ran over 60 s, `--gpus 6` 31 s, and
`check` with `gpu_groups: {k: 16}` on 32 GPUs over 60 s).

Where the search finishes it is exact (the brute force over every K-subset agrees, here on random
mixed matrices as tests/place/test_place.py does on every sample and real topology); where it stops at its
limit it says so, the group is the best found, and its slowest link is still the best any group has."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fakes.hang import within
from topomap.check import check, parse_requirements, snapshot_lots
from topomap.cli import app
from topomap.graph import build
from topomap.importers import import_text
from topomap.place import place_gpus
from topomap.place.candidates import candidates
from topomap.place.search import SEARCH_LIMIT, build_space, group_score, search

runner = CliRunner()
CODES = [f"NV{k}" for k in range(1, 19)] + ["PIX", "PXB", "PHB", "NODE", "SYS"]
LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe switches (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing a single PCIe switch
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def topo_m(n: int, seed: int, codes: list[str] = CODES, numa: int = 1) -> str:
    """A `nvidia-smi topo -m` of ``n`` GPUs whose pairs are drawn from ``codes`` (the issue's input)."""
    rnd = random.Random(seed)
    m = [["X"] * n for _ in range(n)]
    for i, j in itertools.combinations(range(n), 2):
        m[i][j] = m[j][i] = rnd.choice(codes)
    rows = ["\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity"]
    for i in range(n):
        node = i * numa // n
        rows.append(
            f"GPU{i}\t" + "\t".join(" X " if c == "X" else c for c in m[i]) + f"\t{node * 8}-{node * 8 + 7}\t{node}"
        )
    return "\n".join(rows) + "\n" + LEGEND


@pytest.fixture(scope="module")
def mixed64(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("mixed") / "mixed64.txt"
    p.write_text(topo_m(64, 3, ["NV1", "NV18", "PIX", "SYS"]))
    return p


@pytest.mark.parametrize("k", [6, 8])
def test_place_on_64_mixed_gpus_answers_within_seconds(mixed64: Path, k: int) -> None:
    with within(40, "searching"):
        r = runner.invoke(app, ["place", str(mixed64), "--gpus", str(k), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert len(doc["gpus"]) == k and doc["search"]["steps"] <= SEARCH_LIMIT + 1000
    assert doc["search"]["slowest_proven"] is True


def test_gpu_groups_of_16_on_32_mixed_gpus_answers_within_seconds(tmp_path: Path) -> None:
    snap = import_text(topo_m(32, 5, ["NV1", "NV4", "NV18", "PIX", "PHB", "SYS"]), "mixed32.txt")
    reqs, _ = parse_requirements("requirements:\n  - gpu_groups: {k: 16, groups: 2, min: PHB}\n", "r.yaml")
    with within(40, "searching"):
        result = check(reqs, snapshot_lots([("lot", snap)]), None).results[0]
    # no 16 of these GPUs are pairwise within PHB: the best group's slowest link, proven, is SYS
    assert result.status == "fail" and result.evidence[0] == "0 of 2 group(s) of 16 qualify"
    assert result.evidence[1].startswith("group 1: gpu0, gpu1") and result.evidence[1].endswith("(SYS (beyond PHB))")


def _brute(space, k):  # type: ignore[no-untyped-def]
    scored = [(group_score(space, m), m) for m in itertools.combinations(range(len(space.cands)), k)]
    top = max(s for s, _ in scored)
    lower = [s for s, _ in scored if s < top]
    return min(m for s, m in scored if s == top), top, sum(s == top for s, _ in scored), max(lower, default=None)


@pytest.mark.parametrize("seed", range(8))
def test_a_finished_search_is_the_brute_force_on_random_mixed_matrices(seed: int) -> None:
    rnd = random.Random(seed)
    codes = rnd.sample(CODES, rnd.choice((2, 3, 5, 23)))
    topo = build(import_text(topo_m(9, seed, codes, numa=rnd.choice((1, 2))), f"r{seed}.txt"))
    cands, _ = candidates(topo, set())
    space = build_space(topo, cands, "tp", False)
    for k in range(1, len(cands) + 1):
        found = search(space, k)
        best, score, ties, second = _brute(space, k)
        assert found.complete and (found.best, found.score, found.ties) == (best, score, ties), (codes, k)
        assert found.runner_score == second, (codes, k)


@pytest.mark.parametrize("seed", range(4))
def test_a_search_cut_at_its_limit_is_the_best_found_with_the_best_slowest_link(seed: int) -> None:
    topo = build(import_text(topo_m(10, 100 + seed, ["NV1", "NV18", "PIX", "SYS"]), "cut.txt"))
    cands, _ = candidates(topo, set())
    space = build_space(topo, cands, "tp", False)
    for k in (3, 5, 7):
        _, score, _, _ = _brute(space, k)
        for limit in (1, 40, 400):
            found = search(space, k, limit=limit)
            assert found.steps <= limit + 200 and found.score <= score
            assert found.score == group_score(space, found.best) and len(found.best) == k
            if found.slowest_proven:
                assert found.score[0] == score[0]
            if found.complete:
                assert found.score == score


def test_a_cut_search_says_so_in_place_and_check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import topomap.place.search as engine

    text = topo_m(24, 11, ["NV1", "NV18", "PIX", "SYS"])
    (tmp_path / "m.txt").write_text(text)
    monkeypatch.setattr(engine, "SEARCH_LIMIT", 300)
    r = place_gpus(build(import_text(text, "m.txt")), 8)
    assert not r.search_complete and r.search_limit == 300
    assert r.to_json()["search"] == {"complete": False, "slowest_proven": r.slowest_proven, "steps": r.search_steps,
                                     "limit": 300}  # fmt: skip
    out = runner.invoke(app, ["place", str(tmp_path / "m.txt"), "--gpus", "8"], env={"COLUMNS": "200"})
    assert out.exit_code == 0
    assert (
        "the search stopped at its limit of 300 steps: this is the best group found, not proven the best" in out.stdout
    )
    monkeypatch.setattr(engine, "SEARCH_LIMIT", 1)  # not even one group: the greedy one, slowest unproven
    reqs, _ = parse_requirements("requirements:\n  - gpu_groups: {k: 8}\n", "r.yaml")
    result = check(reqs, snapshot_lots([("lot", import_text(text, "m.txt"))]), None).results[0]
    assert result.status == "unknown" and "the search stopped at its limit of 1 steps" in " ".join(result.evidence)
    monkeypatch.setattr(engine, "SEARCH_LIMIT", 10**6)
    assert check(reqs, snapshot_lots([("lot", import_text(text, "m.txt"))]), None).results[0].status == "fail"


def test_the_samples_answers_are_complete(tmp_path: Path) -> None:
    samples = Path(__file__).resolve().parents[2] / "samples" / "snapshots"
    for snap in sorted(samples.glob("*.json")):
        r = runner.invoke(app, ["place", str(snap), "--gpus", "2", "--json"])
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["search"]["complete"] is True
