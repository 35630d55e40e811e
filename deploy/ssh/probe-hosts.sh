#!/bin/bash
# Probe hosts over ssh (no scheduler), gather the snapshots, merge them.
#
#   deploy/ssh/probe-hosts.sh gpu01 gpu02 gpu03          # hosts as arguments
#   deploy/ssh/probe-hosts.sh -f hosts.txt               # one host per line
#
# Each host runs `topomap probe -o -` (topomap installed there); the snapshot comes back on the
# ssh connection into OUT/hosts/<host>.json, up to PARALLEL hosts at a time. With pdsh instead:
#   deploy/ssh/probe-pdsh.sh 'gpu[01-16]'    (gathers through pdsh's labelled output, names hosts by %h)
#
# Settings (environment): SSH (default "ssh -o BatchMode=yes"), TOPOMAP (remote command, default
# "topomap"), TOPOMAP_PROBE_ARGS (extra probe arguments), TOPOMAP_LOCAL (local topomap for the
# merge, default "topomap"), TOPOMAP_OUT (folder, default topomap-<date>), PARALLEL (default 32).
# Exit status: 0 when every host sent a snapshot; 1 when a host sent nothing (each is named, with
# its last error line, and the others are still merged into OUT/cluster.json); 2 on usage.
set -uo pipefail
# shellcheck source=merge-gathered.sh
. "$(dirname "${BASH_SOURCE[0]}")/merge-gathered.sh"

SSH=${SSH:-ssh -o BatchMode=yes -o ConnectTimeout=10}
TOPOMAP=${TOPOMAP:-topomap}
OUT=${TOPOMAP_OUT:-topomap-$(date +%Y%m%d-%H%M%S)}
PARALLEL=${PARALLEL:-32}
TOPOMAP_PROBE_ARGS=${TOPOMAP_PROBE_ARGS:-}

hosts=()
if [ "${1:-}" = "-f" ]; then
    while read -r h _; do
        case "$h" in "" | \#*) continue ;; esac
        hosts+=("$h")
    done <"$2"
else
    hosts=("$@")
fi
if [ "${#hosts[@]}" -lt 2 ]; then
    echo "usage: $0 HOST HOST... | -f HOSTFILE (two or more hosts)" >&2
    exit 2
fi
mkdir -p "$OUT/hosts" "$OUT/logs"

probe_one() {
    # $SSH and $TOPOMAP may hold several words
    # shellcheck disable=SC2086
    $SSH "$1" $TOPOMAP probe -o - ${TOPOMAP_PROBE_ARGS:-} >"$OUT/hosts/$1.json" 2>"$OUT/logs/$1.err"
    rc=$?
    echo "$rc" >"$OUT/logs/$1.exit"
    case "$rc" in
        0) ;;
        3) echo "topomap-probe: $1: the probe saw no GPU (exit 3, host-only snapshot kept)" >&2 ;;
        *) echo "topomap-probe: $1: exit status $rc (see $OUT/logs/$1.err)" >&2 ;;
    esac
}
export -f probe_one
export SSH TOPOMAP OUT TOPOMAP_PROBE_ARGS
printf '%s\n' "${hosts[@]}" | xargs -P "$PARALLEL" -I{} bash -c 'probe_one "$1"' _ {}

# Name the hosts that sent nothing, merge the others (deploy/ssh/merge-gathered.sh, shared with
# probe-pdsh.sh)
merge_gathered 0 "${hosts[@]}"
