"""deploy/slurm/probe-cluster.sbatch on a real Slurm (Debian's slurmctld/slurmd/munge, see
tests/slurm/cluster.py): three nodes on this machine, each with its own host name (compute.rackN,
never its Slurm name), node3 unable to see the folder jobs are submitted from. The real
`topomap probe` runs on every node; with no GPU here it exits 3 with a host-only snapshot, which
the recipe keeps (the CLI's contract). Four jobs run side by side to keep the test short."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.slurm import cluster as slurm

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "deploy" / "slurm" / "probe-cluster.sbatch"


@pytest.fixture(scope="module")
def real_slurm() -> Iterator[slurm.Cluster]:
    why = slurm.unavailable()
    if why:
        pytest.skip(why)
    missing = slurm.missing_binaries()
    if missing:
        pytest.fail(f"no {', '.join(missing)}: {slurm.APT}")
    base = Path(tempfile.mkdtemp(prefix="tm-slurm-", dir="/tmp"))  # short: munge's socket path is limited
    c = slurm.start(base)
    try:
        yield c
    finally:
        c.stop()
        subprocess.run(["rm", "-rf", "--one-file-system", str(base)], check=False, timeout=30)


def _submit(c: slurm.Cluster, name: str, nodes: list[str], topomap: str) -> tuple[subprocess.Popen[str], Path]:
    work = c.hidden / name  # node3 does not see this folder
    work.mkdir()
    env = {**c.env, "TOPOMAP": topomap, "TOPOMAP_OUT": str(work / "out"), "PYTHONPATH": str(ROOT)}
    cmd = [
        "sbatch",
        "--wait",
        f"--nodes={len(nodes)}",
        f"--nodelist={','.join(nodes)}",
        "--exclusive=user",  # the recipe asks for --exclusive; the test's four jobs share the nodes
        f"--chdir={work}",
        f"--output={work}/job.log",
        "--time=2",
        str(RECIPE),
    ]
    return subprocess.Popen(cmd, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), work


@pytest.fixture(scope="module")
def jobs(real_slurm: slurm.Cluster) -> dict[str, tuple[int, Path, str]]:
    """Four jobs at once; each: (sbatch --wait exit status, its folder, its log)."""
    topomap = f"{sys.executable} -m topomap"
    c = real_slurm
    wrapper = c.hidden / "bin" / "topomap"  # only where the submit folder is seen: not on node3
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {topomap} "$@"\n')
    wrapper.chmod(0o755)
    runs = {
        "two": _submit(c, "two", ["node1", "node3"], topomap),
        "three": _submit(c, "three", ["node1", "node2", "node3"], topomap),
        "lost": _submit(c, "lost", ["node1", "node2", "node3"], str(wrapper)),
        "one": _submit(c, "one", ["node2"], topomap),
    }
    out: dict[str, tuple[int, Path, str]] = {}
    for name, (proc, work) in runs.items():
        try:
            said, _ = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            said, _ = proc.communicate()
        log = (work / "job.log").read_text() if (work / "job.log").exists() else "(no job log)"
        out[name] = (
            proc.returncode,
            work,
            f"sbatch: {said}\njob log:\n{log}\nslurmctld:\n{c.log('slurmctld.log')[-2000:]}",
        )
    return out


def _hosts(path: Path) -> list[str]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return [m["host"]["hostname"] for m in doc["members"]]


def test_three_nodes_without_a_shared_folder_merge_under_their_slurm_names(jobs: dict) -> None:
    rc, work, log = jobs["three"]
    assert rc == 0, log
    assert _hosts(work / "out" / "cluster.json") == ["node1", "node2", "node3"], log
    assert "no snapshot" not in log and "wrote " in log and "3 hosts" in log
    # each snapshot came from its node's own UTS namespace: the probe saw compute.rackN, not the Slurm name
    seen = {
        n: json.loads((work / "out" / "hosts" / f"{n}.json").read_text())["host"]["hostname"]
        for n in ("node1", "node2", "node3")
    }
    assert seen == {"node1": "compute.rack1", "node2": "compute.rack2", "node3": "compute.rack3"}
    # node3 never saw the folder: its step started elsewhere, and still sent its snapshot
    assert "couldn't chdir" in (work / "out" / "logs" / "node3.err").read_text()
    assert not (work / "out" / "logs" / "node1.err").read_text().count("chdir")


def test_two_nodes(jobs: dict) -> None:
    rc, work, log = jobs["two"]
    assert rc == 0, log
    assert _hosts(work / "out" / "cluster.json") == ["node1", "node3"], log
    assert sorted(p.name for p in (work / "out" / "hosts").iterdir()) == ["node1.json", "node3.json"]


def test_a_node_that_sends_nothing_is_named_and_the_others_are_merged(jobs: dict) -> None:
    rc, work, log = jobs["lost"]
    assert rc == 1, log  # the job fails: a node is missing
    (line,) = [x for x in log.splitlines() if x.startswith("topomap-probe: no snapshot from node3: ")]
    # why, in the node's own words: the wrapper lies in the folder node3 cannot see
    assert line.startswith("topomap-probe: no snapshot from node3: topomap exited 127: "), line
    assert f"{work.parent}/bin/topomap: No such file or directory" in line, line
    assert "1 of 3 node(s) sent nothing: node3" in log
    assert "no snapshot from node1" not in log and "no snapshot from node2" not in log
    assert _hosts(work / "out" / "cluster.json") == ["node1", "node2"]
    assert not (work / "out" / "hosts" / "node3.json").exists()


def test_one_node_keeps_its_snapshot_and_succeeds(jobs: dict) -> None:
    rc, work, log = jobs["one"]
    assert rc == 0, log
    snap = json.loads((work / "out" / "cluster.json").read_text())
    assert snap["source"]["kind"] == "probe" and snap["host"]["hostname"] == "node2"
    assert "one node: " in log and "is the snapshot of node2" in log
