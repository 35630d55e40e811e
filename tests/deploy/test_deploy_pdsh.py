"""deploy/ssh/probe-pdsh.sh on the real pdsh (Debian's `pdsh`, installed by .ci/run): its `exec`
module runs each host's command here with %h replaced by the host's name, so the recipe's gather
through pdsh's labelled output, its naming by %h and its list of hosts that sent nothing run on
the real tool. Each "host" is a stub that, like `ssh HOST`, runs the real `topomap probe` here
(on a fake sysfs tree: a host-only snapshot, exit 3), or fails as an unreachable host does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.deploy.test_deploy import DEPLOY, ROOT, TOPOMAP
from tests.fakes import machines
from tests.fakes.sysfs import write_sysfs

pytestmark = pytest.mark.skipif(shutil.which("pdsh") is None, reason="pdsh not installed (apt-get install pdsh)")

# stub "ssh %h": logs the host, fails for STUB_DOWN (as ssh does) and cuts STUB_CUT's output short
STUB_NODE = r"""#!/bin/bash
host=$1; shift
echo "$host" >>"$STUB_LOG"
if [ "$host" = "${STUB_DOWN:-}" ]; then echo "ssh: connect to host $host port 22: No route to host" >&2; exit 255; fi
if [ "$host" = "${STUB_CUT:-}" ]; then "$@" | head -c 300; exit 0; fi
exec "$@"
"""


def _run(tmp_path: Path, hosts: str, **extra: str) -> subprocess.CompletedProcess[str]:
    sysfs = tmp_path / "sysfs"
    write_sysfs(machines.a100_pcie(), sysfs)
    node = tmp_path / "fake-node"
    node.write_text(STUB_NODE)
    node.chmod(0o755)
    env = {
        **os.environ,
        "PDSH": "pdsh -R exec",
        "TOPOMAP": f"{node} %h {TOPOMAP}",
        "TOPOMAP_LOCAL": TOPOMAP,
        "TOPOMAP_OUT": str(tmp_path / "out"),
        "TOPOMAP_PROBE_ARGS": f"--root {sysfs}",
        "STUB_LOG": str(tmp_path / "stub.log"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        **extra,
    }
    return subprocess.run(
        ["bash", str(DEPLOY / "ssh" / "probe-pdsh.sh"), hosts],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _members(tmp_path: Path) -> list[str]:
    cluster = json.loads((tmp_path / "out" / "cluster.json").read_text())
    return [m["host"]["hostname"] for m in cluster["members"]]


def test_pdsh_gathers_every_host_named_by_pdsh(tmp_path: Path) -> None:
    r = _run(tmp_path, "node[1-3]")
    assert r.returncode == 0, r.stderr
    assert sorted((tmp_path / "stub.log").read_text().split()) == ["node1", "node2", "node3"]
    assert _members(tmp_path) == ["node1", "node2", "node3"]  # %h, not the machine's own host name
    assert "wrote " in r.stderr and "3 hosts" in r.stderr


def test_pdsh_names_hosts_that_sent_nothing(tmp_path: Path) -> None:
    """node2 cannot be reached (pdsh: exit code 255), node4's output is cut short: both named, with
    why; the other two merged all the same, exit 1."""
    r = _run(tmp_path, "node[1-4]", STUB_DOWN="node2", STUB_CUT="node4")
    assert r.returncode == 1, r.stderr
    assert "no snapshot from node2 (exit status 255): ssh: connect to host node2 port 22: No route to host" in r.stderr
    assert "no snapshot from node4 (exit status 0)" in r.stderr
    assert "2 of 4 host(s) sent nothing: node2 node4" in r.stderr
    assert _members(tmp_path) == ["node1", "node3"]


def test_pdsh_needs_two_hosts(tmp_path: Path) -> None:
    r = subprocess.run(
        ["bash", str(DEPLOY / "ssh" / "probe-pdsh.sh"), "only-one"], capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 2 and "names 1 host(s); two or more are needed" in r.stderr


def test_a_cut_hosts_last_line_does_not_swallow_the_next_hosts_line(tmp_path: Path) -> None:
    """A host whose output is cut leaves its last line without a newline, and pdsh writes the next
    host's labelled line straight after it (seen once under load in CI: node1's snapshot lost a line
    to node4's cut one). The recipe's gather splits at the other host's label."""
    script = (DEPLOY / "ssh" / "probe-pdsh.sh").read_text()
    gather = script.split("<<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    out = tmp_path / "out"
    (out / "hosts").mkdir(parents=True)
    (out / "logs").mkdir()
    snap = '{\n  "a": "node1: not a label inside a string",\n  "b": 1\n}'
    lines = [f"node1: {x}" for x in snap.split("\n")]
    glued = 'node4: {"cut here' + lines[1]  # node4's partial line, then node1's second line
    (out / "pdsh.out").write_text("\n".join([lines[0], glued, *lines[2:]]) + "\n")
    (out / "pdsh.err").write_text("")
    r = subprocess.run(["python3", "-", str(out), "node1", "node4"], input=gather, text=True, capture_output=True)
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "hosts" / "node1.json").read_text()) == json.loads(snap)
    assert (out / "hosts" / "node4.json").read_text() == '{"cut here\n'
