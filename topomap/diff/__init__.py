"""Semantic differences between two lots (and, with a flow, between the flow's arrows)."""
