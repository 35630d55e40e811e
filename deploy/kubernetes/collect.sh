#!/bin/bash
# Collect the snapshots of the topomap-probe DaemonSet and merge them (see topomap-probe.yaml).
#
#   deploy/kubernetes/collect.sh [OUT]      # OUT defaults to topomap-k8s-<date>
#
# Waits until every pod has probed (readiness), copies each pod's /out/snapshot.json to
# OUT/hosts/<node>.json (named by the Kubernetes node name, spec.nodeName), merges into
# OUT/cluster.json and deletes the DaemonSet (KEEP=1 keeps it). Every GPU node (label
# nvidia.com/gpu.present=true, the DaemonSet's nodeSelector) that sent nothing is named, with why:
# no pod, a pod not ready (a Pending pod is named by the node the DaemonSet meant it for), or a probe
# that failed. Exit status: 0 when every GPU node sent a snapshot; 1 when one sent nothing (the
# others are still merged). One node: cluster.json is its snapshot. Settings: KUBECTL (default
# "kubectl"), TOPOMAP (default "topomap"), WAIT (how long to wait for the pods, default 300s).
set -uo pipefail

KUBECTL=${KUBECTL:-kubectl}
TOPOMAP=${TOPOMAP:-topomap}
NS=topomap
LABEL=app.kubernetes.io/name=topomap-probe
GPU_NODES=nvidia.com/gpu.present=true
OUT=${1:-topomap-k8s-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/hosts" "$OUT/logs" || exit 2

# A node whose pod cannot start (fewer GPUs than the pod asks for, say) must not stop the others.
# shellcheck disable=SC2086  # KUBECTL and TOPOMAP may hold several words
$KUBECTL -n "$NS" rollout status daemonset/topomap-probe --timeout="${WAIT:-300s}" ||
    echo "topomap-collect: not every pod is ready; collecting from the ready ones" >&2
# shellcheck disable=SC2086
mapfile -t expected < <($KUBECTL get nodes -l "$GPU_NODES" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sed '/^$/d')
# '|'-separated: a Pending pod has no nodeName, and whitespace would shift the fields
# shellcheck disable=SC2086
pods=$($KUBECTL -n "$NS" get pods -l "$LABEL" -o jsonpath='{range .items[*]}{.metadata.name}|{.spec.nodeName}|{.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values[0]}|{.status.containerStatuses[0].ready}{"\n"}{end}')
args=()
missing=()
declare -A seen=()
while IFS='|' read -r pod node meant ready; do
    [ -n "$pod" ] || continue
    node=${node:-$meant}
    [ -n "$node" ] && seen[$node]=1
    if [ "$ready" != true ]; then
        echo "topomap-collect: no snapshot from ${node:-an unscheduled pod}: pod $pod not ready (kubectl -n $NS describe pod $pod)" >&2
        missing+=("${node:-$pod}")
        continue
    fi
    # shellcheck disable=SC2086
    $KUBECTL -n "$NS" exec "$pod" -- cat /out/snapshot.json >"$OUT/hosts/$node.json" 2>"$OUT/logs/$node.err"
    # shellcheck disable=SC2086
    $KUBECTL -n "$NS" exec "$pod" -- cat /out/probe.err >>"$OUT/logs/$node.err" 2>/dev/null
    # shellcheck disable=SC2086
    rc=$($KUBECTL -n "$NS" exec "$pod" -- cat /out/exit-status 2>/dev/null)
    why=""
    if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
        why="topomap exited ${rc:-(unknown)}"
    elif ! [ -s "$OUT/hosts/$node.json" ]; then
        why="empty snapshot"
    elif ! python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$OUT/hosts/$node.json" 2>/dev/null; then
        why="the snapshot is not whole JSON"
    fi
    if [ -n "$why" ]; then
        rm -f "$OUT/hosts/$node.json"
        last=$(sed '/^[[:space:]]*$/d' "$OUT/logs/$node.err" | tail -n 1)
        echo "topomap-collect: no snapshot from $node: $why${last:+: $last} (pod $pod; see $OUT/logs/$node.err)" >&2
        missing+=("$node")
        continue
    fi
    [ "$rc" = 0 ] || echo "topomap-collect: $node: the probe saw no GPU (exit 3, host-only snapshot; is the device plugin giving the pod its GPUs?)" >&2
    args+=("$node=$OUT/hosts/$node.json")
done <<<"$pods"
for node in "${expected[@]}"; do
    if [ -z "${seen[$node]:-}" ]; then
        echo "topomap-collect: no snapshot from $node: no topomap-probe pod on it (taints? kubectl -n $NS describe daemonset topomap-probe)" >&2
        missing+=("$node")
    fi
done
if [ "${KEEP:-0}" != 1 ]; then
    # shellcheck disable=SC2086
    $KUBECTL -n "$NS" delete daemonset topomap-probe --wait=false
fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "topomap-collect: ${#missing[@]} node(s) sent nothing: ${missing[*]}" >&2
fi
status=0
[ "${#missing[@]}" -eq 0 ] || status=1
if [ "${#args[@]}" -eq 0 ]; then
    echo "topomap-collect: no snapshot from any node" >&2
    exit 1
elif [ "${#args[@]}" -eq 1 ]; then
    # merge needs two hosts: cluster.json is the one node's snapshot, its host named by the node (not the pod)
    python3 -c 'import json, sys
snap = json.load(open(sys.argv[1], encoding="utf-8"))
snap["host"]["hostname"] = sys.argv[2]
print(json.dumps(snap, indent=2, ensure_ascii=False))' "${args[0]#*=}" "${args[0]%%=*}" >"$OUT/cluster.json.part" &&
        mv "$OUT/cluster.json.part" "$OUT/cluster.json" || exit 1
    echo "topomap-collect: one node: $OUT/cluster.json is the snapshot of ${args[0]%%=*}" >&2
else
    # shellcheck disable=SC2086
    $TOPOMAP merge "${args[@]}" -o "$OUT/cluster.json" || exit 1
fi
exit "$status"
