"""A GPU part by its name or PCI device id, from the one parts table (:data:`topomap.base.parts.GPU_PARTS`).

A name matches when it is a spelling of exactly one part: NVML's and ``nvidia-smi``'s
(``"NVIDIA H100 80GB HBM3"``, ``"Tesla V100-SXM2-16GB"``), pci.ids' (``"GH100 [H100 SXM5 80GB]"``),
or a catalogue's (``"H100 SXM 80GB"``, ``"B200 180GB"``, ``"A100 80GB SXM4"``). Case, vendor words
(NVIDIA, Tesla, GeForce), separators and the order of the size and form words do not matter; a name
that fits several parts (``"H100"``: SXM, PCIe or NVL; ``"A100 80GB"``: SXM4 or PCIe) names none.
"""

from __future__ import annotations

import difflib
import re
from typing import Final

from topomap.base.devices import parse_device_id
from topomap.base.parts import GPU_PARTS, GpuPart

_NOISE: Final = frozenset({"nvidia", "tesla", "geforce", "corporation", "gpu"})
#: Words that describe a part without naming it (form, memory kind, family words): a name made of
#: these alone names no part, and they are matched against what the part is.
_GENERIC: Final = re.compile(r"^(sxm\d?|pcie|nvl|hbm\d?e?|\d+gb|\d+g|rtx|quadro|ada|generation|active|sxm)$")


def tokens(name: str) -> frozenset[str]:
    """``"NVIDIA A100-SXM4-80GB"`` → {a100, sxm4, 80gb}: lower case, vendor words and separators gone,
    ``80 GB`` joined; pci.ids' bracket (``"GH100 [H100 SXM5 80GB]"``) read for its product name."""
    bracket = re.search(r"\[([^\]]+)\]", name)
    text = (bracket.group(1) if bracket else name).lower()
    text = re.sub(r"[-_/,()]+", " ", text)
    text = re.sub(r"\b(\d+)\s+gb\b", r"\1gb", text)
    return frozenset(w for w in text.split() if w not in _NOISE)


def _attributes(part: GpuPart) -> frozenset[str]:
    """Every word the part's spellings use, with its form and memory size as words."""
    words: set[str] = set()
    for spelling in (part.name, *part.spellings):
        words |= tokens(spelling)
    words |= {w[:3] for w in words if re.fullmatch(r"sxm\d", w)}  # "SXM5" is an SXM
    words.add(part.form if part.form != "superchip" else "sxm")
    if part.memory_gb:
        words.add(f"{part.memory_gb:g}gb")
    return frozenset(words)


_EXACT: dict[frozenset[str], list[GpuPart]] = {}
for _part in GPU_PARTS:
    for _spelling in (_part.name, *_part.spellings):
        _found = _EXACT.setdefault(tokens(_spelling), [])
        if _part not in _found:
            _found.append(_part)
_ATTRS: Final = {p.name: _attributes(p) for p in GPU_PARTS}
_BY_ID: Final = {d: p for p in GPU_PARTS for d in p.device_ids}


def parts_named(name: str) -> tuple[GpuPart, ...]:
    """Every part ``name`` could be: the part whose spelling it is, else those whose words it all
    uses and whose identifying word (``h100``, ``3090``) it names. One part: the name names it."""
    words = tokens(name)
    exact = _EXACT.get(words)
    if exact:
        return tuple(exact)
    naming = {w for w in words if not _GENERIC.match(w)}
    if not naming:
        return ()
    return tuple(p for p in GPU_PARTS if words <= _ATTRS[p.name] and naming & _identity(p))


def _identity(part: GpuPart) -> frozenset[str]:
    return frozenset(w for w in _ATTRS[part.name] if not _GENERIC.match(w))


def model_from_name(name: str) -> GpuPart | None:
    """The part a name names (NVML, pci.ids or catalogue spelling); None when it names none or several."""
    found = parts_named(name)
    return found[0] if len(found) == 1 else None


def model_from_device_id(device_id: str) -> GpuPart | None:
    """The part a PCI device id (vendor NVIDIA) names; None when not in the table."""
    value = parse_device_id(device_id)
    return _BY_ID.get(value) if value is not None else None


def model_of(name: str | None, device_id: str | None) -> GpuPart | None:
    """The part a GPU is, by its name first, else by its PCI device id; None when neither tells."""
    found = model_from_name(name) if name else None
    return found if found is not None or not device_id else model_from_device_id(device_id)


def _plain(name: str) -> str:
    """A spelling as compared for a "did you mean": lower case, vendor words and separators gone."""
    text = re.sub(r"[-_/,()\[\]]+", " ", name.lower())
    return " ".join(w for w in text.split() if w not in _NOISE)


#: Longer than any spelling of a part (the longest is under 40 characters): nothing to suggest.
_LONGEST_NAME: Final = 80
#: Every spelling a part is known by (NVML's name and its aliases), compared as :func:`_plain` writes it.
_SPELLINGS: Final = tuple((_plain(s), s, p.name) for p in GPU_PARTS for s in (p.name, *p.spellings))


def nearest_models(text: str, n: int = 3) -> list[str]:
    """The known spellings closest to an unknown GPU model name (difflib over every part's spellings),
    one per part, those that share its naming word (``h100``) first: ``"H100 SMX"`` → ``["H100 SXM",
    "NVIDIA H100 PCIe", …]``; none when nothing is close."""
    if len(text) > _LONGEST_NAME:
        return []  # no part's spelling, and difflib's time grows with the square of the length
    want = _plain(text)
    naming = {w for w in want.split() if not _GENERIC.match(w)}
    scored: list[tuple[float, str, str]] = []
    for plain, spelling, part in _SPELLINGS:
        ratio = difflib.SequenceMatcher(None, want, plain).ratio()
        shares = bool(naming & set(plain.split()))
        if ratio >= 0.6 or shares:
            scored.append((ratio + shares, spelling, part))
    out: dict[str, str] = {}
    for _, spelling, part in sorted(scored, key=lambda x: -x[0]):
        if part not in out and len(out) < n and model_from_name(spelling) is not None:
            out[part] = spelling
    return list(out.values())
