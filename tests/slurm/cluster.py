"""A real Slurm on this machine for the deploy tests: munge, slurmctld and N slurmd, no systemd.

Each slurmd runs in its own UTS namespace with a host name that is *not* its Slurm node name
(``compute.rackN``: the same short name "compute" everywhere), so a recipe that names nodes by
host name collides; the last node also runs in a mount namespace where a tmpfs hides ``hidden``
(the folder jobs are submitted from), like a node without the batch host's file system. All
daemons listen on 127.0.0.1 on free ports and keep every file under ``base``; only the processes
started here are stopped, by their PIDs (``stop``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

BINARIES = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "scontrol", "srun", "sinfo", "scancel", "unshare")
APT = "apt-get install -y slurmctld slurmd slurm-client munge (scripts/install-test-deps.sh does it)"


def unavailable() -> str | None:
    """Why a real Slurm cannot run here (not root, no namespaces); None when it can."""
    if os.geteuid() != 0:
        return "a real Slurm needs root (slurmd, namespaces): run the tests as root, as CI does"
    if shutil.which("unshare") is None:
        return "no unshare(1) (util-linux): cannot give each slurmd its own host name"
    probe = subprocess.run(
        ["unshare", "--uts", "--mount", "true"], capture_output=True, text=True, timeout=10, check=False
    )
    if probe.returncode != 0:
        return f"UTS/mount namespaces unavailable: {probe.stderr.strip() or probe.returncode}"
    return None


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _which(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


@dataclass
class Cluster:
    base: Path
    hidden: Path
    nodes: list[str]
    conf: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def log(self, name: str) -> str:
        p = self.base / "log" / name
        return p.read_text(errors="replace") if p.exists() else f"({p} not written)"

    def stop(self) -> None:
        """Cancel this cluster's jobs, then stop the daemons started here, by PID."""
        if self.procs:
            subprocess.run(["scancel", "--user=root"], env=self.env, capture_output=True, timeout=10, check=False)
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 5
        for p in reversed(self.procs):
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        self.procs.clear()


def _slurm_conf(c: Cluster, ports: list[int], cpus: int) -> str:
    b = c.base
    lines = [
        "ClusterName=topomaptest",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={ports[0]}",
        f"SlurmdPort={ports[1]}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={b}/munge/socket",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={b}/state",
        f"SlurmdSpoolDir={b}/spool/%n",
        f"SlurmctldPidFile={b}/run/slurmctld.pid",
        f"SlurmdPidFile={b}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={b}/log/slurmctld.log",
        f"SlurmdLogFile={b}/log/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SlurmdParameters=config_overrides",  # more CPUs than this machine has: jobs run side by side
        "ReturnToService=2",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "MailProg=/bin/true",
        "SchedulerParameters=sched_interval=1",
    ]
    for i, node in enumerate(c.nodes):
        lines.append(f"NodeName={node} NodeAddr=127.0.0.1 Port={ports[2 + i]} CPUs={cpus} RealMemory=1")
    lines.append(f"PartitionName=debug Nodes={','.join(c.nodes)} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def start(base: Path, nodes: int = 3, cpus: int = 4, timeout_s: float = 20) -> Cluster:
    """munge + slurmctld + ``nodes`` slurmd, every node idle; on failure everything started is stopped."""
    c = Cluster(
        base=base, hidden=base / "submit", nodes=[f"node{i + 1}" for i in range(nodes)], conf=base / "slurm.conf"
    )
    for d in ("munge", "state", "run", "log", "submit", *(f"spool/{n}" for n in c.nodes)):
        (base / d).mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    (base / "munge").chmod(0o755)  # munged wants its socket folder open to all (x), the key private
    c.conf.write_text(_slurm_conf(c, _free_ports(2 + nodes), cpus))
    key = base / "munge" / "munge.key"
    subprocess.run([_which("mungekey"), "--create", f"--keyfile={key}"], check=True, capture_output=True, timeout=10)
    try:
        _spawn(
            c,
            "munged",
            [
                _which("munged"),
                "--foreground",
                "--force",
                f"--key-file={key}",
                f"--socket={base}/munge/socket",
                f"--log-file={base}/log/munged.log",
                f"--pid-file={base}/run/munged.pid",
                f"--seed-file={base}/munge/seed",
            ],
        )
        _wait(lambda: (base / "munge" / "socket").exists(), 5, "munged socket", c, "munged.out")
        _spawn(c, "slurmctld", [_which("slurmctld"), "-D", "-i", "-f", str(c.conf)])
        for i, node in enumerate(c.nodes):
            slurmd = f"exec {_which('slurmd')} -D -N {node} -f {c.conf}"
            if i == len(c.nodes) - 1:  # this node does not see the submit folder
                cmd = [
                    "unshare",
                    "--uts",
                    "--mount",
                    "--propagation",
                    "private",
                    "sh",
                    "-ec",
                    f"hostname compute.rack{i + 1}; mount -t tmpfs -o size=1m hidden {c.hidden}; {slurmd}",
                ]
            else:
                cmd = ["unshare", "--uts", "sh", "-ec", f"hostname compute.rack{i + 1}; {slurmd}"]
            _spawn(c, f"slurmd-{node}", cmd)
        _wait(lambda: _all_idle(c), timeout_s, "every node idle", c, "slurmctld.log")
    except BaseException:
        c.stop()
        raise
    return c


def _spawn(c: Cluster, name: str, cmd: list[str]) -> None:
    out = (c.base / "log" / f"{name}.out").open("wb")
    with out:
        c.procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=c.env, cwd=c.base))


def _all_idle(c: Cluster) -> bool:
    for p in c.procs:
        if p.poll() is not None:
            raise RuntimeError(f"{p.args!r} exited with {p.returncode}")
    r = subprocess.run(
        ["sinfo", "-h", "-N", "-o", "%N %t"], env=c.env, capture_output=True, text=True, timeout=10, check=False
    )
    states = dict(line.split() for line in r.stdout.splitlines() if line.strip())
    return r.returncode == 0 and all(states.get(n) == "idle" for n in c.nodes)


def _wait(ready: object, timeout_s: float, what: str, c: Cluster, log: str) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if ready():  # type: ignore[operator]
                return
        except RuntimeError as err:
            raise RuntimeError(f"{err}; {log}:\n{c.log(log)[-3000:]}") from None
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not after {timeout_s:g} s; {log}:\n{c.log(log)[-3000:]}")
        time.sleep(0.05)
