"""Bounded, safe reading of every input file; YAML with limits; what kind of file this is."""
