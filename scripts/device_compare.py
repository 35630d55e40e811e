"""The device check's comparisons (scripts/device-check.sh): `torch` times the host<->device copies
with PyTorch; `compare OUT` puts topomap measure beside them and topomap's matrix beside
`nvidia-smi topo -m`. Run with the device's interpreter; topomap comes from PYTHONPATH."""

from __future__ import annotations

import json
import pathlib
import statistics
import sys

# topomap prints "?" where its source did not say (e.g. GPU NUMA ID on a GPU that has none and a
# driver that does not tell); nvidia-smi prints "N/A" there. Neither claims a value: they agree.
UNKNOWN_AGREES = {("?", "N/A")}


def torch_copies() -> dict[str, object]:
    """The same copies with PyTorch: pinned host buffer, 32 MiB, 4 copies per sample, median of 3."""
    try:
        import torch  # optional: the image may not have it
    except ImportError:
        return {"torch": None}
    out: dict[str, object] = {"torch": torch.__version__}
    gpus: dict[str, dict[str, float]] = {}
    n = 32 * 2**20
    for i in range(torch.cuda.device_count()):
        d = torch.device("cuda", i)
        with torch.cuda.device(d):  # events and copies on this GPU's current stream
            h = torch.empty(n, dtype=torch.uint8).pin_memory()
            g = torch.empty(n, dtype=torch.uint8, device=d)
            res = {}
            for what, fn in (
                ("h2d", lambda g=g, h=h: g.copy_(h, non_blocking=True)),
                ("d2h", lambda g=g, h=h: h.copy_(g, non_blocking=True)),
            ):
                fn()
                torch.cuda.synchronize(d)
                rates = []
                for _ in range(3):
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    s.record()
                    for _ in range(4):
                        fn()
                    e.record()
                    e.synchronize()
                    rates.append(4 * n / (s.elapsed_time(e) / 1e3) / 1e9)
                res[what] = statistics.median(rates)
        gpus[f"cuda{i}"] = res
    out["gpus"] = gpus
    return out


def matrix_differences(ours: str, smi: str) -> list[str]:
    """Tokens of topomap's matrix that differ from nvidia-smi's (whitespace-insensitive); an
    unknown "?" of topomap's agrees with nvidia-smi's "N/A"."""
    a, b = ours.split(), smi.split()
    diffs = [f"token {k}: topomap {x!r}, nvidia-smi {y!r}" for k, (x, y) in enumerate(zip(a, b))
             if x != y and (x, y) not in UNKNOWN_AGREES]  # fmt: skip
    if len(a) != len(b):
        diffs.append(f"topomap has {len(a)} tokens, nvidia-smi {len(b)}")
    return diffs


def compare(d: pathlib.Path) -> None:
    try:
        from topomap.model.codec import load_snapshot
        from topomap.model.measured import measured_bandwidth, nominal_gbps

        snap = load_snapshot(d / "measured.json")
    except Exception as err:  # report, do not hide
        print(f"no measured snapshot: {err}")
        snap = None
    if snap is not None:
        torch = json.loads((d / "torch.json").read_text() or "{}")
        print(f"{'gpu':6} {'dir':4} {'topomap':>9} {'torch':>9} {'diff':>7} {'nominal':>9} {'% nominal':>9}")
        for g in snap.gpus:
            gid = f"gpu{g.index}"
            nom = nominal_gbps(snap, "host", gid)
            for kind, a, b in (("h2d", "host", gid), ("d2h", gid, "host")):
                got = measured_bandwidth(snap, a, b, kind)
                t = (torch.get("gpus") or {}).get(f"cuda{g.cuda_ordinal}", {}).get(kind)
                tm = got[0] if got else None
                diff = f"{(tm - t) / t:+.1%}" if tm and t else "—"
                pct = f"{tm / nom[0]:.0%}" if tm and nom else "—"
                print(f"{gid:6} {kind:4} {tm or float('nan'):9.2f} {t or float('nan'):9.2f} {diff:>7} "
                      f"{(nom[0] if nom else float('nan')):9.2f} {pct:>9}")  # fmt: skip
    ours = (d / "topomap-matrix.txt").read_text(errors="replace")
    diffs = matrix_differences(ours, (d / "nvidia-smi-topo_m.txt").read_text(errors="replace"))
    print("topomap matrix == nvidia-smi topo -m (whitespace-insensitive, ? = N/A):", not diffs)
    for line in diffs:
        print("  " + line)


if __name__ == "__main__":
    if sys.argv[1:2] == ["torch"]:
        print(json.dumps(torch_copies(), indent=2))
    else:
        compare(pathlib.Path(sys.argv[2]))
