"""GPUDirect RDMA between a GPU and a NIC: the one answer per GPU–NIC pair (issue 30), which
:func:`topomap.graph.evidence.nearest_nic` and :func:`~topomap.graph.evidence.nics_at_best_class` give
every view. The NIC's own ability is :func:`topomap.model.facts.nic_gdr` (the source's word, else its
family's rule, from :mod:`topomap.model.nic_ids`); here the path and the host's findings join it."""

from __future__ import annotations

from collections.abc import Sequence

from topomap.base.links import NCCL_P2P_LEVELS
from topomap.base.notes import Note, cat, said
from topomap.graph.topology import Topology
from topomap.model.facts import SETTLE, Answer, findings_about, nic_gdr
from topomap.model.snapshot import Nic


def pair_gdr(topo: Topology, gid: str, nic: Nic, cls: str) -> Answer:
    """GPUDirect RDMA between ``gid`` and ``nic`` at path class ``cls``: the path within NCCL's GDR level,
    neither the source nor a finding saying no, and the NIC able to (``nic_gdr``). A NIC whose ability is
    unknown leaves it unknown."""
    g = topo.gpu(gid)
    pair = Note(f"NIC {{nic}} is {said(cls)} to {{gpu}}", nic=nic.name, gpu=gid)
    if cls not in NCCL_P2P_LEVELS:
        return Answer("no", (cat(pair, "; data bounces through host memory"),))
    if g is not None and g.gdr is False:
        return Answer("no", (Note("the source says GPUDirect RDMA is off for {gpu}", gpu=gid),))
    able = nic_gdr(nic)
    if able.no:
        return Answer("no", (cat(pair, ", but ", able.why_note()),))
    missing = findings_about(topo.snapshot, ("gpudirect-missing",), "host")
    if missing:
        return Answer("no", (cat(pair, ", but ", missing[0].text),))
    if able.value == "unknown":
        return Answer("unknown", (pair, *able.reasons), able.settle)
    ready = findings_about(topo.snapshot, ("gpudirect-ready",), "host")
    if ready:
        return Answer("yes", (cat(pair, "; ", ready[0].text),))
    own = able.reasons if nic.gdr is True else ()  # the source's own word is said; a family's rule is not
    return Answer("yes", (pair, *own))


def unplaced_gdr(nics: Sequence[Nic], why: str) -> Answer:
    """GPUDirect RDMA of a GPU whose path to the host's NICs the source does not give (``why``): no where no
    NIC of the host can do it, whatever the paths; else unknown."""
    if all(nic_gdr(n).no for n in nics):
        return Answer("no", (cat("no NIC of this host does GPUDirect RDMA (", nic_gdr(nics[0]).why_note(), ")"),))
    return Answer("unknown", (why,), SETTLE["nic"])


def mirror_bits(val: int, pow2: int) -> int:
    """NCCL's mirrorBits (src/graph/topo.cc): the low log2(pow2) bits of ``val``, reversed."""
    mirror, b, mb = 0, 1, pow2 >> 1
    while b < pow2:
        if val & b:
            mirror |= mb
        b, mb = b << 1, mb >> 1
    return mirror
