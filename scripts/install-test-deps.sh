#!/usr/bin/env bash
# The system packages the test suite uses beyond Python (issue 33 item 10), installed where missing,
# so that the README's test command (which runs this first) is the full run on a fresh machine, as
# .ci/run's is (it runs the README's command verbatim):
#   dot            Graphviz: every diagram (render, report, the goldens)           Debian: graphviz
#   chromium       the browser tests photograph the SVGs (issue 13)                Debian: chromium
#   slurmctld ...  a real Slurm for deploy/slurm (issue 22; the tests need root)   Debian: slurmctld slurmd slurm-client munge
#   cc             the fake libcuda.so.1 the CUDA C-ABI tests compile (issue 25)   Debian: gcc libc6-dev
#   pdsh           the real pdsh for deploy/ssh/probe-pdsh.sh (issue 22)           Debian: pdsh
# With apt-get, as root or through sudo: installs what is missing (apt-get update once, only then).
# Without apt-get (macOS, another distribution), or neither root nor sudo: one line naming what is
# missing, and exit 0: the tests that need it skip, each saying why.
set -uo pipefail

log() { echo "install-test-deps: $*" >&2; }
has() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }

missing=()   # Debian packages to install
absent=()    # what they provide, in words
has dot || { missing+=(graphviz); absent+=("Graphviz dot"); }
has chromium || has chromium-browser || { missing+=(chromium); absent+=(Chromium); }
has slurmctld || { missing+=(slurmctld slurmd slurm-client munge); absent+=("Slurm and munge"); }
has cc || { missing+=(gcc libc6-dev); absent+=("a C compiler"); }
has pdsh || { missing+=(pdsh); absent+=(pdsh); }
[ ${#missing[@]} -eq 0 ] && exit 0

if ! has apt-get; then
  words="$(printf ', %s' "${absent[@]}")"  # builtins only: ", Graphviz dot, Chromium, …"
  log "no apt-get here: install ${words:2} yourself, or the tests that need them skip"
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  as_root=()
elif has sudo && { sudo -n true 2>/dev/null || [ -t 0 ]; }; then  # no password, or one can be typed
  as_root=(sudo)
else
  log "not root and no sudo: cannot install ${missing[*]} (apt-get); the tests that need them skip"
  exit 0
fi
log "installing ${missing[*]}"
${as_root[@]+"${as_root[@]}"} apt-get update -qq || { log "apt-get update failed"; exit 1; }
${as_root[@]+"${as_root[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
  || { log "apt-get install ${missing[*]} failed"; exit 1; }
