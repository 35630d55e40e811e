"""Every reader on every line of every real file, each line given a long run (issue 36 item 6: a reader
whose time grows with the square of a line's length, as the NCCL log reader's and nvbandwidth's did).

For every real input (tests/data/real-topologies, real-nccl-logs, fixtures, samples) and every line of
it (or every Nth, at most --lines of them), a run of ``--pad`` characters (a space, a tab, a letter, a
digit, punctuation) is put at the line's start, middle and end, and the file is read as the CLI reads it
(its kind sniffed, then its reader). A case past ``--limit`` seconds is printed as SLOW with the line;
after each file, its slowest case. tests/files/test_reader_time.py times each line kind found here.

Run: python bench/readers.py                    (about an hour on this project's 2-core machine)
     python bench/readers.py --pad 16384 --lines 10 --limit 1   (a quicker pass)
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from topomap.base.errors import TopomapError  # noqa: E402
from topomap.files.kind import sniff  # noqa: E402
from topomap.flow import parse_flow  # noqa: E402
from topomap.importers import import_text  # noqa: E402
from topomap.importers.bandwidth import parse_measurements  # noqa: E402
from topomap.model.codec import decode_snapshot  # noqa: E402
from topomap.nccl.logread import read_log  # noqa: E402
from topomap.record.model import decode_run  # noqa: E402

Reader = Callable[[str, str], object]
DATA = ROOT / "tests" / "data"


def inputs() -> list[tuple[Path, Reader]]:
    out: list[tuple[Path, Reader]] = []
    for p in sorted((DATA / "real-topologies").rglob("*")):
        if p.is_file() and p.suffix in (".txt", ".xml", ".partial"):
            out.append((p, parse_measurements if "bandwidth" in p.parts else import_text))
    for p in sorted((DATA / "real-nccl-logs").glob("*.log")):
        out += [(p, import_text), (p, read_log)]
    for p in sorted((DATA / "fixtures").glob("*")):
        if p.name.startswith("nvbandwidth"):
            out.append((p, parse_measurements))
        elif p.suffix in (".txt", ".xml"):
            out.append((p, import_text))
    out += [(p, parse_flow) for p in sorted((ROOT / "samples" / "flows").glob("*.yaml"))]
    out += [
        (p, lambda t, o: decode_snapshot(t.encode(), o))
        for p in sorted((ROOT / "samples" / "snapshots").glob("*.json"))
    ]
    out += [(p, lambda t, o: decode_run(t.encode(), o)) for p in sorted((ROOT / "samples" / "records").glob("*.json"))]
    return out


class _Late(BaseException):
    pass


def _late(signum: int, frame: object) -> None:
    raise _Late


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pad", type=int, default=65536, help="characters of the run put in each line")
    ap.add_argument("--lines", type=int, default=40, help="lines tried per file (evenly spaced)")
    ap.add_argument("--limit", type=float, default=3.0, help="seconds past which a case is SLOW")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGALRM, _late)
    slow = 0
    for path, reader in inputs():
        lines = path.read_text(errors="replace").split("\n")
        worst = (0.0, "")
        for i in range(0, len(lines), max(1, len(lines) // args.lines)):
            for pad in (" ", "x", "\t", "0", "-", "=", "/"):
                for where in ("start", "mid", "end"):
                    edited = list(lines)
                    s, run = edited[i], pad * args.pad
                    edited[i] = (
                        run + s
                        if where == "start"
                        else s + run
                        if where == "end"
                        else s[: len(s) // 2] + run + s[len(s) // 2 :]
                    )
                    text = "\n".join(edited)
                    t = time.perf_counter()
                    signal.setitimer(signal.ITIMER_REAL, args.limit)
                    try:
                        sniff(text)
                        reader(text, str(path))
                    except _Late:
                        slow += 1
                        print(f"SLOW {path.name} line {i + 1} ({where}, {pad!r}): {s[:60]!r}", flush=True)
                    except (TopomapError, Exception):  # a refusal is timed too
                        pass
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
                    took = time.perf_counter() - t
                    if took > worst[0]:
                        worst = (took, f"line {i + 1} ({where}, {pad!r})")
        print(f"{path.name:62s} slowest {worst[0] * 1000:8.1f} ms  {worst[1]}", flush=True)
    print(f"{slow} slow case(s)")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
