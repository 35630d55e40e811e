"""Which nccl-tests program a run is and on how many ranks (:func:`identify`), and nccl-tests' busbw factor per
program (:func:`bus_factor`): from the output's own words where it names them, else from its table."""

from __future__ import annotations

import re
from dataclasses import dataclass

from topomap.importers.nccl_tests import PROGRAM_RE, Run, command_options


def bus_factor(program: str, ranks: int) -> float:
    """nccl-tests' busbw ÷ algbw for ``program`` on ``ranks`` ranks (src/*.cu ``*GetBw``, NVIDIA/nccl-tests
    v2.19.6; doc/PERFORMANCE.md): all_reduce 2(n−1)/n; all_gather, reduce_scatter, alltoall, gather and
    scatter (n−1)/n; broadcast, reduce, sendrecv and hypercube 1."""
    n = max(ranks, 1)
    if program == "all_reduce":
        return 2 * (n - 1) / n
    if program in ("all_gather", "reduce_scatter", "alltoall", "gather", "scatter"):
        return (n - 1) / n
    return 1.0


@dataclass(frozen=True)
class Identity:
    """Which program a run is and on how many ranks, with how that was told."""

    program: str | None
    ranks: int | None
    how: str


def identify(run: Run) -> Identity:
    """The program (from the ``Collective test starting`` line or the command line, else from the table:
    the redop and root columns and busbw ÷ algbw against the rank count) and the rank count (the rank
    table, else from that ratio)."""
    ratio = _ratio(run)
    n = table_ranks(run)
    if run.program is not None:
        how = "the program named in the output"
        return Identity(run.program, n or _at_least(run, _ranks_from(run.program, ratio)), how)
    rows = run.rows
    redop = next((r.redop for r in rows if r.redop is not None), None)
    root = next((r.root for r in rows if r.root is not None), None)
    if ratio is None:
        return Identity(None, n, "no command line or program name, and no row large enough to tell by busbw/algbw")
    if redop not in (None, "none") and (root is None or root < 0):
        found = _reducing(ratio, n)
        return Identity(found.program, n or _at_least(run, found.ranks), found.how)
    if redop not in (None, "none") and root is not None and root >= 0:
        return Identity("reduce", n, "a reduction with a root (redop and root columns)")
    if root is not None and root >= 0:
        return Identity("broadcast", n, "no reduction, a root (root column)")
    if abs(ratio - 1) > 0.02:
        ranks = n or round(1 / (1 - ratio)) if ratio < 1 else n
        return Identity(None, ranks, "all_gather or alltoall: the table does not tell them apart (no command line)")
    return Identity(None, n, "busbw = algbw and no reduction: the table does not tell which program")


def table_ranks(run: Run) -> int | None:
    """The rank count the rank table gives: every rank 0 … n−1 listed once; None when it lists some only
    (an excerpt) or none."""
    seen = sorted({r.rank for r in run.ranks})
    return len(seen) if seen and seen == list(range(len(seen))) else None


def _at_least(run: Run, ranks: int | None) -> int | None:
    """``ranks`` (from busbw/algbw), never below what a partial rank table shows (its highest rank + 1),
    else from the command line (``-np``/``-n`` × ``-g`` × ``-t``)."""
    floor = max((r.rank for r in run.ranks), default=-1) + 1
    if ranks is None and floor == 0:
        return _ranks_of_command(run)
    return max(ranks or 0, floor) or None


def _ranks_of_command(run: Run) -> int | None:
    command = run.command or ""
    program = PROGRAM_RE.search(command)
    launcher = command[: program.start()] if program else ""
    opts = command_options(command)
    m = re.search(r"(?:^|\s)(?:-np|-n|--ntasks)[ =](\d+)", launcher)
    procs = int(m.group(1)) if m and re.search(r"\b(?:mpirun|mpiexec|srun)\b", launcher) else 1
    try:
        g = int(opts.get("-g", run.ngpus or 1))
        t = int(opts.get("-t", run.nthread or 1))
    except ValueError:
        return None
    return procs * g * t if (m or "-g" in opts or run.ngpus) else None


def _reducing(ratio: float, n: int | None) -> Identity:
    """A reduction without a root: all_reduce (busbw = 2(n−1)/n algbw), reduce_scatter ((n−1)/n) or, at
    ratio 1, all_reduce on 2 ranks or sendrecv (it prints a redop too)."""
    if n is not None:
        ar, rs = bus_factor("all_reduce", n), bus_factor("reduce_scatter", n)
        if n == 2 and abs(ratio - 1) < 0.02:
            return Identity(None, n, "2 ranks: all_reduce and sendrecv both print busbw = algbw (no command line)")
        best = "all_reduce" if abs(ratio - ar) <= abs(ratio - rs) else "reduce_scatter"
        return Identity(best, n, f"busbw/algbw {ratio:.3f} on {n} ranks")
    if ratio > 1.02:
        return Identity("all_reduce", round(2 / (2 - ratio)), f"busbw/algbw {ratio:.3f} = 2(n−1)/n")
    if ratio < 0.98:
        return Identity("reduce_scatter", round(1 / (1 - ratio)), f"busbw/algbw {ratio:.3f} = (n−1)/n")
    return Identity(None, None, "busbw = algbw: all_reduce on 2 ranks or sendrecv (no command line)")


def _ratio(run: Run) -> float | None:
    """busbw ÷ algbw of the rows large enough for three printed digits to tell (algbw ≥ 1 GB/s)."""
    ratios = sorted(
        r.out_of_place.busbw_gbps / r.out_of_place.algbw_gbps for r in run.rows if r.out_of_place.algbw_gbps >= 1
    )
    return ratios[len(ratios) // 2] if ratios else None


def _ranks_from(program: str, ratio: float | None) -> int | None:
    if ratio is None:
        return None
    if program == "all_reduce" and 1.02 < ratio < 2:
        return round(2 / (2 - ratio))
    if program in ("all_gather", "reduce_scatter", "alltoall", "gather", "scatter") and 0.02 < ratio < 0.98:
        return round(1 / (1 - ratio))
    return None
