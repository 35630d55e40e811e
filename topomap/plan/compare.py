"""How a flow's plan changes between two lots, and why: more or fewer cards, a slower input path,
a task that no longer fits, an exchange that got slower. Human lines for `diff --flow`."""

from __future__ import annotations

from topomap.base.units import fmt_bandwidth, fmt_bytes, fmt_gbps, fmt_span
from topomap.plan.result import Arrangement, Leg, PlanResult, best_total_seconds


def plan_changes(a: PlanResult, b: PlanResult) -> list[str]:
    """How the plan changes from lot A to lot B, and why: one human line per change."""
    out: list[str] = []
    ta, tb = best_total_seconds(a), best_total_seconds(b)
    na, nb = len(a.cards_available), len(b.cards_available)
    totals = f"best total {_total(ta)} → {_total(tb)}"
    ba, bb = a.best(), b.best()
    if ba is not None and bb is not None and (ba.k, ba.kind) != (bb.k, bb.kind):
        totals += f" ({ba.k} cards {ba.kind} → {bb.k} cards {bb.kind})"
    if na != nb:
        out.append(f"B has {nb} cards where A has {na}: {totals}")
    elif ta != tb and not (ta is not None and tb is not None and abs(ta - tb) < 0.5):
        out.append(f"same number of cards ({na}): {totals}")
    out += _fit(a, b)
    out += _legs(a.legs, b.legs)
    out += _exchange(a, b)
    return out


def _total(sec: float | None) -> str:
    return "no arrangement fits" if sec is None else fmt_span(sec)


def _baseline(r: PlanResult) -> Arrangement | None:
    return next((x for x in r.arrangements if x.kind == "one card"), None)


def _fit(a: PlanResult, b: PlanResult) -> list[str]:
    fa, fb = _baseline(a), _baseline(b)
    if fa is None or fb is None or fa.fit.verdict == fb.fit.verdict:
        return []
    need, have = fmt_bytes(fb.fit.needed_bytes), fmt_bytes(fb.fit.card_bytes)
    if fb.fit.verdict == "does not fit":
        return [f"task no longer fits: {need} needed, {have} per card"]
    if fb.fit.verdict == "fits":
        return [f"task now fits: {need} needed, {have} per card (was: {fa.fit.verdict})"]
    return [f"task fit now unknown: {fb.fit.reason}"]


def _legs(la: list[Leg], lb: list[Leg]) -> list[str]:
    """Compare the first card's per-unit input and output paths (bandwidths as `map` writes them)."""
    out: list[str] = []
    for direction in ("input", "output"):
        xa = [x for x in la if x.direction == direction]
        xb = [x for x in lb if x.direction == direction]
        if not xa or not xb:
            continue
        first_a = [x for x in xa if x.card == xa[0].card]
        first_b = [x for x in xb if x.card == xb[0].card]
        for x, y in zip(first_a, first_b):
            if x.bandwidth_gbps is None:
                continue
            if y.bandwidth_gbps is None:
                out.append(f"{direction} path now of unknown bandwidth: {y.describe()}")
                continue
            now = fmt_bandwidth(y.bandwidth_gbps, y.bandwidth_source, y.lower_bound)
            change = f"{fmt_gbps(x.bandwidth_gbps)} → {now}"
            if y.bandwidth_gbps < x.bandwidth_gbps:
                out.append(f"{direction} path slower: {change} ({y.describe()})")
            elif y.bandwidth_gbps > x.bandwidth_gbps:
                out.append(f"{direction} path faster: {change}")
    return out


def _exchange(a: PlanResult, b: PlanResult) -> list[str]:
    ca = {x.k: x for x in a.arrangements if x.kind == "coordinated"}
    cb = {x.k: x for x in b.arrangements if x.kind == "coordinated"}
    out: list[str] = []
    for k in sorted(set(ca) & set(cb)):
        ea, eb = ca[k].exchange_s, cb[k].exchange_s
        if ea is not None and eb is not None and eb > ea * 1.05:
            out.append(f"exchange slower over {k} cards: {fmt_span(ea)} → {fmt_span(eb)} per task ({b.exchange_how})")
        elif ea is not None and eb is None:
            out.append(f"exchange over {k} cards now unknown ({b.exchange_how})")
    return out
