"""The declared-lot file: a YAML mapping whose top level has ``lot:`` (the catalogue's name for it), read
with the line of every key. One msgspec definition both reads it (strict: an unknown key is an error
with a "did you mean") and generates ``topomap schema lot``. The catalogue's entries are written in the
same format, with a ``sources:`` block beside their facts.

The facts are flattened to dotted keys (``gpus.model``, ``nics.rate``: :data:`FACT_KEYS`), so that a
declared lot with ``type:`` overrides the catalogue entry key by key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

import msgspec

from topomap.files.yamlfile import YamlDoc, YamlError, convert, load_yaml

Fabric = Literal["infiniband", "roce", "efa", "ethernet", "slingshot", "tcpx", "tcpxo"]
FABRICS: tuple[str, ...] = get_args(Fabric)
CpuVendor = Literal["intel", "amd", "nvidia", "ampere", "arm"]
SourceKindIn = Literal["provider", "third-party"]


class LotError(YamlError):
    """A mistake in a declared lot (or the catalogue): one line naming the file, line and field; exit 2."""


class _L(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    """Strict: an unknown key is refused with the keys known there."""


class GpusIn(_L):
    """The GPUs of one host: the model as catalogues and nvidia-smi spell it, how many, memory per GPU."""

    model: str | None = None
    count: int | None = None
    memory: str | float | None = None  # per GPU, "180 GB" (as sold, decimal) or "192 GiB"


class NicsIn(_L):
    """The NICs of one host used for GPU traffic: how many, the line rate of each, the fabric."""

    count: int | None = None
    rate: str | float | None = None  # per NIC: "400 Gb/s", "400G", "3.2 Tb/s"
    fabric: Fabric | None = None


class PcieIn(_L):
    """The GPUs' own PCIe link: generation (1-6) and lanes."""

    gen: int | str | None = None
    width: int | None = None


class CpuIn(_L):
    """The host's CPUs: vendor, sockets, and the model as the catalogue writes it."""

    vendor: CpuVendor | None = None
    sockets: int | None = None
    model: str | None = None


class SourceIn(_L):
    """Where a catalogue fact comes from: the public page, what it says there, whose page it is."""

    url: str
    says: str
    kind: SourceKindIn = "provider"


class LotIn(_L):
    """A declared lot as written."""

    lot: str
    type: str | None = None  # a catalogue entry ("aws/p4de.24xlarge"): its facts, overridden by these
    hosts: int | None = None  # identical hosts (default 1)
    gpus: GpusIn | None = None
    gpu_links: str | int | None = None  # nvswitch | NV<k> (every pair k links) | none
    p2p: bool | None = None  # peer-to-peer between every GPU pair (over PCIe where no NVLink joins them)
    nvlink_domain: int | None = None  # GPUs in one NVLink domain across hosts (72: a GB200 NVL72 rack)
    nics: NicsIn | None = None
    gpudirect: bool | None = None  # GPUDirect RDMA between the GPUs and the NICs
    pcie: PcieIn | None = None
    cpu: CpuIn | None = None
    host_memory: str | float | None = None  # "2 TB"
    vcpus: int | None = None
    price: str | float | None = None  # "2.49 USD per GPU-hour", "98.32 USD per host-hour", "40 EUR per hour"
    periods: list[str | float] | None = None  # rental periods offered: [3 d, 7 d, 30 d]
    cuda: str | float | None = None  # the CUDA version the driver supports (nvidia-smi's "CUDA Version")
    sources: dict[str, SourceIn] | None = None  # the catalogue only: the public page of each fact key


#: The hardware facts a lot gives, flattened, in the order every view lists them.
FACT_KEYS: tuple[str, ...] = (
    "hosts",
    "gpus.model",
    "gpus.count",
    "gpus.memory",
    "gpu_links",
    "p2p",
    "nvlink_domain",
    "nics.count",
    "nics.rate",
    "nics.fabric",
    "gpudirect",
    "pcie.gen",
    "pcie.width",
    "cpu.vendor",
    "cpu.sockets",
    "cpu.model",
    "host_memory",
    "vcpus",
    "cuda",
)
#: What each fact key is, in words.
FACT_WORDS: dict[str, str] = {
    "hosts": "hosts",
    "gpus.model": "GPU model",
    "gpus.count": "GPUs per host",
    "gpus.memory": "memory per GPU",
    "gpu_links": "GPU links",
    "p2p": "GPU peer-to-peer",
    "nvlink_domain": "GPUs in one NVLink domain",
    "nics.count": "NICs per host",
    "nics.rate": "NIC rate",
    "nics.fabric": "NIC fabric",
    "gpudirect": "GPUDirect RDMA",
    "pcie.gen": "PCIe generation",
    "pcie.width": "PCIe width",
    "cpu.vendor": "CPU vendor",
    "cpu.sockets": "CPU sockets",
    "cpu.model": "CPU model",
    "host_memory": "host memory",
    "vcpus": "vCPUs",
    "cuda": "CUDA version",
}

_STRUCTS: dict[str, type[_L]] = {"$": LotIn, "$.gpus": GpusIn, "$.nics": NicsIn, "$.pcie": PcieIn, "$.cpu": CpuIn}


def known_keys(path: str) -> list[str]:
    """The keys allowed at a path of a lot file (``$``, ``$.gpus``), for the "did you mean" hint."""
    base = path.split("[")[0]
    if base.startswith("$.sources."):
        return [f.name for f in msgspec.structs.fields(SourceIn)]
    for prefix, struct in _STRUCTS.items():
        if base.endswith(prefix.removeprefix("$")) and (prefix != "$" or base in ("$", "")):
            return [f.name for f in msgspec.structs.fields(struct)]
    return [f.name for f in msgspec.structs.fields(LotIn)]


@dataclass(frozen=True)
class Written:
    """One lot as written: its keys, the YAML document they came from (for lines) and where in it."""

    lot: LotIn
    doc: YamlDoc
    at: str  # "$" for a lot file; "$.entries.p4d.24xlarge" for a catalogue entry

    def line(self, key: str) -> int:
        """The line of a fact key (``nics.rate``) or other key of this lot."""
        return self.doc.line(f"{self.at}.{key}")

    def facts(self) -> dict[str, Any]:
        """The hardware facts given, flattened to :data:`FACT_KEYS` (absent ones left out)."""
        out: dict[str, Any] = {}
        raw = msgspec.to_builtins(self.lot)
        for key in FACT_KEYS:
            head, _, tail = key.partition(".")
            value = raw.get(head)
            if tail:
                value = value.get(tail) if isinstance(value, dict) else None
            if value is not None:
                out[key] = value
        return out


def read_written(doc: YamlDoc, value: Any, at: str) -> Written:
    """A lot mapping of a YAML document as :class:`LotIn` (errors name the file, line and key)."""
    if not isinstance(value, dict):
        raise LotError(f"{doc.origin}:{doc.line(at)}: a lot is a mapping of keys (lot:, gpus:, nics: …)")
    lot = convert(doc, value, LotIn, at, known_keys, exc=LotError)
    return Written(lot, doc, at)


def parse_written(text: str, origin: str) -> Written:
    """A declared-lot file's text as written (not yet checked against the parts table or the catalogue)."""
    doc = load_yaml(text, origin, "declared lot", LotError)
    if not isinstance(doc.data, dict) or "lot" not in doc.data:
        raise LotError(
            f"{origin}:1: a declared lot starts with `lot:` (the catalogue's name for it)",
            hint="lot: 2x HGX H100, 8x 400G InfiniBand; then gpus: {model: H100 SXM 80GB, count: 8}",
        )
    return read_written(doc, doc.data, "$")


def lot_schema() -> dict[str, Any]:
    """The JSON Schema of a declared-lot file (``topomap schema lot``)."""
    schema: dict[str, Any] = msgspec.json.schema(LotIn)
    schema["title"] = "topomap declared lot"
    schema["description"] = (
        "A lot as a catalogue describes it (YAML): its facts are 'declared' wherever they are used, and "
        "what it leaves out is unknown. `type:` starts from a catalogue entry (topomap lots)."
    )
    return schema
