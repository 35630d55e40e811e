"""``place FLOW``: the flow syntax has no k-GPU placement, so the steps placed on ``HOST:gpus``
(one replica per GPU of the host) are given the best K GPUs of that host instead, and the flow is
mapped as written and as placed, so the arrows can be compared before and after."""

from __future__ import annotations

from dataclasses import dataclass

from topomap.flow import Flow, FlowError, FlowMap, Placement, bind, gpus_of, map_flow
from topomap.graph import Topology
from topomap.place.answer import PlaceResult, place_gpus


@dataclass
class FlowPlacement:
    """Each placed step with its host and placement, and the flow mapped before and after."""

    steps: list[tuple[str, str, PlaceResult]]
    before: FlowMap
    after: FlowMap

    def to_json(self) -> dict[str, object]:
        return {
            "flow": self.before.flow.name,
            "steps": [{"step": s, "host": h, **r.to_json()} for s, h, r in self.steps],
            "before": [a.to_json() for a in self.before.arrows],
            "after": [a.to_json() for a in self.after.arrows],
        }


def all_gpu_steps(flow: Flow) -> list[tuple[str, str]]:
    """(step, host) for each placement ``HOST:gpus`` of a flow that is read but not yet bound."""
    return [(st.name, p.host) for st in flow.steps.values() for p in st.placements if p.kind == "gpu" and p.gpu == "*"]


def place_flow(
    flow: Flow,
    after: Flow,
    topos: dict[str, Topology | None],
    targets: list[tuple[str, str]],
    k: int,
    pattern: str,
    nics: bool,
    exclude: set[str],
) -> FlowPlacement:
    """Place ``k`` GPUs for each target step of ``flow`` (already bound to ``topos``); ``after`` is the
    same flow read again, unbound, which gets the placements and is bound and mapped here."""
    if not targets:
        raise FlowError(
            f"{flow.path}: no step is placed on HOST:gpus, so there is nothing to place",
            hint="place a step on `HOST:gpus` (one replica per GPU), or give a snapshot: topomap place SNAP --gpus K",
        )
    done: dict[str, PlaceResult] = {}
    steps: list[tuple[str, str, PlaceResult]] = []
    for step, host in targets:
        topo = topos.get(host)
        if topo is None:
            raise FlowError(f"{flow.path}: step {step}: host {host} has no snapshot", hint=f"--probe {host}=SNAPSHOT")
        if host not in done:
            done[host] = place_gpus(topo, k, pattern, nics, exclude)
        steps.append((step, host, done[host]))
    for step, host, res in steps:
        st = after.steps[step]
        placed = [Placement(host=host, kind="gpu", gpu=g.gid) for g in res.gpus]
        others = [p for p in st.placements if not (p.host == host and p.kind == "gpu" and p.gpu == "*")]
        st.placements = others + placed
    bind(after, gpus_of(topos))
    return FlowPlacement(steps, map_flow(flow, topos), map_flow(after, topos))
