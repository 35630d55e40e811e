#!/usr/bin/env bash
# Device check (issues 11, 25), in two halves:
#
#   scripts/device-check.sh --prepare   here, with the package index: gathers into .device-wheels/
#       (git-ignored; the device tool's `carry` brings it) topomap's own wheel and every wheel of
#       its dependencies and its `record` extra's (psutil) for the device's Python (DEVICE_PYTHON,
#       default 3.12) on manylinux x86_64, except nvidia-ml-py and cuda-bindings (the `probe` extra:
#       the machine's own are the ones to check) and matplotlib (heavy; only `timeline` images need it).
#   scripts/device-check.sh OUT         on the GPU machine: no index, never builds. Installs the
#       wheels the interpreter (PYTHON, default python3) lacks or has too old with
#       `pip install --no-index --target OUT/site` + PYTHONPATH (no venv: a venv made inside the
#       image's venv would not see the image's packages), imports every topomap module, then runs
#       topomap probe, nvidia-smi topo -m / -q, topomap measure --quick and a PyTorch comparison,
#       all written under OUT. Without a GPU it stops after the probe and says "no GPU".
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WHEELS="${TOPOMAP_WHEELS:-$ROOT/.device-wheels}"
PY="${PYTHON:-python3}"
log() { echo "device-check: $*" >&2; }

prepare() {
  local pyver="${DEVICE_PYTHON:-3.12}"
  rm -rf "$WHEELS" && mkdir -p "$WHEELS" || return 2
  log "building topomap's wheel into $WHEELS"
  # (built from a copy of the tree: an in-tree setuptools build leaves build/ in the checkout)
  local src
  src="$(mktemp -d)" || return 2
  tar -C "$ROOT" --exclude=.git --exclude=.device-wheels --exclude=build --exclude='*.egg-info' \
    --exclude=.venv --exclude='__pycache__' -cf - . | tar -C "$src" -xf - || { rm -rf "$src"; return 2; }
  "$PY" -m pip wheel --no-deps -q -w "$WHEELS" "$src" || { rm -rf "$src"; log "the wheel did not build"; return 1; }
  rm -rf "$src"
  local reqs
  reqs="$("$PY" - "$ROOT/pyproject.toml" <<'PY'
import re, sys
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
# the plain install and the `record` extra (psutil: every module is imported below); the `probe`
# extra's bindings are the machine's own
deps = project["dependencies"] + project["optional-dependencies"]["record"]
skip = {"nvidia-ml-py", "cuda-bindings", "matplotlib"}
print("\n".join(d for d in deps if re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].lower() not in skip))
PY
)" || return 2
  printf '%s\n' "$reqs" >"$WHEELS/requirements.txt"
  log "downloading for Python $pyver, manylinux x86_64: $(echo $reqs | tr '\n' ' ')"
  "$PY" -m pip download -q --only-binary=:all: --python-version "$pyver" --implementation cp \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    -d "$WHEELS" -r "$WHEELS/requirements.txt" || { log "a wheel could not be downloaded"; return 1; }
  log "prepared $(ls "$WHEELS"/*.whl | wc -l) wheels, $(du -sh "$WHEELS" | cut -f1), in $WHEELS"
}

install_carried() {
  # Picks, for each carried wheel, whether the interpreter's own copy will do (installed and
  # satisfying topomap's range); installs the others with no index and no build.
  local site="$1"
  local picks
  picks="$("$PY" - "$WHEELS" <<'PY'
import importlib.metadata as md, pathlib, re, sys, zipfile
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name
wheels = sorted(pathlib.Path(sys.argv[1]).glob("*.whl"))
ours = next(w for w in wheels if w.name.startswith("topomap-"))
with zipfile.ZipFile(ours) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    reqs = [Requirement(line.split(":", 1)[1].strip()) for line in z.read(meta).decode().splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line]
wanted = {canonicalize_name(r.name): r for r in reqs}
for w in wheels:
    name = canonicalize_name(w.name.split("-")[0])
    try:
        have = md.version(name)
    except md.PackageNotFoundError:
        have = None
    req = wanted.get(name)
    if name != "topomap" and have is not None and (req is None or req.specifier.contains(have, prereleases=True)):
        print(f"keep {name} {have}", file=sys.stderr)
        continue
    print(w)
PY
)" || return 1
  [ -n "$picks" ] || return 0
  # shellcheck disable=SC2086  # one wheel path per word
  PIP_NO_INDEX=1 "$PY" -m pip install -q --no-index --no-deps --only-binary=:all: --no-build-isolation \
    --find-links "$WHEELS" --target "$site" $picks
}

import_everything() {
  "$PY" - <<'PY'
import importlib, pkgutil, sys
import topomap
bad = []
names = ["topomap"] + [m.name for m in pkgutil.walk_packages(topomap.__path__, "topomap.")
                       if not m.name.endswith("__main__")]  # __main__ would run the CLI
for name in names:
    try:
        importlib.import_module(name)
    except Exception as err:  # noqa: BLE001 - report every module that does not import
        bad.append(f"{name}: {type(err).__name__}: {err}")
for lib in ("msgspec", "defusedxml", "graphviz", "jinja2", "yaml", "psutil", "typer", "rich", "networkx", "pynvml"):
    try:
        importlib.import_module(lib)
    except Exception as err:  # noqa: BLE001
        bad.append(f"{lib}: {type(err).__name__}: {err}")
print(f"topomap from {topomap.__file__}; {len(names)} modules")
print("\n".join(bad) if bad else "everything imports")
sys.exit(1 if bad else 0)
PY
}

run_check() {
  local out="$1"
  [ -d "$WHEELS" ] && ls "$WHEELS"/topomap-*.whl >/dev/null 2>&1 \
    || { log "no wheels in $WHEELS: run scripts/device-check.sh --prepare where the package index is reachable"; return 2; }
  mkdir -p "$out" && out="$(cd "$out" && pwd)" || return 2
  cd "$out" || return 2  # not the checkout: `python -m topomap` must find the installed wheel first
  local site="$out/site"
  rm -rf "$site"
  log "installing the carried wheels the interpreter lacks into $site (no index)"
  install_carried "$site" >"$out/pip.log" 2>&1 || { cat "$out/pip.log" >&2; log "install failed"; return 1; }
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  import_everything >"$out/imports.txt" 2>&1 || { cat "$out/imports.txt" >&2; log "import failed"; return 1; }
  log "$(tail -n 1 "$out/imports.txt") ($(head -n 1 "$out/imports.txt"))"
  git -C "$ROOT" rev-parse HEAD >"$out/topomap-commit.txt" 2>/dev/null
  "$PY" -m topomap probe -o "$out/probe.json" 2>"$out/probe.stderr"
  log "probe exit $?"
  local gpus
  gpus="$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1])).get("gpus", [])))' "$out/probe.json" 2>/dev/null)"
  if ! command -v nvidia-smi >/dev/null 2>&1 || [ "${gpus:-0}" = 0 ]; then
    echo "no GPU" >"$out/result.txt"
    log "no GPU: nvidia-smi $(command -v nvidia-smi >/dev/null 2>&1 && echo found || echo absent), the probe found ${gpus:-0}; wrote $out"
    return 0
  fi
  for args in "topo -m" "-L" "-q" "nvlink -s" "topo -p2p rw"; do
    nvidia-smi $args >"$out/nvidia-smi-$(echo "$args" | tr ' ' '_' | tr -d -- '-').txt" 2>&1 || log "nvidia-smi $args failed"
  done
  "$PY" -m topomap matrix "$out/probe.json" >"$out/topomap-matrix.txt" 2>&1
  "$PY" -m topomap measure "$out/probe.json" --quick -o "$out/measured.json" >"$out/measure.txt" 2>"$out/measure.stderr"
  log "measure exit $?"
  "$PY" -m topomap matrix --bandwidth "$out/measured.json" >"$out/topomap-bandwidth.txt" 2>&1
  "$PY" "$ROOT/scripts/device_compare.py" torch >"$out/torch.json" 2>"$out/torch.stderr"
  "$PY" "$ROOT/scripts/device_compare.py" compare "$out" >"$out/comparison.txt" 2>&1
  cat "$out/comparison.txt" >&2
  echo "GPU" >"$out/result.txt"
  log "wrote $out"
}

case "${1:-}" in
  --prepare) prepare ;;
  "" | -h | --help) sed -n 2,15p "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  *) run_check "$1" ;;
esac
