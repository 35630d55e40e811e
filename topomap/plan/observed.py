"""Observed figures from a recorded run (`topomap record`) in place of a plan's assumed ones.

The figures are the dict of :func:`topomap.record.observed_for_plan`: the unit duration (the run's
wall time × the cards it used ÷ the units it processed) and the largest per-card memory peak.
They replace the work block's durations and, for tasks of one card, its memory per task; each
replaced figure is labelled ``observed`` and the plan lists what the run stands for.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from topomap.base.errors import TopomapError
from topomap.base.units import fmt_bytes
from topomap.flow.spec import Unit, Work
from topomap.flow.work import span_problem


def apply_observed(work: Work, observed: dict[str, Any], origin: str) -> Work:
    """A copy of ``work`` with the run's unit duration and memory peak; raises on a failed run."""
    if observed.get("succeeded") is False:
        raise TopomapError(
            f"{origin}: the recorded command failed, so its time is not a unit's duration",
            hint="record a run that succeeds (its exit status is 0)",
        )
    unit_s = observed.get("unit_duration_s")
    if not isinstance(unit_s, (int, float)):
        raise TopomapError(f"{origin}: the record has no wall time", hint="record the run again to its end")
    if unit_s <= 0:
        raise TopomapError(
            f"{origin}: a unit time of {unit_s:g} s (the run's wall time over --observed-units)",
            hint="give the number of units the recorded run did with --observed-units",
        )
    problem = span_problem(float(unit_s))
    if problem is not None:  # the plan's own bounds: a unit of at most a year, never infinite
        raise TopomapError(
            f"{origin}: the observed unit duration {float(unit_s):g} s {problem}",
            hint="check --observed-units (the units the run processed)",
        )
    n_units = observed.get("units") or 1
    used = observed.get("cards_used") or "an unknown number of"
    notes = [
        f"unit duration observed in {origin}: {observed.get('duration_s')} s of wall time on {used} card(s) "
        f"for {n_units} unit(s) (--observed-units), every unit taken as long as their average; "
        "it includes the run's own loading and output, with that run's cards loading at once"
    ]
    units = [Unit(u.name, float(unit_s)) for u in work.units]
    mem, dup = work.memory_per_task_bytes, work.duplicated_bytes
    peak = observed.get("memory_per_task_bytes")
    if isinstance(peak, int) and work.cards_per_task == 1:
        mem, dup = peak, min(dup, peak)
        notes.append(f"memory per task observed: the run's largest per-card peak, {fmt_bytes(peak)}")
    elif isinstance(peak, int):
        notes.append(
            f"observed memory peak ({fmt_bytes(peak)} on one card) not used: a task here spans "
            f"{work.cards_per_task} cards; memory_per_task stays as stated"
        )
    return dataclasses.replace(
        work,
        units=units,
        source=f"the record {origin}",
        provenance="observed",
        includes_transfers=True,
        memory_per_task_bytes=mem,
        duplicated_bytes=dup,
        notes=[*work.notes, *notes],
    )
