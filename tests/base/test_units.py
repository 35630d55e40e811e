"""One parser per unit (issue 33 item 3): sizes, durations and rates are read by topomap.base.units
with one set of spellings, and a flow, a lot declaration, `measure --size`, `record --interval` and
`nccl --sizes` read the same spelling as the same value. Before, a flow's `GB` was 10^9 while
`nccl --sizes 1MB` was 2^20, and `record --interval 1min` was refused though a flow took `1 min`."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.base import lotunits
from topomap.base.errors import TopomapError
from topomap.base.units import (
    DURATION_SPELLINGS,
    SIZE_SPELLINGS,
    fmt_byte_rate,
    fmt_gbit,
    fmt_mib,
    parse_duration,
    parse_rate,
    parse_rate_gbit,
    parse_rate_gbps,
    parse_size,
    rate_problem,
    size_problem,
)
from topomap.cli import app
from topomap.cli.nccl_perf import parse_sizes
from topomap.cli.record import parse_interval
from topomap.flow import parse_flow
from topomap.flow.spec import FlowError
from topomap.measure.run import parse_size as measure_size
from topomap.model.lots import declared_lot
from topomap.model.lots.spec import parse_written

FLOW = (SAMPLES / "flows" / "eight-documents.yaml").read_text()
GPUS = "lot: x\ngpus: {model: H100 SXM 80GB, count: 8}\n"


# --- sizes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1 GB", 10**9), ("1GB", 10**9), ("1 gb", 10**9), ("1 kB", 10**3), ("1 KB", 10**3), ("500 MB", 5 * 10**8),
        ("1.5 TB", 1.5 * 10**12), ("2 PB", 2 * 10**15), ("1 EB", 10**18), (".5 GB", 5 * 10**8),
        ("1 GiB", 2**30), ("1GiB", 2**30), ("1 gib", 2**30), ("64 MiB", 64 * 2**20), ("4 KiB", 4096),
        ("2 TiB", 2 * 2**40), ("80Gi", 80 * 2**30), ("0 B", 0), ("512 B", 512), ("512 bytes", 512),
    ],
)  # fmt: skip
def test_sizes_decimal_and_binary_in_any_case_with_or_without_a_space(text: str, size: float) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["1 G", "1g", "64M", "4 K", "2 T"])
def test_a_bare_letter_is_ambiguous_and_refused_saying_both_meanings(text: str) -> None:
    assert parse_size(text) is None
    letter = text.strip()[-1].upper()
    assert size_problem(text) == f"is ambiguous: write {letter}B (10^{3 * 'KMGT'.index(letter) + 3} bytes) or " + (
        f"{letter}iB (2^{10 * 'KMGT'.index(letter) + 10})"
    )


def test_a_bare_letter_is_binary_and_a_bare_number_what_the_option_says_only_where_asked() -> None:
    assert parse_size("1g", binary_letters=True) == 2**30 and parse_size("8K", binary_letters=True) == 8192
    assert parse_size("1 GB", binary_letters=True) == 10**9  # a written B is decimal everywhere
    assert parse_size("64") is None and size_problem("64") == "has no unit"
    assert parse_size("64", bare=2**20) == 64 * 2**20
    assert size_problem("twenty gigs") == "is not a size" and size_problem("1 ZB") is not None


def test_measure_size_reads_the_shared_spellings_and_keeps_nvbandwidths_bare_mib() -> None:
    assert measure_size("1 GB") == 10**9 and measure_size("1GiB") == 2**30 and measure_size("256MB") == 256 * 10**6
    assert measure_size("1g") == 2**30 and measure_size("64") == 64 * 2**20  # as README and its help say
    with pytest.raises(TopomapError, match="expected a size like") as err:
        measure_size("lots")
    assert err.value.hint is not None and SIZE_SPELLINGS in err.value.hint


def test_nccl_sizes_keep_nccl_tests_binary_letters_and_read_a_written_b_as_everywhere() -> None:
    assert parse_sizes("1M,64M,1G") == [2**20, 64 * 2**20, 2**30]
    assert parse_sizes("8:64") == [8, 16, 32, 64] and parse_sizes("1 GiB") == [2**30]
    assert parse_sizes("1MB") == [10**6]  # was 2^20: MB is 10^6 everywhere
    with pytest.raises(TopomapError, match="outside 1 B to 16 TiB"):
        parse_sizes("9" * 400)  # an infinite float, refused (int(inf) was an exit 4)


def test_a_flow_and_a_lot_read_one_size_spelling_as_one_value() -> None:
    for text, size in (("1 GB", 10**9), ("1 GiB", 2**30), ("2TB", 2 * 10**12), ("192 gib", 192 * 2**30)):
        flow = parse_flow(FLOW.replace("volume: 4 GiB", f"volume: {text}"), "f.yaml")
        lot = declared_lot(parse_written(f"{GPUS}host_memory: {text}\n", "lot.yaml"))
        assert flow.volumes[0] == size == lot.host_memory_bytes == lotunits.parse_size_bytes(text)


def test_a_flow_refuses_a_bare_g_saying_which_it_could_be() -> None:
    with pytest.raises(FlowError) as err:
        parse_flow(FLOW.replace("volume: 4 GiB", "volume: 4G"), "f.yaml")
    assert str(err.value) == "f.yaml:23: arrow 1: volume '4G' is ambiguous: write GB (10^9 bytes) or GiB (2^30)"


# --- durations ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1min", 60.0), ("1 min", 60.0), ("12 MIN", 720.0), ("1.5 h", 5400.0), ("1.5h", 5400.0), ("2 hr", 7200.0),
        ("1 h 30 min", 5400.0), ("90 s", 90.0), ("90 sec", 90.0), ("250ms", 0.25), ("500 µs", 5e-4),
        ("500 μs", 5e-4), ("500us", 5e-4), ("3 d", 259200.0), ("1 week", 604800.0), ("2 w", 1209600.0),
    ],
)  # fmt: skip
def test_durations_with_or_without_a_space(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["12", "12 m", "1 month", "soon", "", "-1 s"])
def test_a_bare_number_a_bare_m_and_a_month_are_not_durations(text: str) -> None:
    assert parse_duration(text) is None
    assert parse_duration(12.0) is None  # YAML's 12: no unit


def test_a_bare_number_is_seconds_only_where_asked() -> None:
    assert parse_duration("0.5", bare_seconds=True) == 0.5 and parse_duration("0.5") is None


def test_flow_record_and_lots_read_one_duration_spelling_as_one_value() -> None:
    for text, seconds in (("1min", 60.0), ("1 h", 3600.0), ("0.5 h", 1800.0), ("1 h 0 min", 3600.0)):
        flow = parse_flow(FLOW.replace("duration: 12 min", f"duration: {text}"), "f.yaml")
        assert flow.work is not None and flow.work.units[0].seconds == seconds
        assert parse_interval(text) == seconds  # record --interval 1min was refused
        lot = declared_lot(parse_written(f"{GPUS}periods: [{text}]\n", "lot.yaml"))
        assert lot.periods_s == (seconds,) == (lotunits.parse_period_seconds(text),)


def test_record_interval_keeps_its_bounds_and_its_bare_seconds() -> None:
    assert (parse_interval("0.2s"), parse_interval("200ms"), parse_interval("1")) == (0.2, 0.2, 1.0)
    with pytest.raises(TopomapError, match="between 10ms and 3600s"):
        parse_interval("2 h")
    with pytest.raises(TopomapError, match="not a duration") as err:
        parse_interval("often")
    assert err.value.hint is not None and DURATION_SPELLINGS in err.value.hint


def test_record_interval_refusal_is_one_line_exit_2() -> None:
    r = CliRunner().invoke(app, ["record", "--interval", "often", "--", "true"])
    if "needs psutil" in r.output:
        pytest.skip("the record extra (psutil) is not installed")
    assert r.exit_code == 2 and "--interval 'often': not a duration" in r.output and "Traceback" not in r.output


# --- rates -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "gbit"),
    [("400G", 400), ("400 Gb/s", 400), ("400Gbps", 400), ("400 Gbit/s", 400), ("400 GbE", 400), ("3.2 Tb/s", 3200),
     ("100 Mb/s", 0.1), ("25 gb/s", 25)],
)  # fmt: skip
def test_bit_rates(text: str, gbit: float) -> None:
    assert parse_rate_gbit(text) == pytest.approx(gbit) == lotunits.parse_rate_gbit(text)
    assert parse_rate_gbps(text) is None  # never read as bytes


@pytest.mark.parametrize(
    ("text", "gbps"),
    [("2 GB/s", 2.0), ("2GB/s", 2.0), ("2 GBps", 2.0), ("2 GB/sec", 2.0), ("800 MB/s", 0.8), ("1 kB/s", 1e-6),
     ("500 MiB/s", 0.524288), ("1 PB/s", 1e6)],
)  # fmt: skip
def test_byte_rates(text: str, gbps: float) -> None:
    assert parse_rate_gbps(text) == pytest.approx(gbps)
    assert parse_rate_gbit(text) is None and lotunits.parse_rate_gbit(text) is None  # a NIC's rate is in bits


@pytest.mark.parametrize("text", ["400", "2 GB", "2 G/s", "fast", ""])
def test_a_rate_without_its_unit_or_a_size_is_not_a_rate(text: str) -> None:
    assert parse_rate(text) is None


def test_a_rate_in_the_other_unit_is_refused_saying_so() -> None:
    assert rate_problem("16 Gb/s", "bytes").startswith("is in bits")
    assert rate_problem("50 GB/s", "bits").startswith("is in bytes")
    assert rate_problem("400", "bits") == "has no unit" and rate_problem("quick", "bytes") == "is not a rate"
    with pytest.raises(FlowError) as err:
        parse_flow(FLOW.replace("  includes_transfers: true", "  limits: {storage_read: 16 Gb/s}"), "f.yaml")
    assert "storage_read '16 Gb/s' is in bits" in str(err.value)


def test_a_lot_reads_a_nic_rate_as_the_shared_parser_does() -> None:
    for text in ("400G", "400 Gb/s", "400 Gbit/s"):
        lot = declared_lot(parse_written(f"{GPUS}nics: {{count: 8, rate: {text}}}\n", "lot.yaml"))
        assert lot.nic_rate_gbit == 400.0 == parse_rate_gbit(text)


# --- writing -----------------------------------------------------------------------------------------


def test_the_formatters_moved_here_write_as_before() -> None:
    assert (fmt_byte_rate(1.23e9), fmt_byte_rate(5e5), fmt_byte_rate(12), fmt_byte_rate(None)) == (
        "1.23 GB/s",
        "500 kB/s",
        "12 B/s",
        "—",
    )
    assert (fmt_mib(64 * 2**20), fmt_mib(2**30), fmt_mib(512)) == ("64 MiB", "1024 MiB", "512 bytes")
    assert (fmt_gbit(400.0), fmt_gbit(12.5)) == ("400 Gb/s", "12.5 Gb/s")
