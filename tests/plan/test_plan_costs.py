"""Plan costs from the map: shared links and storage, memory fit per card, coordinated work,
how a plan changes between lots, and the command."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES, run_probe
from tests.fakes.flows import LimitsSpec, SplitSpec, WorkSpec, arrow, step, write_flow
from tests.fakes.machines import hgx_h100
from topomap.api import bind_snapshots
from topomap.base.units import fmt_bandwidth
from topomap.cli import app
from topomap.collective.expect import expect
from topomap.collective.lot import plan as lot_plan
from topomap.flow import read_flow
from topomap.flow.spec import Limits, Unit, Work
from topomap.importers import load_any
from topomap.model.codec import save_snapshot
from topomap.plan import Arrangement, Leg, PlanResult, plan_changes, plan_flow
from topomap.plan.costs import share
from topomap.plan.result import Hop

GIB = 2**30
MIN = 60.0
PCIE5_X16 = 63.015  # GB/s per direction, the fake H100's PCIe 5.0 x16 link (spec)
NV18_H100 = 450.0  # GB/s, 18 NVLink 4 links at 25 GB/s a direction (the fake prints 26.562: signalling)


def _h100(tmp_path: Path, memory_gib: int | None = 80, gpus: int = 8) -> Path:
    snap = run_probe(hgx_h100(), tmp_path / f"sys-{memory_gib}-{gpus}").snapshot
    mem = None if memory_gib is None else memory_gib * GIB
    # no memory recorded: no name either, so nothing can be derived from it
    keep = [msgspec.structs.replace(g, memory_total_bytes=mem, name=g.name if mem else None) for g in snap.gpus]
    gone = {f"gpu{g.index}" for g in keep[gpus:]}
    gone_bus = {g.pci_bus_id for g in keep[gpus:]}
    pairs = [x for x in snap.pairs if x.a not in gone and x.b not in gone]
    pci = [d for d in snap.pci if d.id not in gone_bus]
    snap = msgspec.structs.replace(snap, gpus=keep[:gpus], pairs=pairs, pci=pci)
    path = tmp_path / f"h100-{memory_gib}-{gpus}.json"
    save_snapshot(snap, path)
    return path


def _flow(tmp_path: Path, snap: Path, work: WorkSpec, source: str = "lot:memory", volume: str = "64 GiB") -> Path:
    """Data from ``source`` to lot's gpu0, then to an aggregate step on ws (no snapshot)."""
    return write_flow(
        tmp_path / "f.yaml",
        {"data": step("input", source), "run": step("compute", "lot:gpu0"), "done": step("aggregate", "ws")},
        [arrow("data", "run", volume), arrow("run", "done")],
        name="t",
        hosts={"lot": snap, "ws": None},
        work=work,
    )


def _plan(path: Path | str, cards: list[int] | None = None, probes: list[str] | None = None) -> PlanResult:
    """Read the flow afresh (binding resolves placements in place: one Flow is bound to one lot) and plan it."""
    f = read_flow(path)
    return plan_flow(f, bind_snapshots(f, probes or []), cards)


def _arr(r: PlanResult, k: int, kind: str) -> Arrangement:
    return next(a for a in r.arrangements if a.k == k and a.kind == kind)


def test_two_cards_behind_one_pcie_switch_share_it(tmp_path: Path) -> None:
    # 8 units, 64 GiB of input → 8 GiB per unit; gpu0 and gpu1 sit behind one PCIe switch
    work = WorkSpec(count=8, duration="12 min")
    r = _plan(_flow(tmp_path, _h100(tmp_path), work), [1, 2])
    alone = 8 * GIB / (PCIE5_X16 * 1e9)
    leg = next(lg for lg in r.legs if lg.card == "gpu0" and lg.direction == "input")
    assert (leg.bandwidth_gbps, leg.bandwidth_source) == (PCIE5_X16, "spec") and leg.seconds() == pytest.approx(alone)
    one = _arr(r, 1, "one card")
    assert one.transfers_s == pytest.approx(8 * alone)
    two = _arr(r, 2, "even-static")
    # both cards load at once through the shared switch: each at half the rate, twice as long
    assert two.transfers_s == pytest.approx(4 * 2 * alone)
    assert not two.transfers_complete  # the output leg is unknown
    assert two.parallel_s == pytest.approx(4 * (12 * MIN + 2 * alone))
    # the output goes to a host with no snapshot: unknown, excluded and said so
    unknown = "transfer time unknown, excluded from totals: 2 cards (gpu0…gpu1) → ws, volume not declared over network/"
    assert [w for w in r.warnings if w.startswith(unknown)]
    assert any("share only the links their routes have in common" in a for a in r.assumptions)


def test_cards_on_separate_switches_do_not_share(tmp_path: Path) -> None:
    work = WorkSpec(count=8, duration="12 min")
    path = _flow(tmp_path, _h100(tmp_path), work)
    f = read_flow(path)
    r = plan_flow(f, bind_snapshots(f, []), [1])
    legs = [lg for lg in r.legs if lg.direction == "input" and lg.card in ("gpu0", "gpu2")]
    costs = share(legs, ["gpu0", "gpu2"], Work(units=[], source="test"))[0]
    assert [c.input_s for c in costs] == [pytest.approx(lg.seconds()) for lg in legs]


def test_storage_read_rate_is_shared_by_the_cards(tmp_path: Path) -> None:
    # 96 GB from storage → 12 GB per unit; storage reads 2 GB/s (assumed): 6 s alone, 12 s with two cards
    work = WorkSpec(count=8, duration="12 min", limits=LimitsSpec(storage_read="2 GB/s"))
    r = _plan(_flow(tmp_path, _h100(tmp_path), work, source="lot:storage", volume="96 GB"), [1, 2])
    assert _arr(r, 1, "one card").parallel_s == pytest.approx(8 * (12 * MIN + 6))
    assert _arr(r, 2, "even-static").parallel_s == pytest.approx(4 * (12 * MIN + 12))


def test_shared_costs_by_hand() -> None:
    up = Hop("h/rp>h/sw", "PCIe Gen4 x16 rp – sw", 20.0, "pcie")

    def leg(card: str, hops: tuple[Hop, ...], bw: float | None) -> Leg:
        own = Hop(f"h/sw>h/{card}", f"sw – {card}", bw, "pcie")
        return Leg("input", "h:memory", card, 10**10, bw, "spec", "host-memory", "pcie", (), False, (*hops, own))

    mem = Hop("h/numa0>memory", "host memory of numa0", None, "host-memory")
    legs = [leg("gpu0", (mem, up), 20.0), leg("gpu1", (mem, up), 20.0), leg("gpu2", (mem,), None)]
    costs = share(legs, ["gpu0", "gpu1", "gpu2"], Work(units=[], source="t"))[0]
    # 10 GB at 20 GB/s alone is 0.5 s; sharing the 20 GB/s uplink two ways: 1 s; gpu2's bandwidth is
    # unknown; host memory above the root ports is no limit (its bandwidth is unknown)
    assert [c.input_s for c in costs] == [1.0, 1.0, None]
    # max-min fair: a card held to 5 GB/s by its own link leaves the other 15 GB/s of the uplink
    slow = [leg("gpu0", (up,), 5.0), leg("gpu1", (up,), 20.0)]
    costs, links = share(slow, ["gpu0", "gpu1"], Work(units=[], source="t"))
    assert [c.input_s for c in costs] == [pytest.approx(2.0), pytest.approx(10 / 15)]
    assert [(lk.hop.what, lk.cards, lk.each_gbps) for lk in links] == [
        ("PCIe Gen4 x16 rp – sw", ("gpu0", "gpu1"), pytest.approx(5.0))
    ]
    assert [lg.seconds() for lg in legs] == [0.5, 0.5, None]
    only = share(legs, ["gpu0"], Work(units=[Unit("u", 1.0)], source="t", limits=Limits()))[0]
    assert only[0].input_s == 0.5


def test_memory_fit_verdicts(tmp_path: Path) -> None:
    snap = _h100(tmp_path)
    fits = _plan(_flow(tmp_path, snap, WorkSpec(count=8, duration="12 min", memory_per_task="60 GiB")), [1, 2])
    assert {a.fit.verdict for a in fits.arrangements} == {"fits"}
    big = _plan(_flow(tmp_path, snap, WorkSpec(count=8, duration="12 min", memory_per_task="100 GiB")), [1, 2])
    one = _arr(big, 1, "one card")
    assert one.fit.verdict == "does not fit"
    assert one.fit.reason == (
        "does not fit: needs 100 GiB per card, gpu0 has 80 GiB; "
        "the lot's 8 cards hold 640 GiB together, but cards do not pool memory"
    )
    assert big.best() is None


def test_replicas_duplicate_state_and_a_split_task_can_fit(tmp_path: Path) -> None:
    # 120 GiB per task, 40 GiB of it replicated: over 2 cards 40 + 80/2 = 80 (fits exactly), over 4: 60
    work = WorkSpec(
        count=4,
        duration="30 min",
        memory_per_task="120 GiB",
        duplicated_memory="40 GiB",
        split=SplitSpec(steps=1000, exchange="1 GiB"),
    )
    r = _plan(_flow(tmp_path, _h100(tmp_path), work), [1, 2, 4])
    assert _arr(r, 2, "even-static").fit.verdict == "does not fit"
    c2, c4 = _arr(r, 2, "coordinated"), _arr(r, 4, "coordinated")
    assert (c2.fit.verdict, c2.fit.needed_bytes) == ("fits", 80 * GIB)
    assert (c4.fit.verdict, c4.fit.needed_bytes) == ("fits", 60 * GIB)
    assert "each card keeps its own copy of the duplicated 40 GiB" in c4.fit.reason
    assert r.best() is c4


def test_memory_unknown_says_what_settles_it(tmp_path: Path) -> None:
    r = _plan(_flow(tmp_path, _h100(tmp_path, None), WorkSpec(count=2, duration="1 min", memory_per_task="1 GiB")))
    fit = _arr(r, 1, "one card").fit
    assert fit.verdict == "unknown" and "--query-gpu=index,name,memory.total,pci.bus_id --format=csv" in fit.reason


def test_memory_derived_from_the_gpu_name(tmp_path: Path) -> None:
    # the DGX-2H hwloc export names its cards "Tesla V100-SXM3-32GB-H" but records no memory size
    flow = (SAMPLES / "flows" / "eight-documents.yaml").read_text()
    flow = flow.replace("  count: 8\n", "  count: 8\n  memory_per_task: 40 GiB\n")
    p = tmp_path / "f.yaml"
    p.write_text(
        flow.replace("../snapshots/rtx4090-8gpu-all-sys.json", str(SAMPLES / "snapshots" / "dgx2h-16gpu.json"))
    )
    fit = _arr(_plan(p, [1]), 1, "one card").fit
    assert fit.verdict == "does not fit" and fit.card_bytes == 32 * GIB
    # the device table knows the card (evidence.gpu_memory, the function check asks too)
    assert fit.source == "derived from the model (Tesla V100-SXM3-32GB), nominal"
    assert fit.reason.startswith("does not fit: needs 40 GiB per card, gpu0 has 32 GiB (derived from the model")


def test_coordinated_pays_the_exchange_independent_does_not(tmp_path: Path) -> None:
    # 4 tasks of 30 min; a split task exchanges 1 GiB per card per step, 1000 steps
    work = WorkSpec(count=4, duration="30 min", includes_transfers=True, split=SplitSpec(steps=1000, exchange="1 GiB"))
    snap = _h100(tmp_path)
    r = _plan(_flow(tmp_path, snap, work), [1, 2])
    # one step's all-reduce at the busbw `topomap nccl LOT --perf` expects on two of the cards
    busbw = expect(lot_plan(load_any(snap), gpu_indexes=[0, 1]), "all_reduce").busbw_gbps
    assert busbw is not None
    ring = 2 * (2 - 1) / 2 * GIB / (busbw * 1e9)
    coord = _arr(r, 2, "coordinated")
    assert coord.exchange_s == pytest.approx(1000 * ring)  # per task
    # each of 4 tasks: 15 min of compute + 1000 × ring
    assert coord.parallel_s == pytest.approx(4 * (15 * MIN + 1000 * ring))
    independent = _arr(r, 2, "even-static")
    assert independent.parallel_s == 60 * MIN
    assert coord.parallel_s > independent.parallel_s
    assert r.exchange_how is not None and r.exchange_how.startswith(f"NCCL all-reduce at its expected {busbw:.0f} GB/s")


def test_a_leg_reads_as_map_writes_its_arrow() -> None:
    """A per-unit transfer's bandwidth in `plan` and `diff --flow` is the text `map` prints for the
    arrow: the same precision and the "≥" of a lower bound (was "28.125 GB/s derived" beside
    `map`'s "≥ 28.1 GB/s derived")."""
    x = Leg("input", "lot:memory", "gpu0", 8 * GIB, 63.015, "spec", "host-memory", "pcie")
    y = Leg("input", "lot:memory", "gpu0", 8 * GIB, 28.125, "derived", "host-memory", "pcie", lower_bound=True)
    assert x.describe() == "lot:memory → gpu0: 8 GiB over host-memory/pcie, 63.0 GB/s spec"
    assert y.describe() == "lot:memory → gpu0: 8 GiB over host-memory/pcie, ≥ 28.1 GB/s derived"
    assert y.describe().endswith(fmt_bandwidth(y.bandwidth_gbps, y.bandwidth_source, y.lower_bound))
    a = PlanResult("f", "A", ["gpu0"], [], "t", 1, [], [x], [], False)
    b = PlanResult("f", "B", ["gpu0"], [], "t", 1, [], [y], [], False)
    assert plan_changes(a, b) == [f"input path slower: 63.0 → ≥ 28.1 GB/s derived ({y.describe()})"]


def test_an_unknown_exchange_is_left_out_and_said(tmp_path: Path) -> None:
    # the 8x RTX 4090 box: no NVLink, its topo -m matrix records no PCIe rates: the exchange is unknown
    work = WorkSpec(count=4, duration="30 min", includes_transfers=True, split=SplitSpec(steps=1000, exchange="1 GiB"))
    r = _plan(_flow(tmp_path, SAMPLES / "snapshots" / "rtx4090-8gpu-all-sys.json", work), [1, 2])
    coord = _arr(r, 2, "coordinated")
    assert coord.exchange_s is None and coord.parallel_s == 4 * 15 * MIN
    assert any(w.startswith("exchange time unknown over 2 cards, excluded from totals") for w in r.warnings)


def test_coordinated_needs_a_declared_split(tmp_path: Path) -> None:
    r = _plan(_flow(tmp_path, _h100(tmp_path), WorkSpec(count=4, duration="30 min")), [2])
    assert not [a for a in r.arrangements if a.kind == "coordinated"]
    assert any(s.startswith("coordinated: how a task splits is not declared") for s in r.skipped)


def test_cards_left_over_from_two_card_tasks_are_idle(tmp_path: Path) -> None:
    work = WorkSpec(count=4, duration="10 min", cards_per_task=2, includes_transfers=True)
    r = _plan(_flow(tmp_path, _h100(tmp_path), work), [2, 5])
    a = _arr(r, 5, "even-static")
    # two tasks at once on gpu0+gpu1 and gpu2+gpu3, two each: 20 min; gpu4 has no partner
    assert a.slots == [["gpu0", "gpu1"], ["gpu2", "gpu3"], ["gpu4"]]
    assert a.parallel_s == 20 * MIN and a.idle_card_s == 20 * MIN and len(a.lanes) == 2  # gpu4 has no lane
    assert _arr(r, 2, "one card").total_s == 40 * MIN


def test_a_licence_cap_leaves_cards_waiting(tmp_path: Path) -> None:
    work = WorkSpec(count=8, duration="12 min", includes_transfers=True, limits=LimitsSpec(max_concurrent=2))
    r = _plan(_flow(tmp_path, _h100(tmp_path), work), [4])
    a = _arr(r, 4, "shared-queue")
    assert a.parallel_s == 48 * MIN and a.idle_card_s == 2 * 48 * MIN
    assert len(a.lanes) == 2 and a.slots[2:] == [["gpu2"], ["gpu3"]]  # two slots without a lane: idle


def test_plan_changes_between_lots(tmp_path: Path) -> None:
    work = WorkSpec(count=8, duration="12 min", includes_transfers=True, memory_per_task="60 GiB")
    a_path = _flow(tmp_path, _h100(tmp_path, 80, 8), work)
    a = _plan(a_path)
    b = _plan(a_path, probes=[f"lot={_h100(tmp_path, 48, 4)}"])
    lines = plan_changes(a, b)
    assert lines == [
        "B has 4 cards where A has 8: best total 12 min → no arrangement fits",
        "task no longer fits: 60 GiB needed, 48 GiB per card",
    ]
    c = _plan(a_path, probes=[f"lot={_h100(tmp_path, 80, 4)}"])
    assert plan_changes(a, c) == [
        "B has 4 cards where A has 8: best total 12 min → 24 min (8 cards even-static → 4 cards even-static)"
    ]
    assert plan_changes(a, a) == []


runner = CliRunner()


def test_cli_plan_table_json_and_gantt(tmp_path: Path) -> None:
    ref = str(SAMPLES / "flows" / "eight-documents.yaml")
    r = runner.invoke(app, ["plan", ref, "--cards", "1,2"])
    assert r.exit_code == 0, r.stderr
    assert "106 min" in r.stdout and "58 min" in r.stdout and "cards do not slow each other's loading" in r.stdout
    r = runner.invoke(app, ["plan", ref, "--cards", "1,2", "--json"])
    doc = json.loads(r.stdout)
    assert doc["kind"] == "calculation" and doc["best"] == {"cards": 2, "arrangement": "even-static", "total_s": 3480.0}
    svg = tmp_path / "g.svg"
    r = runner.invoke(app, ["plan", ref, "--cards", "1,2", "-o", str(svg)])
    assert r.exit_code == 0 and svg.read_text().lstrip().startswith("<?xml") and "assembly" in svg.read_text()
    png = tmp_path / "g.png"
    assert runner.invoke(app, ["plan", ref, "--cards", "2", "-o", str(png)]).exit_code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cards", "1,9"], "--cards 9: lot has 8 usable card(s)"),
        (["--cards", "two"], "--cards 'two': not a list of card counts"),
        (["-o", "g.pdf"], "a Gantt chart is drawn as .svg or .png"),
        (["--cards", "1,2", "--gantt", "3"], "--gantt 3: no arrangement of 3 cards"),
    ],
)
def test_cli_plan_mistakes_are_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    r = runner.invoke(app, ["plan", str(SAMPLES / "flows" / "eight-documents.yaml"), *args])
    assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_flow_without_work_cannot_be_planned(tmp_path: Path) -> None:
    pipeline = (SAMPLES / "flows" / "two-host-pipeline.yaml").read_text()
    flow = tmp_path / "no-work.yaml"  # the sample pipeline without its work block
    flow.write_text(pipeline[: pipeline.index("work:")] + pipeline[pipeline.index("steps:") :])
    flow.write_text(flow.read_text().replace("../snapshots/", f"{SAMPLES / 'snapshots'}/"))
    r = runner.invoke(app, ["plan", str(flow)])
    assert r.exit_code == 2 and "has no units to plan" in r.stderr
