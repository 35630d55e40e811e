"""The files named on a command line, told apart by their content: one rule for every command.

A flow file, a requirements file, a snapshot (or a topology paste, or ``NAME=FILE`` binding a flow
host to one), a run record and measured figures are recognised wherever a command takes files,
in any order; ``--flow`` and ``--probe`` say the same explicitly. What a file is, is decided by
:func:`topomap.files.kind.file_kind`; here is only which command takes which kind, and the error
(with the command that does read it) when a file is given to a command that does not.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, get_args

from topomap.base.errors import TopomapError
from topomap.files.kind import DESCRIPTIONS, Kind, Topology, file_kind, readers

if TYPE_CHECKING:
    from topomap.model.snapshot import Snapshot

#: What each command takes, for "this is X; COMMAND takes …" messages.
TAKES = {
    "show": "a snapshot, a topology paste or a run record",
    "matrix": "a snapshot or a topology paste",
    "merge": "per-host snapshots or topology pastes",
    "import": "a topology paste (nvidia-smi text, NCCL or hwloc XML, lstopo text, an NCCL log's dump)",
    "nccl": "a snapshot or a topology paste (and --log LOG)",
    "measure": "this machine's snapshot",
    "attach": "the machine's snapshot, then the measured figures",
    "place": "a snapshot or a topology paste, or a flow file and its snapshots",
    "diff": "two snapshots or topology pastes (and a flow file), or two run records",
    "check": "a requirements file (or a flow with `requirements:`), then a flow or snapshots",
    "map": "a flow file, then snapshots for its hosts",
    "plan": "a flow file with a `work:` block, then snapshots for its hosts",
    "report": "a flow file, then snapshots for its hosts",
    "render": "snapshots or topology pastes, or a flow file and snapshots for its hosts",
}
#: How each command that takes a flow is called: the hint when its files are missing.
USAGE = {
    "map": "topomap map FLOW.yaml [SNAP | NAME=SNAP …]",
    "plan": "topomap plan FLOW.yaml [SNAP | NAME=SNAP …]",
    "report": "topomap report FLOW.yaml [SNAP | NAME=SNAP …] -o OUT.html",
    "render": "topomap render SNAP… -o OUT.svg, or topomap render FLOW.yaml [SNAP | NAME=SNAP …] -o OUT.svg",
    "check": "topomap check REQS.yaml FLOW.yaml [SNAP | NAME=SNAP …], or topomap check REQS.yaml SNAP…",
    "place": "topomap place SNAP --gpus K, or topomap place FLOW.yaml [SNAP | NAME=SNAP …] --gpus K",
    "diff": "topomap diff [FLOW.yaml] A B",
}
#: Every kind a machine is read from: its own reader's error (a cut paste, no GPU) is the one to show.
_MACHINE_KINDS: frozenset[str] = frozenset({"snapshot", "lot", *get_args(Topology)})


def misplaced(path: str, kind: Kind, command: str) -> TopomapError:
    """``path`` is a file of ``kind`` that ``command`` does not take: say what it is, what the
    command takes, and (the hint) the commands that read it."""
    takes = TAKES.get(command, "other files")
    return TopomapError(f"{path}: this is {DESCRIPTIONS[kind]}; {command} takes {takes}", hint=readers(kind, path))


def load_snapshot(path: str, command: str, lot_type: str | None = None) -> Snapshot:
    """A snapshot from a snapshot JSON, any importable topology or a declared lot
    (:func:`topomap.importers.load_any`); with ``lot_type`` (``--lot-type``), filled from that catalogue
    entry where its source carries nothing (:func:`topomap.model.lots.with_lot_type`). A flow,
    requirements file, run record or measurements file in its place is named as such."""
    # Imported here for start-up: the importers are for commands that read a snapshot.
    from topomap.importers import load_any

    try:
        snap = load_any(path)
    except TopomapError as err:
        name_what_it_is(err, path, command)
        raise
    if lot_type is None:
        return snap
    from topomap.model.lots import with_lot_type  # start-up: only with --lot-type

    return with_lot_type(snap, lot_type)


def name_what_it_is(err: TopomapError, path: str, command: str) -> None:
    """``path`` could not be read as a machine (``err``): a flow, requirements file, run record or
    measurements file is named as such (:func:`misplaced`, raised from ``err``); anything else
    returns, and the caller raises ``err`` as it is."""
    kind = file_kind(path)
    if kind is not None and kind not in _MACHINE_KINDS:
        raise misplaced(path, kind, command) from err


@dataclass
class Given:
    """The files of one command line by kind, each list in the order given. ``machines`` holds the
    snapshots, topology pastes and ``NAME=FILE`` bindings, and also the files of no known kind (the
    loader that reads them says what is wrong)."""

    command: str
    flows: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    machines: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    measurements: list[str] = field(default_factory=list)
    unknown: set[str] = field(default_factory=set)  # in ``machines``: none of the known kinds

    def flow(self, option: str | None) -> str | None:
        """The one flow file: positional or ``--flow`` (both naming the same file is fine)."""
        found = list(dict.fromkeys([*([option] if option else []), *self.flows]))
        if len(found) > 1:
            raise TopomapError(
                f"{self.command}: two flow files ({found[0]} and {found[1]}); it reads one",
                hint=f"give one flow file: topomap {self.command} {found[0]} …",
            )
        return found[0] if found else None

    def need_flow(self, option: str | None, usage: str) -> str:
        """The flow file of a command that needs one. None recognised: the first file of no known
        kind is read as the flow (its reader then says what is wrong with it); else the error
        names what was given instead."""
        flow = self.flow(option)
        if flow is not None:
            return flow
        for path in self.machines:
            if path in self.unknown:
                self.machines.remove(path)
                return path
        given = next(iter(self.requirements + self.runs + self.measurements + self.machines), None)
        if given is None:
            raise TopomapError(f"{self.command} needs a flow file", hint=usage)
        path = file_of(given)
        kind = file_kind(path)
        raise TopomapError(
            f"{given}: this is {DESCRIPTIONS[kind] if kind else 'no flow file'}; {self.command} needs a flow file",
            hint=readers(kind, path) if kind else usage,
        )

    def refuse(self, *kinds: Kind) -> None:
        """A file of one of ``kinds`` is refused, named as what it is."""
        lists: dict[Kind, list[str]] = {"requirements": self.requirements, "run": self.runs}
        lists |= {"measurements": self.measurements, "flow": self.flows}
        for kind in kinds:
            if lists[kind]:
                raise misplaced(lists[kind][0], kind, self.command)


def sort_files(args: list[str], command: str, bindings: bool = True) -> Given:
    """The files of ``args`` by kind. With ``bindings``, ``NAME=FILE`` (not itself a file on disk)
    binds a flow host or names a lot: it is a machine whatever FILE is (its loader checks)."""
    given = Given(command)
    for arg in args:
        if bindings and _binding(arg):
            given.machines.append(arg)
            continue
        kind = file_kind(arg)
        if kind == "flow":
            given.flows.append(arg)
        elif kind == "requirements":
            given.requirements.append(arg)
        elif kind == "run":
            given.runs.append(arg)
        elif kind == "measurements":
            given.measurements.append(arg)
        else:
            given.machines.append(arg)
            if kind is None:
                given.unknown.add(arg)
    return given


def file_of(arg: str) -> str:
    """The file an argument names: FILE of ``NAME=FILE``, else the argument itself."""
    return arg.partition("=")[2] if _binding(arg) else arg


def _binding(arg: str) -> bool:
    """``NAME=FILE``: an ``=`` after a non-empty name, and ``arg`` itself is no file on disk."""
    name, sep, _ = arg.partition("=")
    if not sep or not name:
        return False
    try:
        os.stat(arg)
    except (OSError, ValueError):
        return True
    return False


def flow_command_files(files: list[str] | None, command: str) -> Given:
    """The files of a command on a flow (map, plan, report): a flow file and snapshots for its
    hosts; a requirements file, a run record or measured figures are refused, named as such."""
    given = sort_files(files or [], command)
    given.refuse("requirements", "run", "measurements")
    return given
