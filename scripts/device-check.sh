#!/usr/bin/env bash
# One-command device check (issue 11): on a machine with an NVIDIA GPU, install topomap from a
# wheel (--no-deps: the machine's own nvidia-ml-py / cuda-bindings are used), probe, measure
# --quick, capture nvidia-smi beside it, time the same host<->device copies with PyTorch when it
# is installed, and write everything with a side-by-side comparison under OUT (default $OUT or
# ./device-check). Usage: scripts/device-check.sh [OUT]
set -uo pipefail
OUT_DIR="${1:-${OUT:-./device-check}}"
mkdir -p "$OUT_DIR"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
log() { echo "device-check: $*" >&2; }

# A wheel in dist/ (built beforehand with `python -m build` or `pip wheel --no-deps .`) is used
# as is; otherwise one is built here (isolated, then without isolation for offline machines).
log "installing topomap from a wheel (--no-deps)"
WHEEL="$(ls "$ROOT"/dist/topomap-*.whl 2>/dev/null | tail -n 1)"
if [ -z "$WHEEL" ]; then
  for iso in "" "--no-build-isolation"; do
    python -m pip wheel --no-deps $iso -q -w "$OUT_DIR/wheel" "$ROOT" >>"$OUT_DIR/pip.log" 2>&1 && break
  done
  WHEEL="$(ls "$OUT_DIR"/wheel/topomap-*.whl 2>/dev/null | tail -n 1)"
fi
# Into a venv of its own that sees the machine's packages, so an existing (editable) install is untouched.
python -m venv --system-site-packages "$OUT_DIR/venv" >>"$OUT_DIR/pip.log" 2>&1 && . "$OUT_DIR/venv/bin/activate"
if [ -n "$WHEEL" ] && python -m pip install --no-deps -q --force-reinstall "$WHEEL" >>"$OUT_DIR/pip.log" 2>&1; then
  log "installed $(basename "$WHEEL")"
else
  log "no wheel could be built or installed (see pip.log): running from the checkout"
  export PYTHONPATH="${PYTHONPATH:-}:$ROOT"
fi
python -c "import topomap.cli, topomap; print(topomap.__file__)" >"$OUT_DIR/topomap-location.txt" 2>>"$OUT_DIR/pip.log" \
  && log "running topomap from $(cat "$OUT_DIR/topomap-location.txt")" \
  || log "topomap does not import: a dependency is missing (see pip.log)"
git -C "$ROOT" rev-parse HEAD >"$OUT_DIR/topomap-commit.txt" 2>/dev/null

for args in "topo -m" "-L" "-q" "nvlink -s" "topo -p2p rw"; do
  name="nvidia-smi-$(echo "$args" | tr ' ' '_' | tr -d -- '-')"
  nvidia-smi $args >"$OUT_DIR/$name.txt" 2>&1 || log "nvidia-smi $args failed"
done

python -m topomap probe -o "$OUT_DIR/probe.json" 2>"$OUT_DIR/probe.stderr"; echo "probe exit $?" >&2
python -m topomap matrix "$OUT_DIR/probe.json" >"$OUT_DIR/topomap-matrix.txt" 2>&1
python -m topomap measure "$OUT_DIR/probe.json" --quick -o "$OUT_DIR/measured.json" \
  >"$OUT_DIR/measure.txt" 2>"$OUT_DIR/measure.stderr"; echo "measure exit $?" >&2
python -m topomap matrix --bandwidth "$OUT_DIR/measured.json" >"$OUT_DIR/topomap-bandwidth.txt" 2>&1

python - "$OUT_DIR" <<'PY' >"$OUT_DIR/torch.json" 2>"$OUT_DIR/torch.stderr"
# The same copies with PyTorch: pinned host buffer, 32 MiB, 4 copies per sample, median of 3.
import json, statistics, sys
try:
    import torch
except ImportError:
    print(json.dumps({"torch": None})); sys.exit(0)
out = {"torch": torch.__version__, "gpus": {}}
n = 32 * 2**20
for i in range(torch.cuda.device_count()):
    d = torch.device("cuda", i)
    with torch.cuda.device(d):  # events and copies on this GPU's current stream
        h = torch.empty(n, dtype=torch.uint8).pin_memory()
        g = torch.empty(n, dtype=torch.uint8, device=d)
        res = {}
        for what, fn in (("h2d", lambda: g.copy_(h, non_blocking=True)), ("d2h", lambda: h.copy_(g, non_blocking=True))):
            fn(); torch.cuda.synchronize(d)
            rates = []
            for _ in range(3):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); [fn() for _ in range(4)]; e.record(); e.synchronize()
                rates.append(4 * n / (s.elapsed_time(e) / 1e3) / 1e9)
            res[what] = statistics.median(rates)
    out["gpus"][f"cuda{i}"] = res
print(json.dumps(out, indent=2))
PY

python - "$OUT_DIR" <<'PY' >"$OUT_DIR/comparison.txt" 2>&1
# Side by side: topomap measure vs PyTorch (GB/s), % of the PCIe nominal; topomap matrix vs nvidia-smi topo -m.
import json, pathlib, sys
d = pathlib.Path(sys.argv[1])
try:
    from topomap.model.codec import load_snapshot
    from topomap.model.measured import measured_bandwidth, nominal_gbps
    snap = load_snapshot(d / "measured.json")
except Exception as err:  # noqa: BLE001 - report, do not hide
    print(f"no measured snapshot: {err}"); sys.exit(0)
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
              f"{(nom[0] if nom else float('nan')):9.2f} {pct:>9}")
smi = (d / "nvidia-smi-topo_m.txt").read_text(errors="replace").split()
ours = (d / "topomap-matrix.txt").read_text(errors="replace").split()
print("topomap matrix == nvidia-smi topo -m (whitespace-insensitive):", smi == ours)
PY
cat "$OUT_DIR/comparison.txt" >&2
log "wrote $OUT_DIR"
