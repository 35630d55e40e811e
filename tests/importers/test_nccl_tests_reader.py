"""The nccl-tests results reader on real outputs (tests/data/real-nccl-tests, origins in its README): the peak
read exactly as printed, the program and rank count, launcher prefixes, old formats, several runs, cut and
foreign files (issue 32)."""

from __future__ import annotations

from pathlib import Path

import pytest

from topomap.base.errors import ImportFailure
from topomap.files.kind import sniff
from topomap.importers.nccl_tests import command_options, parse_nccl_tests
from topomap.importers.nccl_tests_id import bus_factor, identify

DATA = Path(__file__).resolve().parents[1] / "data" / "real-nccl-tests"

#: file → (peak busbw as printed, at which size, which half, runs, rows of the first run): read off the files
PEAKS = {
    "a100-8gpu-sendrecv-liplus.txt": ("195.56", 1073741824, "in-place", 1, 4),
    "a100-oci-bm-gpu4-1node.txt": ("232.20", 10737418240, "out-of-place", 1, 1),
    "a100-oci-bm-gpu4-2node-roce-qps4.txt": ("222.88", 10737418240, "out-of-place", 1, 1),
    "a100-oci-bm-gpu4-2node-roce-untuned.txt": ("57.04", 10737418240, "in-place", 1, 1),
    "a100-p4d-2node-efa-eks-mpi.log": ("43.81", 4294967296, "out-of-place", 1, 30),
    "gb200-nvl72-rack-coreweave43.txt": ("846.82", 8589934592, "in-place", 1, 5),
    "gb10-spark-2node-direct-fec-none.txt": ("2.83", 2147483648, "in-place", 1, 3),
    "gb10-spark-2node-roce-switch.txt": ("22.46", 4294967296, "in-place", 1, 3),
    "gh200-alps-2node-slingshot.txt": ("22.88", 134217728, "in-place", 1, 8),
    "h100-2node-ib-algo-ring-nccltests309.txt": ("392.69", 8589934592, "out-of-place", 1, 14),
    "h100-3node-cross-rack-degraded-nccl1453.txt": ("29.50", 33554432, "out-of-place", 1, 10),
    "h100-8node-ib-default-nccltests309.txt": ("321.03", 4294967296, "in-place", 1, 14),
    "h100-8node-ib-min-ctas-nccltests309.txt": ("391.37", 8589934592, "out-of-place", 1, 14),
    "h100-a3mega-2node-tcpxo.txt": ("338.82", 8589934592, "out-of-place", 1, 31),
    "h100-hgx-2node-ib-nccltests309.txt": ("469.21", 17179869184, "out-of-place", 1, 32),
    "h100-vm-4node-ib-nccltests309.txt": ("365.84", 17179869184, "out-of-place", 1, 32),
    "h100nvl-2x2-slingshot-small-sizes-nccl2441.txt": ("11.24", 1500000, "in-place", 1, 11),
    "h200-dell-2node-roce-bf3-openshift.txt": ("485.66", 17179869184, "out-of-place", 1, 25),
    "ib-4x200g-multinode-rows-only-nccltests119.txt": ("96.69", 132120584, "in-place", 1, 6),
    "rtx4090-4gpu-patched-p2p-tinygrad36.txt": ("25.95", 1073741824, "out-of-place", 1, 3),
}


def read(name: str) -> str:
    return (DATA / name).read_text()


@pytest.mark.parametrize("name", sorted(PEAKS))
def test_peak_is_read_exactly_as_printed(name: str) -> None:
    text, at, half, runs, rows = PEAKS[name]
    f = parse_nccl_tests(read(name), name)
    assert len(f.runs) == runs
    peak = f.runs[0].peak()
    assert peak is not None
    assert (peak[1], peak[2].size_bytes, peak[3]) == (text, at, half)
    assert peak[0] == float(text)
    assert len(f.runs[0].rows) == rows


def test_every_real_file_is_sniffed_as_nccl_tests_results() -> None:
    assert set(PEAKS) == {p.name for p in DATA.iterdir() if p.suffix in (".txt", ".log")}
    for name in PEAKS:
        assert sniff(read(name)) == "nccl-tests", name


def test_mpi_prefixes_interleaved_info_lines_and_the_2_9_table() -> None:
    """aws-efa-eks: every line "[1,0]<stdout>:", NCCL INFO lines between the header and the rows, the 2.9
    table (no root column, an error column of floats) and the rank table without "Group"."""
    run = parse_nccl_tests(read("a100-p4d-2node-efa-eks-mpi.log"), "p4d").runs[0]
    assert run.nccl_version == "2.9.9" and run.nccl_cuda == "11.2"
    assert len(run.ranks) == 16 and run.hosts == ["nccl-tests-efa-16-worker-0", "nccl-tests-efa-16-worker-1"]
    assert run.ranks[0].group is None and run.ranks[3].bus == "0x20" and run.ranks[0].name == "A100-SXM4-40GB"
    assert run.rows[0].root is None and run.rows[0].out_of_place.wrong == "2e-07"
    assert run.avg_busbw == 11.2432
    ident = identify(run)
    assert (ident.program, ident.ranks) == ("all_reduce", 16)  # no command line: busbw/algbw = 2(n−1)/n


def test_glued_launcher_tags_and_a_file_cut_inside_a_row() -> None:
    """nccl#1453: "[0]" glued between the columns; the excerpt's last line stops inside a row."""
    run = parse_nccl_tests(read("h100-3node-cross-rack-degraded-nccl1453.txt"), "x").runs[0]
    assert len(run.rows) == 10 and run.rows[0].size_bytes == 1048576
    assert any("ends inside this row" in s for s in run.skipped)
    assert identify(run).ranks == 24  # busbw/algbw 1.917: 24 ranks, three hosts of eight


def test_rows_without_a_header_and_a_partial_rank_table() -> None:
    rows = parse_nccl_tests(read("ib-4x200g-multinode-rows-only-nccltests119.txt"), "x").runs[0]
    assert identify(rows) == identify(rows) and identify(rows).ranks == 24
    rack = parse_nccl_tests(read("gb200-nvl72-rack-coreweave43.txt"), "x").runs[0]
    assert [r.rank for r in rack.ranks] == [71] and identify(rack).ranks == 72  # at least 72, 2(n−1)/n says 72


def test_command_lines_options_and_several_runs_in_one_file() -> None:
    text = read("a100-oci-bm-gpu4-1node.txt") + read("h100-2node-ib-algo-ring-nccltests309.txt")
    f = parse_nccl_tests(text, "two")
    assert [r.program for r in f.runs] == ["all_reduce", "all_reduce"]
    assert f.runs[0].command is not None and "mpirun -n 8" in f.runs[0].command
    assert f.runs[1].command is not None and "NCCL_ALGO=Ring" in f.runs[1].command
    assert command_options(f.runs[0].command) == {"-b": "10G", "-e": "10G", "-t": "1", "-g": "1"}
    assert [len(r.rows) for r in f.runs] == [1, 14]


def test_srun_labels_are_read_like_no_prefix() -> None:
    """srun --label puts "0: " before every line a task prints."""
    plain = parse_nccl_tests(read("gh200-alps-2node-slingshot.txt"), "x").runs[0]
    labelled = "".join(f"0: {line}\n" for line in read("gh200-alps-2node-slingshot.txt").splitlines())
    run = parse_nccl_tests(labelled, "x").runs[0]
    assert run.peak() == plain.peak() and run.hosts == plain.hosts and run.tests_version == "2.18.2"


def test_g_and_t_runs_count_every_gpu_of_the_process() -> None:
    run = parse_nccl_tests(read("h200-dell-2node-roce-bf3-openshift.txt"), "x").runs[0]
    assert (run.ngpus, run.nthread, len(run.ranks)) == (8, 1, 16)
    assert len({r.pid for r in run.ranks}) == 2  # one process per host drives its 8 GPUs (-g 8)
    sendrecv = parse_nccl_tests(read("a100-8gpu-sendrecv-liplus.txt"), "x").runs[0]
    assert identify(sendrecv).ranks == 8  # no rank table: -g 8 in one process


def test_wrong_values_and_out_of_bounds_are_kept() -> None:
    text = (
        read("gh200-alps-2node-slingshot.txt")
        .replace("22.50       0  2983.25   22.50   22.50       0", "22.50      12  2983.25   22.50   22.50       0")
        .replace("Out of bounds values : 0 OK", "Out of bounds values : 12 FAILED")
    )
    run = parse_nccl_tests(text, "x").runs[0]
    assert run.wrong_total == 12 and run.out_of_bounds == 12 and run.oob_ok is False


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "no result rows and no nccl-tests header"),
        ('{"schema": "topomap.snapshot/1"}', "no result rows"),
        ("        GPU0    GPU1\nGPU0     X      NV12\n", "no result rows"),
        ("# nThread 1 nGpus 8 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20\n#\n", "no result row"),
        ("\x00\x01garbage" * 100, "no result rows"),
    ],
)
def test_foreign_empty_or_cut_before_the_table_is_one_line_error(text: str, words: str) -> None:
    with pytest.raises(ImportFailure) as err:
        parse_nccl_tests(text, "f.txt")
    assert words in str(err.value) and "\n" not in str(err.value) and str(err.value).startswith("f.txt:")


def test_a_hand_made_summary_table_is_not_read_as_results() -> None:
    """nccl#527 pasted its runs as a table of its own ("   1   1073741824 …" with the host count first)."""
    summary = (
        "   1   1073741824     268435456     float     sum   8142.6  131.87  230.77  2e-07   8141.2  131.89  230.81\n"
    )
    with pytest.raises(ImportFailure):
        parse_nccl_tests(summary, "s.txt")


def test_bus_factors_are_nccl_tests_own() -> None:
    assert bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert bus_factor("all_gather", 8) == bus_factor("alltoall", 8) == pytest.approx(0.875)
    assert bus_factor("sendrecv", 8) == bus_factor("broadcast", 8) == 1.0
