"""Recorded runs (``topomap.run/1``): what a command used on each card and on the host while it ran.

:func:`topomap.record.runner.record` runs and samples a command; :mod:`.summary` reads a record;
:mod:`.compare` and :mod:`.outputs` compare two. The runner is imported on demand (it reaches
the probe), so reading records stays light.
"""

from __future__ import annotations

from topomap.record.model import RUN_SCHEMA, Run, RunError, decode_run, encode_run, load_run
from topomap.record.summary import observed_for_plan

__all__ = [
    "RUN_SCHEMA",
    "Run",
    "RunError",
    "decode_run",
    "encode_run",
    "load_run",
    "observed_for_plan",
]
