"""Peak memory at every documented maximum (issue 36 item 5: inputs within the caps took gigabytes —
a 200 MB snapshot of 50 million notes 3.96 GB, `merge` of two 250 MB snapshots a MemoryError, a 100 MB
paste 700 MB before its refusal, `plan --json --units` with 100,000 units on 8 cards 66 s and 3.9 GB).

Each case writes an input at one documented maximum (or just past it, where the maximum is a refusal)
and runs one command on it in a child process; its peak memory is the child's maximum resident set
(``os.wait4``), its time the wall clock. Goal: every case under 1 GiB.

Run: python bench/memory.py                 (every case; a few minutes, about 1.5 GB of disk in a
                                             temporary folder)
     python bench/memory.py snapshot-at-cap (the cases named)
tests/cli/test_memory.py runs the same cases (the quick ones in full, the slowest at a lighter card count).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
DATA = ROOT / "tests" / "data"
MIB = 1 << 20
GOAL_BYTES = 1 << 30


@dataclass(frozen=True)
class Case:
    """One documented maximum: what the README says, how to make the input, the command, and how it
    ends (exit status, and the words of a refusal)."""

    name: str
    maximum: str
    make: Callable[[Path], list[str]]  # writes the input(s) into the folder, returns the command's arguments
    exit: int = 0
    says: str = ""


def _snapshot_with_notes(path: Path, notes: int, note: str) -> None:
    """A real snapshot (HGX H200) with ``notes`` notes in its source, written without building them."""
    d = json.loads((SAMPLES / "snapshots" / "hgx-h200-8gpu-10nic.json").read_text())
    d["source"]["notes"] = ["\x00"]
    head, tail = json.dumps(d).split('"\\u0000"')
    quoted = json.dumps(note)
    with open(path, "w") as fh:
        fh.write(head)
        for k in range(0, notes, 100_000):
            fh.write(("," if k else "") + ",".join([quoted] * min(100_000, notes - k)))
        fh.write(tail)


def _snapshot_at_cap(d: Path) -> list[str]:
    _snapshot_with_notes(d / "at-cap.json", 3_450_000, "n" * 32)  # 124 MB, 3.45 million values
    return ["show", str(d / "at-cap.json")]


def _import_at_cap(d: Path) -> list[str]:
    """A snapshot as large as one topomap writes back under the cap (indented: 122 MB of 128 MiB)."""
    _snapshot_with_notes(d / "in.json", 2_900_000, "n" * 32)
    return ["import", str(d / "in.json"), "-o", str(d / "out.json")]


def _snapshot_issue(d: Path) -> list[str]:
    _snapshot_with_notes(d / "notes.json", 50_000_000, "a")  # the issue's: 200 MB, 50 million notes
    return ["show", str(d / "notes.json")]


def _snapshot_many_values(d: Path) -> list[str]:
    _snapshot_with_notes(d / "notes.json", 25_000_000, "a")  # 100 MB, within the size: its values refused
    return ["show", str(d / "notes.json")]


def _snapshot_one_huge_value(d: Path) -> list[str]:
    _snapshot_with_notes(d / "huge.json", 1, "x" * (120 * MIB))
    return ["show", str(d / "huge.json")]


def _merge_issue(d: Path) -> list[str]:
    _snapshot_with_notes(d / "a.json", 1, "x" * (250 * MIB))  # the issue's two 250 MB snapshots
    shutil.copy(d / "a.json", d / "b.json")
    return ["merge", f"a={d / 'a.json'}", f"b={d / 'b.json'}", "-o", str(d / "merged.json")]


def _merge_two_large(d: Path) -> list[str]:
    _snapshot_with_notes(d / "a.json", 2_500_000, "n" * 40)  # 110 MB each, 220 MB together
    shutil.copy(d / "a.json", d / "b.json")
    return ["merge", f"a={d / 'a.json'}", f"b={d / 'b.json'}", "-o", str(d / "merged.json")]


def _paste(d: Path, size: int) -> Path:
    """A real `topo -m` paste with lines of text after it up to ``size`` bytes (1 kB lines)."""
    text = (DATA / "real-topologies" / "nvidia-smi" / "hgx-h200-8gpu-10nic-nchc-nano4.txt").read_text()
    line = "# " + "x" * 1021 + "\n"
    p = d / "paste.txt"
    with open(p, "w") as fh:
        fh.write(text)
        fh.write(line * ((size - len(text)) // len(line)))
    return p


def _paste_at_cap(d: Path) -> list[str]:
    return ["show", str(_paste(d, 64 * MIB - 4096))]


def _paste_past_cap(d: Path) -> list[str]:
    return ["show", str(_paste(d, 100 * MIB))]


def _log_at_cap(d: Path) -> list[str]:
    log = (DATA / "real-nccl-logs" / "h200-vm-fulldump-gdrdma-nccltests256.log").read_text()
    line = "launcher: " + "y" * 1013 + "\n"
    p = d / "big.log"
    with open(p, "w") as fh:
        fh.write(log)
        fh.write(line * ((64 * MIB - 4096 - len(log)) // len(line)))
    return ["nccl", "--log", str(p)]


def _yaml_at_cap(d: Path) -> list[str]:
    """A flow of 33,000 steps (198,000 YAML values of the 200,000 allowed: each step is a key, a mapping,
    and two keys with their values)."""
    lines = ["flow: wide", "hosts:", "  ws: null", "steps:"]
    lines += [f"  s{i}: {{kind: input, on: ws}}" for i in range(33_000)]
    (d / "wide.yaml").write_text("\n".join(lines) + "\n")
    return ["map", str(d / "wide.yaml")]


def _run_at_cap(d: Path) -> list[str]:
    """A run record of 20 cards whose every series holds 20,000 samples, the recorder's most before it
    halves them (record/thin.py): 3.8 million values, about 90 MB as topomap writes it."""
    run = json.loads((SAMPLES / "records" / "one-card.json").read_text())
    n = 20_000
    t = [round(i * 0.2, 4) for i in range(n)]

    def stretched(series: dict[str, object]) -> dict[str, object]:
        out = dict(series)
        for key, value in series.items():
            if key == "processes":
                out[key] = []
            elif isinstance(value, list):
                out[key] = t if key == "t_s" else [value[-1]] * n
        return out

    run["host"] = stretched(run["host"])
    card = run["gpus"][0]
    run["gpus"] = [dict(stretched(card), id=f"gpu{i}", index=i) for i in range(20)]
    (d / "run.json").write_text(json.dumps(run, indent=2))
    return ["show", str(d / "run.json")]


def _units_flow(d: Path, count: int) -> Path:
    text = (SAMPLES / "flows" / "eight-documents.yaml").read_text().replace("count: 8", f"count: {count}")
    p = d / "units.yaml"
    p.write_text(text.replace("../snapshots/", str(SAMPLES / "snapshots") + "/"))
    return p


def _units_at_cap(d: Path) -> list[str]:
    return ["plan", str(_units_flow(d, 100_000)), "--json", "--units", "--cards", "1,2,3,4,5,6,7,8"]


def _units_at_cap_one_count(d: Path) -> list[str]:
    return ["plan", str(_units_flow(d, 100_000)), "--json", "--units", "--cards", "8"]


def _csv_at_cap(d: Path) -> list[str]:
    (d / "d.csv").write_text("duration\n" + "12 min\n" * 100_000)
    text = (SAMPLES / "flows" / "uneven-documents.yaml").read_text()
    flow = "\n".join(x for x in text.splitlines() if not x.strip().startswith(("count:", "durations_csv:")))
    flow = flow.replace("work:", "work:\n  durations_csv: d.csv", 1)
    flow = flow.replace("../snapshots/", str(SAMPLES / "snapshots") + "/")
    (d / "csv.yaml").write_text(flow + "\n")
    return ["plan", str(d / "csv.yaml"), "--cards", "8"]


def _gpus_at_cap(d: Path) -> list[str]:
    """A `topo -m` of 256 GPUs on one NVSwitch fabric and 256 NICs (PIX to one GPU each)."""
    n = 256
    names = [f"GPU{i}" for i in range(n)] + [f"NIC{i}" for i in range(n)]
    rows = ["\t" + "\t".join(names) + "\tCPU Affinity\tNUMA Affinity"]
    for a, label in enumerate(names):
        cells = []
        for b in range(2 * n):
            if a == b:
                cells.append(" X ")
            elif a < n and b < n:
                cells.append("NV18")
            elif (a < n) != (b < n) and a % n == b % n:
                cells.append("PIX")
            else:
                cells.append("SYS")
        rows.append(f"{label}\t" + "\t".join(cells) + ("\t0-63\t0" if a < n else ""))
    legend = ["", "NIC Legend:", ""] + [f"  NIC{i}: mlx5_{i}" for i in range(n)]
    (d / "big.txt").write_text("\n".join(rows + legend) + "\n")
    return ["show", str(d / "big.txt")]


def _arrows_at_cap(d: Path) -> list[str]:
    """A flow whose all-to-all arrows make exactly 65,536 arrows between replicas on a 16-GPU lot."""
    lines = ["flow: many", "hosts:", f"  lot: {SAMPLES / 'snapshots' / 'dgx2h-16gpu.json'}", "steps:"]
    for i in range(16):
        lines += [f"  a{i}: {{kind: compute, on: lot:gpus}}", f"  b{i}: {{kind: compute, on: lot:gpus}}"]
    lines.append("arrows:")
    every_b = ", ".join(f"b{j}" for j in range(16))
    lines += [f"  - {{from: a{i}, to: [{every_b}], pattern: all-to-all}}" for i in range(16)]
    (d / "many.yaml").write_text("\n".join(lines) + "\n")
    return ["map", str(d / "many.yaml")]


CASES = [
    Case("snapshot-at-cap", "a snapshot: 128 MiB, 3,500,000 values (124 MB, 3.45 million notes)", _snapshot_at_cap),
    Case("import-at-cap", "a snapshot of 2.9 million notes imported and written again (read back first)",
         _import_at_cap),
    Case("snapshot-issue", "past 128 MiB: the issue's 200 MB of 50 million notes, refused unread", _snapshot_issue,
         2, "is larger than any topology file or snapshot (128 MiB max)"),
    Case("snapshot-many-values", "past 3,500,000 values: 100 MB of 25 million notes", _snapshot_many_values,
         2, "more than any snapshot holds (3,500,000 at most)"),
    Case("snapshot-huge-value", "a value past 1 MiB: one note of 120 MB", _snapshot_one_huge_value, 2,
         "longer than any snapshot holds (1 MiB at most)"),
    Case("merge-issue", "merge of the issue's two 250 MB snapshots, refused unread", _merge_issue, 2,
         "is larger than any topology file or snapshot (128 MiB max)"),
    Case("merge-two-large", "one command reads 192 MiB of large files: merge of two 110 MB snapshots",
         _merge_two_large, 2, "than the 192 MiB one command reads"),
    Case("paste-at-cap", "a topology paste: 64 MiB", _paste_at_cap),
    Case("paste-past-cap", "past 64 MiB: the issue's 100 MB paste, refused unread", _paste_past_cap, 2,
         "is larger than any topology file (64 MiB max)"),
    Case("log-at-cap", "an NCCL log: 64 MiB", _log_at_cap),
    Case("yaml-at-cap", "a flow: 200,000 YAML values (33,000 steps)", _yaml_at_cap),
    Case("run-at-cap", "a run record: 20 cards, 20,000 samples a series (3.4 million values)", _run_at_cap),
    Case("units-at-cap", "100,000 units: plan --json --units on 1 to 8 cards", _units_at_cap),
    Case("units-at-cap-8", "100,000 units: plan --json --units on 8 cards", _units_at_cap_one_count),
    Case("csv-at-cap", "100,000 units from a durations CSV", _csv_at_cap),
    Case("gpus-at-cap", "256 GPUs and 256 NICs in a host", _gpus_at_cap),
    Case("arrows-at-cap", "65,536 arrows between replicas", _arrows_at_cap),
]  # fmt: skip


#: The child reports its own peak: VmHWM of its memory map (Linux), which exec made new. wait4's and
#: getrusage's ru_maxrss would also count the parent's memory the child was forked with.
_CHILD = """import os, resource, sys
from topomap.cli import main
try:
    main()
finally:
    try:
        peak = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
    except (OSError, StopIteration):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with open(os.environ["TOPOMAP_PEAK_FILE"], "w") as fh:
        fh.write(str(peak * 1024))
"""


def measure(case: Case, folder: Path, timeout_s: float = 600) -> tuple[int, int, float, str]:
    """Run ``case`` in a child process: (exit status, peak RSS in bytes, wall seconds, stderr)."""
    argv = case.make(folder)
    peak_file = folder / "peak.txt"
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="120", TOPOMAP_PEAK_FILE=str(peak_file))
    t = time.perf_counter()
    with open(folder / "stderr.txt", "wb") as err:
        cmd = [sys.executable, "-c", _CHILD, *argv]
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, timeout=timeout_s, check=False)
    took = time.perf_counter() - t
    peak = int(peak_file.read_text()) if peak_file.exists() else -1
    return proc.returncode, peak, took, (folder / "stderr.txt").read_text(errors="replace")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="cases to run (default: all)")
    args = ap.parse_args(argv)
    chosen = [c for c in CASES if not args.names or c.name in args.names]
    print(f"{'case':22s} {'peak RSS':>10s} {'wall':>8s}  exit  documented maximum")
    worst = 0
    for case in chosen:
        with tempfile.TemporaryDirectory(prefix="topomap-mem-") as tmp:
            code, rss, took, err = measure(case, Path(tmp))
        worst = max(worst, rss)
        flag = "" if rss < GOAL_BYTES and code == case.exit else "   <<< over 1 GiB or unexpected exit"
        print(f"{case.name:22s} {rss / MIB:8.0f} MiB {took:7.1f} s  {code:4d}  {case.maximum}{flag}")
        if code != case.exit:
            print("    " + err.strip().splitlines()[-1][:200] if err.strip() else "    (no stderr)")
    print(f"largest peak: {worst / MIB:.0f} MiB (goal: under 1024 MiB)")


if __name__ == "__main__":
    main()
