"""What a snapshot's source can know: the one test every view asks before it states a fact.

Each kind of input carries some facts and not others: a `nvidia-smi topo -p2p` paste shows P2P
status but no NVLink and no NIC; `nvidia-smi nvlink --status -i 0` shows one GPU of a node, so the
GPUs it lists are some, not all; a `topo -m` has paths but no memory sizes; a static NCCL file does
not say which GPU pairs NVLink joins. A fact the source does not carry is unknown, never "none",
and never a failure: :func:`settle` names the command whose output would carry it.

The importers record which outputs a file held (``Source.formats``: ``topo-m``, ``nvlink-status``,
``query-gpu-csv``, …); :data:`CAN_CARRY` says what each can carry at most; ``Source.unknown_fields``
says what this particular file lacked (a `topo -m` without its NUMA column, a CSV without
``memory.total``). :func:`source_facts` joins the three into one typed answer. This module imports
nothing heavy, so the light commands (`matrix`) ask the same function as the graph's evidence.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import lru_cache

from topomap.base.links import PathClass
from topomap.model.snapshot import SOURCE_FORMATS, Snapshot, SourceFormat, hosts_of


class Fact(enum.Enum):
    """A kind of fact a source may or may not carry."""

    NVLINK = "nvlink"  # which GPU pairs NVLink joins (the NV# of `topo -m`)
    NVLINK_LINKS = "nvlink_links"  # per-link state and speed (`nvlink -s`)
    PATH = "path"  # the PCIe path class between devices (PIX … SYS)
    P2P = "p2p"  # P2P read/write status per GPU pair (`topo -p2p`)
    NICS = "nics"  # which NICs the host has (and where)
    NIC_NAMES = "nic_names"  # their device names (mlx5_0), not NIC<n>
    NIC_SPEED = "nic_speed"
    NIC_KIND = "nic_kind"
    GPU_COUNT = "gpu_count"  # every GPU of the host is listed (not only some)
    GPU_MODEL = "gpu_model"
    GPU_MEMORY = "gpu_memory"
    GPU_UUID = "gpu_uuid"
    GPU_BUS_ID = "gpu_bus_id"
    NUMA = "numa"  # the NUMA node nearest each GPU
    PCIE_LINK = "pcie_link"  # each GPU's PCIe generation and width, current and max
    FABRIC = "fabric"
    MIG = "mig"
    DRIVER = "driver"
    CUDA = "cuda"


#: The snapshot fields (``Source.unknown_fields`` names) each fact lives in; one listed there unknown.
FIELDS: dict[Fact, tuple[str, ...]] = {
    Fact.NVLINK: ("pairs.nvlink",),
    Fact.NVLINK_LINKS: ("gpus.nvlinks",),
    Fact.PATH: ("pairs.path",),
    Fact.P2P: ("pairs.p2p",),
    Fact.NICS: ("nics",),
    Fact.NIC_NAMES: ("nics", "nics.name"),
    Fact.NIC_SPEED: ("nics", "nics.speed_gbit_s"),
    Fact.NIC_KIND: ("nics", "nics.kind"),
    Fact.GPU_COUNT: ("gpus.count",),
    Fact.GPU_MODEL: ("gpus.name",),
    Fact.GPU_MEMORY: ("gpus.memory_total_bytes",),
    Fact.GPU_UUID: ("gpus.uuid",),
    Fact.GPU_BUS_ID: ("gpus.pci_bus_id",),
    Fact.NUMA: ("gpus.numa_node",),
    Fact.PCIE_LINK: ("gpus.pcie",),
    Fact.FABRIC: ("gpus.fabric",),
    Fact.MIG: ("gpus.mig",),
    Fact.DRIVER: ("software", "software.driver_version"),
    Fact.CUDA: ("software", "software.cuda_driver_version"),
}

_ALL = frozenset(Fact)
_GPU_IDENTITY = frozenset({Fact.GPU_MODEL, Fact.GPU_UUID})

#: What each kind of input can carry at most (what one file lacked is in ``unknown_fields``).
CAN_CARRY: dict[SourceFormat, frozenset[Fact]] = {
    "probe": _ALL,
    # NCCL's topology file: the tree, links and NICs; never UUIDs, memory, the fabric, MIG, P2P or
    # versions (its importer adds what one file leaves out: models, NVLink …; unknown_fields_of)
    "nccl-xml": _ALL - {Fact.GPU_UUID, Fact.GPU_MEMORY, Fact.FABRIC, Fact.MIG, Fact.P2P, Fact.DRIVER, Fact.CUDA},
    "hwloc-xml": _ALL,
    "lstopo": _ALL,  # as hwloc XML: its importer lists what the text leaves out (models without -v …)
    # NCCL's dump in a log: as its topology file, less the GPU models, the PCIe links and the NIC kinds (its
    # importer adds NVLink counts it cannot tell)
    "nccl-log": _ALL
    - {
        Fact.GPU_UUID,
        Fact.GPU_MODEL,
        Fact.GPU_MEMORY,
        Fact.FABRIC,
        Fact.MIG,
        Fact.PCIE_LINK,
        Fact.P2P,
        Fact.DRIVER,
        Fact.CUDA,
        Fact.NIC_KIND,
    },
    "topo-m": frozenset({Fact.NVLINK, Fact.PATH, Fact.NICS, Fact.NIC_NAMES, Fact.GPU_COUNT, Fact.NUMA}),
    "topo-p2p": frozenset({Fact.P2P, Fact.GPU_COUNT}),
    # `nvlink -s` / `--status` and `-R` list GPUs by their links: `-i 0` lists one GPU of a node.
    "nvlink-status": frozenset({Fact.NVLINK, Fact.NVLINK_LINKS}) | _GPU_IDENTITY,
    "nvlink-remote": frozenset({Fact.NVLINK, Fact.NVLINK_LINKS}) | _GPU_IDENTITY,
    "gpu-list": _GPU_IDENTITY,  # `nvidia-smi -L`
    "nvidia-smi-q": frozenset(
        {
            Fact.GPU_COUNT,
            Fact.GPU_MODEL,
            Fact.GPU_MEMORY,
            Fact.GPU_UUID,
            Fact.GPU_BUS_ID,
            Fact.PCIE_LINK,
            Fact.FABRIC,
            Fact.MIG,
            Fact.DRIVER,
            Fact.CUDA,
        }
    ),
    # `--query-gpu=…`: what its columns hold (the importer lists the columns left out as unknown).
    "query-gpu-csv": frozenset(
        {
            Fact.GPU_COUNT,
            Fact.GPU_MODEL,
            Fact.GPU_MEMORY,
            Fact.GPU_UUID,
            Fact.GPU_BUS_ID,
            Fact.PCIE_LINK,
            Fact.MIG,
            Fact.DRIVER,
        }
    ),
    # `ibstat` appended to a paste: the port rate, state and link layer of each RDMA device, joined to
    # the NICs another output (a `topo -m` NIC Legend) names; it does not say where a device sits.
    # `ibv_devinfo` (same reader, same format) has no rate: its importer leaves the speed unknown.
    "ibstat": frozenset({Fact.NIC_NAMES, Fact.NIC_SPEED, Fact.NIC_KIND}),
    # A declared lot (a catalogue line as YAML, topomap.model.lots): the GPUs, their links and memory, the
    # NICs' count, rate and fabric, the PCIe generation. Never where a device sits (paths, NUMA),
    # names, bus ids, link states, MIG or the driver: those are what a probe shows. P2P, an NVLink domain
    # across hosts and the CUDA version where it gives them (else listed unknown).
    "declared": frozenset(
        {
            Fact.GPU_COUNT,
            Fact.GPU_MODEL,
            Fact.GPU_MEMORY,
            Fact.NVLINK,
            Fact.NICS,
            Fact.NIC_SPEED,
            Fact.NIC_KIND,
            Fact.PCIE_LINK,
            Fact.P2P,  # peer-to-peer for every pair (p2p:), where given
            Fact.FABRIC,  # an NVLink domain across hosts (nvlink_domain:), where given
            Fact.CUDA,  # the CUDA version (cuda:), where given
        }
    ),
    # an nccl-tests output: its rank table names each rank's host, GPU model and bus id; only the GPUs the run
    # used, never how they are linked (the lot the results imply, issue 32)
    "nccl-tests": frozenset({Fact.GPU_MODEL, Fact.GPU_BUS_ID}),
    # AMD (issue 35). `rocm-smi --showtopo`: which GPU pairs XGMI joins (its Link Type and weights: the GPU
    # link, Fact.NVLINK's place for AMD), the PCIe route class through the CPUs, every GPU, NUMA; no
    # names, no memory, no bus ids (those are other rocm-smi options, read when appended).
    "rocm-smi-topo": frozenset({Fact.NVLINK, Fact.PATH, Fact.GPU_COUNT}),
    "rocm-smi-numa": frozenset({Fact.NUMA, Fact.GPU_COUNT}),
    # `amd-smi topology`: the same tables by bus id, with ACCESS (amdsmi_is_P2P_accessible) as P2P
    "amd-smi-topology": frozenset({Fact.NVLINK, Fact.PATH, Fact.P2P, Fact.GPU_COUNT, Fact.GPU_BUS_ID}),
    "amd-smi-static": frozenset(
        {Fact.GPU_COUNT, Fact.GPU_MODEL, Fact.GPU_MEMORY, Fact.GPU_BUS_ID, Fact.NUMA, Fact.PCIE_LINK, Fact.DRIVER}
    ),
    "amd-smi-list": frozenset({Fact.GPU_COUNT, Fact.GPU_BUS_ID, Fact.GPU_UUID}),
    "amd-smi-xgmi": frozenset({Fact.NVLINK_LINKS, Fact.GPU_BUS_ID}),
    "rocminfo": frozenset({Fact.GPU_COUNT, Fact.GPU_MODEL, Fact.GPU_MEMORY, Fact.GPU_UUID, Fact.GPU_BUS_ID}),
}


#: The order importers list ``Source.unknown_fields`` in (the snapshot's JSON keeps it); fields not
#: named here follow in the order given.
FIELD_ORDER: tuple[str, ...] = (
    "gpus.uuid",
    "gpus.name",
    "gpus.memory_total_bytes",
    "gpus.fabric",
    "gpus.mig",
    "gpus.cuda_ordinal",
    "gpus.pcie",
    "pairs.p2p",
    "pairs.cuda",
    "software",
    "nics.kind",
    "pairs.nvlink",
    "gpus.nvlinks",
)


def unknown_fields_of(fmt: SourceFormat, *also: str) -> list[str]:
    """``Source.unknown_fields`` of a file of kind ``fmt``: the field of each fact :data:`CAN_CARRY` says
    it cannot carry (a whole part, ``software`` or ``nics``, where it carries none of that part's facts),
    and ``also`` (what this one file lacks, and fields no fact covers), each once, in :data:`FIELD_ORDER`."""
    missing = {f for f in Fact if f not in CAN_CARRY[fmt]}
    parts: dict[str, list[Fact]] = {}
    for f in Fact:
        parts.setdefault(FIELDS[f][0], []).append(f)
    fields: list[str] = []
    for part, facts in parts.items():
        if all(f in missing for f in facts):
            fields.append(part)
        else:
            fields += [FIELDS[f][-1] for f in facts if f in missing]
    named = list(dict.fromkeys([*fields, *also]))
    rank = {x: k for k, x in enumerate(FIELD_ORDER)}
    return sorted(named, key=lambda x: rank.get(x, len(FIELD_ORDER)))


#: The AMD formats: a snapshot read from them names AMD's commands where a fact is missing.
AMD_FORMATS: frozenset[SourceFormat] = frozenset(
    {"rocm-smi-topo", "rocm-smi-numa", "amd-smi-topology", "amd-smi-static", "amd-smi-list", "amd-smi-xgmi", "rocminfo"}
)

#: In words, for notes and `show`: the output each format is.
FORMAT_WORDS: dict[SourceFormat, str] = {
    "probe": "topomap probe",
    "nccl-xml": "NCCL topology XML",
    "hwloc-xml": "hwloc XML",
    "lstopo": "`lstopo` text",
    "nccl-log": "NCCL's topology dump in an INFO log",
    "topo-m": "`nvidia-smi topo -m`",
    "topo-p2p": "`nvidia-smi topo -p2p`",
    "nvlink-status": "`nvidia-smi nvlink -s`",
    "nvlink-remote": "`nvidia-smi nvlink -R`",
    "gpu-list": "`nvidia-smi -L`",
    "nvidia-smi-q": "`nvidia-smi -q`",
    "query-gpu-csv": "`nvidia-smi --query-gpu … --format=csv`",
    "ibstat": "`ibstat` (or `ibv_devinfo`)",
    "declared": "a declared lot",
    "nccl-tests": "an nccl-tests output's rank table",
    "rocm-smi-topo": "`rocm-smi --showtopo`",
    "rocm-smi-numa": "`rocm-smi --showtoponuma`",
    "amd-smi-topology": "`amd-smi topology`",
    "amd-smi-static": "`amd-smi static`",
    "amd-smi-list": "`amd-smi list`",
    "amd-smi-xgmi": "`amd-smi xgmi`",
    "rocminfo": "`rocminfo`",
}

#: The query that settles what a paste lacks about the GPUs themselves.
QUERY_GPU = "nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id --format=csv"
QUERY_GPU_LINK = (
    "nvidia-smi --query-gpu=index,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,"
    "pcie.link.width.current,pcie.link.width.max --format=csv"
)

#: The command whose output carries each fact: pasted into the same file (appended to the others),
#: topomap reads it (tests/importers/test_settle_commands.py holds every command named here to that).
SETTLE_BY: dict[Fact, str] = {
    Fact.NVLINK: "`nvidia-smi topo -m` run inside the container (or `topomap probe`)",
    Fact.NVLINK_LINKS: "`nvidia-smi nvlink -s` (or `topomap probe`)",
    Fact.PATH: "`nvidia-smi topo -m` run inside the container",
    Fact.P2P: "`nvidia-smi topo -p2p rw` (or `topomap probe`)",
    Fact.NICS: "`nvidia-smi topo -m` (its NIC columns and legend) or `topomap probe`",
    Fact.NIC_NAMES: "`nvidia-smi topo -m` (its NIC legend) or `topomap probe`",
    Fact.NIC_SPEED: "`ibstat` appended to the `nvidia-smi topo -m` paste (or `topomap probe`)",
    Fact.NIC_KIND: "`ibstat` appended to the `nvidia-smi topo -m` paste (or `topomap probe`)",
    Fact.GPU_COUNT: f"`{QUERY_GPU}` (or `nvidia-smi topo -m`, or `topomap probe`)",
    Fact.GPU_MODEL: f"`{QUERY_GPU}` (or `topomap probe`)",
    Fact.GPU_MEMORY: f"`{QUERY_GPU}` (or `topomap probe`)",
    Fact.GPU_UUID: "`nvidia-smi -L` (or `topomap probe`)",
    Fact.GPU_BUS_ID: f"`{QUERY_GPU}` (or `topomap probe`)",
    Fact.NUMA: "`nvidia-smi topo -m` of a recent driver (its NUMA Affinity column) or `topomap probe` on the machine",
    Fact.PCIE_LINK: f"`{QUERY_GPU_LINK}` (or `nvidia-smi -q`, or `topomap probe`)",
    Fact.FABRIC: "`nvidia-smi -q` (section Fabric) or `topomap probe`",
    Fact.MIG: "`nvidia-smi -q` (section MIG Mode) or `topomap probe`",
    Fact.DRIVER: "`nvidia-smi --query-gpu=driver_version --format=csv` (or `nvidia-smi -q`, or `topomap probe`)",
    Fact.CUDA: "`nvidia-smi -q` (or `topomap probe`)",
}


#: On AMD GPUs (issue 35) the commands that carry each fact: AMD's tools (or `topomap probe`, which reads
#: AMD SMI). A fact AMD's tools do not print (NVLink fabric, MIG, CUDA) has no entry: NVIDIA's words stand.
SETTLE_BY_AMD: dict[Fact, str] = {
    Fact.NVLINK: "`amd-smi topology` (or `rocm-smi --showtopo`, or `topomap probe`)",
    Fact.NVLINK_LINKS: "`amd-smi xgmi` (or `topomap probe`)",
    Fact.PATH: "`amd-smi topology` (or `rocm-smi --showtopo`)",
    Fact.P2P: "`amd-smi topology` (its ACCESS table, or `topomap probe`)",
    Fact.NICS: "`topomap probe` on the machine (AMD's tools list no NICs)",
    Fact.NIC_NAMES: "`topomap probe` on the machine (AMD's tools list no NICs)",
    Fact.NIC_SPEED: "`topomap probe` on the machine (AMD's tools list no NICs)",
    Fact.NIC_KIND: "`topomap probe` on the machine (AMD's tools list no NICs)",
    Fact.GPU_COUNT: "`amd-smi list` (or `topomap probe`)",
    Fact.GPU_MODEL: "`amd-smi static` (or `rocminfo`, or `topomap probe`)",
    Fact.GPU_MEMORY: "`amd-smi static` (or `rocm-smi --showmeminfo vram`, or `topomap probe`)",
    Fact.GPU_UUID: "`amd-smi list` (or `topomap probe`)",
    Fact.GPU_BUS_ID: "`amd-smi list` (or `rocm-smi --showbus`, or `topomap probe`)",
    Fact.NUMA: "`rocm-smi --showtoponuma` (or `amd-smi static`, or `topomap probe`)",
    Fact.PCIE_LINK: "`amd-smi static` (its BUS section, or `topomap probe`)",
    Fact.DRIVER: "`amd-smi static` (its DRIVER section, or `topomap probe`)",
}


def is_amd_source(snap: Snapshot) -> bool:
    """The snapshot was read from AMD's tools, or its GPUs are AMD's (issue 35)."""
    return any(f in AMD_FORMATS for f in formats_of(snap)) or any(g.vendor == "amd" for g in snap.gpus)


def settle_for(snap: Snapshot, fact: Fact) -> str:
    """:func:`settle` in the snapshot's vendor's words: AMD's commands for an AMD machine."""
    if is_amd_source(snap) and fact in SETTLE_BY_AMD:
        return SETTLE_BY_AMD[fact]
    return settle(fact)


@dataclass(frozen=True)
class SourceFacts:
    """What one snapshot's source carries: the outputs it was read from and the facts they hold."""

    formats: tuple[SourceFormat, ...]
    carried: frozenset[Fact]

    def knows(self, fact: Fact) -> bool:
        return fact in self.carried

    def missing(self, *facts: Fact) -> tuple[Fact, ...]:
        """The facts of ``facts`` this source does not carry, in the order asked."""
        return tuple(f for f in facts if f not in self.carried)

    def words(self) -> str:
        """The outputs read, in words: "`nvidia-smi topo -m` + `nvidia-smi --query-gpu …`"."""
        return " + ".join(FORMAT_WORDS[f] for f in self.formats) or "an unknown source"

    def why_not(self, fact: Fact) -> str:
        """One line: this source does not carry ``fact`` (for an UNKNOWN's evidence): the kind of
        output cannot, or this one output left it out (a `topo -m` of an older driver: no NUMA column)."""
        if self.formats == ("declared",):  # a lot as a catalogue describes it: it says, or leaves out
            if fact in CAN_CARRY["declared"]:
                return f"this declared lot does not give {WHAT[fact]}"
            return f"a declared lot does not carry {WHAT[fact]} (a probe of the machine does)"
        if any(fact in CAN_CARRY.get(f, frozenset()) for f in self.formats):
            return f"this {self.words()} output does not record {WHAT[fact]}"
        return f"{self.words()} does not carry {WHAT[fact]}"


#: Each fact in words, for "… does not carry …".
WHAT: dict[Fact, str] = {
    Fact.NVLINK: "which GPUs NVLink joins",
    Fact.NVLINK_LINKS: "per-link NVLink state",
    Fact.PATH: "the PCIe path between devices",
    Fact.P2P: "P2P status",
    Fact.NICS: "the NICs",
    Fact.NIC_NAMES: "NIC names",
    Fact.NIC_SPEED: "NIC speeds",
    Fact.NIC_KIND: "NIC kinds",
    Fact.GPU_COUNT: "every GPU of the host (it may list only some)",
    Fact.GPU_MODEL: "GPU models",
    Fact.GPU_MEMORY: "GPU memory sizes",
    Fact.GPU_UUID: "GPU UUIDs",
    Fact.GPU_BUS_ID: "GPU bus ids",
    Fact.NUMA: "NUMA nodes",
    Fact.PCIE_LINK: "PCIe link generation and width",
    Fact.FABRIC: "the NVLink fabric state",
    Fact.MIG: "MIG mode",
    Fact.DRIVER: "the driver version",
    Fact.CUDA: "the CUDA version",
}


#: The facts whose words differ on AMD GPUs (issue 35): the GPU link is XGMI.
WHAT_AMD: dict[Fact, str] = {
    Fact.NVLINK: "which GPUs XGMI joins",
    Fact.NVLINK_LINKS: "per-link XGMI state and rate",
}


def what(fact: Fact, amd: bool = False) -> str:
    """A fact in words, in the vendor's terms."""
    return WHAT_AMD.get(fact, WHAT[fact]) if amd else WHAT[fact]


def settle(fact: Fact) -> str:
    """The command whose output carries ``fact``."""
    return SETTLE_BY[fact]


def settle_command(fact: Fact) -> str:
    """The first command of :func:`settle`, bare (no backquotes): for text that quotes it itself."""
    return settle(fact).split("`")[1]


def formats_of(snap: Snapshot) -> tuple[SourceFormat, ...]:
    """The outputs a snapshot was read from: as recorded at import, else (a snapshot written before
    formats were recorded) from its kind and what it says it lacks."""
    src = snap.source
    if src.formats:
        return tuple(src.formats)
    if src.kind != "nvidia-smi":
        return (src.kind,) if src.kind in SOURCE_FORMATS else ()
    unknown = set(src.unknown_fields)
    found: list[SourceFormat] = []
    if "pairs.path" not in unknown:
        found.append("topo-m")
    if "pairs.p2p" not in unknown:
        found.append("topo-p2p")
    if "gpus.nvlinks" not in unknown:
        found.append("nvlink-status")
    if "gpus.memory_total_bytes" not in unknown:
        found.append("nvidia-smi-q")
    return tuple(found)


def source_facts(snap: Snapshot) -> SourceFacts:
    """What the snapshot's source carries. A merged cluster carries what every member carries."""
    if snap.source.kind == "merge" and snap.members:
        parts = [source_facts(m) for m in hosts_of(snap)]
        common = frozenset.intersection(*(p.carried for p in parts))
        formats = tuple(dict.fromkeys(f for p in parts for f in p.formats))
        return SourceFacts(formats, common)
    src = snap.source
    filled = tuple(sorted({f.field for f in src.filled})) if src.filled else ()
    return _carried(formats_of(snap), tuple(src.unknown_fields), filled)


@lru_cache(maxsize=1024)  # pure in its arguments; every host of a 10,000-host cluster asks it
def _carried(
    formats: tuple[SourceFormat, ...], unknown_fields: tuple[str, ...], filled: tuple[str, ...] = ()
) -> SourceFacts:
    """What the outputs carry, less what this file lacked, plus what a declared lot or the catalogue
    filled in (``Source.filled``: carried, with its origin, never as if a tool had read it)."""
    can: set[Fact] = set()
    for f in formats:
        can |= CAN_CARRY.get(f, frozenset())
    unknown = set(unknown_fields)
    carried = {f for f in can if not any(x in unknown for x in FIELDS[f])}
    carried |= {f for f in Fact if any(x in filled for x in FIELDS[f][-1:])}
    return SourceFacts(formats, frozenset(carried))


_BY_NAME = {f.value: f for f in Fact} | {"nic": Fact.NICS, "gpu_memory": Fact.GPU_MEMORY}


def source_knows(snap: Snapshot, fact: Fact | str) -> bool:
    """Whether the snapshot's source carries a fact: a :class:`Fact`, its value (``"nvlink"``), or
    a dotted snapshot field (``"nics.name"``) for the finer gaps one file may have."""
    if isinstance(fact, Fact):
        return source_facts(snap).knows(fact)
    named = _BY_NAME.get(fact)
    if named is not None:
        return source_facts(snap).knows(named)
    unknown = snap.source.unknown_fields
    return not any(fact == u or fact.startswith(u + ".") for u in unknown)


@dataclass(frozen=True)
class Gaps:
    """What a snapshot's source cannot know: ``facts`` it does not carry (its kind of output cannot,
    or this file left them out), in :class:`Fact` order; ``fields`` the finer snapshot fields it
    lacks that no fact covers (``gpus.compute_capability``, ``pairs.cuda``, ``pci``); ``recorded_as``
    the path classes it cannot tell apart, each (the class it cannot tell, the class recorded instead:
    ``("NODE", "PHB")``), as ``Source.path_recorded_as`` holds them."""

    facts: tuple[Fact, ...]
    fields: tuple[str, ...]
    amd: bool = False  # an AMD machine: the commands named are AMD's (issue 35)
    recorded_as: tuple[tuple[PathClass, PathClass], ...] = ()

    def settled_by(self) -> dict[str, list[Fact]]:
        """The facts grouped by the command whose output carries them (:func:`settle_command`, bare:
        ``nvidia-smi topo -m``), in the order the commands first appear."""
        out: dict[str, list[Fact]] = {}
        for f in self.facts:
            words = SETTLE_BY_AMD.get(f) if self.amd else None
            out.setdefault(words.split("`")[1] if words else settle_command(f), []).append(f)
        return out


def cannot_know(snap: Snapshot) -> Gaps:
    """What the snapshot's source cannot know, each once, asked of :data:`CAN_CARRY` and the fields
    the file lacked. Detail of something absent altogether is not listed again: NIC names, speeds,
    kinds and bus ids where the source has no NICs; the PCI tree where it has no path classes to
    infer one from (a `-q` or `--query-gpu` paste: "the PCIe path between devices" says it)."""
    facts = source_facts(snap)
    unknown = list(dict.fromkeys(snap.source.unknown_fields))
    if facts.formats:
        missing = [f for f in Fact if not facts.knows(f)]
    else:  # a snapshot that names no output: only what it lists as unknown
        missing = [f for f in Fact if any(x in unknown for x in FIELDS[f])]
    if is_amd_source(snap):  # NVIDIA-only facts: an AMD GPU has no NVLink fabric, MIG or CUDA (issue 35)
        missing = [f for f in missing if f not in (Fact.FABRIC, Fact.MIG, Fact.CUDA)]
    no_nics = Fact.NICS in missing
    if no_nics:
        missing = [f for f in missing if f not in (Fact.NIC_NAMES, Fact.NIC_SPEED, Fact.NIC_KIND)]
    covered = {x for f in Fact for x in FIELDS[f]}
    fields = [
        x
        for x in unknown
        if x not in covered and not (no_nics and x.startswith("nics.")) and not (x == "pci" and Fact.PATH in missing)
    ]
    return Gaps(tuple(missing), tuple(fields), is_amd_source(snap), tuple(snap.source.path_recorded_as.items()))
