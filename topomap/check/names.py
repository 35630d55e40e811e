"""Names in requirements rules, checked before any rule is evaluated: the steps and hosts a rule
names must exist (a typo fails with the file, line and the closest name, the way flow files
report them), and the GPU model pattern of the ``gpus`` rule matches as people write models.
"""

from __future__ import annotations

import fnmatch
import re

from topomap.check.requirements import Requirement, RequirementsError
from topomap.flow.spec import Flow, name_hint

#: Words a GPU's full name may start with that people leave out when they name the model.
BRAND_WORDS = ("nvidia", "tesla", "geforce", "quadro")
_GLOB = re.compile(r"[*?\[]")
_SEP = re.compile(r"[\s_-]+")


def check_names(reqs: list[Requirement], flow: Flow | None, lots: list[str]) -> None:
    """Refuse a rule naming a step the flow lacks, or a host that is not a lot, before evaluating
    anything: a dropped name would change the verdict instead of failing."""
    for req in reqs:
        _steps(req, flow)
        _host(req, flow, lots)


def _fail(message: str, hint: str) -> RequirementsError:
    return RequirementsError(message, hint=hint)


def _named_steps(req: Requirement) -> list[tuple[str, str]]:
    """(option path, step name) for every step the rule names."""
    out: list[tuple[str, str]] = []
    steps = getattr(req.rule, "steps", None)
    for i, s in enumerate(steps or []):
        out.append((f"steps[{i}]", s))
    for key in ("from_step", "to_step"):
        value = getattr(req.rule, key, None)
        if value is not None:
            out.append((key, value))
    return out


def _steps(req: Requirement, flow: Flow | None) -> None:
    named = _named_steps(req)
    if not named:
        return
    if flow is None:
        at, first = named[0]
        raise _fail(
            f"{req.where(at)}: rule {req.name} names step {first!r} but no flow was given",
            hint="pass --flow FLOW (or put the rules under `requirements:` in the flow file)",
        )
    for at, name in named:
        if name not in flow.steps:
            raise _fail(
                f"{req.where(at)}: unknown step {name!r} in rule {req.name}",
                hint=name_hint(name, list(flow.steps), f"steps of flow {flow.name}"),
            )


def _host(req: Requirement, flow: Flow | None, lots: list[str]) -> None:
    host = req.rule.host
    if host is None:
        return
    if req.name == "plan_total":
        raise _fail(
            f"{req.where('host')}: rule plan_total takes no host: the plan covers every host of the flow",
            hint="remove `host:`",
        )
    if host in lots or (flow is not None and host in flow.spec.hosts and req.name.startswith("arrow_")):
        return  # an arrow rule may name a host with no snapshot: the arrows to and from it
    if flow is not None and host in flow.spec.hosts:
        raise _fail(
            f"{req.where('host')}: host {host!r} of rule {req.name} has no snapshot, so nothing on it can be checked",
            hint=f"bind it: --probe {host}=SNAPSHOT",
        )
    what = "hosts" if flow is not None else "lots (named by --probe NAME=FILE)"
    raise _fail(f"{req.where('host')}: unknown host {host!r} in rule {req.name}", hint=name_hint(host, lots, what))


# --- GPU models ------------------------------------------------------------------------------------


def model_names(name: str) -> list[str]:
    """The ways a GPU's full name is written, lower case: as reported ("nvidia h100 80gb hbm3"), and
    without each leading brand word ("h100 80gb hbm3"; "geforce rtx 4090", "rtx 4090")."""
    forms = [" ".join(name.lower().split())]
    words = forms[0].split(" ")
    while len(words) > 1 and words[0] in BRAND_WORDS:
        words = words[1:]
        forms.append(" ".join(words))
    return forms


def model_matches(pattern: str, name: str) -> bool:
    """Whether a GPU's name matches a requirements model pattern, case-insensitively.

    A glob (``*``, ``?``, ``[``) matches the whole name as reported or without its leading brand
    words (NVIDIA, Tesla, GeForce, Quadro): ``H100*`` and ``*H100*`` match "NVIDIA H100 80GB HBM3".
    A pattern without glob characters matches whole words of the name, in order: ``H100``,
    ``h100 80gb`` and ``RTX 4090`` match; ``H10`` does not match an H100, nor ``A100`` an "A100X".
    """
    pat = " ".join(pattern.lower().split())
    if _GLOB.search(pat):
        return any(fnmatch.fnmatchcase(form, pat) for form in model_names(name))
    want = [w for w in _SEP.split(pat) if w]
    have = [w for w in _SEP.split(name.lower()) if w]
    n = len(want)
    return n > 0 and any(have[i : i + n] == want for i in range(len(have) - n + 1))
