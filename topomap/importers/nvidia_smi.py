"""nvidia-smi text → Snapshot: `topo -m`, `topo -p2p <r|w|n|a>`, `nvlink -s`, `nvlink -R`.

Copes with what people paste (shared/real-topologies/nvidia-smi/): tabs or spaces, old and
new legend wordings, NIC names as headers or NIC<n> with a NIC Legend, empty CPU-affinity
cells (cgroup-confined jobs), missing NUMA columns, cut legends, prompt lines, several
outputs pasted into one file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from topomap import __version__
from topomap.base.errors import ImportFailure
from topomap.base.links import P2P_STATUS_CODES, is_path_code, nvlink_path, nvlinks_of
from topomap.base.pciaddr import normalize_bus_id
from topomap.files.kind import looks_like_query, looks_like_query_csv
from topomap.importers.glued import row_cells, split_glued_labels
from topomap.importers.ibstat import apply_ibstat
from topomap.importers.lscpu import apply_lscpu
from topomap.importers.nic_legend import NicLegend, legend_notes, read_nic_legend
from topomap.importers.nvidia_smi_q import QReport, apply_query, parse_query
from topomap.importers.nvlink_status import buses_from_bridge, no_link_findings, no_link_up
from topomap.importers.query_gpu import apply_blocks, find_blocks
from topomap.model.nvlinks import gpu_buses, nvlink_count
from topomap.model.snapshot import P2P, Gpu, Nic, NvLink, Pair, Snapshot, Source, SourceFormat

TRAILING = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
MAX_DEVICES = 512  # GPUs and NICs in one matrix (real hosts: under 32); 512 already gives 130,816 pairs
P2P_CODES = set(P2P_STATUS_CODES.values())
# Matched against a stripped line, and the UUID split off separately: a lazy `(.*?)` before an
# optional group and `\s*$` backtracks quadratically on long runs of spaces (issue 14).
_GPU_LINE = re.compile(r"^GPU (\d+): (.*)$")
_UUID_TAIL = re.compile(r" \(UUID: (GPU-[0-9a-fA-F-]+)\)$")
_LINK_S = re.compile(r"^\s*Link (\d+): (?:([0-9.]+) GB/s|<inactive>)\s*$")
_LINK_R = re.compile(r"^\s*Link (\d+): Remote Device ([0-9A-Fa-f:.]+): Link (\d+)\s*$")
_P2P_CMD = re.compile(r"topo\s+-p2p\s+([rwnap]+)")
_LABEL = re.compile(r"^(GPU\d+|NIC\d+|[A-Za-z][\w.-]*)$")


class NvidiaSmiError(ImportFailure):
    """nvidia-smi text that cannot be read; names the file and line."""


@dataclass
class _Matrix:
    labels: list[str]
    cells: dict[tuple[str, str], str] = field(default_factory=dict)
    trailing: dict[str, dict[str, str]] = field(default_factory=dict)
    columns: list[str] = field(default_factory=list)
    short: dict[str, int] = field(default_factory=dict)  # GPU rows with fewer trailing values → line
    glued: list[int] = field(default_factory=list)  # lines whose cells were glued (a lost tab), read apart


@dataclass
class _GpuLinks:
    name: str | None = None
    uuid: str | None = None
    speeds: dict[int, float | None] = field(default_factory=dict)
    remotes: dict[int, str] = field(default_factory=dict)
    none_active: str | None = None  # `nvlink -s` said no link is up (its own words), issue 30 item 4


def _gpu_line(line: str) -> tuple[int, str, str | None] | None:
    """``GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)`` → (0, name, uuid); None for other lines."""
    m = _GPU_LINE.match(line.strip())
    if not m or len(m.group(1)) > 6:
        return None
    rest = m.group(2)
    u = _UUID_TAIL.search(rest)
    if u:
        return int(m.group(1)), rest[: u.start()].strip(), u.group(1)
    return int(m.group(1)), rest.strip(), None


def _header_labels(line: str) -> tuple[list[str], list[str]] | None:
    """Device labels and trailing column names of a `topo -m` (or -p2p) header line."""
    work = line
    columns = []
    for col in TRAILING:
        if col in work:
            columns.append(col)
            work = work.replace(col, " ")
    toks = split_glued_labels(work.split())
    if not toks or toks[0] != "GPU0" or not all(_LABEL.match(t) for t in toks):
        return None
    return toks, columns


def _split_trailing(rest: str, columns: list[str]) -> tuple[dict[str, str], bool]:
    """Values of the trailing columns. nvidia-smi separates cells with one tab, so an empty
    CPU-affinity cell shows as a gap wider than one tab stop before the next value."""
    if not columns:
        return {}, False
    expanded = rest.expandtabs(8)
    tokens = [(m.start(), m.group()) for m in re.finditer(r"\S+", expanded)]
    values = [t for _, t in tokens]
    cols = list(columns)
    if len(values) < len(cols) and cols[0] == "CPU Affinity" and tokens and tokens[0][0] > 8:
        out = {"CPU Affinity": ""}
        cols = cols[1:]
    else:
        out = {}
    for col, val in zip(cols, values):
        out[col] = val
    for col in cols[len(values) :]:
        out.setdefault(col, "")
    return out, len(values) < len(cols)


def _parse_matrix(
    lines: list[str], start: int, origin: str, labels: list[str], columns: list[str]
) -> tuple[_Matrix, int]:
    m = _Matrix(labels=labels, columns=columns)
    n = len(labels)
    i = start + 1
    rows_seen: list[str] = []
    while i < len(lines) and len(rows_seen) < n:
        raw = lines[i]
        if not raw.strip():
            break
        head = raw.split(None, 1)
        label = head[0]
        if label != labels[len(rows_seen)]:
            if label in labels:
                raise NvidiaSmiError(f"{origin}:{i + 1}: row {label} out of order (expected {labels[len(rows_seen)]})")
            break
        body = head[1] if len(head) > 1 else ""
        matches, glued = row_cells(body)
        if glued:
            m.glued.append(i + 1)
        if len(matches) < n:
            raise NvidiaSmiError(
                f"{origin}:{i + 1}: row {label} has {len(matches)} cells but the header names {n} devices",
                hint="the paste may be cut; copy the whole `nvidia-smi topo -m` output",
            )
        for col, (cell, _end) in zip(labels, matches[:n]):
            if col == label:
                if cell != "X":
                    raise NvidiaSmiError(f"{origin}:{i + 1}: row {label} should have X on the diagonal, got {cell!r}")
                continue
            if not (is_path_code(cell) or cell in P2P_CODES):
                raise NvidiaSmiError(
                    f"{origin}:{i + 1}: row {label}, column {col}: {cell!r} is not a topology code",
                    hint="expected NV#, PIX, PXB, PHB, NODE or SYS",
                )
            m.cells[(label, col)] = cell
        if label.startswith("GPU") and label[3:].isdigit():
            m.trailing[label], short = _split_trailing(body[matches[n - 1][1] :], columns)
            if short:
                m.short[label] = i + 1
        rows_seen.append(label)
        i += 1
    if len(rows_seen) < n:
        missing = ", ".join(labels[len(rows_seen) :])
        raise NvidiaSmiError(
            f"{origin}:{i + 1}: matrix rows stop before {missing} (header names {n} devices)",
            hint="the paste may be cut; copy the whole output",
        )
    for (r, c), v in m.cells.items():
        w = m.cells.get((c, r))
        if w is not None and w != v:
            raise NvidiaSmiError(f"{origin}: cell {r}/{c} is {v} but {c}/{r} is {w}; the matrix is not symmetric")
    return m, i


def _unglue(m: _Matrix, origin: str, notes: list[str]) -> None:
    """A NUMA Affinity value glued onto the CPU Affinity cell (``0-45,92-1370`` for ``0-45,92-137``
    and NUMA 0, the tab between them lost in a paste): split it where exactly one split fits — the
    CPU list another row has, or equal-length ranges (hyperthread siblings) — else refuse."""
    if "NUMA Affinity" not in m.columns:
        return
    clean = {
        tr.get("CPU Affinity", ""): tr.get("NUMA Affinity", "") for lab, tr in m.trailing.items() if lab not in m.short
    }
    for lab, line in m.short.items():
        tr = m.trailing[lab]
        cell = tr.get("CPU Affinity", "")
        if not cell or not cell[-1].isdigit():
            continue
        fits: list[tuple[str, str]] = []
        for k in (1, 2, 3):
            cpus, numa = cell[:-k], cell[-k:]
            if not cpus or not cpus[-1].isdigit() or (numa.startswith("0") and numa != "0"):
                continue
            try:
                ranges = [tuple(int(x) for x in part.split("-")) for part in cpus.split(",")]
            except ValueError:
                continue
            if any(len(r) > 2 or (len(r) == 2 and r[1] < r[0]) for r in ranges):
                continue
            widths = {r[-1] - r[0] for r in ranges}
            if clean.get(cpus) == numa or (cpus in clean and not clean[cpus].isdigit()):
                fits = [(cpus, numa)]
                break
            if len(ranges) >= 2 and len(widths) == 1:
                fits.append((cpus, numa))
        if len(fits) != 1:
            raise NvidiaSmiError(
                f"{origin}:{line}: {lab}: CPU Affinity {cell!r} with the NUMA Affinity cell missing; "
                "the NUMA value may be glued onto the CPU list and cannot be told apart",
                hint="copy the output again with its tab characters",
            )
        cpus, numa = fits[0]
        values = [tr.get(c, "") for c in m.columns if c != "CPU Affinity"]
        m.trailing[lab] = {"CPU Affinity": cpus, "NUMA Affinity": numa}
        for c, v in zip([c for c in m.columns if c not in ("CPU Affinity", "NUMA Affinity")], values):
            m.trailing[lab][c] = v
        notes.append(f"{lab}: NUMA Affinity glued onto the CPU Affinity cell ({cell}) read as CPUs {cpus}, NUMA {numa}")


def _na_int(v: str | None) -> int | None:
    if v is None or not v.strip().isdigit():
        return None
    return int(v)


def import_nvidia_smi(text: str, origin: str) -> Snapshot:
    """Parse every nvidia-smi block in ``text`` into one snapshot."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    topo: _Matrix | None = None
    p2p: dict[str, _Matrix] = {}
    links: dict[int, _GpuLinks] = {}
    notes: list[str] = []
    cur_gpu: int | None = None
    p2p_caps: str | None = None
    topo_line = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        cmd = _P2P_CMD.search(line)
        if cmd:
            p2p_caps = cmd.group(1)
        head = _header_labels(line)
        if head is not None:
            labels, columns = head
            if len(labels) > MAX_DEVICES:
                raise NvidiaSmiError(
                    f"{origin}:{i + 1}: the header names {len(labels)} devices (at most {MAX_DEVICES} in one host)"
                )
            start = i
            m, i = _parse_matrix(lines, i, origin, labels, columns)
            _unglue(m, origin, notes)
            if m.glued:
                notes.append(
                    f"lines {', '.join(map(str, m.glued))}: two cells in one token (the tab between them lost in the "
                    "paste) read as two"
                )
            is_p2p = bool(m.cells) and all(v in P2P_CODES for v in m.cells.values())
            if is_p2p:
                caps = p2p_caps or "rw"
                if p2p_caps is None:
                    notes.append("a `topo -p2p` matrix without its command line was taken as read and write status")
                for c in caps:
                    p2p[c] = m
                p2p_caps = None
            elif topo is None:
                topo, topo_line = m, start + 1
            elif (m.labels, m.cells) == (topo.labels, topo.cells):
                notes.append(f"the `topo -m` output at line {start + 1} repeats the one at line {topo_line}; read once")
            else:
                raise NvidiaSmiError(
                    f"{origin}:{start + 1}: a second, different `nvidia-smi topo -m` output (the first is at line "
                    f"{topo_line}); one file holds one machine",
                    hint="split the file, one per host, import each, and join them with `topomap merge`",
                )
            continue
        g = _gpu_line(line)
        if g and ("UUID" in line or (i + 1 < len(lines) and "Link" in lines[i + 1])):
            cur_gpu, name, uuid = g
            gl = links.setdefault(cur_gpu, _GpuLinks())
            gl.name = name or gl.name
            gl.uuid = uuid or gl.uuid
        elif cur_gpu is not None:
            s = _LINK_S.match(line)
            r = _LINK_R.match(line)
            none = no_link_up(line)
            if none:
                links[cur_gpu].none_active = none
            elif s:
                links[cur_gpu].speeds[int(s.group(1))] = float(s.group(2)) if s.group(2) else None
            elif r:
                links[cur_gpu].remotes[int(r.group(1))] = r.group(2)
        i += 1
    found = topo is not None or bool(links) or bool(p2p)
    nic_legend = read_nic_legend(lines, origin, NvidiaSmiError)
    return _with_reports(text, lines, origin, _build(origin, topo, p2p, nic_legend, links, notes), found)


def _with_reports(text: str, lines: list[str], origin: str, snap: Snapshot, found: bool) -> Snapshot:
    """``snap`` joined by GPU with the file's `nvidia-smi -q` and `--query-gpu` CSV output, by NIC with its
    `ibstat`, and the host's CPU model from its `lscpu` lines."""
    query = parse_query(lines) if looks_like_query(text) else QReport()
    csv = find_blocks(lines, origin) if looks_like_query_csv(text) else []
    if not found and not query.gpus and not csv:
        raise NvidiaSmiError(
            f"{origin}: no `nvidia-smi topo -m`, `topo -p2p`, `nvlink -s/-R`, `-q` or `--query-gpu` output found",
            hint="the header line must start with GPU0 (a --query-gpu CSV with its header line, or its command line "
            "above `noheader` rows); an `ibstat` output is read appended to one of these",
        )
    return apply_lscpu(apply_ibstat(apply_blocks(apply_query(snap, query), csv, origin), lines, origin), lines)


def _build(
    origin: str,
    topo: _Matrix | None,
    p2p: dict[str, _Matrix],
    nic_legend: NicLegend,
    links: dict[int, _GpuLinks],
    notes: list[str],
) -> Snapshot:
    base = topo or next(iter(p2p.values()), None)
    labels = base.labels if base else [f"GPU{k}" for k in sorted(links)]
    gpu_labels = [x for x in labels if _is_gpu_label(x)]
    nic_labels = [x for x in labels if x not in gpu_labels]
    ids: dict[str, str] = {x: f"gpu{int(x[3:])}" for x in gpu_labels}
    nics = _nics(nic_labels, nic_legend.names, ids)
    unnamed_nics = bool(nic_labels) and any(n.name == f"NIC{n.index}" for n in nics)
    legend_said, findings = legend_notes(nic_labels, nic_legend)  # none, or one the paste cuts (issue 23)
    findings += no_link_findings({k: gl.none_active for k, gl in links.items()})
    notes += legend_said
    gpus = buses_from_bridge(_gpus(gpu_labels, topo, links), notes)
    pairs = _pairs(labels, ids, gpus, topo, p2p)
    unknown = _unknown_fields(gpus, topo, p2p, links, has_gpus=bool(gpu_labels), unnamed_nics=unnamed_nics)
    return Snapshot(
        source=Source(
            kind="nvidia-smi",
            origin=origin,
            tool=f"topomap {__version__}",
            unknown_fields=unknown,
            notes=notes,
            formats=_formats(topo, p2p, links),
        ),
        gpus=sorted(gpus, key=lambda g: g.index),
        nics=sorted(nics, key=lambda n: n.index),
        pairs=pairs,
        findings=findings,
    )


def _formats(topo: _Matrix | None, p2p: dict[str, _Matrix], links: dict[int, _GpuLinks]) -> list[SourceFormat]:
    """The outputs this file held (``Source.formats``; what each can carry: model.source_facts)."""
    speeds = any(gl.speeds or gl.none_active for gl in links.values())  # "all links are inActive" is a status
    remotes = any(gl.remotes for gl in links.values())
    lone = bool(links) and not (speeds or remotes)  # GPU lines only (`nvidia-smi -L`)
    held: dict[SourceFormat, bool] = {"topo-m": topo is not None, "topo-p2p": bool(p2p), "nvlink-status": speeds,
                                      "nvlink-remote": remotes, "gpu-list": lone}  # fmt: skip
    return [f for f, yes in held.items() if yes]


def _nics(nic_labels: list[str], nic_legend: dict[int, str], ids: dict[str, str]) -> list[Nic]:
    """The matrix's NIC columns, named by the NIC Legend where there is one; ``ids`` gets each label's id."""
    nics: list[Nic] = []
    for k, lab in enumerate(nic_labels):
        if lab.startswith("NIC") and lab[3:].isdigit():
            idx = int(lab[3:])
            name = nic_legend.get(idx, lab)
        else:
            idx, name = k, lab
        ids[lab] = f"nic{idx}"
        nics.append(Nic(index=idx, name=name, rdma=True))
    return nics


def _gpus(gpu_labels: list[str], topo: _Matrix | None, links: dict[int, _GpuLinks]) -> list[Gpu]:
    """The matrix's GPUs with their affinity columns and links, then GPUs only `nvlink -s/-R` names."""
    gpus: list[Gpu] = []
    for lab in gpu_labels:
        idx = int(lab[3:])
        tr = topo.trailing.get(lab, {}) if topo else {}
        cpu = tr.get("CPU Affinity")
        gl = links.get(idx)
        gpus.append(
            Gpu(
                index=idx,
                name=gl.name if gl else None,
                uuid=gl.uuid if gl else None,
                cpu_affinity=None if cpu in (None, "N/A") else cpu,
                numa_node=_na_int(tr.get("NUMA Affinity")),
                gpu_numa_node=_na_int(tr.get("GPU NUMA ID")),
                nvlinks=_nvlinks(gl) if gl else [],
            )
        )
    for k in sorted(set(links) - {g.index for g in gpus}):
        gl = links[k]
        gpus.append(Gpu(index=k, name=gl.name, uuid=gl.uuid, nvlinks=_nvlinks(gl)))
    return gpus


def _pairs(
    labels: list[str], ids: dict[str, str], gpus: list[Gpu], topo: _Matrix | None, p2p: dict[str, _Matrix]
) -> list[Pair]:
    """Every pair of labels: the `topo -m` cell (else NV<n> from links with named peers) and the
    `topo -p2p` statuses of GPU pairs."""
    by_label = {f"GPU{g.index}": g for g in gpus}
    buses = gpu_buses(gpus)
    pairs: list[Pair] = []
    for x, a in enumerate(labels):
        for b in labels[x + 1 :]:
            path = topo.cells.get((a, b)) if topo else None
            if path is None and a in by_label and b in by_label and buses:  # links with named peers (nvlink -R)
                n = nvlink_count(by_label[a], by_label[b], buses)
                path = nvlink_path(n) if n else None  # what `topo -m` prints for an NVLink pair
            nv = nvlinks_of(path)
            pp = None
            if a in ids and b in ids and _is_gpu_label(a) and _is_gpu_label(b) and p2p:
                vals = {c: p2p[c].cells.get((a, b)) for c in p2p}
                pp = P2P(
                    read=vals.get("r"),  # type: ignore[arg-type]
                    write=vals.get("w"),  # type: ignore[arg-type]
                    nvlink=vals.get("n"),  # type: ignore[arg-type]
                    atomics=vals.get("a"),  # type: ignore[arg-type]
                )
            pairs.append(Pair(a=ids[a], b=ids[b], path=path, nvlinks=nv, p2p=pp))
    return pairs


def _is_gpu_label(label: str) -> bool:
    return label.startswith("GPU") and label[3:].isdigit()


def _unknown_fields(
    gpus: list[Gpu],
    topo: _Matrix | None,
    p2p: dict[str, _Matrix],
    links: dict[int, _GpuLinks],
    has_gpus: bool,
    unnamed_nics: bool,
) -> list[str]:
    """What these outputs do not say (``Source.unknown_fields``)."""
    unknown = [
        *([] if all(g.pci_bus_id for g in gpus) else ["gpus.pci_bus_id"]),
        "gpus.memory_total_bytes",
        "gpus.compute_capability",
        "gpus.pcie",
        "gpus.fabric",
        "gpus.mig",
        "gpus.cuda_ordinal",
        "nics.pci_bus_id",
        "nics.kind",
        "nics.speed_gbit_s",
        "pairs.cuda",
        "pci",
        "software",
    ]
    if not any(g.uuid for g in gpus):
        unknown[:0] = ["gpus.uuid", "gpus.name"]
    if not p2p:
        unknown.append("pairs.p2p")
    if not links:
        unknown.append("gpus.nvlinks")
    if topo is None:
        unknown.append("pairs.path")
    if unnamed_nics:
        unknown.append("nics.name")  # no NIC Legend: NIC<n> is the matrix's label, not the device
    for column, fact in (("CPU Affinity", "gpus.cpu_affinity"), ("NUMA Affinity", "gpus.numa_node"),
                         ("GPU NUMA ID", "gpus.gpu_numa_node")):  # fmt: skip
        if has_gpus and (topo is None or column not in topo.columns):
            unknown.append(fact)  # an older driver prints fewer columns: not "N/A", unknown
    return unknown


def _nvlinks(gl: _GpuLinks) -> list[NvLink]:
    remotes = dict(gl.remotes)
    active = sorted(k for k, v in gl.speeds.items() if v is not None)
    if gl.speeds and remotes and set(remotes) != set(active) and len(remotes) == len(active):
        # `nvlink -R` numbers the active links 0..n-1 while `nvlink -s` numbers all links
        # (HPE DL380a: -s shows links 0-3,6-9,12-15 active, -R lists Link 0..11). Map in order.
        remotes = {phys: remotes[k] for phys, k in zip(active, sorted(remotes))}
    out: list[NvLink] = []
    for link in sorted(set(gl.speeds) | set(remotes)):
        speed = gl.speeds.get(link)
        out.append(
            NvLink(
                link=link,
                active=speed is not None or (link in remotes and link not in gl.speeds),
                speed_gbps=speed,
                remote_pci_bus_id=normalize_bus_id(remotes[link]) if link in remotes else None,
            )
        )
    return out
