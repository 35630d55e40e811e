"""What `topomap cluster` reports, as typed records: ``ClusterReport.to_json()`` is the one place
the JSON of ``topomap cluster --json`` (and the HTML report's cluster section) is made; msgspec
encodes the structs, whose field order is the contract (README: "topomap cluster --json")."""

from __future__ import annotations

from typing import Any

import msgspec

CLUSTER_SCHEMA = "topomap.cluster/1"


class ValueHosts(msgspec.Struct):
    """One value of a fact and the hosts that have it (all of them, sorted); ``differs``: what of it
    differs from the most common value (the GPUs or NICs that differ), "" where not compared."""

    value: str
    hosts: list[str]
    differs: str = ""


class FactReport(msgspec.Struct):
    """One fact across the cluster: the value most hosts have, the others, the hosts that cannot tell."""

    fact: str  # "driver", "gpus", "rails", ...
    name: str  # for people: "driver version"
    part_of_shape: bool
    common: str | None  # None: no host knows it
    common_hosts: int
    known_hosts: int
    others: list[ValueHosts]
    unknown: list[str]  # hosts whose source does not carry the fact

    @property
    def differs(self) -> bool:
        return bool(self.others)


class ShapeReport(msgspec.Struct):
    """One host build: its id (a hash of the shape facts), letter (A: most hosts), hosts and facts."""

    id: str
    label: str
    hosts: list[str]
    gpus: str
    nvlink: str
    rails: str
    pcie_tree: str


class RailReport(msgspec.Struct):
    """Rail i (GPU i's nearest RDMA NICs): the NIC position on each host; the same on every host?"""

    gpu: str
    positions: list[ValueHosts]
    same_on_every_host: bool


class RailsReport(msgspec.Struct):
    consistent: bool | None  # None: some host's rails are unknown and the known ones agree
    unknown: list[str]
    rails: list[RailReport]


class CliqueReport(msgspec.Struct):
    cluster_uuid: str
    clique_id: int
    hosts: list[str]


class FabricReport(msgspec.Struct):
    one_clique: bool | None  # every host's GPUs in one NVLink domain; None: cannot be told
    why: str
    cliques: list[CliqueReport]
    not_ready: list[str]  # hosts with a GPU whose fabric is not ready or not supported
    unknown: list[str]  # hosts whose source does not carry the fabric


class Outlier(msgspec.Struct):
    host: str
    reasons: list[str]


class ClusterReport(msgspec.Struct):
    """``topomap cluster --json``."""

    schema: str
    origin: str
    hosts: int
    shapes: list[ShapeReport]
    facts: list[FactReport]
    rails: RailsReport
    fabric: FabricReport
    outliers: list[Outlier]

    def fact(self, name: str) -> FactReport:
        return next(f for f in self.facts if f.fact == name)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out
