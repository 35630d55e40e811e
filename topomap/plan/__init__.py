"""The flow's work under each arrangement of 1…N cards of the lot — a calculation from the user's
stated assumptions and the arrows mapped on the real machine, never a measurement.

What others use: :func:`plan_flow` (plan a bound flow), :class:`PlanResult` and its parts,
:func:`best_total_seconds` and :func:`plan_changes` (how a plan changes between two lots).

Inside: ``planner`` (checks, then the plan) → ``build`` (arrangements per card count, assumptions)
→ ``costs`` (per-unit transfers, sharing, exchange, memory fit), ``links`` (the links a route
crosses and their max-min fair shares when cards move data at once) and ``sched`` (lanes: pure
arithmetic); ``result`` holds the values and the `plan --json` document; ``observed`` puts a
recorded run's figures in place of the assumed ones; ``compare`` says how two plans differ.
"""

from topomap.plan.compare import plan_changes
from topomap.plan.planner import plan_flow
from topomap.plan.result import Arrangement, CardMemory, Leg, MemoryFit, PlanResult, best_total_seconds
from topomap.plan.sched import Bar, Lane

__all__ = [
    "Arrangement",
    "Bar",
    "CardMemory",
    "Lane",
    "Leg",
    "MemoryFit",
    "PlanResult",
    "best_total_seconds",
    "plan_changes",
    "plan_flow",
]
