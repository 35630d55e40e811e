"""deploy/: the Kubernetes manifest is checked field by field; the Slurm recipe and the ssh loop
run for real against stub `srun` / `ssh` commands that run each "node" locally."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes import machines
from tests.fakes.sysfs import write_sysfs

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
TOPOMAP = f"{sys.executable} -m topomap"

STUB_SRUN = r"""#!/bin/bash
# stub srun: runs the step once per node of $STUB_NODES, here; %N in --output/--error is the node
echo "$*" >>"$STUB_LOG"
out="" err="" ntasks=""
while [ $# -gt 0 ]; do
    case "$1" in
        --output=*) out=${1#--output=} ;;
        --error=*) err=${1#--error=} ;;
        --ntasks-per-node=*) ntasks=${1#--ntasks-per-node=} ;;
        --*) ;;
        *) break ;;
    esac
    shift
done
[ "$ntasks" = 1 ] || { echo "stub srun: one task per node expected" >&2; exit 99; }
rc=0
for node in $STUB_NODES; do
    o=${out//%N/$node} e=${err//%N/$node}
    if [ "$node" = "${STUB_DOWN:-}" ]; then
        echo "srun: error: $node: task 0: Exited with exit code 1" >"$e"; : >"$o"; rc=1; continue
    fi
    SLURMD_NODENAME=$node "$@" >"$o" 2>"$e" || rc=$?
done
exit $rc
"""

STUB_SSH = r"""#!/bin/bash
# stub ssh: drops -o options, runs the remote command here
while [ "${1:-}" = "-o" ]; do shift 2; done
host=$1; shift
echo "$host" >>"$STUB_LOG"
if [ "$host" = "${STUB_DOWN:-}" ]; then echo "ssh: connect to host $host port 22: No route to host" >&2; exit 255; fi
exec bash -c "$*"
"""


STUB_KUBECTL = r"""#!/bin/bash
# stub kubectl: answers what collect.sh asks, from files under $STUB_DIR
echo "$*" >>"$STUB_LOG"
[ "$1" = "-n" ] && shift 2
case "$1" in
    rollout) exit "${STUB_ROLLOUT_RC:-0}" ;;
    get) cat "$STUB_DIR/pods.txt" ;;
    exec) pod=$2; shift 3; [ "$1" = cat ] || exit 1; f="$STUB_DIR/$pod/$(basename "$2")"
          [ -e "$f" ] || { echo "cat: $2: No such file or directory" >&2; exit 1; }; cat "$f" ;;
    delete) echo "daemonset.apps \"$3\" deleted" ;;
    *) echo "stub kubectl: unexpected $*" >&2; exit 1 ;;
esac
"""


def manifest() -> list[dict[str, Any]]:
    docs = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "topomap-probe.yaml").read_text()))
    return [d for d in docs if d]


def test_kubernetes_manifest_kinds_and_fields() -> None:
    docs = manifest()
    assert [(d["apiVersion"], d["kind"]) for d in docs] == [("v1", "Namespace"), ("apps/v1", "DaemonSet")]
    ns, ds = docs
    assert ds["metadata"]["namespace"] == ns["metadata"]["name"] == "topomap"
    spec = ds["spec"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()  # the selector selects the pods
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert pod["restartPolicy"] == "Always"  # the only policy a DaemonSet accepts
    (c,) = pod["containers"]
    gpus = c["resources"]["limits"]["nvidia.com/gpu"]
    assert isinstance(gpus, int) and gpus > 0  # extended resources are whole numbers, limits only
    assert (
        "nvidia.com/gpu" not in c["resources"].get("requests", {})
        or c["resources"]["requests"]["nvidia.com/gpu"] == gpus
    )
    script = " ".join(c["args"])
    assert "topomap probe -o /out/snapshot.json" in script and "/out/exit-status" in script
    assert c["readinessProbe"]["exec"]["command"] == ["test", "-s", "/out/exit-status"]
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts == {"out": "/out"} and [v["name"] for v in pod["volumes"]] == ["out"]
    assert {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"} in c["env"]


def test_kubernetes_collect_script_matches_the_manifest() -> None:
    ds = manifest()[1]
    text = (DEPLOY / "kubernetes" / "collect.sh").read_text()
    assert f"NS={ds['metadata']['namespace']}" in text
    label = next(iter(ds["spec"]["selector"]["matchLabels"].items()))
    assert f"-l {label[0]}={label[1]}" in text
    assert f"daemonset/{ds['metadata']['name']}" in text and "cat /out/snapshot.json" in text
    assert subprocess.run(["bash", "-n", str(DEPLOY / "kubernetes" / "collect.sh")], check=False).returncode == 0


def _stub(bin_dir: Path, name: str, text: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    p = bin_dir / name
    p.write_text(text)
    p.chmod(0o755)


@pytest.fixture(scope="module")
def sysfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("node-sysfs")
    write_sysfs(machines.a100_pcie(), root)
    return root


def _env(tmp_path: Path, sysfs: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "STUB_LOG": str(tmp_path / "stub.log"),
        "TOPOMAP": TOPOMAP,
        "TOPOMAP_LOCAL": TOPOMAP,
        "TOPOMAP_OUT": str(tmp_path / "out"),
        "TOPOMAP_PROBE_ARGS": f"--root {sysfs}",
        **extra,
    }


def test_slurm_recipe_probes_each_node_once_and_merges(tmp_path: Path, sysfs: Path) -> None:
    _stub(tmp_path / "bin", "srun", STUB_SRUN)
    env = _env(tmp_path, sysfs, SLURM_JOB_ID="4242", STUB_NODES="gpu-a gpu-b gpu-c", STUB_DOWN="gpu-c")
    script = DEPLOY / "slurm" / "probe-cluster.sbatch"
    r = subprocess.run(["bash", str(script)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    calls = (tmp_path / "stub.log").read_text().splitlines()
    assert len(calls) == 1 and "--ntasks-per-node=1" in calls[0] and re.search(r"probe -o - --root ", calls[0])
    out = tmp_path / "out"
    assert sorted(p.name for p in (out / "hosts").iterdir()) == ["gpu-a.json", "gpu-b.json", "gpu-c.json"]
    assert "no snapshot from: gpu-c" in r.stderr
    cluster = json.loads((out / "cluster.json").read_text())
    assert cluster["source"]["kind"] == "merge"
    assert [m["host"]["hostname"] for m in cluster["members"]] == ["gpu-a", "gpu-b"]  # Slurm's node names
    assert all(len(m["gpus"]) == 8 for m in cluster["members"])
    assert "wrote " in r.stderr and "2 hosts" in r.stderr


def test_ssh_loop_probes_each_host_and_merges(tmp_path: Path, sysfs: Path) -> None:
    _stub(tmp_path / "bin", "ssh", STUB_SSH)
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("# rack 1\nnode01\nnode02 slots=8\n\nnode03\n")
    env = _env(tmp_path, sysfs, STUB_DOWN="node02", PARALLEL="3")
    script = DEPLOY / "ssh" / "probe-hosts.sh"
    r = subprocess.run(
        ["bash", str(script), "-f", str(hosts)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    assert r.returncode == 0, r.stderr
    assert sorted((tmp_path / "stub.log").read_text().split()) == ["node01", "node02", "node03"]
    assert "topomap-probe: node02: exit status 255" in r.stderr and "no snapshot from node02" in r.stderr
    cluster = json.loads((tmp_path / "out" / "cluster.json").read_text())
    assert [m["host"]["hostname"] for m in cluster["members"]] == ["node01", "node03"]


def test_ssh_loop_needs_two_hosts(tmp_path: Path) -> None:
    r = subprocess.run(
        ["bash", str(DEPLOY / "ssh" / "probe-hosts.sh"), "only-one"], capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 2 and r.stderr.startswith("usage: ")


def test_kubernetes_collect_merges_the_ready_pods(tmp_path: Path) -> None:
    """Three GPU nodes: two pods probed, one still Pending (asks for more GPUs than its node has)."""
    _stub(tmp_path / "bin", "kubectl", STUB_KUBECTL)
    stub = tmp_path / "cluster"
    sample = (ROOT / "samples" / "snapshots" / "ibm-gx3d-h100-8gpu.json").read_bytes()
    for pod in ("topomap-probe-x1", "topomap-probe-x2"):
        (stub / pod).mkdir(parents=True)
        (stub / pod / "snapshot.json").write_bytes(sample)
    (stub / "topomap-probe-x2" / "probe.err").write_text("wrote /out/snapshot.json: 8 GPU(s)\n")
    (stub / "pods.txt").write_text(
        "topomap-probe-x1 gpu-node-1 true\ntopomap-probe-x2 gpu-node-2 true\ntopomap-probe-x3  \n"
    )
    env = {
        **os.environ,
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "STUB_LOG": str(tmp_path / "stub.log"),
        "STUB_DIR": str(stub),
        "STUB_ROLLOUT_RC": "1",
        "TOPOMAP": TOPOMAP,
    }
    out = tmp_path / "out"
    r = subprocess.run(
        ["bash", str(DEPLOY / "kubernetes" / "collect.sh"), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "not every pod is ready" in r.stderr
    assert "no snapshot from an unscheduled pod (pod topomap-probe-x3 not ready)" in r.stderr
    cluster = json.loads((out / "cluster.json").read_text())
    assert [m["host"]["hostname"] for m in cluster["members"]] == ["gpu-node-1", "gpu-node-2"]
    assert (out / "logs" / "gpu-node-2.err").read_text() == "wrote /out/snapshot.json: 8 GPU(s)\n"
    calls = (tmp_path / "stub.log").read_text().splitlines()
    assert calls[-1] == "-n topomap delete daemonset topomap-probe --wait=false"
