"""``ibstat`` (or ``ibv_devinfo``) text appended to an nvidia-smi paste: each RDMA device's port.

``ibstat`` prints one block per channel adapter, headed ``CA 'mlx5_0'``, with one ``Port N:``
sub-block per port (``State: Active``, ``Rate: 400``, ``Link layer: InfiniBand``). The device names
are the ones `nvidia-smi topo -m` names in its NIC Legend, so a block joins the snapshot's NIC of
the same name: its speed (the port's rate, Gb/s, while the port is Active: a port that is down has
no trained rate), its state (as the probe records it: ``active``, ``down``, ``init``, ``armed``) and
its kind (link layer InfiniBand: ``infiniband``; Ethernet on an RDMA device: ``roce``).

``ibv_devinfo`` prints the same devices headed ``hca_id: mlx5_0``, each ``port: 1`` with its
``state: PORT_ACTIVE (4)`` and ``link_layer``, but no rate: it settles state and kind, not speed.

``ibstat`` does not say where a device sits (no PCIe path, no NUMA node): alone, or beside an
output without NIC names (``NIC0`` without a legend), it places nothing, and a note says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import msgspec

from topomap.base.errors import ImportFailure
from topomap.model.snapshot import Nic, NicKind, Snapshot

_CA = re.compile(r"^CA '([^'\s]{1,64})'\s*$")
_PORT = re.compile(r"^\s+Port (\d{1,3}):\s*$")
_HCA = re.compile(r"^hca_id:\s+(\S{1,64})\s*$")  # ibv_devinfo
_HCA_PORT = re.compile(r"^\s+port:\s+(\d{1,3})\s*$")
#: ibv_devinfo's keys → ibstat's.
_DEVINFO_KEYS = {"state": "State", "link_layer": "Link layer"}
MAX_CAS = 1024  # RDMA devices in one host (real hosts: under 40, SR-IOV functions included)
#: ``State:`` as ibstat prints it → the state the probe records (sysfs ``4: ACTIVE`` → ``active``).
_STATES = {"active": "active", "down": "down", "initializing": "init", "init": "init", "armed": "armed"}
_KINDS: dict[str, NicKind] = {"infiniband": "infiniband", "ethernet": "roce"}


class IbstatError(ImportFailure):
    """``ibstat`` text that cannot be read; names the file and line."""


@dataclass
class IbPort:
    number: int
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def state(self) -> str | None:
        """``Active`` (ibstat) or ``PORT_ACTIVE (4)`` (ibv_devinfo) → ``active``."""
        raw = self.fields.get("State", "").strip().lower().removeprefix("port_").split(" (")[0]
        return _STATES.get(raw)

    @property
    def rate(self) -> float | None:
        m = re.match(r"^(\d{1,4}(?:\.\d{1,3})?)$", self.fields.get("Rate", "").strip())
        return float(m.group(1)) if m and float(m.group(1)) > 0 else None

    @property
    def kind(self) -> NicKind | None:
        return _KINDS.get(self.fields.get("Link layer", "").strip().lower())


@dataclass
class IbCa:
    name: str
    line: int
    ca_type: str | None = None
    ports: list[IbPort] = field(default_factory=list)

    @property
    def port(self) -> IbPort | None:
        """The port that carries traffic: the first Active one, else the first."""
        return next((p for p in self.ports if p.state == "active"), self.ports[0] if self.ports else None)


def parse_ibstat(lines: list[str], origin: str) -> list[IbCa]:
    """Every ``CA '…'`` block in ``lines``; other text (prompts, `ibpanic:` lines, other outputs) ends a block."""
    cas: list[IbCa] = []
    cur: IbCa | None = None
    port: IbPort | None = None
    for n, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        m = _CA.match(line) or _HCA.match(line)
        if m:
            if any(c.name == m.group(1) for c in cas):
                raise IbstatError(
                    f"{origin}:{n}: `ibstat` lists CA '{m.group(1)}' twice (first at line "
                    f"{next(c.line for c in cas if c.name == m.group(1))}); two machines in one file?",
                    hint="split the file, one per host",
                )
            if len(cas) >= MAX_CAS:
                raise IbstatError(f"{origin}:{n}: more than {MAX_CAS} `ibstat` devices; not one host's output")
            cur, port = IbCa(name=m.group(1), line=n), None
            cas.append(cur)
            continue
        if cur is None or not line.strip():
            continue
        if not line[0].isspace():
            cur = port = None  # unindented text: the block is over
            continue
        p = _PORT.match(line) or _HCA_PORT.match(line)
        if p:
            port = IbPort(number=int(p.group(1)))
            cur.ports.append(port)
            continue
        key, sep, value = line.strip().partition(":")
        if not sep:
            continue
        key = _DEVINFO_KEYS.get(key.strip(), key.strip())
        if port is not None:
            port.fields.setdefault(key, value.strip())
        elif key.strip() == "CA type":
            cur.ca_type = value.strip() or None
    return cas


def _joined(nic: Nic, ca: IbCa) -> Nic:
    port = ca.port
    if port is None:
        return nic
    state = port.state
    return msgspec.structs.replace(
        nic,
        state=state or nic.state,
        speed_gbit_s=port.rate if state == "active" else nic.speed_gbit_s,
        kind=port.kind or nic.kind,
        rdma=True,
    )


def apply_ibstat(snap: Snapshot, lines: list[str], origin: str) -> Snapshot:
    """Join the file's ``ibstat`` blocks to its NICs by device name (``snap`` unchanged without one)."""
    cas = parse_ibstat(lines, origin) if any(_CA.match(x.rstrip()) or _HCA.match(x) for x in lines) else []
    if not cas:
        return snap
    by_name = {c.name: c for c in cas}
    nics = [_joined(n, by_name[n.name]) if n.name in by_name else n for n in snap.nics]
    joined = [n.name for n in snap.nics if n.name in by_name]
    tool = "`ibv_devinfo`" if any(_HCA.match(x) for x in lines) else "`ibstat`"
    notes = list(snap.source.notes)
    if not snap.nics:
        notes.append(
            f"{tool} lists {', '.join(by_name)} but no output in this file places them "
            "(append `nvidia-smi topo -m`, whose NIC Legend names them)"
        )
    elif not joined:
        notes.append(
            f"{tool} names {', '.join(by_name)}; the file's NICs are {', '.join(n.name for n in snap.nics)}: "
            "not joined (a `topo -m` with its NIC Legend names them)"
        )
    else:
        missing = [n.name for n in snap.nics if n.name not in by_name]
        extra = [c for c in by_name if c not in joined]
        if missing:
            notes.append(f"{tool} does not list {', '.join(missing)}: their speed and kind stay unknown")
        if extra:
            notes.append(f"{tool} lists {', '.join(extra)}, which no matrix in the file shows")
        for c in cas:
            if c.name in joined and c.port is not None and c.port.state != "active":
                notes.append(f"{tool}: the port of {c.name} is {c.port.state or 'not Active'}: no trained rate")
    unknown = list(snap.source.unknown_fields)
    ports = [by_name[n].port for n in joined]
    if snap.nics and len(joined) == len(snap.nics):  # every NIC joined: what every port says is known
        unknown = [f for f in unknown if f != "nics.kind" or not all(p and p.kind for p in ports)]
        unknown = [f for f in unknown if f != "nics.speed_gbit_s" or not all(p and "Rate" in p.fields for p in ports)]
    formats = [*snap.source.formats, "ibstat"] if "ibstat" not in snap.source.formats else snap.source.formats
    source = msgspec.structs.replace(snap.source, unknown_fields=unknown, notes=notes, formats=formats)
    return msgspec.structs.replace(snap, source=source, nics=nics)


__all__ = ["IbCa", "IbPort", "IbstatError", "apply_ibstat", "parse_ibstat"]
