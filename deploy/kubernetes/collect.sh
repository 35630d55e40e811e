#!/bin/bash
# Collect the snapshots of the topomap-probe DaemonSet and merge them (see topomap-probe.yaml).
#
#   deploy/kubernetes/collect.sh [OUT]      # OUT defaults to topomap-k8s-<date>
#
# Waits until every pod has probed (readiness), copies each pod's /out/snapshot.json to
# OUT/hosts/<node>.json (named by the Kubernetes node), merges into OUT/cluster.json and deletes
# the DaemonSet (KEEP=1 keeps it). Settings: KUBECTL (default "kubectl"), TOPOMAP (default
# "topomap"), WAIT (how long to wait for the pods, default 300s).
set -uo pipefail

KUBECTL=${KUBECTL:-kubectl}
TOPOMAP=${TOPOMAP:-topomap}
NS=topomap
OUT=${1:-topomap-k8s-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/hosts" "$OUT/logs"

# A node whose pod cannot start (fewer GPUs than the pod asks for, say) must not stop the others.
# shellcheck disable=SC2086
$KUBECTL -n "$NS" rollout status daemonset/topomap-probe --timeout="${WAIT:-300s}" ||
    echo "topomap-collect: not every pod is ready; collecting from the ready ones" >&2
# shellcheck disable=SC2086
pods=$($KUBECTL -n "$NS" get pods -l app.kubernetes.io/name=topomap-probe \
    -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.containerStatuses[0].ready}{"\n"}{end}')
args=()
while read -r pod node ready; do
    [ -n "$pod" ] || continue
    if [ "$ready" != true ]; then
        echo "topomap-collect: no snapshot from ${node:-an unscheduled pod} (pod $pod not ready)" >&2
        continue
    fi
    # shellcheck disable=SC2086
    $KUBECTL -n "$NS" exec "$pod" -- cat /out/snapshot.json >"$OUT/hosts/$node.json" 2>"$OUT/logs/$node.err"
    # shellcheck disable=SC2086
    $KUBECTL -n "$NS" exec "$pod" -- cat /out/probe.err >>"$OUT/logs/$node.err" 2>/dev/null
    if [ -s "$OUT/hosts/$node.json" ]; then
        args+=("$node=$OUT/hosts/$node.json")
    else
        echo "topomap-collect: no snapshot from $node (pod $pod; see $OUT/logs/$node.err)" >&2
    fi
done <<<"$pods"
if [ "${KEEP:-0}" != 1 ]; then
    # shellcheck disable=SC2086
    $KUBECTL -n "$NS" delete daemonset topomap-probe --wait=false
fi
if [ "${#args[@]}" -lt 2 ]; then
    echo "topomap-collect: ${#args[@]} snapshot(s); merge needs two or more" >&2
    exit 1
fi
# shellcheck disable=SC2086
$TOPOMAP merge "${args[@]}" -o "$OUT/cluster.json"
