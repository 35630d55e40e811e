"""Health and truth checks the probe runs without GPU work: each a Finding with its evidence.

PCIe trained vs maximum width and AER replay counters; the P2P guard (IOMMU translation per
GPU group, ACS redirect bits on the bridges between two GPUs → a per-pair verdict); GPUDirect
RDMA readiness (nvidia_peermem, or DMA-BUF: kernel ≥ 5.12 with NVIDIA's open kernel module);
NVLink links down; NVLink fabric state and clique; IMEX channel devices; and the signs of a
virtual PCIe tree. Reads under the sysfs reader's root, so tests hand it a tree on disk.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from topomap.base.links import NCCL_P2P_LEVELS
from topomap.model.facts import fabric_hold
from topomap.model.snapshot import Finding, Snapshot
from topomap.probe.sysfs import SysfsReader, SysfsResult, cat

ACS_CAP_ID = 0x000D
ACS_BITS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
_REDIRECT = (1 << 2) | (1 << 3)  # ReqRedir, CmpltRedir: peer TLPs forced up to the root complex
_AER_BAD = ("BadTLP", "BadDLLP", "Rollover", "Timeout")  # Rollover / Timeout: the replay counter and timer


def acs_control(reader: SysfsReader, bus: str) -> int | None:
    """The ACS Control register of a bridge (config space, extended capability 0x000D, +6); None when unreadable.

    Extended config space (past 256 bytes) is readable by root only, as `lspci -vvv | grep ACSCtl`.
    """
    try:
        cfg = (reader.sys / "bus" / "pci" / "devices" / bus / "config").read_bytes()
    except OSError:
        return None
    off = 0x100
    for _ in range(64):
        if off + 8 > len(cfg) or off < 0x100:
            return None
        header = int.from_bytes(cfg[off : off + 4], "little")
        if header & 0xFFFF == ACS_CAP_ID:
            return int.from_bytes(cfg[off + 6 : off + 8], "little")
        off = (header >> 20) & 0xFFC
        if off == 0:
            return None
    return None


def _acs_text(ctrl: int) -> str:
    return " ".join(f"{name}{'+' if ctrl >> i & 1 else '-'}" for i, name in enumerate(ACS_BITS))


def _iommu_type(reader: SysfsReader, bus: str) -> str | None:
    return cat(reader.sys / "bus" / "pci" / "devices" / bus / "iommu_group" / "type")


def _aer(reader: SysfsReader, bus: str) -> dict[str, int]:
    text = cat(reader.sys / "bus" / "pci" / "devices" / bus / "aer_dev_correctable") or ""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def _pcie(reader: SysfsReader, sysr: SysfsResult, bus: str | None, gid: str, gen_checked: bool) -> list[Finding]:
    """Trained width (and generation, where the device does not drop it at idle) against its maximum and its slot.

    GPUs lower the link generation when idle, so a GPU's current generation says nothing at rest
    (nvml-cuda.md §7.1); its width and its slot's maximum do. NICs hold their generation.
    """
    fn = sysr.functions.get(bus or "")
    if fn is None:
        return []
    out: list[Finding] = []
    cur, top = fn.link_width_current, fn.link_width_max
    what = "host↔GPU" if gid.startswith("gpu") else "NIC"
    if cur is not None and top is not None and cur < top:
        out.append(
            Finding(
                kind="pcie-downtrained",
                subject=gid,
                severity="warning",
                text=f"{gid} PCIe link trained at x{cur} of x{top}: {what} bandwidth at most {cur / top:.0%} "
                "of nominal (reseat the card, check the riser/slot)",
                evidence=[f"{fn.bus_id}: current_link_width {cur}, max_link_width {top}"],
                source="sysfs",
            )
        )
    gcur, gtop = fn.link_gen_current, fn.link_gen_max
    if gen_checked and gcur is not None and gtop is not None and gcur < gtop:
        out.append(
            Finding(
                kind="pcie-downtrained",
                subject=gid,
                severity="warning",
                text=f"{gid} PCIe link trained at Gen{gcur} of Gen{gtop}: {what} bandwidth at most "
                f"{2 ** (gcur - gtop):.0%} of nominal",
                evidence=[f"{fn.bus_id}: current_link_speed Gen{gcur}, max_link_speed Gen{gtop}"],
                source="sysfs",
            )
        )
    port = sysr.functions.get(fn.chain[-2]) if len(fn.chain) >= 2 else None
    if port is not None and port.is_bridge:
        capped: list[str] = []
        if port.link_gen_max is not None and gtop is not None and port.link_gen_max < gtop:
            capped.append(f"Gen{port.link_gen_max} (device Gen{gtop})")
        if port.link_width_max is not None and top is not None and port.link_width_max < top:
            capped.append(f"x{port.link_width_max} (device x{top})")
        if capped:
            out.append(
                Finding(
                    kind="pcie-slot-capped",
                    subject=gid,
                    severity="warning",
                    text=f"{gid} sits in a slot capped at {' '.join(capped)}: its link can never train higher "
                    "(move it to a full-rate slot)",
                    evidence=[
                        f"upstream port {port.bus_id}: max_link_speed Gen{port.link_gen_max}, "
                        f"max_link_width x{port.link_width_max}"
                    ],
                    source="sysfs",
                )
            )
    aer = _aer(reader, fn.bus_id)
    bad = {k: v for k, v in aer.items() if k in _AER_BAD and v > 0}
    if bad:
        out.append(
            Finding(
                kind="pcie-errors",
                subject=gid,
                severity="warning",
                text=f"{gid} PCIe link has corrected errors ({', '.join(f'{k} {v}' for k, v in bad.items())}): "
                "replays cost bandwidth; a rising count points at signal integrity",
                evidence=[f"{fn.bus_id}/aer_dev_correctable"],
                source="sysfs",
            )
        )
    return out


def _between(chain_a: list[str], chain_b: list[str]) -> list[str]:
    """Bridges a peer TLP from a to b passes: below the common ancestor on both sides, and that ancestor."""
    common = 0
    while common < min(len(chain_a), len(chain_b)) and chain_a[common] == chain_b[common]:
        common += 1
    ups = chain_a[common:-1] + chain_b[common:-1]
    return ([chain_a[common - 1]] if common else []) + ups


def _p2p_guard(reader: SysfsReader, sysr: SysfsResult, snap: Snapshot) -> list[Finding]:
    out: list[Finding] = []
    translated = []
    types: list[str | None] = []
    for g in snap.gpus:
        t = _iommu_type(reader, g.pci_bus_id or "")
        types.append(t)
        if t and t.startswith("DMA"):
            translated.append(f"gpu{g.index} ({g.pci_bus_id}: iommu_group type {t})")
    if sysr.iommu == "on" and snap.gpus and all(t is None for t in types):
        out.append(
            Finding(
                kind="iommu-unknown",
                subject="host",
                severity="info",
                text="an IOMMU is active but this kernel does not say whether it translates GPU DMA "
                "(no iommu_group/type); translated DMA makes PCIe P2P slow or hang — boot with iommu=pt to be sure",
                evidence=["/sys/class/iommu is not empty", "no /sys/bus/pci/devices/<gpu>/iommu_group/type"],
                source="sysfs",
            )
        )
    if translated:
        out.append(
            Finding(
                kind="iommu-translated",
                subject="host",
                severity="warning",
                text="the IOMMU translates GPU DMA: PCIe peer-to-peer may be slow or hang (NCCL troubleshooting); "
                "boot with iommu=pt (or amd_iommu=pt / intel_iommu=pt) for identity mapping",
                evidence=translated,
                source="sysfs",
            )
        )
    by_id = {f"gpu{g.index}": g for g in snap.gpus}
    unreadable: set[str] = set()
    for pair in snap.pairs:
        ga, gb = by_id.get(pair.a), by_id.get(pair.b)
        if ga is None or gb is None or pair.nvlinks or pair.pcie_path not in NCCL_P2P_LEVELS:
            continue  # NVLink pairs do not use PCIe P2P; through the root complex ACS does not redirect more
        fa, fb = sysr.functions.get(ga.pci_bus_id or ""), sysr.functions.get(gb.pci_bus_id or "")
        if fa is None or fb is None:
            continue
        redirecting = []
        for bridge in _between(fa.chain, fb.chain):
            if not re.match(r"^[0-9a-f]{4,8}:", bridge):
                continue
            ctrl = acs_control(reader, bridge)
            if ctrl is None:
                unreadable.add(bridge)
            elif ctrl & _REDIRECT:
                redirecting.append(f"{bridge}: ACSCtl {_acs_text(ctrl)}")
        if redirecting:
            out.append(
                Finding(
                    kind="acs-redirect",
                    subject=f"{pair.a}-{pair.b}",
                    severity="warning",
                    text=f"ACS redirects {pair.a}↔{pair.b} peer traffic up to the root complex: P2P through the "
                    "switch is slow or broken; disable ACS on these bridges (setpci ECAP_ACS+0x6.w=0000 / BIOS) "
                    "or set NCCL_P2P_DISABLE=1",
                    evidence=redirecting,
                    source="sysfs",
                )
            )
    if unreadable:
        out.append(
            Finding(
                kind="acs-unknown",
                subject="host",
                severity="info",
                text="ACS bits of the bridges between GPUs are unknown: their config space needs root "
                "(run `sudo topomap probe`, or `sudo lspci -vvv | grep ACSCtl`)",
                evidence=sorted(unreadable),
                source="sysfs",
            )
        )
    return out


def _kernel_at_least(release: str | None, major: int, minor: int) -> bool | None:
    m = re.match(r"^(\d+)\.(\d+)", release or "")
    return None if not m else (int(m.group(1)), int(m.group(2))) >= (major, minor)


def _gpudirect(reader: SysfsReader, snap: Snapshot) -> list[Finding]:
    near = [p for p in snap.pairs if p.a.startswith("gpu") and p.b.startswith("nic") and p.path in NCCL_P2P_LEVELS]
    if not near:
        return []
    peermem = (reader.sys / "module" / "nvidia_peermem").is_dir()
    release = cat(reader.proc / "sys" / "kernel" / "osrelease")
    open_module = "Open Kernel Module" in (cat(reader.proc / "driver" / "nvidia" / "version") or "")
    dmabuf = bool(_kernel_at_least(release, 5, 12)) and open_module
    evidence = [
        f"nvidia_peermem {'loaded' if peermem else 'not loaded'} (/sys/module/nvidia_peermem)",
        f"kernel {release or 'unknown'}, NVIDIA {'open' if open_module else 'proprietary or unknown'} kernel module",
        "GPU–NIC pairs on a shared switch: " + ", ".join(f"{p.a}–{p.b} ({p.path})" for p in near),
    ]
    if peermem or dmabuf:
        how = "nvidia_peermem" if peermem else "DMA-BUF"
        return [
            Finding(
                kind="gpudirect-ready",
                subject="host",
                severity="info",
                text=f"GPUDirect RDMA possible for GPU–NIC pairs on a shared switch (through {how})",
                evidence=evidence,
                source="sysfs",
            )
        ]
    return [
        Finding(
            kind="gpudirect-missing",
            subject="host",
            severity="warning",
            text="GPUDirect RDMA impossible: nvidia_peermem is not loaded and DMA-BUF needs kernel ≥ 5.12 with the "
            "open NVIDIA module; network traffic bounces through host memory (modprobe nvidia_peermem)",
            evidence=evidence,
            source="sysfs",
        )
    ]


def _nvlink_and_fabric(reader: SysfsReader, snap: Snapshot) -> list[Finding]:
    out: list[Finding] = []
    cliques: dict[tuple[str | None, int | None], list[str]] = {}
    for g in snap.gpus:
        gid = f"gpu{g.index}"
        down = [lk.link for lk in g.nvlinks if not lk.active]
        if g.nvlinks and down:
            out.append(
                Finding(
                    kind="nvlink-inactive",
                    subject=gid,
                    severity="warning",
                    text=f"{gid}: {len(down)} of {len(g.nvlinks)} NVLinks inactive — NVLink bandwidth is "
                    f"{len(g.nvlinks) - len(down)}/{len(g.nvlinks)} of nominal (nvidia-smi nvlink -s)",
                    evidence=[f"inactive links: {', '.join(map(str, down))}"],
                    source="nvml",
                )
            )
        fab = g.fabric
        if fab is None or fab.state in (None, "not-supported"):
            continue
        hold = fabric_hold(fab)  # the one decision (model.facts), map's and check's too
        if hold is not None and hold.field == "state":
            out.append(
                Finding(
                    kind="fabric-not-ready",
                    subject=gid,
                    severity="error",
                    text=f"{gid}: NVLink fabric registration {fab.state}: Fabric Manager (or NVLink Subnet Manager) "
                    "has not finished; CUDA work fails with CUDA_ERROR_SYSTEM_NOT_READY until it does",
                    evidence=[f"fabric state {fab.state}"],
                    source="nvml",
                )
            )
            continue
        if hold is not None:
            out.append(
                Finding(
                    kind="fabric-error",
                    subject=gid,
                    severity="error",
                    text=f"{gid}: NVLink fabric registration completed with status {fab.status}",
                    evidence=[f"fabric status {fab.status}"],
                    source="nvml",
                )
            )
        cliques.setdefault((fab.cluster_uuid, fab.clique_id), []).append(gid)
    zero = [gids for (cu, cq), gids in cliques.items() if cq == 0 and cu and cu.strip("0-")]
    for gids in zero:
        out.append(
            Finding(
                kind="fabric-clique-zero",
                subject=",".join(gids),
                severity="warning",
                text="fabric registration completed with clique id 0: partitioning may not have been applied "
                "(check the NVLink partition / IMEX configuration)",
                evidence=[f"{g}: clique 0" for g in gids],
                source="nvml",
            )
        )
    # IMEX matters where NVLink spans trays (GB200/GB300 NVL racks: Grace-class parts whose GPU memory is
    # its own NUMA node); a single HGX baseboard also registers a cluster UUID but needs no IMEX.
    rack = any(g.gpu_numa_node is not None or re.search(r"\bGB\d{3}", g.name or "") for g in snap.gpus)
    multi = rack and any(cu and cu.strip("0-") for cu, _ in cliques)
    if multi:
        chans = reader.root / "dev" / "nvidia-caps-imex-channels"
        found = sorted(p.name for p in chans.glob("channel*")) if chans.is_dir() else []
        if not found:
            out.append(
                Finding(
                    kind="imex-missing",
                    subject="host",
                    severity="warning",
                    text="no IMEX channel device in /dev/nvidia-caps-imex-channels: memory sharing over multi-node "
                    "NVLink is unavailable here (start nvidia-imex; in Kubernetes request an IMEX channel)",
                    evidence=["/dev/nvidia-caps-imex-channels absent or empty"],
                    source="sysfs",
                )
            )
    return out


def _virtual(sysr: SysfsResult, snap: Snapshot) -> list[Finding]:
    if sysr.virtualization is None:
        return []
    signs = []
    gpu_pairs = [p for p in snap.pairs if p.a.startswith("gpu") and p.b.startswith("gpu")]
    if gpu_pairs and all((p.pcie_path or p.path) in ("PHB", "SYS", "NODE") for p in gpu_pairs):
        signs.append("every GPU pair is PHB/NODE/SYS")
    if snap.pci and not any(d.kind.startswith("switch") for d in snap.pci):
        signs.append("no PCIe switch in the tree")
    fns = [f for f in sysr.functions.values() if f.is_nvidia_gpu]
    if fns and all(f.numa_node is None for f in fns):
        signs.append("every GPU's numa_node is -1")
    rates = {(f.link_gen_max, f.link_width_max) for f in fns}
    if fns and rates <= {(None, None)}:
        signs.append("no PCIe link rates")
    evidence = [f"hypervisor: {sysr.virtualization}", *signs]
    if signs:
        return [
            Finding(
                kind="virtual-topology",
                subject="host",
                severity="warning",
                text="the PCIe topology shown is virtual; path classes are unverified "
                "(ask the provider for the physical topology, or measure with `topomap measure`)",
                evidence=evidence,
                source="sysfs",
            )
        ]
    seen = "no sign of a synthetic PCIe tree" if fns else "no GPU on its PCIe bus to judge the tree by"
    return [
        Finding(
            kind="virtual-machine",
            subject="host",
            severity="info",
            text=f"running under a hypervisor ({sysr.virtualization}); {seen}",
            evidence=evidence,
            source="sysfs",
        )
    ]


def health_findings(reader: SysfsReader, sysr: SysfsResult, snap: Snapshot) -> list[Finding]:
    """Every check above for a probed snapshot (nothing is read from a GPU).

    A check that trips over an unexpected file (a kernel that spells something differently)
    becomes an info finding naming the check, never a failed probe.
    """
    checks: list[tuple[str, Callable[[], list[Finding]]]] = [
        (
            "PCIe links",
            lambda: (
                [f for g in snap.gpus for f in _pcie(reader, sysr, g.pci_bus_id, f"gpu{g.index}", False)]
                + [f for n in snap.nics for f in _pcie(reader, sysr, n.pci_bus_id, f"nic{n.index}", True)]
            ),
        ),
        ("P2P guard (IOMMU, ACS)", lambda: _p2p_guard(reader, sysr, snap)),
        ("GPUDirect RDMA", lambda: _gpudirect(reader, snap)),
        ("NVLink and fabric", lambda: _nvlink_and_fabric(reader, snap)),
        ("virtualisation", lambda: _virtual(sysr, snap)),
    ]
    out: list[Finding] = []
    for name, check in checks:
        try:
            out += check()
        except (OSError, ValueError, KeyError, IndexError) as err:
            out.append(
                Finding(
                    kind="health-check-failed",
                    subject="host",
                    severity="info",
                    text=f"the {name} check could not run: {type(err).__name__}: {err}",
                    source="sysfs",
                )
            )
    return out
