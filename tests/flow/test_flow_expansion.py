"""A flow arrow's expansion is counted before it is built and refused past the cap (issue 36 item 1:
an 8 KB flow with one all-to-all arrow between two lists of 100 steps on `lot:gpus` of a 16-GPU lot
became 2.56 million arrows; `map` ran 84 s, reached 4.1 GB and ended in exit 4)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from tests.fakes.hang import within
from topomap.cli import app
from topomap.flow import parse_flow
from topomap.flow.binding import bind, gpus_of
from topomap.flow.expansion import MAX_ARROWS, check_expansion
from topomap.flow.spec import FlowError
from topomap.graph import build
from topomap.importers import load_any

runner = CliRunner()
DGX2 = SAMPLES / "snapshots" / "dgx2h-16gpu.json"


# Inline YAML, not tests/fakes/flows.py: these errors name the file's lines (207, 62, 5) and its size (the issue's 8 KB)
def _flow(steps: int, on: str = "lot:gpus", pattern: str = "all-to-all", extra: str = "") -> str:
    lines = ["flow: bomb", "hosts:", f"  lot: {DGX2}", "steps:"]
    for i in range(steps):
        lines += [f"  a{i}: {{kind: compute, on: {on}}}", f"  b{i}: {{kind: compute, on: {on}}}"]
    lines.append(extra)
    lines.append("arrows:")
    src = ", ".join(f"a{i}" for i in range(steps))
    dst = ", ".join(f"b{i}" for i in range(steps))
    lines.append(f"  - {{from: [{src}], to: [{dst}], pattern: {pattern}, volume: 1 GiB}}")
    return "\n".join(lines) + "\n"


def test_the_issues_flow_is_refused_in_one_line_naming_file_line_and_arrow(tmp_path: Path) -> None:
    f = tmp_path / "bomb.yaml"
    f.write_text(_flow(100))
    assert len(f.read_bytes()) < 9000  # the issue's 8 KB flow
    reqs = SAMPLES / "requirements" / "tensor-parallel.yaml"
    commands = (["map"], ["map", "--json"], ["render", "-o", str(tmp_path / "x.svg")], ["plan"], ["check", str(reqs)])
    for command in (*commands, ["report", "-o", str(tmp_path / "x.html")]):
        with within(30):
            r = runner.invoke(app, [*command, str(f)])
        assert r.exit_code == 2, (command, r.output)
        assert r.stderr.startswith(
            f"topomap: error: {f}:207: arrow 1 (a0, a1, … 100 steps → b0, b1, … 100 steps) expands to "
            f"2,560,000 arrows between replicas, more than the {MAX_ARROWS:,} one arrow may expand to"
        ), r.stderr
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.output
    assert not (tmp_path / "x.svg").exists() and not (tmp_path / "x.html").exists()


def test_the_total_over_all_arrows_is_bounded_too(tmp_path: Path) -> None:
    """Twenty arrows of 4,096 each (one all-to-all of 64 × 64 replicas apiece) pass one by one; the
    sixteenth brings the flow past the cap and is the one named."""
    lines = ["flow: many", "hosts:", f"  lot: {DGX2}", "steps:"]
    for i in range(20):
        quad = ", ".join(["lot:gpus"] * 4)
        lines += [f"  a{i}: {{kind: compute, on: [{quad}]}}", f"  b{i}: {{kind: compute, on: [{quad}]}}"]
    lines.append("arrows:")
    lines += [f"  - {{from: a{i}, to: b{i}, pattern: all-to-all}}" for i in range(20)]
    flow = parse_flow("\n".join(lines) + "\n", "many.yaml")
    with pytest.raises(FlowError) as err:
        bind(flow, gpus_of({"lot": build(load_any(DGX2))}))
    assert str(err.value) == (
        "many.yaml:62: arrow 17 (a16 → b16) expands to 4,096 arrows between replicas, which brings the flow "
        f"to 69,632, more than the {MAX_ARROWS:,} in all"
    )
    assert err.value.hint and "split the arrow" in err.value.hint


def test_an_exchange_step_counts_its_pairs(tmp_path: Path) -> None:
    on = ", ".join(["lot:gpus"] * 23)  # 368 replicas: 67,528 pairs
    text = f"flow: x\nhosts:\n  lot: {DGX2}\nsteps:\n  ring: {{kind: exchange, on: [{on}]}}\n"
    flow = parse_flow(text, "x.yaml")
    with pytest.raises(FlowError, match=r"^x.yaml:5: exchange step ring exchanges among 368 replicas: 67,528 arrows"):
        bind(flow, gpus_of({"lot": build(load_any(DGX2))}))


def test_step_lists_too_long_to_pair_are_refused_when_the_file_is_read() -> None:
    """400 × 400 steps are 160,000 step pairs: past the cap whatever the placements, so the file is
    refused before the cycle check builds a graph of them (or a host is bound)."""
    with within(20), pytest.raises(FlowError) as err:
        parse_flow(_flow(400, on="lot:gpu0"), "long.yaml")
    assert "arrow 1 (a0, a1, … 400 steps → b0, b1, … 400 steps) expands to 160,000 step pairs" in str(err.value)


@pytest.mark.parametrize("seed", range(6))
def test_the_count_is_exactly_what_binding_builds(seed: int) -> None:
    """Random arrows (auto, pairwise, all-to-all; GPUs, memory, several replicas) and exchange steps:
    the count before building equals the arrows built."""
    rnd = random.Random(seed)
    places = ["lot:gpus", "lot:gpu3", "lot:memory", "[lot:gpu0, lot:gpu1]", "[lot:gpus, lot:gpu2]"]
    lines = ["flow: r", "hosts:", f"  lot: {DGX2}", "steps:"]
    n = 8
    for i in range(n):
        kind = "exchange" if rnd.random() < 0.2 else "compute"
        lines.append(f"  s{i}: {{kind: {kind}, on: {rnd.choice(places)}}}")
    lines.append("arrows:")
    for _ in range(5):
        a, b = sorted(rnd.sample(range(n), 2))
        lines.append(f"  - {{from: s{a}, to: [s{b}], pattern: {rnd.choice(['auto', 'all-to-all'])}}}")
    flow = parse_flow("\n".join(lines) + "\n", "r.yaml")
    topo = build(load_any(DGX2))
    bind(flow, gpus_of({"lot": topo}))
    built = len(flow.arrows)
    assert built > 0
    check_expansion(flow)  # the same flow, now bound: its count never refuses what was built
    counted = 0
    for a in flow.spec.arrows:
        src, dst = flow.steps[a.src if isinstance(a.src, str) else a.src[0]], flow.steps[a.dst[0]]
        ks, kd = len(src.placements), len(dst.placements)
        pairwise = a.pattern == "auto" and ks == kd and ks > 1
        counted += ks if pairwise else ks * kd
    counted += sum(
        len(s.placements) * (len(s.placements) - 1) // 2 for s in flow.steps.values() if s.kind == "exchange"
    )
    assert counted == built
