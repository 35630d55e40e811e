"""A declared lot as typed values (:class:`DeclaredLot`), each fact with its origin: checked against the
parts table (the GPU model, its NVLink link count) and bounded; a mistake is one line naming the file,
line and field. What the declaration leaves out stays None: never filled from a guess.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from topomap.base.lotunits import (
    PRICE_HINT,
    Price,
    parse_period_seconds,
    parse_price,
    parse_rate_gbit,
    parse_size_bytes,
    price_problem,
    same_memory_class,
)
from topomap.base.part_names import nearest_models
from topomap.base.parts import GpuPart
from topomap.model.lots.gpus import lookup_model
from topomap.model.lots.spec import FACT_KEYS, LotError, Written, place, shown
from topomap.model.origins import FactOrigin

LinkKind = Literal["nvswitch", "nvlink", "xgmi", "none"]


@dataclass(frozen=True)
class GpuLinks:
    """How the GPUs of a host are joined: through NVSwitches (every pair ``links`` links, the part's
    count), every pair by ``links`` direct NVLinks, or no NVLink at all (a fact, not unknown)."""

    kind: LinkKind
    links: int  # per GPU pair; 0 for none

    def words(self) -> str:
        if self.kind == "nvswitch":
            return f"NVSwitch (NV{self.links} every GPU pair)"
        if self.kind == "xgmi":
            return "XGMI every GPU pair (AMD Infinity Fabric)"
        return f"NV{self.links} every GPU pair" if self.kind == "nvlink" else "no NVLink"


@dataclass(frozen=True)
class LotFact:
    """One fact of a lot: its key (``nics.rate``), its value as written, where it comes from."""

    key: str
    value: str
    origin: FactOrigin


@dataclass(frozen=True)
class DeclaredLot:
    """A lot as a catalogue describes it, typed; None is not given (unknown). ``facts`` holds each given
    fact's origin: declared, or the catalogue entry (``type``) it came from."""

    name: str
    origin: str  # the file it was read from
    type: str | None = None
    hosts: int = 1
    model: GpuPart | None = None
    gpu_count: int | None = None
    gpu_memory_bytes: int | None = None
    links: GpuLinks | None = None
    nic_count: int | None = None
    nic_rate_gbit: float | None = None
    fabric: str | None = None
    gpudirect: bool | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    cpu_vendor: str | None = None
    cpu_sockets: int | None = None
    cpu_model: str | None = None
    host_memory_bytes: int | None = None
    vcpus: int | None = None
    p2p: bool | None = None  # peer-to-peer between every GPU pair
    nvlink_domain: int | None = None  # GPUs in one NVLink domain across hosts (GB200 NVL72: 72)
    cuda: str | None = None  # the CUDA version the driver supports, "12.8"
    price: Price | None = None
    periods_s: tuple[float, ...] = ()
    facts: dict[str, LotFact] = field(default_factory=dict)

    def origin_of(self, key: str) -> FactOrigin | None:
        fact = self.facts.get(key)
        return fact.origin if fact is not None else None


@dataclass(frozen=True)
class Given:
    """One fact to convert: its raw value, its origin, and the written lot it is in (for the line)."""

    value: Any
    origin: FactOrigin
    written: Written

    def where(self, key: str) -> str:
        """ "lot.yaml:3": the file and line of the key (the catalogue's, for a fact from an entry)."""
        return f"{self.written.doc.origin}:{self.written.line(key)}"

    def fail(self, key: str, problem: str, hint: str | None = None) -> LotError:
        return LotError(f"{self.where(key)}: {key} {shown(self.value)}: {problem}", hint=hint)


_NV = re.compile(r"^nv(\d+)$", re.IGNORECASE)
_GEN = re.compile(r"^(?:gen\s*)?(\d)$", re.IGNORECASE)
_LIMITS = {
    "hosts": 100_000,
    "gpus.count": 1024,
    "nics.count": 128,
    "cpu.sockets": 16,
    "vcpus": 100_000,
    "nvlink_domain": 100_000,
}
_CUDA = re.compile(r"^(\d{1,2})\.(\d{1,2})(?:\.\d{1,3})?$")


def typed_lot(
    name: str, origin: str, type_: str | None, given: dict[str, Given], terms: Written, complete: bool = True
) -> DeclaredLot:
    """The lot's facts (``given``: each key's raw value and origin) as typed values; ``terms`` the written
    lot whose price and periods apply (a declaration's own, never the catalogue's). ``complete``: a lot to
    build a machine from (its GPU model and count, and its NICs' count, given); a catalogue entry may
    leave any fact out that no public page was found for."""
    values: dict[str, Any] = {}
    for key in FACT_KEYS:
        if key in given:
            values[key] = _convert(key, given[key], given)
    missing = [k for k in ("gpus.model", "gpus.count") if k not in values]
    if missing and complete:
        where = f" (the catalogue entry {type_} does not give it)" if type_ else ""
        raise LotError(
            f"{terms.doc.origin}:{terms.line('gpus')}: gpus: {' and '.join(missing)} not given{where}",
            hint="gpus: {model: H100 SXM 80GB, count: 8} (or type: a catalogue entry, `topomap lots`)",
        )
    nic_keys = [k for k in values if k.startswith("nics.")]
    if nic_keys and "nics.count" not in values and complete:
        raise LotError(f"{terms.doc.origin}:{terms.line('nics')}: nics: count not given", hint="nics: {count: 8, …}")
    model: GpuPart | None = values.get("gpus.model")
    _memory_fits(model, values.get("gpus.memory"), given)
    links = _links(values.get("gpu_links"), model, given.get("gpu_links"))
    _check_domain(values, links, given)
    price, periods = _terms(terms)
    facts = {k: LotFact(k, _written(given[k].value), given[k].origin) for k in values}
    return DeclaredLot(
        name=name, origin=origin, type=type_, hosts=values.get("hosts", 1), model=model,
        gpu_count=values.get("gpus.count"), gpu_memory_bytes=values.get("gpus.memory"), links=links,
        nic_count=values.get("nics.count"), nic_rate_gbit=values.get("nics.rate"), fabric=values.get("nics.fabric"),
        gpudirect=values.get("gpudirect"), pcie_gen=values.get("pcie.gen"), pcie_width=values.get("pcie.width"),
        cpu_vendor=values.get("cpu.vendor"), cpu_sockets=values.get("cpu.sockets"), cpu_model=values.get("cpu.model"),
        host_memory_bytes=values.get("host_memory"), vcpus=values.get("vcpus"),
        p2p=values.get("p2p"), nvlink_domain=values.get("nvlink_domain"), cuda=values.get("cuda"), price=price,
        periods_s=periods,
        facts=facts,
    )  # fmt: skip


def _written(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _convert(key: str, g: Given, given: dict[str, Given]) -> Any:
    """One fact's raw value as its typed value, or a one-line error naming its line and key."""
    v = g.value
    if key in _LIMITS:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= _LIMITS[key]:
            raise g.fail(key, f"a count is a whole number from 1 to {_LIMITS[key]:,}")
        return v
    if key == "gpus.model":
        return _model(v, g)
    if key in ("gpus.memory", "host_memory"):
        size = parse_size_bytes(v) if isinstance(v, str) else None
        if size is None:
            raise g.fail(key, "not a size with its unit", hint='write it as "180 GB" (as sold) or "192 GiB"')
        return size
    if key == "nics.rate":
        rate = parse_rate_gbit(v) if isinstance(v, str) else None
        if rate is None:
            problem = (
                "a rate without a unit"
                if not isinstance(v, str) or v.strip().replace(".", "").isdigit()
                else ("not a line rate in bits per second")
            )
            raise g.fail(key, problem, hint='write it with its unit: "400 Gb/s" (or "400G", "3.2 Tb/s")')
        return rate
    if key == "cuda":
        if isinstance(v, float):  # YAML reads 12.10 as 12.1: only the text says which was meant
            raise g.fail(
                key,
                "a CUDA version is text (YAML reads 12.10 as 12.1)",
                hint='quote it as nvidia-smi prints it: cuda: "12.8"',
            )
        text = v.strip() if isinstance(v, str) else ""
        if _CUDA.match(text) is None:
            raise g.fail(key, "not a CUDA version", hint='the "CUDA Version" nvidia-smi prints: cuda: "12.8"')
        return text
    if key == "pcie.gen":
        m = _GEN.match(str(v)) if isinstance(v, (int, str)) and not isinstance(v, bool) else None
        if m is None or not 1 <= int(m.group(1)) <= 6:
            raise g.fail(key, "a PCIe generation is 1 to 6", hint="pcie: {gen: 5, width: 16}")
        return int(m.group(1))
    if key == "pcie.width":
        if isinstance(v, bool) or v not in (1, 2, 4, 8, 16, 32):
            raise g.fail(key, "a PCIe link is 1, 2, 4, 8, 16 or 32 lanes", hint="pcie: {gen: 5, width: 16}")
        return v
    return v  # fabric, vendor (checked by their enums), gpudirect (bool), CPU model (text), gpu_links (below)


def _check_domain(values: dict[str, Any], links: GpuLinks | None, given: dict[str, Given]) -> None:
    """An NVLink domain across hosts joins whole hosts of NVSwitch-linked GPUs."""
    domain, count = values.get("nvlink_domain"), values.get("gpus.count")
    if domain is None:
        return
    g = given["nvlink_domain"]
    hint = "nvlink_domain: 72 (a GB200 NVL72 rack: 18 hosts of 4 GPUs), with gpu_links: nvswitch"
    if links is None or links.kind != "nvswitch":
        raise g.fail("nvlink_domain", "an NVLink domain across hosts needs gpu_links: nvswitch", hint=hint)
    if count is not None and domain % count:
        raise g.fail("nvlink_domain", f"not a whole number of hosts of {count} GPUs", hint=hint)


def _model(v: Any, g: Given) -> GpuPart:
    """The GPU model in the parts table (:func:`topomap.model.lots.gpus.lookup_model`)."""
    if not isinstance(v, str) or not v.strip():
        raise g.fail("gpus.model", "not a GPU model name", hint="e.g. H100 SXM 80GB, B200 180GB, A100 SXM4 80GB")
    found = lookup_model(v)
    if found.model is not None:
        return found.model
    if found.candidates:
        raise g.fail(
            "gpus.model",
            f"names more than one GPU model ({', '.join(found.candidates)})",
            hint="say the form: H100 SXM 80GB or H100 PCIe; A100 SXM4 80GB or A100 PCIe 80GB",
        )
    close = nearest_models(v)
    mean = f" (did you mean {', '.join(close)}?)" if close else ""
    raise LotError(
        f"{g.where('gpus.model')}: unknown GPU model {shown(v)} in gpus.model{mean}",
        hint=None if close else "e.g. H100 SXM 80GB, H200 SXM 141GB, B200 180GB (topomap knows NVIDIA and AMD parts)",
    )


def _memory_fits(model: GpuPart | None, size: int | None, given: dict[str, Given]) -> None:
    """A memory per GPU that is not the model's (:func:`~topomap.base.lotunits.same_memory_class`: 80 GB,
    80 GiB and 81559 MiB are one H100's) is refused, naming the key that is declared over the other."""
    if model is None or size is None or not model.memory_gb:
        return
    if same_memory_class(size, int(model.memory_gb * 1e9)):
        return
    memory, named = given["gpus.memory"], given["gpus.model"]
    has = f"the {model.name} has {model.memory_gb:g} GB"
    if memory.origin.origin == "declared" or named.origin.origin != "declared":
        raise memory.fail("gpus.memory", f"{has} per GPU", hint=f"write {model.memory_gb:g} GB, or leave memory out")
    entry = f"the catalogue entry {memory.origin.detail}" if memory.origin.detail else "the catalogue"
    raise named.fail(
        "gpus.model", f"{has} per GPU, not the {shown(memory.value)} of {entry}", hint="give gpus.memory too"
    )


def _links(v: Any, model: GpuPart | None, g: Given | None) -> GpuLinks | None:
    """``nvswitch`` (every pair the part's link count), ``NV<k>`` or ``none``; checked against the part.
    Without a model (a catalogue entry that does not name it) NVSwitch's link count is not known: None."""
    if v is None or g is None:
        return None
    if model is None:
        return None
    text = str(v).strip().lower() if isinstance(v, str) else ""
    hint = "gpu_links: nvswitch (every pair through NVSwitches), NV12 (every pair 12 links) or none"
    if text == "none":
        return GpuLinks("none", 0)
    if model.link == "xgmi" or text == "xgmi":  # AMD Instinct: XGMI (Infinity Fabric), one link each pair
        if model.link != "xgmi" or text != "xgmi" or not model.full_links:
            what = f"the {model.name} has no XGMI" if model.link != "xgmi" or not model.full_links else ""
            raise g.fail(
                "gpu_links",
                what or f"the {model.name}'s GPUs are joined by XGMI",
                hint="gpu_links: xgmi (AMD Instinct: every GPU pair by XGMI) or none",
            )
        return GpuLinks("xgmi", 1)
    if text == "nvswitch":
        if not model.full_links:
            raise g.fail("gpu_links", f"the {model.name} has no NVLink", hint=hint)
        return GpuLinks("nvswitch", model.full_links)
    m = _NV.match(text)
    if m is None or int(m.group(1)) < 1:
        close = difflib.get_close_matches(text, ["nvswitch", "none"], n=1)
        raise g.fail("gpu_links", "not a GPU link kind", hint=f"did you mean `{close[0]}`?" if close else hint)
    k = int(m.group(1))
    if not model.full_links or k > model.full_links:
        have = f"has ({model.full_links})" if model.full_links else "has (it has no NVLink)"
        raise g.fail("gpu_links", f"more NVLinks than the {model.name} {have}", hint=hint)
    return GpuLinks("nvlink", k)


def _terms(w: Written) -> tuple[Price | None, tuple[float, ...]]:
    """The declaration's price and rental periods (a catalogue entry has neither: prices change)."""
    lot, doc = w.lot, w.doc
    price = None
    if lot.price is not None:
        price = parse_price(lot.price) if isinstance(lot.price, str) else None
        if price is None:
            problem = price_problem(lot.price) if isinstance(lot.price, str) else price_problem(f"{lot.price:g}")
            raise LotError(f"{doc.origin}:{w.line('price')}: price {shown(lot.price)}: {problem}", hint=PRICE_HINT)
    periods: list[float] = []
    for k, p in enumerate(lot.periods or []):
        sec = parse_period_seconds(p) if isinstance(p, str) else None
        if sec is None:
            raise LotError(
                f"{doc.origin}:{doc.line(f'{w.at}.periods[{k}]')}: {place(f'periods[{k}]')} {shown(p)}: "
                "not a rental period",
                hint="periods: [3 d, 7 d, 30 d] (hours, days or weeks: months differ in length)",
            )
        periods.append(sec)
    return price, tuple(sorted(set(periods)))
