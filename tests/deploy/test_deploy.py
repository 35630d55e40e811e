"""deploy/: the Kubernetes manifest is validated against the API schemas and checked field by field;
collect.sh and the ssh loop run for real against stub `kubectl` / `ssh` commands that answer
locally. The Slurm recipe runs on a real Slurm: tests/deploy/test_deploy_slurm.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes import machines
from tests.fakes.sysfs import write_sysfs

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
TOPOMAP = f"{sys.executable} -m topomap"

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
    get) cat "$STUB_DIR/$2.txt" ;;
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
    assert f"LABEL={label[0]}={label[1]}" in text and '-l "$LABEL"' in text
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
        # the checkout's topomap wherever the stub runs it (an uninstalled worktree too)
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        **extra,
    }


def test_ssh_loop_probes_each_host_and_merges(tmp_path: Path, sysfs: Path) -> None:
    _stub(tmp_path / "bin", "ssh", STUB_SSH)
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("# rack 1\nnode01\nnode02 slots=8\n\nnode03\n")
    env = _env(tmp_path, sysfs, STUB_DOWN="node02", PARALLEL="3")
    script = DEPLOY / "ssh" / "probe-hosts.sh"
    r = subprocess.run(
        ["bash", str(script), "-f", str(hosts)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    assert r.returncode == 1, r.stderr  # a host sent nothing; the others are merged all the same
    assert sorted((tmp_path / "stub.log").read_text().split()) == ["node01", "node02", "node03"]
    assert "topomap-probe: node02: exit status 255" in r.stderr
    assert "no snapshot from node02: ssh: connect to host node02 port 22: No route to host" in r.stderr
    assert "1 of 3 host(s) sent nothing: node02" in r.stderr
    cluster = json.loads((tmp_path / "out" / "cluster.json").read_text())
    assert [m["host"]["hostname"] for m in cluster["members"]] == ["node01", "node03"]


def test_ssh_loop_needs_two_hosts(tmp_path: Path) -> None:
    r = subprocess.run(
        ["bash", str(DEPLOY / "ssh" / "probe-hosts.sh"), "only-one"], capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 2 and r.stderr.startswith("usage: ")


def _collect(
    tmp_path: Path, nodes: str, pods: str, files: dict[str, dict[str, bytes]]
) -> tuple[subprocess.CompletedProcess[str], Path]:
    _stub(tmp_path / "bin", "kubectl", STUB_KUBECTL)
    stub = tmp_path / "cluster"
    stub.mkdir()
    for pod, named in files.items():
        (stub / pod).mkdir()
        for name, data in named.items():
            (stub / pod / name).write_bytes(data)
    (stub / "nodes.txt").write_text(nodes)
    (stub / "pods.txt").write_text(pods)
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
    return r, out


SAMPLE = ROOT / "samples" / "snapshots" / "ibm-gx3d-h100-8gpu.json"


def test_kubernetes_collect_names_every_gpu_node_that_sent_nothing(tmp_path: Path) -> None:
    """Five GPU nodes: two pods probed; one Pending (more GPUs asked than the node has), named by the
    node its DaemonSet affinity meant; one whose probe failed; one node with no pod at all."""
    sample = SAMPLE.read_bytes()
    files = {
        "topomap-probe-x1": {"snapshot.json": sample, "exit-status": b"0\n"},
        "topomap-probe-x2": {
            "snapshot.json": sample,
            "exit-status": b"0\n",
            "probe.err": b"wrote /out/snapshot.json: 8 GPU(s)\n",
        },
        "topomap-probe-x4": {
            "exit-status": b"1\n",
            "probe.err": b"topomap: /out/snapshot.json: cannot write (No space left on device)\n",
        },
    }
    r, out = _collect(
        tmp_path,
        "gpu-node-1\ngpu-node-2\ngpu-node-3\ngpu-node-4\ngpu-node-5\n",
        "topomap-probe-x1|gpu-node-1|gpu-node-1|true\ntopomap-probe-x2|gpu-node-2|gpu-node-2|true\n"
        "topomap-probe-x3||gpu-node-3|\ntopomap-probe-x4|gpu-node-4|gpu-node-4|true\n",
        files,
    )
    assert r.returncode == 1, r.stderr  # nodes are missing; the others are still merged
    assert "not every pod is ready" in r.stderr
    assert "no snapshot from gpu-node-3: pod topomap-probe-x3 not ready" in r.stderr
    assert (
        "no snapshot from gpu-node-4: topomap exited 1: "
        "topomap: /out/snapshot.json: cannot write (No space left on device)" in r.stderr
    )
    assert "no snapshot from gpu-node-5: no topomap-probe pod on it" in r.stderr
    assert "3 node(s) sent nothing: gpu-node-3 gpu-node-4 gpu-node-5" in r.stderr
    cluster = json.loads((out / "cluster.json").read_text())
    assert [m["host"]["hostname"] for m in cluster["members"]] == ["gpu-node-1", "gpu-node-2"]
    assert (out / "logs" / "gpu-node-2.err").read_text() == "wrote /out/snapshot.json: 8 GPU(s)\n"
    assert not (out / "hosts" / "gpu-node-4.json").exists()
    calls = (tmp_path / "stub.log").read_text().splitlines()
    assert "get nodes -l nvidia.com/gpu.present=true" in calls[1]
    assert calls[-1] == "-n topomap delete daemonset topomap-probe --wait=false"


def test_kubernetes_collect_one_node_and_a_host_only_probe(tmp_path: Path) -> None:
    host_only = json.dumps({**json.loads(SAMPLE.read_text()), "gpus": []}).encode()
    r, out = _collect(
        tmp_path,
        "gpu-node-1\n",
        "topomap-probe-x1|gpu-node-1|gpu-node-1|true\n",
        {"topomap-probe-x1": {"snapshot.json": host_only, "exit-status": b"3\n"}},
    )
    assert r.returncode == 0, r.stderr
    assert "gpu-node-1: the probe saw no GPU (exit 3" in r.stderr
    assert "one node: " in r.stderr
    snap = json.loads((out / "cluster.json").read_text())
    assert snap["host"]["hostname"] == "gpu-node-1" and snap["gpus"] == []  # the node's name, not the pod's


def test_kubernetes_manifest_validates_against_the_api_schemas() -> None:
    """Offline, against the real Kubernetes OpenAPI schemas (kubernetes-validate bundles them), strict:
    an unknown field is an error. A broken copy must fail, so the check can fail."""
    import kubernetes_validate as kv  # optional test dependency (pyproject's test extra)

    version = kv.latest_version()
    for doc in manifest():
        kv.validate(doc, version, strict=True)
    broken = manifest()[1]
    broken["spec"]["template"]["spec"]["containers"][0]["resources"]["limit"] = {"nvidia.com/gpu": 8}
    with pytest.raises(kv.ValidationError, match="'limit' was unexpected"):
        kv.validate(broken, version, strict=True)
    broken = manifest()[1]
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["periodSeconds"] = "2"
    with pytest.raises(kv.ValidationError):
        kv.validate(broken, version, strict=True)


def test_kubernetes_manifest_what_schemas_cannot_catch() -> None:
    ds = manifest()[1]
    spec = ds["spec"]
    pod = spec["template"]["spec"]
    # the selector selects the template's pods (else the API server refuses the DaemonSet)
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    # the probe sees the GPUs: through the device plugin or the NVIDIA runtime's environment
    (c,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    gpus = c["resources"].get("limits", {}).get("nvidia.com/gpu")
    assert (isinstance(gpus, int) and gpus > 0) or env.get("NVIDIA_VISIBLE_DEVICES") == "all"
    assert (
        "utility" in env["NVIDIA_DRIVER_CAPABILITIES"] and "compute" in env["NVIDIA_DRIVER_CAPABILITIES"]
    )  # NVML, CUDA
    # collect.sh's notion of a GPU node is the DaemonSet's nodeSelector, and it lists that label's nodes
    text = (DEPLOY / "kubernetes" / "collect.sh").read_text()
    ((key, value),) = pod["nodeSelector"].items()
    assert f"GPU_NODES={key}={value}" in text
    ((lk, lv),) = spec["selector"]["matchLabels"].items()
    assert f"LABEL={lk}={lv}" in text


def test_the_ssh_and_pdsh_recipes_share_one_gather_and_merge(tmp_path: Path) -> None:
    """Both ssh recipes named the hosts that sent nothing and merged the rest with the same loop,
    copied; it lives once in deploy/ssh/merge-gathered.sh, which both source. Run on its own here:
    two real snapshots (samples/), one host whose probe failed, one whose output is not JSON."""
    helper = DEPLOY / "ssh" / "merge-gathered.sh"
    for name in ("probe-hosts.sh", "probe-pdsh.sh"):
        text = (DEPLOY / "ssh" / name).read_text()
        assert '. "$(dirname "${BASH_SOURCE[0]}")/merge-gathered.sh"' in text and "merge_gathered " in text
        assert "A host counts" not in text and "merge needs two or more" not in text
    out = tmp_path / "out"
    (out / "hosts").mkdir(parents=True)
    (out / "logs").mkdir()
    snaps = ROOT / "samples" / "snapshots"
    for h, rc, data, err in (
        ("a", 0, (snaps / "ibm-gx3d-h100-8gpu.json").read_text(), ""),
        ("b", 0, (snaps / "hgx-h200-8gpu-10nic.json").read_text(), ""),
        ("c", 255, "", "ssh: connect to host c port 22: No route to host\n"),
        ("d", 0, '{"cut', ""),
    ):
        (out / "hosts" / f"{h}.json").write_text(data)
        (out / "logs" / f"{h}.err").write_text(err)
        (out / "logs" / f"{h}.exit").write_text(f"{rc}\n")
    env = {
        **os.environ,
        "OUT": str(out),
        "TOPOMAP_LOCAL": f"{sys.executable} -m topomap",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    r = subprocess.run(
        ["bash", "-c", f'. "{helper}"; merge_gathered 1 a b c d'], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 1, r.stderr
    assert "topomap-probe: no snapshot from c (exit status 255): ssh: connect to host c port 22" in r.stderr
    assert "topomap-probe: no snapshot from d (exit status 0)" in r.stderr
    assert "topomap-probe: 2 of 4 host(s) sent nothing: c d" in r.stderr
    cluster = json.loads((out / "cluster.json").read_text())
    assert [m["host"]["hostname"] for m in cluster["members"]] == ["a", "b"]
    assert not (out / "hosts" / "d.json").exists()
