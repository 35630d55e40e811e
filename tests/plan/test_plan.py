"""`topomap plan`: the reference figures exactly, and uneven units under every arrangement
(expectations computed by hand in the comments)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from topomap.api import bind_snapshots
from topomap.base.units import fmt_span
from topomap.collective.expect import expect
from topomap.collective.lot import plan as lot_plan
from topomap.flow import read_flow
from topomap.importers import load_any
from topomap.plan import Arrangement, PlanResult, best_total_seconds, plan_flow
from topomap.plan.sched import SlotCost, even_static, longest_first, one_slot, shared_queue

REFERENCE = SAMPLES / "flows" / "eight-documents.yaml"
RTX4090 = SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json"
MIN = 60.0


def plan_of(path: Path, cards: list[int] | None = None, probes: list[str] | None = None) -> PlanResult:
    flow = read_flow(path)
    return plan_flow(flow, bind_snapshots(flow, probes or []), cards)


def arr(r: PlanResult, k: int, kind: str) -> Arrangement:
    return next(a for a in r.arrangements if a.k == k and a.kind == kind)


def test_reference_example_one_card_106_two_cards_58() -> None:
    r = plan_of(REFERENCE, [1, 2])
    one = arr(r, 1, "one card")
    assert one.parallel_s == 96 * MIN and one.assembly_s == 10 * MIN and one.total_s == 106 * MIN
    for kind in ("even-static", "longest-first", "shared-queue"):
        two = arr(r, 2, kind)
        assert (two.parallel_s, two.total_s) == (48 * MIN, 58 * MIN)
        assert [len(ln.units) for ln in two.lanes] == [4, 4]
        assert two.idle_card_s == 0 and two.idle_assembly_card_s == 2 * 10 * MIN
        assert two.speedup == pytest.approx(106 / 58)
    assert best_total_seconds(r) == 58 * MIN
    assert any("cards do not slow each other's loading" in a for a in r.assumptions)
    assert any("not a measurement" in a for a in r.assumptions)
    assert (fmt_span(106 * MIN), fmt_span(58 * MIN)) == ("106 min", "58 min")


def test_reference_on_every_card_count_of_the_lot() -> None:
    r = plan_of(REFERENCE)  # N = 8 cards in the snapshot
    assert r.cards_available == [f"gpu{i}" for i in range(8)]
    # 8 units of 12 min on k cards: ceil(8/k) × 12 min + 10 min
    for k, parallel in [(3, 36), (4, 24), (5, 24), (8, 12)]:
        assert arr(r, k, "even-static").total_s == (parallel + 10) * MIN
    # three cards: 3+3+2 units → the third card waits 12 min
    assert arr(r, 3, "even-static").idle_card_s == 12 * MIN
    assert arr(r, 8, "shared-queue").total_s == 22 * MIN


UNEVEN = [21, 19, 18, 16, 8, 6, 5, 3]  # minutes, 96 in all, the four longest first


def _uneven_flow(tmp_path: Path, durations: list[int]) -> Path:
    body = ", ".join(f"{d} min" for d in durations)
    text = REFERENCE.read_text().replace("  count: 8\n  duration: 12 min\n", f"  durations: [{body}]\n")
    text = text.replace("../snapshots/", str(SAMPLES / "snapshots") + "/")
    p = tmp_path / "uneven.yaml"
    p.write_text(text)
    return p


def test_uneven_units_leave_a_card_idle_under_the_even_split(tmp_path: Path) -> None:
    r = plan_of(_uneven_flow(tmp_path, UNEVEN), [1, 2, 3])
    assert arr(r, 1, "one card").total_s == 106 * MIN
    # even split in order: 21+19+18+16 = 74 | 8+6+5+3 = 22 → 74 + 10; gpu1 waits 52 min
    even = arr(r, 2, "even-static")
    assert [ln.end / MIN for ln in even.lanes] == [74, 22]
    assert even.total_s == 84 * MIN and even.idle_card_s == 52 * MIN
    # longest first: 21→0, 19→1, 18→1 (37), 16→0 (37), 8→0 (45), 6→1 (43), 5→1 (48), 3→0 (48)
    lpt = arr(r, 2, "longest-first")
    assert [ln.end / MIN for ln in lpt.lanes] == [48, 48] and lpt.total_s == 58 * MIN
    assert lpt.lanes[0].units == [0, 3, 4, 7] and lpt.lanes[1].units == [1, 2, 5, 6]
    # shared queue in this order gives the same 48 | 48
    assert arr(r, 2, "shared-queue").total_s == 58 * MIN
    # three cards, even split 3+3+2: 58 | 30 | 8 → idle 28 + 50 = 78
    even3 = arr(r, 3, "even-static")
    assert [ln.end / MIN for ln in even3.lanes] == [58, 30, 8] and even3.idle_card_s == 78 * MIN
    # three cards, longest first: 21→0, 19→1, 18→2, 16→2 (34), 8→1 (27), 6→0 (27), 5→0 (32), 3→1 (30)
    lpt3 = arr(r, 3, "longest-first")
    assert [ln.end / MIN for ln in lpt3.lanes] == [32, 30, 34] and lpt3.idle_card_s == 6 * MIN
    assert best_total_seconds(r) == 44 * MIN


def test_shared_queue_loses_to_longest_first_when_the_long_units_come_last(tmp_path: Path) -> None:
    r = plan_of(_uneven_flow(tmp_path, sorted(UNEVEN)), [2])
    # even: 3+5+6+8 = 22 | 16+18+19+21 = 74
    assert [ln.end / MIN for ln in arr(r, 2, "even-static").lanes] == [22, 74]
    # queue: 3→0, 5→1, 6→0 (9), 8→1 (13), 16→0 (25), 18→1 (31), 19→0 (44), 21→1 (52)
    q = arr(r, 2, "shared-queue")
    assert [ln.end / MIN for ln in q.lanes] == [44, 52] and q.idle_card_s == 8 * MIN
    assert arr(r, 2, "longest-first").total_s == 58 * MIN
    assert arr(r, 2, "shared-queue").total_s == 62 * MIN
    # one card was not asked for, yet the speed-up is over one card: 106 min ÷ 62 min
    assert [a.kind for a in r.arrangements if a.k == 1] == []
    assert arr(r, 2, "shared-queue").speedup == pytest.approx(106 / 62)


def test_schedulers_with_transfers_on_each_slot() -> None:
    secs = [100.0, 50.0, 50.0]
    costs = [SlotCost(10.0, 5.0), SlotCost(20.0, 0.0)]
    # one slot: 3 × (10 + 5) + 200
    assert one_slot(secs, costs[0])[0].end == 245.0
    # even split 2 | 1: slot 0 = 115 + 65 = 180; slot 1 = 20 + 50 = 70
    assert [ln.end for ln in even_static(secs, costs)] == [180.0, 70.0]
    # longest first: 100→0 (115), 50→1 (70), 50→1 (140) rather than 0 (180)
    assert [ln.end for ln in longest_first(secs, costs)] == [115.0, 140.0]
    # queue: 100→0, 50→1 (70), 50→1 (free first at 70) → 140
    lanes = shared_queue(secs, costs)
    assert [ln.end for ln in lanes] == [115.0, 140.0]
    assert [(b.kind, b.start, b.end) for b in lanes[0].bars] == [
        ("input", 0.0, 10.0),
        ("compute", 10.0, 110.0),
        ("output", 110.0, 115.0),
    ]


def test_streamed_assembly_overlaps_the_units(tmp_path: Path) -> None:
    text = REFERENCE.read_text().replace("rule: concatenate", "waits_for_all: false, rule: concatenate")
    text = text.replace("../snapshots/", str(SAMPLES / "snapshots") + "/")
    p = tmp_path / "stream.yaml"
    p.write_text(text)
    r = plan_of(p, [1, 2])
    # one card: results at 12, 24 … 96 min; 1.25 min of assembly each, the last ends at 97.25
    assert arr(r, 1, "one card").total_s == pytest.approx(97.25 * MIN)
    # two cards: two results at 12, 24, 36, 48; the assembler finishes at 48 + 2 × 1.25
    assert arr(r, 2, "even-static").total_s == pytest.approx(50.5 * MIN)


def test_old_flow_files_stay_valid_and_plan() -> None:
    r = plan_of(SAMPLES / "flows" / "doc-conversion.yaml", [1, 2])
    # 8 × 40 min; no assembly step declared, so none is added
    assert arr(r, 1, "one card").total_s == pytest.approx(320 * MIN)
    assert any("no assembly step declared" in a for a in r.assumptions)
    # its arrows carry volumes but the lot's PCIe speeds are not in a topo -m matrix: unknown, excluded
    assert not arr(r, 2, "even-static").transfers_complete
    assert any(w.startswith("transfer time unknown, excluded from totals") for w in r.warnings)


def test_shipped_uneven_sample_reads_its_csv() -> None:
    r = plan_of(SAMPLES / "flows" / "uneven-documents.yaml", [1, 2])
    assert r.unit_source == "work.durations_csv (uneven-documents.csv)"
    assert [u.name for u in r.units][:2] == ["annual-report", "contract-bundle"]
    assert arr(r, 2, "even-static").total_s == 84 * MIN and arr(r, 2, "even-static").idle_card_s == 52 * MIN
    assert best_total_seconds(r) == 58 * MIN


def test_shipped_big_task_refuses_one_card_and_fits_split() -> None:
    r = plan_of(SAMPLES / "flows" / "big-task-dgx2.yaml", [1, 2, 4])
    one = arr(r, 1, "one card")
    assert one.fit.verdict == "does not fit" and one.total_s == 122 * MIN
    assert "the lot's 16 cards hold 512 GiB together, but cards do not pool memory" in one.fit.reason
    # split over 4: 12 GiB of weights on each card + 28 GiB ÷ 4 = 19 GiB
    c4 = arr(r, 4, "coordinated")
    assert c4.fit.verdict == "fits" and c4.fit.needed_bytes == 19 * 2**30
    # 6 tasks × (20 min ÷ 4 + 5000 steps × 1.5 × 256 MiB at the expected all-reduce busbw over NVSwitch:
    # 6 links × NCCL's 20 GB/s for V100 at the ring's efficiency, what `topomap nccl LOT --perf` gives)
    snap = load_any(SAMPLES / "snapshots" / "dgx2h-16gpu.json")
    busbw = expect(lot_plan(snap, gpu_indexes=[0, 1, 2, 3]), "all_reduce").busbw_gbps
    assert busbw == pytest.approx(116.4)
    step = 1.5 * 256 * 2**20 / (busbw * 1e9)
    assert c4.total_s == pytest.approx(6 * (5 * MIN + 5000 * step) + 2 * MIN)
    best = r.best()
    assert best is not None and (best.k, best.kind) == (4, "coordinated")


def _text(r: PlanResult, gantt: int | None = None) -> str:
    from rich.console import Console

    from topomap.render.plan_view import plan_view

    console = Console(width=200, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(plan_view(r, gantt))
    return console.export_text()


def test_plan_table_on_a_narrow_terminal_is_one_block_per_arrangement() -> None:
    # big-task on the DGX-2H sample: its table is 69 columns; on a 60-column terminal every
    # arrangement is a block of "header: value" lines (the one transform, render.whole), no line wider than 60
    from rich.console import Console

    from topomap.render.plan_view import plan_table
    from topomap.render.whole import whole

    def shown(width: int) -> str:
        console = Console(width=width, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
        console.print(whole(console, plan_table(r), width), crop=False, overflow="ignore")
        return console.export_text()

    r = plan_of(SAMPLES / "flows" / "big-task-dgx2.yaml", [1, 2])
    wide = plan_table(r).text.plain
    assert "  2 coordinated ★     61.2 min  63.2 min     126.3     0  1.93×  yes" in wide
    narrow = shown(60)
    assert all(len(line) <= 60 for line in narrow.splitlines())
    block = "cards arrangement 2 coordinated ★\n  parallel: 61.2 min\n  total: 63.2 min\n  card-min: 126.3\n"
    assert block in narrow
    assert "cards arrangement 1 one card\n" in narrow and "  fits: NO\n" in narrow
    assert shown(80) == wide + "\n"  # it fits 80: the table as piped


def test_terminal_view_shows_the_idle_card_and_unknown_time(tmp_path: Path) -> None:
    text = _text(plan_of(_uneven_flow(tmp_path, UNEVEN), [2]))
    assert "│ idle 52 min" in text and "2 card(s), even-static: total 84 min" in text
    assert "2 longest-first (+1) ★" in text and "cards do not slow each other's loading" in text
    doc = _text(plan_of(SAMPLES / "flows" / "doc-conversion.yaml", [1, 2]))
    assert "+?: plus time that is unknown and left out of the total" in doc
    assert "warning: transfer time unknown, excluded from totals: lot:memory → 2 cards (gpu0…gpu1)" in doc
