#!/bin/bash
# Probe hosts with pdsh, gather the snapshots through pdsh's own output (no shared folder, no
# rpdcp), name each host as pdsh does (%h), merge them.
#
#   deploy/ssh/probe-pdsh.sh 'gpu[01-16]'                # a pdsh host list (-w syntax, ^FILE too)
#   PDSH="pdsh -R exec" TOPOMAP="ssh %h topomap" deploy/ssh/probe-pdsh.sh 'gpu[01-16]'
#
# Each host runs `topomap probe -o -` (topomap installed there). pdsh labels every output line
# with the host's name ("gpu03: ..."); the lines are split back into OUT/hosts/<host>.json and
# the host's error lines into OUT/logs/<host>.err. The hosts are the list as pdsh expands it
# (`pdsh -R exec -w LIST echo %h`, which runs nothing remote), so a host that sent nothing — pdsh
# could not reach it, the probe failed, its output is not whole JSON — is named, with its last
# error line, and the others are still merged into OUT/cluster.json.
#
# Settings (environment): PDSH (default "pdsh"; "pdsh -R exec" runs TOPOMAP here with %h
# replaced by each host's name), TOPOMAP (remote command, default "topomap"), TOPOMAP_PROBE_ARGS,
# TOPOMAP_LOCAL (local topomap for the merge, default "topomap"), TOPOMAP_OUT (default
# topomap-<date>). Exit status: 0 when every host sent a snapshot; 1 when a host sent nothing;
# 2 on usage.
set -uo pipefail
# shellcheck source=merge-gathered.sh
. "$(dirname "${BASH_SOURCE[0]}")/merge-gathered.sh"

PDSH=${PDSH:-pdsh}
TOPOMAP=${TOPOMAP:-topomap}
OUT=${TOPOMAP_OUT:-topomap-$(date +%Y%m%d-%H%M%S)}
TOPOMAP_PROBE_ARGS=${TOPOMAP_PROBE_ARGS:-}

if [ "$#" -ne 1 ]; then
    echo "usage: $0 HOSTLIST (pdsh -w syntax: 'gpu[01-16]', 'a,b,c' or ^FILE; two or more hosts)" >&2
    exit 2
fi
list=$1
mapfile -t hosts < <(pdsh -R exec -N -w "$list" echo %h 2>/dev/null | sort -u)
if [ "${#hosts[@]}" -lt 2 ]; then
    echo "usage: $0 HOSTLIST: '$list' names ${#hosts[@]} host(s); two or more are needed" >&2
    exit 2
fi
mkdir -p "$OUT/hosts" "$OUT/logs"

# $PDSH, $TOPOMAP and the probe arguments may hold several words
# shellcheck disable=SC2086
$PDSH -w "$list" $TOPOMAP probe -o - $TOPOMAP_PROBE_ARGS >"$OUT/pdsh.out" 2>"$OUT/pdsh.err"

# Split pdsh's labelled lines per host: "HOST: line" (stdout, stderr) and pdsh's own
# "pdsh@HERE: HOST: ... exited with exit code N" (stderr). Host names that could escape the
# folder are refused; a host that never appears sent nothing.
python3 - "$OUT" "${hosts[@]}" <<'EOF'
import os, re, sys
out, hosts = sys.argv[1], set(sys.argv[2:])
exited = re.compile(r"^pdsh@[^:]*: ([^:]+): .* exited with exit code (\d+)$")
glue = re.compile(r"(" + "|".join(re.escape(h) for h in sorted(hosts, key=len, reverse=True)) + r"): ")
def split(path):
    lines = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = exited.match(line)
            if m:
                lines.setdefault(m.group(1), []).append(("exit", m.group(2)))
                continue
            if line.startswith("pdsh@"):
                host = line.split(": ", 2)[1] if line.count(": ") >= 2 else ""
                lines.setdefault(host, []).append(("line", line))
                continue
            host, sep, text = line.partition(": ")
            if not sep:
                host, sep, text = line.partition(":")  # an empty line comes as "HOST:"
            # a host whose output was cut leaves its last line without a newline, and pdsh writes the
            # next host's line straight after it ("node4: {partialnode1: {"): split at that label
            glued = glue.search(text, 1) if host in hosts else None
            while glued is not None and glued.group(1) != host:
                lines.setdefault(host, []).append(("line", text[: glued.start(1)]))
                host, text = glued.group(1), text[glued.end() :]
                glued = glue.search(text, 1)
            lines.setdefault(host, []).append(("line", text))
    return lines
stdout, stderr = split(f"{out}/pdsh.out"), split(f"{out}/pdsh.err")
for host in hosts:
    if "/" in host or host.startswith("."):
        continue
    with open(f"{out}/hosts/{host}.json", "w", encoding="utf-8") as f:
        f.writelines(text + "\n" for kind, text in stdout.get(host, []) if kind == "line")
    err = stderr.get(host, [])
    with open(f"{out}/logs/{host}.err", "w", encoding="utf-8") as f:
        f.writelines(text + "\n" for kind, text in err if kind == "line")
    codes = [text for kind, text in err if kind == "exit"]
    with open(f"{out}/logs/{host}.exit", "w") as f:
        f.write((codes[-1] if codes else "0") + "\n")
EOF

# Name the hosts that sent nothing, merge the others (deploy/ssh/merge-gathered.sh, shared with
# probe-hosts.sh)
merge_gathered 1 "${hosts[@]}"
