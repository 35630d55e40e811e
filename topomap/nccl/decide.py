"""The decision for one ordered rank pair: it lives in :mod:`topomap.transport.decide` (below the
flow, which asks it too); re-exported here under its old names."""

from __future__ import annotations

from topomap.transport.decide import Decision, NicFact, PairFacts, decide, gdr_answer

__all__ = ["Decision", "NicFact", "PairFacts", "decide", "gdr_answer"]
