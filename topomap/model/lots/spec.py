"""The declared-lot file: a YAML mapping whose top level has ``lot:`` (the catalogue's name for it), read
with the line of every key. One msgspec definition both reads it (strict: an unknown key is an error
with a "did you mean") and generates ``topomap schema lot``. The catalogue's entries are written in the
same format, with a ``sources:`` block beside their facts.

The facts are flattened to dotted keys (``gpus.model``, ``nics.rate``: :data:`FACT_KEYS`), so that a
declared lot with ``type:`` overrides the catalogue entry key by key.
"""

from __future__ import annotations

import re
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
    price: str | float | None = None  # "2.49 USD per GPU-hour", "98.32 USD per host-hour", "40 EUR per lot-hour"
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


#: What each key of a lot holds, in words, for an error about a value of the wrong kind.
_WANTED: dict[str, str] = {
    "lot": "the catalogue's name for the lot",
    "type": "a catalogue entry such as aws/p5.48xlarge",
    "gpus": "a mapping of model:, count: and memory:",
    "nics": "a mapping of count:, rate: and fabric:",
    "pcie": "a mapping of gen: and width:",
    "cpu": "a mapping of vendor:, sockets: and model:",
    "cpu.vendor": "a CPU vendor such as intel or amd",
    "cpu.model": "the CPU model as the catalogue writes it",
    "gpus.model": "a GPU model such as H100 SXM 80GB",
    "gpus.memory": "a size such as 80 GB",
    "host_memory": "a size such as 2 TB",
    "nics.rate": "a rate such as 400 Gb/s",
    "nics.fabric": "a fabric such as infiniband",
    "gpu_links": "nvswitch, NV<k>, xgmi or none",
    "pcie.gen": "a PCIe generation from 1 to 6",
    "price": "a price such as 2.49 USD per GPU-hour",
    "periods": "a list of rental periods such as 3 d, 7 d, 30 d",
    "periods[]": "a rental period such as 7 d",
    "gpudirect": "true or false",
    "sources": "a mapping of fact keys to their pages",
}
_KINDS = {"object": "a mapping", "array": "a list", "str": "text", "int": "a whole number", "float": "a number"}


def shown(value: Any) -> str:
    """A value as an error shows it: text quoted, a number or truth as YAML writes it, and a list, a
    mapping or nothing in words (never a Python repr)."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # YAML's 400 read as 400.0 by a str | float field
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "a list" if value else "an empty list"
    if isinstance(value, dict):
        return "a mapping" if value else "an empty mapping"
    text = str(value)
    return f"'{text[:77]}…'" if len(text) > 80 else f"'{text}'"


def place(path: str) -> str:
    """A key's path in a lot (``.gpus.count``, ``.periods[1]``) as an error names it: ``gpus.count``,
    ``periods item 2``."""
    out = re.sub(r"\[(\d+)\]", lambda m: f" item {int(m.group(1)) + 1}", path.lstrip("."))
    return out or "the lot"


def _at(value: Any, path: str) -> Any:
    """The raw value at a path (``.gpus.count``, ``.periods[1]``) of a lot mapping; None when absent."""
    for key, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path):
        if key and isinstance(value, dict):
            value = value.get(key)
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return None
    return value


def _wanted(path: str, message: str) -> str:
    """What a key holds: from :data:`_WANTED`, else the kinds msgspec expected, in words."""
    key = re.sub(r"\[\d+\]", "[]", path.lstrip("."))
    if key.startswith("sources."):
        return "a mapping of url:, says: and kind:"
    if key in _WANTED:
        return _WANTED[key]
    kinds = re.match(r"Expected `([^`]+)`", message)
    words = [_KINDS.get(k, k) for k in (kinds.group(1).split(" | ") if kinds else []) if k != "null"]
    return " or ".join(words) or "another kind of value"


def _nothing(doc: YamlDoc, value: Any, at: str, path: str = "") -> None:
    """Refuse a key written without a value (YAML's null), anywhere in the lot: leave it out instead."""
    if value is None:
        hint = "write its value, or leave the key out (what a lot does not say is unknown)"
        if path == ".lot":
            hint = "write the catalogue's name for the lot: lot: 2x HGX H100, 8x 400G InfiniBand"
        raise LotError(f"{doc.origin}:{doc.line(at + path)}: {place(path)}: nothing given", hint=hint)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        _nothing(doc, item, at, f"{path}.{key}" if isinstance(key, str) else f"{path}[{key}]")


def read_written(doc: YamlDoc, value: Any, at: str) -> Written:
    """A lot mapping of a YAML document as :class:`LotIn` (errors name the file, line and key, and say
    in words what was given where something else belongs)."""
    if not isinstance(value, dict):
        raise LotError(f"{doc.origin}:{doc.line(at)}: a lot is a mapping of keys (lot:, gpus:, nics: …)")
    _nothing(doc, value, at)

    def explain(path: str, message: str) -> str:
        sub = path[len(at) :]
        return f"{place(sub)}: {shown(_at(value, sub))} given; write {_wanted(sub, message)}"

    lot = convert(doc, value, LotIn, at, known_keys, exc=LotError, explain=explain)
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
