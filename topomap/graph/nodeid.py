"""The graph's node ids and route hops: the one place that makes them and reads them back.

A node id names one node of a :class:`~topomap.graph.Topology`:

============================  ===============================  ====================
id                            maker                            kind
============================  ===============================  ====================
``host``                      :data:`HOST`                     ``host``
``numa0``, ``numa-unknown``   :func:`numa_id`                  ``numa``
``gpu3``                      :func:`gpu_node`                 ``gpu``
``nic:mlx5_0``                :func:`nic_node`                 ``nic``
``nvswitch:fabric``           :data:`FABRIC`                   ``nvswitch``
``pci:0000:17:00.0``          :func:`pci_node`                 ``pci``
``pci:inferred-hb-gpu0``      :func:`inferred_host_bridge`     ``inferred-host-bridge``
``pci:inferred-sw-gpu0``      :func:`inferred_switch`          ``inferred-switch``
``pci:inferred-port-gpu0``    :func:`inferred_port`            ``inferred-port``
============================  ===============================  ====================

A GPU's node id is its snapshot id (``gpu3``, as the snapshot's ``pairs`` name it); a NIC's is its
device name after ``nic:`` (the snapshot names it ``nic<index>``; :func:`topomap.graph.snapshot_id`
maps one to the other).

A route hop (a MappedArrow's ``route``, also in ``--json``) is ``HOST/NODE``: the flow host, then the
node id on it (``lotA/nic:mlx5_0``), or the flow host's bare name where it has no snapshot
(``workstation``). A flow host never holds ``/`` (a placement is ``[A-Za-z0-9_.-]+``), while a node
id may (a NIC's name is the snapshot's data, and a hostile snapshot can put ``/`` in it), so a hop
splits at its *first* ``/``. Views never parse ids by hand: they ask these functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from topomap.model.snapshot import Gpu, Nic

NodeKind = Literal[
    "host",
    "numa",
    "gpu",
    "nic",
    "nvswitch",
    "pci",
    "inferred-host-bridge",
    "inferred-switch",
    "inferred-port",
    "other",
]

HOST = "host"
FABRIC = "nvswitch:fabric"  # the NVSwitches as one hub (their links summed)

_GPU = "gpu"
_NIC = "nic:"
_NUMA = "numa"
_NUMA_UNKNOWN = "numa-unknown"
_NVSWITCH = "nvswitch:"
_PCI = "pci:"
# the inferred parts (graph/infer.py): prefix, kind, words; the upper switch of a PXB group is a switch
_INFERRED: tuple[tuple[str, NodeKind, str], ...] = (
    ("pci:inferred-hb-", "inferred-host-bridge", "host bridge (inferred)"),
    ("pci:inferred-sw-", "inferred-switch", "PCIe switch (inferred)"),
    ("pci:inferred-port-", "inferred-port", "switch port (inferred)"),
)
_HOP = "/"


# --- makers ---------------------------------------------------------------------------------


def gpu_id(index: int) -> str:
    """The node id (and snapshot id) of GPU ``index``: ``gpu3``."""
    return f"{_GPU}{index}"


def gpu_node(g: Gpu) -> str:
    """The node id of a snapshot's GPU: ``gpu3``."""
    return gpu_id(g.index)


def nic_node(n: Nic | str) -> str:
    """The node id of a snapshot's NIC, or of a NIC by device name: ``nic:mlx5_0``."""
    return _NIC + (n if isinstance(n, str) else n.name)


def numa_id(numa: object) -> str:
    """The node id of NUMA node ``numa`` (``numa0``); None → the one unknown node (``numa-unknown``)."""
    return f"{_NUMA}{numa}" if numa is not None else _NUMA_UNKNOWN


def numa_unknown_part(part: int) -> str:
    """The node id of one of several unknown NUMA nodes (``numa-unknown-2``): an inferred tree's sides."""
    return f"{_NUMA_UNKNOWN}-{part}"


def numa_direct(numa: object) -> str:
    """A PCI chain's first entry for a device hung straight off its NUMA node (``numa0:direct``)."""
    return f"{_NUMA}{numa}:direct"


def pci_node(bus_id: str) -> str:
    """The node id of a PCI device the snapshot's tree lists that is no GPU or NIC: ``pci:0000:17:00.0``."""
    return _PCI + bus_id


def _slug(device: str) -> str:
    return device.replace(":", "-")


def inferred_host_bridge(device: str) -> str:
    """An inferred host bridge, named by the first device under it: ``pci:inferred-hb-gpu0``."""
    return f"pci:inferred-hb-{_slug(device)}"


def inferred_switch(device: str) -> str:
    """An inferred PCIe switch, named by the first device under it: ``pci:inferred-sw-gpu0``."""
    return f"pci:inferred-sw-{_slug(device)}"


def inferred_upper_switch(device: str) -> str:
    """An inferred switch over several switches (``pci:inferred-sw-upper-gpu0``): not the name of
    its first group's own switch."""
    return f"pci:inferred-sw-upper-{_slug(device)}"


def inferred_port(device: str) -> str:
    """An inferred switch's downstream port: ``pci:inferred-port-gpu0``."""
    return f"pci:inferred-port-{_slug(device)}"


def join_hop(host: str, node: str) -> str:
    """A route hop: the node id ``node`` on flow host ``host`` (``lot/gpu3``). A host holding ``/``
    could not be split back (no placement names one): refused."""
    if _HOP in host:
        raise ValueError(f"flow host {host!r} holds '/': a route hop could not be read back")
    return f"{host}{_HOP}{node}"


# --- readers --------------------------------------------------------------------------------


def gpu_index(node: str) -> int | None:
    """The index of a GPU's node id (``gpu3`` → 3); None for any other id."""
    rest = node[len(_GPU) :] if node.startswith(_GPU) else ""
    return int(rest) if rest.isascii() and rest.isdigit() else None


def nic_name(node: str) -> str | None:
    """The device name of a NIC's node id (``nic:mlx5_0`` → ``mlx5_0``); None for any other id."""
    return node[len(_NIC) :] if node.startswith(_NIC) else None


def numa_unknown(node: str) -> bool:
    """Whether a NUMA node id is one whose number the source does not know (``numa-unknown…``)."""
    return node.startswith(_NUMA_UNKNOWN)


def node_kind(node: str) -> NodeKind:
    """What a node id names, from the id alone."""
    if node == HOST:
        return "host"
    if gpu_index(node) is not None:
        return "gpu"
    if node.startswith(_NIC):
        return "nic"
    if node.startswith(_NUMA):
        return "numa"
    if node.startswith(_NVSWITCH):
        return "nvswitch"
    for prefix, kind, _ in _INFERRED:
        if node.startswith(prefix):
            return kind
    if node.startswith(_PCI):
        return "pci"
    return "other"


def node_words(node: str) -> str:
    """A node id in words, as a route table and a note say it: inferred PCI parts are called
    inferred (``PCIe switch (inferred)``), a PCI device is its bus id, anything else its id."""
    for prefix, _, words in _INFERRED:
        if node.startswith(prefix):
            return words
    return node.removeprefix(_PCI)


def bare_id(node: str) -> str:
    """A node id without its ``pci:`` prefix (``0000:17:00.0``, ``inferred-sw-gpu0``): how the plan's
    shared links name a hop's ends. Not :func:`node_words`: an inferred part keeps its id there."""
    return node.removeprefix(_PCI)


def split_hop(hop: str) -> tuple[str, str]:
    """A route hop's flow host and node id (``lot/nic:mlx5_0`` → (``lot``, ``nic:mlx5_0``)), split
    at the first ``/`` (a node id may hold one, a flow host never does); a snapshot-less host's bare
    name → (name, "")."""
    host, _, node = hop.partition(_HOP)
    return host, node


def hop_node(hop: str) -> str:
    """A route hop's node id ("" for a snapshot-less host's bare name)."""
    return split_hop(hop)[1]


def hop_words(hop: str) -> str:
    """A route hop in words (``lot/PCIe switch (inferred)``): its node in :func:`node_words`."""
    host, node = split_hop(hop)
    return join_hop(host, node_words(node)) if node else host
