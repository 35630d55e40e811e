# Sourced by probe-hosts.sh and probe-pdsh.sh (keep the three files together); not run on its own.
#
# merge_gathered SAY_EXIT HOST...: once each host's probe left OUT/hosts/HOST.json,
# OUT/logs/HOST.err and OUT/logs/HOST.exit, name every host that sent nothing (with its last
# error line; SAY_EXIT=1 adds the probe's exit status, for a gatherer that has not said it yet) and
# merge the others into OUT/cluster.json with TOPOMAP_LOCAL (default "topomap").
# Returns 0 when every host sent a snapshot, 1 when one sent nothing (the others are merged all
# the same) or fewer than two snapshots came back.
merge_gathered() {
    local say_exit=$1
    shift
    local hosts=("$@") args=() missing=() h f rc last status
    # A host counts when its probe exited 0 or 3 (host-only) and its snapshot is whole JSON.
    for h in "${hosts[@]}"; do
        f="$OUT/hosts/$h.json"
        rc=$(cat "$OUT/logs/$h.exit" 2>/dev/null)
        if { [ "$rc" = 0 ] || [ "$rc" = 3 ]; } && [ -s "$f" ] &&
            python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$f" 2>/dev/null; then
            args+=("$h=$f")
        else
            last=$(sed '/^[[:space:]]*$/d' "$OUT/logs/$h.err" 2>/dev/null | tail -n 1)
            status=""
            [ "$say_exit" = 1 ] && status=" (exit status ${rc:-unknown})"
            echo "topomap-probe: no snapshot from $h$status${last:+: $last}" >&2
            rm -f "$f"
            missing+=("$h")
        fi
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "topomap-probe: ${#missing[@]} of ${#hosts[@]} host(s) sent nothing: ${missing[*]}" >&2
    fi
    if [ "${#args[@]}" -lt 2 ]; then
        echo "topomap-probe: ${#args[@]} snapshot(s) in $OUT/hosts; merge needs two or more" >&2
        return 1
    fi
    # shellcheck disable=SC2086
    ${TOPOMAP_LOCAL:-topomap} merge "${args[@]}" -o "$OUT/cluster.json" || return 1
    [ "${#missing[@]}" -eq 0 ]
}
