"""`topomap nccl LOT --perf` and `topomap nccl --tests RESULTS [LOT]`: the expected bus bandwidth of each
collective, and nccl-tests results against it (called by :func:`topomap.cli.nccl.nccl`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from topomap.base.errors import TopomapError
from topomap.base.units import BINARY_LETTERS, SIZE_SPELLINGS, parse_size
from topomap.cli.wiring import _console, _load, _print_json, _write

if TYPE_CHECKING:
    from topomap.collective.expect import Expectation
    from topomap.transport.rules import NcclEnv

PerfOpt = Annotated[
    bool,
    typer.Option(
        "--perf",
        help="The bus bandwidth each collective should reach on the lot (nccl-tests' busbw, large messages), "
        "with its range, NCCL's likely algorithm, the bottleneck and its origin.",
    ),
]
TestsOpt = Annotated[
    str | None,
    typer.Option(
        "--tests",
        help="nccl-tests output (one or several runs): each run's measured peak beside what the lot should "
        "reach, a verdict, and why a run falls short. The lot: SNAP, else what the results' rank table says.",
    ),
]
CollectiveOpt = Annotated[
    str | None,
    typer.Option(
        "--collective",
        help="One collective: all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast or reduce.",
    ),
]
SizesOpt = Annotated[
    str | None,
    typer.Option(
        "--sizes",
        help="A curve over message sizes: 8:8G (powers of two) or 1M,64M,1G; a bare number is bytes, "
        f"{BINARY_LETTERS}.",
    ),
]
HostsOpt = Annotated[int | None, typer.Option("--hosts", help="N identical hosts of a one-host snapshot (--perf).")]
CurveOpt = Annotated[
    str | None, typer.Option("-o", "--output", help="Draw the busbw curve: curve.png or curve.svg (plot extra).")
]

#: the sizes of the curve when --sizes gives a range only: nccl-tests' -f 2 steps
MAX_POINTS = 64


def parse_sizes(text: str) -> list[int]:
    """``--sizes``: sizes as nccl-tests' ``-b``/``-e`` take them (``8`` bytes, ``64K``, ``1M``, ``8G``: a bare
    K/M/G is 2^10/2^20/2^30), or in the shared spellings (``1MiB``, ``1MB`` = 10^6: :mod:`topomap.base.units`),
    comma-separated, or ``FROM:TO`` for every power of two between (``8:8G``)."""

    def one(item: str) -> int:
        size = parse_size(item, binary_letters=True, bare=1)
        if size is None:
            raise TopomapError(
                f"--sizes {text!r}: {item.strip()!r} is not a size",
                hint=f"e.g. --sizes 8:8G or 1M,64M,1G (a bare number is bytes, {BINARY_LETTERS}; {SIZE_SPELLINGS})",
            )
        if not 1 <= size <= 2**44:
            raise TopomapError(f"--sizes {text!r}: {item.strip()!r} is outside 1 B to 16 TiB")
        return int(size)

    if ":" in text:
        a, _, b = text.partition(":")
        lo, hi = one(a), one(b)
        if lo > hi:
            raise TopomapError(f"--sizes {text!r}: the range goes down", hint="--sizes 8:8G")
        out: list[int] = []
        n = lo
        while n <= hi and len(out) < MAX_POINTS:
            out.append(n)
            n *= 2
        return out
    return sorted({one(x) for x in text.split(",") if x.strip()})


@dataclass(frozen=True)
class PerfArgs:
    collective: str | None
    sizes: str | None
    hosts: int | None
    output: str | None


def _collectives(name: str | None) -> tuple[str, ...]:
    from topomap.collective.expect import COLLECTIVES

    if name is None:
        return COLLECTIVES
    key = name.strip().lower().removesuffix("_perf").replace("-", "_").replace("allreduce", "all_reduce")
    key = {"allgather": "all_gather", "reducescatter": "reduce_scatter", "all_to_all": "alltoall"}.get(key, key)
    if key not in COLLECTIVES:
        raise TopomapError(f"--collective {name!r}: not one nccl-tests measures", hint=", ".join(COLLECTIVES))
    return (key,)


def run_perf(
    snap_path: str, ranks: str | None, version: str | None, env: NcclEnv, args: PerfArgs, as_json: bool
) -> None:
    """Print (or draw) the expected busbw of each collective on the lot."""
    from topomap.collective.expect import expect_all
    from topomap.collective.lot import plan
    from topomap.nccl.predict import RANK_MODES, parse_ranks
    from topomap.render.perf_view import perf_view

    snapshot = _load(snap_path)
    members = snapshot.members if snapshot.source.kind == "merge" else [snapshot]
    chosen, mode = parse_ranks(ranks, members[0]) if members else ([], "per-gpu")
    indexes = None if ranks is None or ranks in RANK_MODES else [g.index for g in chosen]
    p = plan(snapshot, hosts=args.hosts, gpu_indexes=indexes, mode=mode, version=version, env=env)
    found = expect_all(p, _collectives(args.collective))
    sizes = parse_sizes(args.sizes) if args.sizes else []
    if args.output:
        _draw(found, sizes or parse_sizes("8:8G"), args.output, {})
    if as_json:
        curves = {e.collective: [{"bytes": n, "busbw_gbps": _r(e.busbw_at(n))} for n in sizes] for e in found}
        _print_json(
            {
                "lot": snapshot.source.origin,
                "hosts": p.hosts,
                "gpus_per_host": p.gpus_per_host,
                "ranks": p.ranks,
                "nccl_version": version,
                "env": env.set_vars(),
                "perf": [e.to_json() for e in found],
                "curve": curves if sizes else None,
                "output": args.output,
            }
        )
        return
    _show(perf_view(snapshot.source.origin, p, found, {e.collective: sizes for e in found} if sizes else {}))


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 2)


def _draw(
    found: list[Expectation], sizes: list[int], output: str, measured: dict[str, list[tuple[int, float]]]
) -> None:
    from topomap.render.perf_chart import curve_image

    fmt = output.rsplit(".", 1)[-1].lower() if "." in output else ""
    if fmt not in ("png", "svg"):
        raise TopomapError(f"-o {output}: the curve is drawn as .png or .svg", hint="-o curve.svg")
    _write(output, curve_image(found, sizes, fmt, measured))
    print(f"wrote {output}", file=sys.stderr)


def run_tests(
    results: str,
    snap_path: str | None,
    log: str | None,
    env: NcclEnv,
    version: str | None,
    args: PerfArgs,
    as_json: bool,
) -> None:
    """Read nccl-tests results and set each run beside what the lot should reach."""
    from topomap.files.inputs import decode_text, read_bytes
    from topomap.importers.nccl_tests import parse_nccl_tests
    from topomap.nccl.logread import read_log
    from topomap.nccl.tests import judge
    from topomap.render.perf_view import tests_view

    text = decode_text(read_bytes(results, "nccl-tests results", 64 * 1024 * 1024), results)
    tests = parse_nccl_tests(text, results)
    lot = _load(snap_path) if snap_path else None
    log_text = decode_text(read_bytes(log, "NCCL log", 64 * 1024 * 1024), log) if log else None
    parsed = None
    for candidate in (log_text, text if tests.info_lines else None):  # a results file with its INFO lines is a log
        if candidate:
            try:
                parsed = read_log(candidate, log or results)
                log_text = candidate
                break
            except TopomapError:
                log_text = log_text or candidate
    report = judge(tests, lot, env, version, (parsed, log_text))
    if args.output:
        found = [r.expected for r in report.results if r.expected is not None]
        sizes = parse_sizes(args.sizes) if args.sizes else parse_sizes("8:8G")
        measured = {
            r.collective or "?": [(row.size_bytes, row.out_of_place.busbw_gbps) for row in tests.runs[r.index - 1].rows]
            for r in report.results
        }
        _draw(found, sizes, args.output, measured)
    if as_json:
        _print_json(report.to_json())
        return
    _show(tests_view(report))


def _show(parts: Sequence[object]) -> None:
    _console().print(*parts)  # piped: every name and number whole, never wrapped or cut


def is_nccl_tests(path: str) -> bool:
    """Whether a file `attach` is given is nccl-tests output (by its content)."""
    from topomap.files.kind import looks_like_nccl_tests
    from topomap.importers import read_text

    try:
        return looks_like_nccl_tests(read_text(path))
    except TopomapError:
        return False  # the measurements reader says what is wrong with it


def attach_tests(snapshot: str, results: str, output: str, json_out: bool) -> None:
    """`topomap attach SNAP results.txt -o OUT`: keep every nccl-tests run of the file in the snapshot."""
    from topomap.importers import read_text
    from topomap.importers.nccl_results import attach_results
    from topomap.importers.nccl_tests import parse_nccl_tests
    from topomap.model.codec import encode_checked

    snap = _load(snapshot)
    tests = parse_nccl_tests(read_text(results), results)
    new, notes = attach_results(snap, tests)
    kept = len(new.measurements) - len(snap.measurements)
    _write(output, encode_checked(new, output))
    print(
        f"wrote {output}: {kept} nccl-tests run(s) attached" + (f"; {'; '.join(notes)}" if notes else ""),
        file=sys.stderr,
    )
    if json_out:
        _print_json({"output": output, "tool": "nccl-tests", "measurements": kept, "notes": notes, "not_imported": []})
