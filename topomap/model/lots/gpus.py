"""A GPU model as catalogues write it ("H100 SXM 80GB", "B200 180GB", "8x A100 80GB"), looked up in the
parts table (``topomap.base.parts``): the one function here that asks it, so a catalogue spelling the
table learns later needs no change anywhere else.

The table accepts NVML's names and pci.ids' ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"); catalogues drop
the SXM generation ("H100 SXM"), put the memory last ("H200 141GB") or leave the form out ("A100 80GB":
SXM4 or PCIe?). The spelling is tried as written, without its memory, and with each form word; a form or
memory written must match the part found, and two parts matching is refused as ambiguous, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from topomap.base.part_names import model_from_name
from topomap.base.parts import GpuPart

_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)\s*(?:GB|G|GiB)$", re.IGNORECASE)
_FORMS = ("SXM", "SXM5", "SXM4", "SXM2", "PCIe", "NVL")
_FORM_OF = {"sxm": "sxm", "sxm2": "sxm", "sxm4": "sxm", "sxm5": "sxm", "sxm6": "sxm", "pcie": "pcie", "nvl": "pcie"}
_NOISE = {"nvidia", "tesla", "hbm3", "hbm3e", "hbm2", "hbm2e", "gpu", "gpus", "tensor", "core"}


@dataclass(frozen=True)
class ModelLookup:
    """The part a spelling names (None: unknown or ambiguous), and the parts it could be when ambiguous."""

    model: GpuPart | None
    candidates: tuple[str, ...] = ()


def lookup_model(text: str) -> ModelLookup:
    """The parts-table model a catalogue's spelling names; see the module docstring. A spelling the
    table knows as written (an NVML name) is that part."""
    exact = model_from_name(text)
    if exact is not None:
        return ModelLookup(exact)
    words = [w for w in re.split(r"[\s_-]+", text.strip()) if w]
    memory: float | None = None
    form: str | None = None
    core: list[str] = []
    for w in words:
        m = _MEMORY.match(w)
        if m:
            memory = float(m.group(1))
        elif w.lower() in _FORM_OF:
            form = _FORM_OF[w.lower()]
        elif w.lower() not in _NOISE:
            core.append(w)
    found: dict[str, GpuPart] = {}
    for spelling in _spellings(text, core, memory):
        model = model_from_name(spelling)
        if model is not None and _fits(model, memory, form):
            found.setdefault(model.name, model)
    if len(found) == 1:
        return ModelLookup(next(iter(found.values())))
    return ModelLookup(None, tuple(sorted(found)))


def _spellings(text: str, core: list[str], memory: float | None) -> list[str]:
    """The spellings tried: as written, the core name alone, with each form word, with the memory."""
    mem = [f"{memory:g}GB"] if memory is not None else []
    out = [text, " ".join(core)]
    if core:
        head, rest = core[0], core[1:]
        for f in _FORMS:
            out += [" ".join([head, f, *rest, *mem]), " ".join([head, f, *rest]), " ".join([head, *rest, *mem, f])]
        out += [" ".join([head, *rest, *mem, "HBM3"]), " ".join([head, *rest, *mem])]
    return [s for s in dict.fromkeys(out) if s]


def _fits(model: GpuPart, memory: float | None, form: str | None) -> bool:
    """A written memory within 5 % of the part's (Azure's "192 GiB" GB200 is the table's 186 GB part) and
    a written form equal to the part's."""
    if memory is not None and model.memory_gb and abs(model.memory_gb - memory) > 0.05 * model.memory_gb:
        return False
    return form is None or model.form == form


def spelled(model: GpuPart) -> str:
    """How to write a part so that :func:`lookup_model` finds it: its first alias, else its NVML name."""
    return model.spellings[0] if model.spellings else model.name
