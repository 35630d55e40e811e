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

# A host counts when its probe exited 0 or 3 (host-only) and its snapshot is whole JSON.
args=()
missing=()
for h in "${hosts[@]}"; do
    f="$OUT/hosts/$h.json"
    rc=$(cat "$OUT/logs/$h.exit" 2>/dev/null)
    if { [ "$rc" = 0 ] || [ "$rc" = 3 ]; } && [ -s "$f" ] &&
        python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$f" 2>/dev/null; then
        args+=("$h=$f")
    else
        last=$(sed '/^[[:space:]]*$/d' "$OUT/logs/$h.err" 2>/dev/null | tail -n 1)
        echo "topomap-probe: no snapshot from $h${last:+: $last}" >&2
        rm -f "$f"
        missing+=("$h")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "topomap-probe: ${#missing[@]} of ${#hosts[@]} host(s) sent nothing: ${missing[*]}" >&2
fi
if [ "${#args[@]}" -lt 2 ]; then
    echo "topomap-probe: ${#args[@]} snapshot(s) in $OUT/hosts; merge needs two or more" >&2
    exit 1
fi
# shellcheck disable=SC2086
${TOPOMAP_LOCAL:-topomap} merge "${args[@]}" -o "$OUT/cluster.json" || exit 1
# 0 when every host sent a snapshot; 1 when one sent nothing (the others are merged all the same)
[ "${#missing[@]}" -eq 0 ]
