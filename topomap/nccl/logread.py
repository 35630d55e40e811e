"""Read an NCCL INFO log (NCCL 2.9 and later, and older channel lines): channel lines, version,
"set by environment" lines, communicator init lines, NCCL's topology dump — through launcher
prefixes (``[1,0]<stdout>:``, ``[rank0]:``, Ray's ``(Worker pid=…)``, timestamps), host names and
pids, and lines that name no host at all. nccl-tests' "Using devices" lines give each rank's host,
pid and bus; NCCL's ``nNodes``/``localRanks`` line and ``NCCL_HOSTID`` say which ranks NCCL counts
on one host. A truncated line is skipped and counted; a log with nothing usable is an error.
"""

from __future__ import annotations

import re
from collections import Counter

from topomap.base.errors import TopomapError
from topomap.importers.nccl_log import (
    CPU_LINE,
    CPU_VENDORS,
    INFO_LINE,
    LINE_HEAD,
    TREE_LINK,
    net_dev,
    short_bus,
    unended,
)
from topomap.nccl.logdata import UNNAMED, Hop, NcclLog, RankInfo, transport_of
from topomap.nccl.loghosts import fill_ranks
from topomap.transport.rules import NcclEnv, version_tuple

__all__ = ["UNNAMED", "Hop", "NcclLog", "RankInfo", "read_log", "short_bus", "transport_of", "transports_seen"]

_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\[rank\d+\]:|\S+?\s*\|\s*|\d+:\s)")
_CHANNEL = re.compile(
    r"^(?:(?:Channel|Ring) (?P<ch>\d+)(?:/\d+)? : )?(?P<src>\d+)(?:\[(?P<sdev>[0-9a-fA-F]+)\])? -> "
    r"(?P<dst>\d+)(?:\[(?P<ddev>[0-9a-fA-F]+)\])?(?: \[(?P<dir>send|receive)\])? "
    r"via (?P<via>\S(?:.*\S)?)\s*$"  # greedy to the last non-blank: `\S.*?)\s*$` was quadratic in a blank run
)
#: RCCL ends a channel line with its communicator ("via P2P/direct pointer comm 0x588ff82696e0 nRanks 04",
#: transport.cc): not part of the transport, and different on every rank
_RCCL_COMM = re.compile(r" comm 0x[0-9a-fA-F]+ nRanks \d+$")
#: NCCL's ring listing ("Ring 00 : 1 -> 0 -> 1"), not a connection: read nothing from it
_RING_LIST = re.compile(r"^Ring \d+ : -?\d+ -> -?\d+ -> -?\d+\s*$")
#: a line with "NCCL INFO" but no ``host:pid:tid [dev]`` before it (pasted without prefixes,
#: timestamps instead of the host, ``[0]<stdout>[0]``): its host and pid are not known
_BARE_LINE = re.compile(r"(?:^|[\s\]])(?:\[(?P<dev>\d+)\] ?)?NCCL INFO (?P<msg>.*)$")
#: nccl-tests: "#  Rank  1 Group  0 Pid  34424 on  n014 device  0 [0000:81:00] NVIDIA A100-PCIE-40GB"
_TESTS_RANK = re.compile(
    r"^#\s+Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)\s+device\s+(?P<dev>\d+)"
    r"\s+\[(?:[0-9a-fA-F]{4}:)?(?:0x)?(?P<bus>[0-9a-fA-F]{1,2})(?::(?P<devfn>[0-9a-fA-F]{2}))?\]"
    r"(?:\s+(?P<name>\S(?:.*\S)?))?\s*$"
)
#: "comm 0x… rank 0 nRanks 3 nNodes 3 localRanks 1 localRank 0 MNNVL 0" (2.19 and later)
_NODES = re.compile(r"rank (?P<rank>\d+) nRanks (?P<n>\d+) nNodes (?P<nodes>\d+) localRanks (?P<local>\d+)")
#: Ray's log deduplication appends " [repeated 14x across cluster]" to a line; searched in the line with
#: its end blanks stripped, from the literal "[" (a leading `\s*` was tried at every blank of a run:
#: quadratic, issue 36 item 6), the blanks before it stripped after
_RAY_REPEAT = re.compile(r"\[repeated \d+x across cluster\]$")
#: NCCL 2.0-2.3: "host:pid:tid [dev] INFO 0 -> 1 via direct shared memory" (no "NCCL", no channel number)
_OLD_INFO = re.compile(LINE_HEAD + r"INFO (?P<msg>\d+(?:\[[0-9a-fA-F]+\])? -> .*)$")
#: a channel line pasted alone: "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA"
_LONE_HOP = re.compile(r"^(?P<msg>(?:(?:Channel|Ring) \d+(?:/\d+)? : )?\d+(?:\[[0-9a-fA-F]+\])? -> \d+.* via \S.*)$")
_HOP_START = re.compile(r"^\d+(?:\[[0-9a-fA-F]+\])? -> ")
_VERSION = re.compile(r"NCCL version (?P<v>\d+\.\d+\.\d+\S*)")
#: RCCL's banner (issue 35): "RCCL version : 2.27.7-HEAD:0d2c4fd" (init.cc), the fork's own version
_RCCL_VERSION = re.compile(r"RCCL version\s*:?\s*(?P<v>\d+\.\d+\.\d+)")
#: the value is the rest of the line, its end blanks and one full stop taken off by :func:`_env_value`
#: (`(?P<v>.*?)\.?\s*$` tried the blanks after every character of the value: quadratic)
_ENV = re.compile(r"^(?P<k>NCCL_[A-Z0-9_]+) set (?:by environment )?to (?P<v>.*)$")
_INIT = re.compile(
    r"comm 0x[0-9a-f]+ rank (?P<rank>\d+) nranks (?P<n>\d+) cudaDev (?P<cuda>\d+)(?: nvmlDev (?P<nvml>\d+))? "
    r"busId (?P<bus>[0-9a-fA-F]+)(?: commId (?P<comm>0x[0-9a-f]+))?"
)
_DUMP_ROW = re.compile(r"^GPU/(?P<bus>[0-9A-Fa-f-]+) :(?P<rest>.*)$")
_NET_ROW = re.compile(r"^NET/(?P<net>[0-9A-Fa-f-]+) :(?P<rest>.*)$")
_DUMP_CELL = re.compile(
    r"(?P<kind>GPU|NET|CPU)/(?P<id>[0-9A-Fa-f-]+) \((?P<n>\d+)/(?P<bw>[0-9.]+)/(?P<type>[A-Z0-9]+)\)"
)


_USING = re.compile(r"^NET/\w+ : Using (?P<list>(?:\[\d+\]\S+\s*)+)")
_USING_ONE = re.compile(r"\[(?P<i>\d+)\](?P<name>[^:\s]+)")
_HCA_GDR = re.compile(r"GPU Direct RDMA (?P<on>Enabled|Disabled) for HCA (?P<i>\d+) '(?P<name>[^']+)'")
_GPU_GDR = re.compile(
    r"GPU Direct RDMA (?P<on>Enabled|Disabled) for GPU (?P<bus>[0-9A-Fa-f-]+)(?P<cuda>\[\d+\])? "
    r"/ HCA (?P<i>[0-9a-fA-F]+) \(distance (?P<d>\d+) (?:<=|>|<|>=) (?P<t>\d+)\)(?P<mode>.* mode )?"
)
_ENV_WANTED = re.compile(
    r"^NCCL_(P2P|SHM|NET|IB|CROSS|CUMEM|PXN|ALGO|PROTO|SOCKET|TOPO|NVLS|MNNVL|COLLNET|HOSTID|IGNORE_DISABLED_P2P)"
)
_REFUSED = re.compile(r"Could not enable P2P between dev \d+\(=(?P<a>[0-9a-f]+)\) and dev \d+\(=(?P<b>[0-9a-f]+)\)")


def read_log(text: str, path: str) -> NcclLog:
    """Parse a log's text. Raises TopomapError (one line) only when nothing usable is in it."""
    log = NcclLog(path)
    env: dict[str, str] = {}
    raws = text.splitlines()
    for no, raw in enumerate(raws, 1):
        log.lines += 1
        if unended(text, no, len(raws)) and _cut_via(raw):
            log.skipped.append(f"line {no}: the log ends inside this channel line: {raw.strip()[-40:]!r}")
            continue
        line = _PREFIX.sub("", raw.strip(), count=1)
        ray = _RAY_REPEAT.search(line)
        line = line[: ray.start()].rstrip() if ray else line
        r = _RCCL_VERSION.search(line)
        if r and log.library != "rccl":
            log.library, log.version = "rccl", r.group("v")
        v = _VERSION.search(line)
        if v and log.version is None and log.library != "rccl":
            log.version = v.group("v")
        m = INFO_LINE.search(line)
        if m is not None:
            msg, host, pid = m.group("msg").strip(), m.group("host"), int(m.group("pid"))
        elif (legacy := _OLD_INFO.search(line)) is not None:
            msg, host, pid = legacy.group("msg").strip(), legacy.group("host"), int(legacy.group("pid"))
        elif (bare := _BARE_LINE.search(line) or _LONE_HOP.match(line)) is not None:
            msg, host, pid = bare.group("msg").strip(), UNNAMED, 0
        else:
            _tests_rank(log, line)
            continue
        log.nccl_lines += 1
        _read_message(log, env, (msg, host, pid), no)
    log.env = NcclEnv(tuple(sorted(env.items())))
    fill_ranks(log)
    if not log.hops and not log.gpu_paths:
        what = "no NCCL INFO lines" if log.nccl_lines == 0 else "no channel lines and no topology dump"
        raise TopomapError(
            f"{path}: {what} in {log.lines} line(s); nothing to compare",
            hint="run with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,GRAPH for the topology) and keep the "
            "'Channel .. via ..' lines",
        )
    return log


#: the words NCCL ends a channel line's ``via`` with (p2p.cc, shm.cc, net.cc)
_VIA_WORDS = ("GDRDMA", "Shared", "read", "CE", "direct", "pointer", "CUMEM", "IPC", "MNNVL", "indirect")


def _cut_via(raw: str) -> bool:
    """A last line, with no line end, whose ``via`` stops inside one of NCCL's words (``…/GDR``): cut."""
    _, sep, via = raw.rstrip().rpartition(" via ")
    tail = via.rsplit("/", 1)[-1].split(" ")[-1]
    return bool(sep) and bool(tail) and any(w != tail and w.startswith(tail) for w in _VIA_WORDS)


def _env_value(raw: str) -> str:
    """A "set by environment to VALUE." line's value: end blanks and one full stop off, then stripped."""
    value = raw.rstrip()
    return (value[:-1] if value.endswith(".") else value).strip()


def _tests_rank(log: NcclLog, line: str) -> None:
    """nccl-tests' "#  Rank  1 Group  0 Pid  34424 on  n014 device  0 [0000:81:00] …": the rank's host,
    pid and bus (device 0, function 0 of the bus when only the bus is printed)."""
    t = _TESTS_RANK.match(line)
    if t is None:
        return
    r = log.ranks.setdefault(int(t.group("rank")), RankInfo())
    r.host, r.pid = r.host or t.group("host"), r.pid or int(t.group("pid"))
    r.cuda_dev = int(t.group("dev")) if r.cuda_dev is None else r.cuda_dev
    devfn = int(t.group("devfn") or "0", 16)
    r.bus = r.bus or short_bus(f"{int(t.group('bus'), 16):x}{devfn:02x}0")
    if t.group("name"):  # the GPU model: its compute capability decides GDR reads and P2P read
        log.gpu_models.setdefault(int(t.group("rank")), t.group("name"))


#: RCCL's ring neighbours (init.cc, issue 35): "Ring 0 : 2 -> 3 -> 0 comm 0x… nRanks 04 busId 1e000"
_RCCL_RING = re.compile(r"^Ring \d+ : -?\d+ -> -?\d+ -> -?\d+ comm ")


def _read_channel(log: NcclLog, msg: str, host: str, pid: int, no: int) -> None:
    if _RING_LIST.match(msg) or _RCCL_RING.match(msg):
        log.ring_lines += 1
        return
    c = _CHANNEL.match(msg)
    if c is None:
        log.skipped.append(f"line {no}: channel line cut or not understood: {msg[:60]!r}")
        return
    via = _RCCL_COMM.sub("", c.group("via"))
    hop = Hop(
        int(c.group("src")),
        int(c.group("dst")),
        c.group("sdev"),
        c.group("ddev"),
        transport_of(via),
        via,
        host,
        pid,
        no,
        c.group("dir"),
    )
    log.hops.append(hop)
    nic, _proxy = hop.nic
    if nic is not None and hop.via.upper().startswith("NET/SOCKET/"):
        log.hca_gdr.setdefault((host, nic), False)  # NCCL's socket transport has no GPUDirect (host memory only)
    _note_rank(log, host, pid, c)


def _read_message(log: NcclLog, env: dict[str, str], line: tuple[str, str, int], no: int) -> None:
    msg, host, pid = line
    if _read_host(log, msg, host):
        return
    if (msg.startswith(("Channel ", "Ring ")) and ("->" in msg or "[" in msg or " via " in msg)) or _HOP_START.match(
        msg
    ):
        _read_channel(log, msg, host, pid, no)
        return
    e = _ENV.match(msg)
    if e and _ENV_WANTED.match(e.group("k")):
        if e.group("k") == "NCCL_HOSTID":
            log.hostids[(host, pid)] = _env_value(e.group("v"))
        else:
            env[e.group("k")] = _env_value(e.group("v"))
        return
    i = _INIT.search(msg)
    if i:
        r = log.ranks.setdefault(int(i.group("rank")), RankInfo())
        r.host, r.pid = (host, pid) if host != UNNAMED else (r.host, r.pid)
        r.cuda_dev, r.bus = int(i.group("cuda")), short_bus(i.group("bus"))
        r.nvml_dev = int(i.group("nvml")) if i.group("nvml") else None
        if i.group("comm"):
            log.comms.add(i.group("comm"))
        return
    n = _NODES.search(msg)
    if n:
        log.nodes[int(n.group("rank"))] = (int(n.group("nodes")), int(n.group("local")))
        if host != UNNAMED:  # the communicator's GPUs on this host (NCCL's topology) and in all
            log.local_ranks[host] = max(log.local_ranks.get(host, 0), int(n.group("local")))
        log.nranks = max(log.nranks or 0, int(n.group("n")))
        r = log.ranks.setdefault(int(n.group("rank")), RankInfo())
        if host != UNNAMED and r.host is None:
            r.host, r.pid = host, pid
        return
    if _read_network(log, msg, host, pid):
        return
    refused = _REFUSED.search(msg)
    if refused:
        log.p2p_refused.add((short_bus(refused.group("a")), short_bus(refused.group("b"))))
        return
    d = TREE_LINK.match(msg)  # a GPU of the dump's tree and its rank: "+ PCI[24.0] - GPU/0-1b000 (0)"
    if d and d.group("nt") == "GPU" and (d.group("extra") or "").isdigit():
        log.dump_ranks[short_bus(d.group("nid"))] = int(d.group("extra"))
        r = log.ranks.setdefault(int(d.group("extra")), RankInfo())
        if r.host is None and host != UNNAMED:  # a host's dump lists the GPUs of its own ranks
            r.host = host
    row = _DUMP_ROW.match(msg)
    if row:
        _read_dump_row(log, host, short_bus(row.group("bus")), row.group("rest"), no)
        return
    net = _NET_ROW.match(msg)
    index = net_dev(net.group("net")) if net else None
    if net and index is not None:  # NET/4 :GPU/18000 (6/10.0/SYS) …; the id in hex (NET/0-e is NET/IB/14)
        for c in _DUMP_CELL.finditer(net.group("rest")):
            if c.group("kind") == "GPU":
                log.gpu_net_paths.setdefault((host, short_bus(c.group("id")), index), c.group("type"))


_USING_NETWORK = re.compile(r"^Using network (?P<name>\S+)")
_MNNVL = re.compile(r"\bMNNVL (?P<on>[01])\b(?: cliqueId \S+ cliqueSize (?P<size>\d+))?")


def nccl_cpu_kind(arch: int, vendor: int, model: int) -> str | None:
    """NCCL's CPU numbers (src/include/graph.h: arch 1 x86, 2 POWER, 3 ARM; vendor 1 Intel, 2 AMD, 3
    Zhaoxin; Intel model 1 Broadwell) as a kind of ``transport.rules.CPU_KINDS``."""
    if arch == 3:
        return "arm"
    if arch == 2:
        return "power"
    if arch != 1 or vendor not in CPU_VENDORS:
        return None
    kind = CPU_VENDORS[vendor].lower()  # NCCL's vendor numbers, read where the dump is (importers.nccl_log)
    return "intel-bdw" if kind == "intel" and model == 1 else kind


def _read_host(log: NcclLog, msg: str, host: str) -> bool:
    """The dump's CPU line (the first per host: NCCL asks its first CPU), the network NCCL uses and
    multi-node NVLink; True when the line was only that."""
    cpu = CPU_LINE.match(msg)
    if cpu and cpu.group("arch") is not None:  # NCCL 2.6 and later print the numbers
        kind = nccl_cpu_kind(int(cpu.group("arch")), int(cpu.group("vendor")), int(cpu.group("model")))
        if kind is not None:
            log.cpus.setdefault(host, kind)
        return True
    net = _USING_NETWORK.match(msg)
    if net:
        log.network[host] = net.group("name")
        return True
    mn = _MNNVL.search(msg)
    if mn:
        log.mnnvl = bool(log.mnnvl) or mn.group("on") == "1"
        if mn.group("size"):
            log.clique_size = int(mn.group("size"))
    return False


def _read_network(log: NcclLog, msg: str, host: str, pid: int) -> bool:
    """NIC names, GPUDirect support per NIC and per GPU–NIC distance; True when the line was one."""
    using = _USING.match(msg)
    if using:
        for one in _USING_ONE.finditer(using.group("list")):
            log.hca_names.setdefault((host, int(one.group("i"))), one.group("name"))
        return True
    gpu = _GPU_GDR.search(msg)
    if gpu:
        on, d, t = gpu.group("on") == "Enabled", int(gpu.group("d")), int(gpu.group("t"))
        v = version_tuple(log.version)
        nic = int(gpu.group("i"), 16 if v is None or v >= (2, 22, 0) else 10)  # %lx netId from 2.22 on
        if gpu.group("mode") or (v is not None and v >= (2, 24, 0)):  # 2.24+: "for GPU <rank>"
            log.gdr_by_rank.append((host, int(gpu.group("bus")), nic, on, d, t))
        elif gpu.group("cuda"):  # 2.4: "for GPU <cudaDev>[<nvmlDev>]", printed by that GPU's process
            log.gdr_by_cuda.append((host, pid, int(gpu.group("bus")), nic, on, d, t))
        else:
            log.gpu_hca[(host, short_bus(gpu.group("bus")), nic)] = (on, d, t)
        return True
    hca = _HCA_GDR.search(msg)
    if hca:
        log.hca_gdr[(host, int(hca.group("i")))] = hca.group("on") == "Enabled"
        if msg.rstrip().endswith("(no module)"):  # no peer-memory module: no NIC of this host does GPUDirect
            log.no_gdr_module.add(host)
        log.hca_names.setdefault((host, int(hca.group("i"))), hca.group("name"))
        return True
    return False


def _note_rank(log: NcclLog, host: str, pid: int, c: re.Match[str]) -> None:
    """A channel line is printed by its sender (by the receiver for ``[receive]``): that rank runs on
    the line's host and pid. Older NCCL prints bus ids in the brackets (``25[101d0]``), newer the
    NVML index (``25[1]``)."""
    for key, dev in (("src", "sdev"), ("dst", "ddev")):
        bus = c.group(dev)
        if bus and len(bus) >= 3:
            log.ranks.setdefault(int(c.group(key)), RankInfo()).bus = short_bus(bus)
    local = "dst" if c.group("dir") == "receive" else "src"
    r = log.ranks.setdefault(int(c.group(local)), RankInfo())
    if r.host is None and host != UNNAMED:
        r.host, r.pid = host, pid
    if r.nvml_dev is None and c.group(local[0] + "dev") and len(c.group(local[0] + "dev")) < 3:
        r.nvml_dev = int(c.group(local[0] + "dev"))


def _read_dump_row(log: NcclLog, host: str, bus: str, rest: str, no: int) -> None:
    cells = list(_DUMP_CELL.finditer(rest))
    if not cells:
        log.skipped.append(f"line {no}: topology path row without cells")
        return
    for c in cells:
        if c.group("kind") == "NET":
            net = net_dev(c.group("id"))  # hex in the dump, decimal in the channel lines: kept as a number
            if net is not None:
                log.gpu_net_paths[(host, bus, net)] = c.group("type")
            continue
        if c.group("kind") != "GPU":
            continue
        other = short_bus(c.group("id"))
        if other == bus:
            continue
        log.gpu_paths[(bus, other)] = c.group("type")
        log.path_bw[(bus, other)] = float(c.group("bw"))


def transports_seen(log: NcclLog) -> Counter[str]:
    return Counter(h.transport for h in log.hops)
