"""The `work:` block: real durations, sizes and rates; every mistake is one line with the file,
the line and a hint."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from topomap.flow import parse_flow, read_flow
from topomap.flow.spec import FlowError
from topomap.flow.work import parse_duration, parse_rate_gbps, read_durations_csv

FLOW = """flow: t
hosts:
  lot: null
work:
  count: 3
  duration: 12 min
  memory_per_task: 20 GiB
  assembly: {{duration: 10 min, on: lot}}
{extra}steps:
  a: {{kind: input, on: lot}}
"""


def err(text: str, origin: str = "f.yaml") -> FlowError:
    with pytest.raises(FlowError) as exc:
        parse_flow(text, origin)
    assert "\n" not in str(exc.value) and exc.value.hint
    return exc.value


def flow(extra: str = "", **repl: str) -> str:
    text = FLOW.format(extra=extra)
    for old, new in repl.items():
        text = text.replace(old.replace("_", " "), new)
    return text


def test_durations_parse_with_units() -> None:
    assert parse_duration("12 min") == 720.0
    assert parse_duration("90 s") == 90.0
    assert parse_duration("1.5 h") == 5400.0
    assert parse_duration("1 h 30 min") == 5400.0
    assert parse_duration("twelve minutes") is None
    assert parse_duration("12") is None and parse_duration(12.0) is None
    assert parse_rate_gbps("2 GB/s") == 2.0 and parse_rate_gbps("500 MiB/s") == pytest.approx(0.524288)
    assert parse_rate_gbps("fast") is None


def test_a_good_work_block() -> None:
    w = parse_flow(flow(), "f.yaml").work
    assert w is not None
    assert [u.seconds for u in w.units] == [720.0] * 3 and w.source == "work.duration"
    assert w.memory_per_task_bytes == 20 * 2**30 and w.assembly is not None and w.assembly.seconds == 600.0


def test_words_instead_of_a_duration_name_the_line() -> None:
    e = err(flow().replace("duration: 12 min", "duration: twelve minutes"))
    assert str(e) == "f.yaml:6: work: duration 'twelve minutes' is not a duration"
    assert e.hint is not None and "12 min" in e.hint


def test_a_bare_number_has_no_unit() -> None:
    e = err(flow().replace("duration: 12 min", "duration: 12"))
    assert str(e) == "f.yaml:6: work: duration 12 has no unit"


def test_assembly_duration_and_unknown_assembly_key() -> None:
    e = err(flow().replace("{duration: 10 min,", "{duration: ten,"))
    assert str(e).startswith("f.yaml:8: work: assembly duration 'ten'")
    e = err(flow().replace("{duration: 10 min,", "{durtion: 10 min,"))
    assert str(e).startswith("f.yaml:8:") and "durtion" in str(e) and e.hint == "did you mean `duration`?"
    e = err(flow().replace("10 min, on: lot}", "10 min, on: lott}"))
    assert str(e).startswith("f.yaml:8: work: assembly on 'lott'")


def test_per_unit_list_names_the_bad_item_line() -> None:
    text = flow().replace(
        "  count: 3\n  duration: 12 min\n", "  durations:\n    - 12 min\n    - 9 minutes\n    - soon\n"
    )
    e = err(text)
    assert str(e) == "f.yaml:8: work: duration 3 'soon' is not a duration"


def test_count_and_durations_disagree() -> None:
    text = flow().replace("  duration: 12 min\n", "  durations: [12 min, 9 min]\n")
    e = err(text)
    assert str(e) == "f.yaml:5: work: count 3 but 2 durations"


def test_duration_needs_count_and_two_sources_clash() -> None:
    e = err(flow().replace("  count: 3\n", ""))
    assert str(e) == "f.yaml:5: work: a duration per unit needs `count`"
    e = err(flow().replace("  duration: 12 min\n", "  duration: 12 min\n  durations: [1 min]\n"))
    assert str(e).startswith("f.yaml:7: work: duration and durations both given")


def test_sizes_and_rates_name_their_line() -> None:
    e = err(flow().replace("20 GiB", "twenty gigs"))
    assert str(e) == "f.yaml:7: work: memory_per_task 'twenty gigs' is not a size"
    e = err(flow("  duplicated_memory: 30 GiB\n"))
    assert str(e).startswith("f.yaml:9: work: duplicated_memory is larger than memory_per_task")
    e = err(flow("  limits: {storage_read: quick}\n"))
    assert str(e) == "f.yaml:9: work: storage_read 'quick' is not a rate"
    e = err(flow("  limits: {max_concurrent: 0}\n"))
    assert str(e).startswith("f.yaml:9: work: max_concurrent is below 1")
    e = err(flow("  cards_per_task: 0\n"))
    assert str(e).startswith("f.yaml:9: work: cards_per_task 0 is below 1")
    e = err(flow("  split: {steps: 10, exchange: lots}\n"))
    assert str(e) == "f.yaml:9: work: exchange 'lots' is not a size"


def test_durations_from_a_csv(tmp_path: Path) -> None:
    (tmp_path / "batch.csv").write_text("name,pages,duration\nreport-a,120,21 min\nreport-b,30,90 s\n")
    text = flow().replace("  count: 3\n  duration: 12 min\n", "  durations_csv: batch.csv\n")
    (tmp_path / "f.yaml").write_text(text)
    w = read_flow(tmp_path / "f.yaml").work
    assert w is not None and [(u.name, u.seconds) for u in w.units] == [("report-a", 1260.0), ("report-b", 90.0)]
    assert w.source == "work.durations_csv (batch.csv)"


def test_the_flow_carries_its_work_read_once(tmp_path: Path) -> None:
    """Reading the flow parses the work block and its CSV once; later stages read ``flow.work``
    (the CSV may be gone by then) and a flow without a work block carries None."""
    (tmp_path / "batch.csv").write_text("duration\n21 min\n90 s\n")
    (tmp_path / "f.yaml").write_text(flow().replace("  count: 3\n  duration: 12 min\n", "  durations_csv: batch.csv\n"))
    f = read_flow(tmp_path / "f.yaml")
    (tmp_path / "batch.csv").unlink()
    assert f.work is not None and [u.seconds for u in f.work.units] == [1260.0, 90.0]
    bare = parse_flow("flow: x\nhosts: {ws: null}\nsteps:\n  a: {kind: input, on: ws}\n", "x.yaml")
    assert bare.work is None


def test_a_bad_csv_line_names_the_csv_and_its_line(tmp_path: Path) -> None:
    csv = tmp_path / "batch.csv"
    csv.write_text("duration\n12 min\n\nabout an hour\n")
    with pytest.raises(FlowError) as exc:
        read_durations_csv(csv, str(csv))
    assert str(exc.value) == f"{csv}:4: 'about an hou…' (13 characters) is not a duration"
    csv.write_text("name,pages\na,3\n")
    with pytest.raises(FlowError) as exc:
        read_durations_csv(csv, str(csv))
    assert str(exc.value).startswith(f"{csv}:1: not a durations CSV: its first line is neither a header")
    text = flow().replace("  count: 3\n  duration: 12 min\n", "  durations_csv: missing.csv\n")
    (tmp_path / "f.yaml").write_text(text)
    with pytest.raises(FlowError) as exc:
        read_flow(tmp_path / "f.yaml")
    assert "missing.csv: cannot read" in str(exc.value)


def test_headerless_csv_of_durations(tmp_path: Path) -> None:
    csv = tmp_path / "d.csv"
    csv.write_text("12 min\n9 min\n")
    assert [u.seconds for u in read_durations_csv(csv, "d.csv")] == [720.0, 540.0]


def test_every_shipped_flow_still_reads() -> None:
    for p in sorted((SAMPLES / "flows").glob("*.yaml")):
        f = read_flow(p)
        assert f.name and list(f.steps) == list(f.spec.steps) and len(f.volumes) == len(f.spec.arrows), p
        assert (f.work is None) == (f.spec.work is None), p  # a work block is read into numbers
        assert f.work is None or all(u.seconds > 0 for u in f.work.units), p


def test_a_huge_unit_count_is_refused_with_its_line(tmp_path: Path) -> None:
    """Fuzzing: `count: 100000000000` built that many units and ran out of memory."""

    text = (SAMPLES / "flows" / "eight-documents.yaml").read_text().replace("  count: 8\n", "  count: 100000000000\n")
    p = tmp_path / "f.yaml"
    p.write_text(text.replace("../snapshots/", str(SAMPLES / "snapshots") + "/"))
    with pytest.raises(FlowError, match=r"f\.yaml:\d+: .*count 100000000000 is more units than topomap plans"):
        read_flow(p)
