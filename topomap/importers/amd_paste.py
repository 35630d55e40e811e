"""A paste from an AMD machine → snapshot (issue 35): `rocm-smi`, `amd-smi` (text or `topology --json`)
and `rocminfo`, one or several appended in one file, joined into one machine."""

from __future__ import annotations

import json

from topomap.base.errors import ImportFailure
from topomap.importers.amd_build import build_amd
from topomap.importers.amd_facts import AmdFacts
from topomap.importers.amd_smi import looks_like_amd_smi, looks_like_amd_smi_json, read_amd_smi, read_amd_smi_json
from topomap.importers.rocm_smi import looks_like_rocm_smi, read_rocm_smi
from topomap.importers.rocminfo import looks_like_rocminfo, read_rocminfo
from topomap.model.snapshot import Snapshot


def amd_json(text: str) -> bool:
    """``amd-smi topology --json`` (a JSON list of GPUs with their ``links``)."""
    body = text.strip("\ufeff \t\r\n")
    if not body.startswith("["):
        return False
    try:
        return looks_like_amd_smi_json(json.loads(body))
    except (ValueError, RecursionError):
        return False


def import_amd(text: str, origin: str) -> Snapshot:
    """Every AMD output in ``text``, as one machine."""
    facts = AmdFacts()
    if amd_json(text):
        read_amd_smi_json(text.strip("\ufeff \t\r\n"), facts)
    else:
        if looks_like_rocm_smi(text):
            read_rocm_smi(text, facts)
        if looks_like_amd_smi(text):
            read_amd_smi(text, facts)
        if looks_like_rocminfo(text):
            read_rocminfo(text, facts)
    if not facts.gpus:
        raise ImportFailure(
            f"{origin}: an AMD tool's output without a GPU in it",
            hint="give `rocm-smi --showtopo`, `amd-smi topology` (or --json), `amd-smi static` or `rocminfo` output",
        )
    return build_amd(facts, origin)
