"""NCCL's transport decision for one ordered GPU pair — its rules (:mod:`.rules`), the decision
(:mod:`.decide`) and the facts a snapshot gives it (:mod:`.facts`) — below the flow, so a flow
arrow marked as an NCCL collective (:mod:`topomap.flow.ncclarrow`) and ``topomap nccl`` ask the one
same function."""

from __future__ import annotations
